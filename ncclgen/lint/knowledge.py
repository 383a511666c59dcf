"""What NCCL, PyTorch and the plugins around them really read: one record per environment variable.

The facts are data (ncclgen/data/kb/*.tsv, read from NCCL v2.30.7-1 source, the libnccl of every PyPI
release in nccl-releases.tsv (tools/nccl_wheel_names.py) and the PyTorch wheels in torch-releases.tsv
(tools/torch_wheel_names.py), each row citing its source); this module loads them once and holds the logic that interprets them: value syntax
(NCCL's strtoll integers, level names, protocol lists, the NCCL_IB_HCA / NCCL_SOCKET_IFNAME grammar)
and version windows. The linter, the rules and `doctor` all ask here, so they cannot disagree.

TSV columns (tab-separated, '#' lines are comments, '|' separates choices, ',' separates managed_by):
  name, reader (nccl | torch | gloo | cuda | ucx | libfabric | sharp | tcpx | tcpxo | ...), type (int |
  size | bool | enum | list | string), default (the value used when unset; empty = auto/unset/not
  pinned), min, max (for hca-list/ifname-list syntax: the maximum number of entries), choices,
  syntax (none | hca-list | ifname-list | proto-list | caret-list), first_version, last_version (last
  release that reads it; empty = still read; NCCL releases for reader nccl, PyTorch releases for torch), status (active | deprecated | removed | invented | dead),
  replacement (NAME: a rename or alias taking the same values; NAME=V or text with '{value}', the
  linted value; 'none: why'; 'see NAME: why': a successor taking different values, so no fix line),
  scope (any | socket | ib | roce | infiniband | plugin:<names> | contrib:<name> | torch-backend:legacy|nccl2:
  read only by PyTorch's legacy ProcessGroupNCCL, or only by ProcessGroupNCCL2 and its Flight Recorder hook), managed_by, documented, meaning_verified (no = meaning derived
  from the name only), case_sensitive, multiple (value must be a multiple of it), pattern (regex the
  whole value must match), meaning, source (reference file:line and upstream location).
"""

from __future__ import annotations

import csv
import difflib
import os
import re
from collections.abc import Mapping
from types import MappingProxyType

from .. import datapaths
from ..record import dataclass
from .releases import (  # noqa: F401  (the knowledge base's public names: callers ask here)
    KB_COVERS,
    KB_VERSIONS,
    REFRESH,
    beyond_knowledge,
    compare_versions,
    nccl_backend,
    older_than_knowledge,
    torch_alias_of,
    version_tuple,
)

KB_FILES = ("nccl.tsv", "nccl-history.tsv", "torch.tsv", "other.tsv")
COLUMNS = (
    "name",
    "reader",
    "type",
    "default",
    "min",
    "max",
    "choices",
    "syntax",
    "first_version",
    "last_version",
    "status",
    "replacement",
    "scope",
    "managed_by",
    "documented",
    "meaning_verified",
    "case_sensitive",
    "multiple",
    "pattern",
    "meaning",
    "source",
)
TYPES = ("int", "size", "bool", "enum", "list", "string")
STATUSES = ("active", "deprecated", "removed", "invented", "dead")
SYNTAXES = ("none", "hca-list", "ifname-list", "proto-list", "caret-list")
INT64 = (-(1 << 63), (1 << 63) - 1)
# Collectives accepted in the per-function NCCL_ALGO/NCCL_PROTO form (NCCL >= 2.24, nccl-env.tsv).
PROTO_FUNCTIONS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")
PER_FUNCTION_SINCE = "2.24"
NAME_MAX = 63  # struct netIf prefix[64] (NCCL src/include/utils.h:46-51)
# Readers whose integers go through NCCL_PARAM (strtoll base 0): libnccl, and the nccl-rdma-sharp
# plugin's own copy of NCCL_PARAM. Everything else is checked as a plain decimal.
STRTOLL_READERS = ("nccl", "rdma-sharp")


