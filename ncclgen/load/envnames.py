"""Which environment variable names a descriptor, a workload or --set may set.

A name that makes a shell, the dynamic loader or Python run code (BASH_ENV, LD_PRELOAD,
PYTHONSTARTUP, ...) is refused outright; a search path or plugin library (PATH, LD_LIBRARY_PATH,
PYTHONPATH, NCCL_NET_PLUGIN, ...) and a name outside ncclgen's knowledge base need an explicit
opt-in (`unchecked: true` on the entry, `--set-unchecked` on the command line) that `explain` shows.
The lists, each name with its reason and source, are data: ncclgen/data/envnames.yaml.

ncclgen's own rules and plugin data never pass through here: only user input does.
"""

from __future__ import annotations

import functools
import re

from .. import datapaths
from ..errors import char_name, shown
from ..record import dataclass
from .patterns import ENV_NAME

OPT_IN_YAML = "unchecked: true"
OPT_IN_CLI = "--set-unchecked"


@dataclass(frozen=True)
class Policy:
    refuse: dict[str, str]  # name -> reason
    prefixes: tuple[tuple[str, str], ...]
    paths: dict[str, str]  # name -> reason
    safe: dict[str, tuple[str, ...]]  # name -> values that load nothing ('none' for NCCL plugins)


@functools.lru_cache(maxsize=1)
def policy() -> Policy:
    from .yamlio import load_file

    data = load_file(datapaths.data("envnames.yaml")).data
    return Policy(
        refuse={e["name"]: e["reason"] for e in data["refuse"]},
        prefixes=tuple((e["prefix"], e["reason"]) for e in data["prefixes"]),
        paths={e["name"]: e["reason"] for e in data["paths"]},
        safe={e["name"]: tuple(e.get("safe_values", ())) for e in data["paths"]},
    )


@functools.lru_cache(maxsize=1)
def known_names() -> frozenset[str]:
    """Every name in the knowledge base (ncclgen/data/kb/*.tsv, first column).

    Read here from the data rather than through lint.knowledge: loading sits below linting, and only
    the names are needed (tests/test_hostile.py checks both agree).
    """
    import os

    folder = datapaths.data("kb")
    names: set[str] = set()
    for entry in sorted(os.listdir(folder)):
        if entry.endswith(".tsv"):
            with open(os.path.join(folder, entry), encoding="utf-8") as fh:
                names.update(line.split("\t", 1)[0] for line in fh if line[:1] not in ("#", "\n", ""))
    return frozenset(names)


def name_problem(name: str) -> str | None:
    """Why ``name`` is not an environment variable name, naming the first character that is not one.

    Names are ASCII identifiers (letters, digits, '_', not starting with a digit): what POSIX sh and
    bash can export and what NCCL's getenv() is asked for. A Cyrillic 'С' or a zero-width space in a
    name looks right but sets another variable, and the real one stays unset; the message names the
    character by its code point (errors.char_name).
    """
    if re.fullmatch(ENV_NAME, name):
        return None
    if not name:
        return "an empty variable name"
    i, ch = next(
        (i, ch)
        for i, ch in enumerate(name)
        if not (ch.isascii() and (ch.isalnum() or ch == "_")) or (i == 0 and ch.isdigit())
    )
    what = "starts with a digit" if ch.isdigit() else f"{char_name(ch)}, at offset {i}"
    return (
        f"{shown(name)} is not an environment variable name ({what}; names are ASCII letters, digits "
        "and '_', not starting with a digit)"
    )


def refused(name: str) -> str | None:
    """Why ``name`` may never come from user input, or None."""
    p = policy()
    if name in p.refuse:
        return p.refuse[name]
    if name in p.paths:
        return None
    for prefix, reason in p.prefixes:
        if name.startswith(prefix):
            return reason
    return None


# The names ncclgen/data/plugins.yaml and plan/build.py set for a net or tuner plugin (the loader path and
# the plugin libraries); for the other search paths the refusal does not claim ncclgen sets them.
PLUGIN_SET = frozenset({"LD_LIBRARY_PATH", "NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN"})


def needs_opt_in(name: str, value: str | None = None) -> str | None:
    """Why ``name`` needs the explicit opt-in, or None when it does not.

    Names NCCL-prefixed but unknown are left to the lint gate, which refuses them with a
    did-you-mean (NG001); an opt-in would not make NCCL read them.
    """
    p = policy()
    if name in p.paths:
        if value is not None and value in p.safe[name]:
            return None
        plugin = "; ncclgen's own plugin data sets it where a plugin needs it" if name in PLUGIN_SET else ""
        return p.paths[name] + plugin
    if name not in known_names() and not name.startswith("NCCL_"):
        return (
            "no NCCL, PyTorch or plugin variable in ncclgen's knowledge base has this name, so ncclgen "
            "cannot check what it does"
        )
    return None


def check(name: str, value: str | None, unchecked: bool, opt_in: str = OPT_IN_YAML) -> str | None:
    """The one-line refusal for ``name`` from user input, or None when it may be set.

    ``opt_in`` names how this input opts in (the YAML key or the CLI flag), for the message.
    """
    bad = name_problem(name)
    if bad:
        return bad
    why = refused(name)
    if why:
        return f"{name} may not be set by a descriptor, workload or --set: {why}"
    if unchecked:
        return None
    why = needs_opt_in(name, value)
    if why:
        return f"{name}: {why}; to pass it anyway, opt in with {opt_in} (explain shows it as unchecked)"
    return None