@dataclass(frozen=True)
class VarInfo:
    """One environment variable: who reads it, what values it takes, since/until when, and why."""

    name: str
    reader: str
    type: str
    default: str
    min: int | None
    max: int | None
    choices: tuple[str, ...] | None
    syntax: str
    first_version: str
    last_version: str
    status: str
    replacement: str
    scope: str
    managed_by: tuple[str, ...]
    meaning: str
    source: str
    documented: bool
    meaning_verified: bool = True
    case_sensitive: bool = False
    multiple: int | None = None
    pattern: str = ""


_VARS: Mapping[str, VarInfo] | None = None


def kb_dir() -> str:
    return datapaths.data("kb")


def _row_to_info(row: dict, where: str) -> VarInfo:
    def opt_int(key: str) -> int | None:
        return int(row[key]) if row[key] else None

    def yes(key: str) -> bool:
        if row[key] not in ("yes", "no"):
            raise ValueError(f"{where}: {key} must be yes or no, got {row[key]!r}")
        return row[key] == "yes"

    for key, allowed in (("type", TYPES), ("status", STATUSES), ("syntax", SYNTAXES)):
        if row[key] not in allowed:
            raise ValueError(f"{where}: {key} {row[key]!r} is not one of {', '.join(allowed)}")
    for key in ("first_version", "last_version"):
        if row[key]:
            version_tuple(row[key])
    if row["pattern"]:
        re.compile(row["pattern"])
    return VarInfo(
        name=row["name"],
        reader=row["reader"],
        type=row["type"],
        default=row["default"],
        min=opt_int("min"),
        max=opt_int("max"),
        choices=tuple(row["choices"].split("|")) if row["choices"] else None,
        syntax=row["syntax"],
        first_version=row["first_version"],
        last_version=row["last_version"],
        status=row["status"],
        replacement=row["replacement"],
        scope=row["scope"] or "any",
        managed_by=tuple(row["managed_by"].split(",")) if row["managed_by"] else (),
        meaning=row["meaning"],
        source=row["source"],
        documented=yes("documented"),
        meaning_verified=yes("meaning_verified"),
        case_sensitive=yes("case_sensitive"),
        multiple=opt_int("multiple"),
        pattern=row["pattern"],
    )


def load_file(path: str) -> dict[str, VarInfo]:
    """Parse one KB file; a malformed row is a packaging bug, reported with file:line."""
    out: dict[str, VarInfo] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        lines = [(i + 1, line) for i, line in enumerate(fh) if line.strip() and not line.startswith("#")]
    reader = csv.reader((line for _, line in lines), delimiter="\t", quoting=csv.QUOTE_NONE, quotechar=None)
    header = next(reader)
    if tuple(header) != COLUMNS:
        raise ValueError(f"{path}:{lines[0][0]}: header is not {COLUMNS}")
    for (lineno, _), values in zip(lines[1:], reader):
        where = f"{path}:{lineno}"
        if len(values) != len(COLUMNS):
            raise ValueError(f"{where}: {len(values)} columns, expected {len(COLUMNS)}")
        info = _row_to_info(dict(zip(COLUMNS, values)), where)
        if info.name in out:
            raise ValueError(f"{where}: {info.name} is listed twice")
        out[info.name] = info
    return out


def all_vars() -> Mapping[str, VarInfo]:
    """Every known variable, loaded once per process (csv, not YAML: `doctor` and `lint` stay fast)."""
    global _VARS
    if _VARS is None:
        merged: dict[str, VarInfo] = {}
        for name in KB_FILES:
            path = os.path.join(kb_dir(), name)
            for key, info in load_file(path).items():
                if key in merged:
                    raise ValueError(f"{path}: {key} is also in another knowledge-base file")
                merged[key] = info
        _VARS = MappingProxyType(merged)
    return _VARS


def lookup(name: str) -> VarInfo | None:
    return all_vars().get(name)


def suggest(name: str) -> list[str]:
    """Close real names for a did-you-mean (never an invented one)."""
    real = [n for n, v in all_vars().items() if v.status != "invented"]
    return difflib.get_close_matches(name, real, n=3, cutoff=0.8)


def read_in(info: VarInfo, nccl_version: str, torch_version: str | None = None) -> bool:
    """Whether the release of the name's reader reads it (its version window; invented names never):
    NCCL ``nccl_version`` for libnccl's names, PyTorch ``torch_version`` (when given) for PyTorch's.

    Variables of other readers (plugins, CUDA) are not gated by a version: True. A 'dead' knob is read
    into a parameter that nothing uses; the linter reports that separately.
    """
    if info.status == "invented":
        return False
    version = {"nccl": nccl_version, "torch": torch_version}.get(info.reader)
    if version is None:
        return True
    if info.first_version and compare_versions(version, info.first_version) < 0:
        return False
    return not (info.last_version and compare_versions(version, info.last_version) > 0)


# -- value syntax -----------------------------------------------------------------------------------


def strtoll(text: str) -> tuple[int | None, str, int]:
    """C strtoll(text, &end, 0) as NCCL's ncclLoadParam calls it: (value, unparsed rest, base).

    value is None when no digits were read (NCCL then stores 0) or on overflow (ERANGE: NCCL keeps the
    default); rest is what strtoll left unread, which NCCL silently ignores.
    """
    i, n = 0, len(text)
    while i < n and text[i] in " \t\n\v\f\r":
        i += 1
    sign = 1
    if i < n and text[i] in "+-":
        sign = -1 if text[i] == "-" else 1
        i += 1
    base, digits = 10, "0123456789"
    if text[i : i + 2].lower() == "0x" and i + 2 < n and text[i + 2] in "0123456789abcdefABCDEF":
        base, digits, i = 16, "0123456789abcdefABCDEF", i + 2
    elif text[i : i + 1] == "0":
        base, digits = 8, "01234567"
    start = i
    while i < n and text[i] in digits:
        i += 1
    if i == start:
        return None, text, base
    if len(text[start:i].lstrip("0")) > 22:  # beyond 64 bits in any base: ERANGE, without a huge int()
        return None, text[i:], base
    value = sign * int(text[start:i], base)
    if not INT64[0] <= value <= INT64[1]:
        return None, text[i:], base
    return value, text[i:], base


def parse_if_list(value: str) -> tuple[bool, bool, list[tuple[str, int]]]:
    """NCCL_IB_HCA / NCCL_SOCKET_IFNAME grammar: (exclude, exact, [(name, port), ...]).

    As NCCL v2.30.7 parses it (src/transport/net_ib/init.cc:317-324, src/misc/utils.cc:189-215): a
    leading '^' makes the whole list an exclude list, then a leading '=' makes every name exact instead
    of a prefix; the rest is split on ',' (empty items skipped), each item on ':' into name, port (atoi,
    -1 when absent or empty), rail and plane (not returned). Items with an empty name are skipped.
    """
    exclude = value.startswith("^")
    rest = value[1:] if exclude else value
    exact = rest.startswith("=")
    rest = rest[1:] if exact else rest
    entries = []
    for item in rest.split(","):
        if not item:
            continue
        fields = item.split(":")
        if not fields[0]:
            continue
        port = _atoi(fields[1]) if len(fields) > 1 and fields[1] != "" else -1
        entries.append((fields[0][:NAME_MAX], port))
    return exclude, exact, entries


def _atoi(text: str) -> int:
    m = re.match(r"\s*([+-]?[0-9]{1,18})", text)  # longer overflows C's atoi: no port matches it
    return int(m.group(1)) if m else 0


def matches(value: str, device: str, port: int = -1) -> bool:
    """Whether NCCL selects ``device`` (port ``port``; -1 = any, as for IP interfaces) under ``value``.

    matchIfList (src/misc/utils.cc:218-244): exact compares whole names, otherwise the entry is a
    prefix of the device name; ports match when either side is -1 or they are equal; an empty list
    matches everything; the result is inverted for an exclude list.
    """
    exclude, exact, entries = parse_if_list(value)
    hit = not entries or any(
        (device == name if exact else device.startswith(name)) and (p == -1 or port == -1 or p == port)
        for name, p in entries
    )
    return hit != exclude


def _if_list_problem(info: VarInfo, value: str) -> str | None:
    if info.syntax == "ifname-list" and len(value) <= 1:
        return (
            f"{value!r} is ignored: NCCL only reads a value longer than 1 character and otherwise "
            "picks an interface itself"
        )
    exclude, exact, entries = parse_if_list(value)
    body = value[int(exclude) + int(exact) :]
    if exact and body.startswith("^"):
        return (
            "'^' must come before '=' ('^=' not '=^'): NCCL would look for a device literally named "
            f"{body.split(',')[0].split(':')[0]!r}"
        )
    items = [i for i in body.split(",") if i]
    for item in items:
        name = item.split(":")[0]
        if name[:1] in ("^", "="):
            return (
                f"{item!r}: '^' and '=' apply to the whole list and only at its start; NCCL would look "
                f"for a name starting with {name[:1]!r}"
            )
        if not name:
            return f"{item!r} has no name: NCCL skips it"
        if len(name) > NAME_MAX:
            return f"{name[:20]}...: names longer than {NAME_MAX} characters are cut by NCCL"
        for label, field in zip(("port", "rail", "plane"), item.split(":")[1:4]):
            if field and not re.fullmatch(r"\d+", field):
                return f"{item!r}: {label} {field!r} is not a number (NCCL reads it with atoi, giving {_atoi(field)})"
        if item.count(":") > 3:
            return f"{item!r}: at most name:port:rail:plane"
    if not entries:
        return "no device names in the list"
    if info.max is not None and len(entries) > info.max:
        return f"{len(entries)} entries: NCCL reads at most {info.max} and ignores the rest"
    return None


def _tokens_problem(info: VarInfo, text: str) -> str | None:
    body = text[1:] if text.startswith("^") else text
    allowed = {c.casefold(): c for c in info.choices or ()}
    for tok in (t.strip() for t in body.split(",")):
        if tok and tok.casefold() not in allowed:
            return f"unknown {info.name} token {tok!r}; valid: {', '.join(info.choices or ())}"
    if not body.strip(", "):
        return "empty list"
    return None


def _proto_problem(info: VarInfo, value: str) -> str | None:
    """NCCL_ALGO / NCCL_PROTO: '[^]a,b' or, since 2.24, 'func:[^]a,b;func:...' (unknown token fails)."""
    if ":" not in value and ";" not in value:
        return _tokens_problem(info, value)
    funcs = {f.casefold(): f for f in PROTO_FUNCTIONS}
    for part in (p for p in value.split(";") if p.strip()):
        func, sep, tokens = part.partition(":")
        if not sep:
            return f"{part!r}: the per-function form is func:list;func:list"
        if func.strip().casefold() not in funcs:
            return f"unknown collective {func.strip()!r}; valid: {', '.join(PROTO_FUNCTIONS)}"
        problem = _tokens_problem(info, tokens)
        if problem:
            return problem
    return None


def parse_int(info: VarInfo, value: str) -> tuple[int | None, str | None]:
    """Parse an integer the way its reader does: NCCL_PARAM readers via strtoll, others as decimals."""
    if value.strip() == "":
        return None, "empty value: the default is used"
    if info.reader in STRTOLL_READERS:
        number, rest, base = strtoll(value)
        if number is None and rest == value:
            return None, f"{value!r} is not a number: NCCL's strtoll turns it into 0"
        if number is None:
            return None, f"{value!r} is outside the 64-bit range: NCCL ignores it and keeps the default"
        if rest.strip():
            return None, f"trailing {rest!r} is ignored: NCCL reads {number}"
        digits = value.strip().lstrip("+-")
        if base == 8 and int(digits, 8) != int(digits, 10):
            return None, f"a leading 0 means octal to NCCL: {value.strip()} is read as {number}"
        return number, None
    if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):  # ASCII digits: C readers take no others
        return None, f"{value!r} is not an integer"
    if len(value.strip().lstrip("+-").lstrip("0")) > 19:
        return None, f"{value.strip()[:24]}... is outside the 64-bit range"
    return int(value), None


def _range_problem(info: VarInfo, number: int) -> str | None:
    lo, hi = info.min, info.max
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        bounds = f"{lo}..{hi}" if lo is not None and hi is not None else (f">= {lo}" if lo is not None else f"<= {hi}")
        return f"{number} is out of range: {info.name} takes {bounds}"
    if info.multiple and number % info.multiple:
        return f"{number} is not a multiple of {info.multiple}"
    return None


def _number_class(info: VarInfo, value: str) -> tuple[str, str] | None:
    """An int or size value as its reader parses it, then its range."""
    number, problem = parse_int(info, value)
    if problem or number is None:
        return "invalid", problem or f"{value!r} is not a number"
    problem = _range_problem(info, number)
    return ("range", problem) if problem else None


def _choice_class(info: VarInfo, value: str) -> tuple[str, str] | None:
    """A bool or enum value among its choices (case as the reader compares), or a legacy level number."""
    choices = info.choices or ()
    folded = {c.casefold() for c in choices}
    if value in choices or (not info.case_sensitive and value.casefold() in folded):
        return None
    if (info.min is not None or info.max is not None) and re.fullmatch(r"[0-9]{1,19}", value):
        problem = _range_problem(info, int(value))  # legacy numeric form (NCCL_*_LEVEL)
        return ("range", problem) if problem else None
    hint = ""
    if info.case_sensitive and value.casefold() in folded:
        hint = f" (NCCL compares case-sensitively: write {value.upper()})"
    extra = f", or a number >= {info.min}" if info.min is not None else ""
    return "invalid", f"{value!r} is not one of {', '.join(choices)}{extra}{hint}"


def _syntax_problem(info: VarInfo, value: str) -> str | None:
    """A list value's grammar (HCA/interface lists, protocol lists, caret lists) or the row's pattern."""
    if info.syntax in ("hca-list", "ifname-list"):
        return _if_list_problem(info, value)
    if info.syntax == "proto-list":
        return _proto_problem(info, value)
    if info.syntax == "caret-list":
        return _tokens_problem(info, value)
    if info.pattern:
        flags = 0 if info.case_sensitive else re.IGNORECASE
        matched = re.fullmatch(info.pattern, value, flags)
        return None if matched else f"{value!r} does not have the form {info.pattern}"
    return None


def classify(info: VarInfo, value: str) -> tuple[str, str] | None:
    """('invalid' | 'range', why) when ``value`` is not what ``info``'s reader accepts, else None."""
    if info.type in ("int", "size"):
        return _number_class(info, value)
    if info.type in ("bool", "enum") and info.choices:
        return _choice_class(info, value)
    problem = _syntax_problem(info, value)
    return ("invalid", problem) if problem else None


def check_value(info: VarInfo, value: str) -> str | None:
    """None if ``value`` is fine for ``info``'s reader, else one sentence saying why it is not."""
    found = classify(info, value)
    return found[1] if found else None


def same_value(info: VarInfo, a: str, b: str) -> bool:
    """Whether two spellings mean the same value to the reader (0x10 == 16, INFO == info, y == true)."""
    if info.type in ("int", "size"):
        na, pa = parse_int(info, a)
        nb, pb = parse_int(info, b)
        return pa is None and pb is None and na == nb
    if info.type == "bool":

        def truth(v: str) -> bool | None:
            v = v.strip().casefold()
            return (
                True if v in ("1", "y", "yes", "t", "true") else False if v in ("0", "n", "no", "f", "false") else None
            )

        return truth(a) is not None and truth(a) == truth(b)
    if info.type == "list":

        def norm(v: str) -> tuple:
            return (v.startswith("^"), frozenset(t.strip().casefold() for t in v.lstrip("^").split(",") if t.strip()))

        return norm(a) == norm(b)
    if info.case_sensitive:
        return a == b
    return a.casefold() == b.casefold()
