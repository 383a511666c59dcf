"""What triage recognises, as data: signatures.yaml (lines of PyTorch, Ray, Gloo, verl, the kernel, Slurm,
and NCCL lines that need a regex), classes.yaml (cause classes, and the rules giving each NCCL WARN/INFO
format string of nccl-warn.tsv its class by source file and text), loaded once and compiled."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from dataclasses import field
from pathlib import Path
from typing import cast

import yaml

from ..load import yamlio
from ..load.yamlparse import LOADER
from ..record import dataclass

DATA = Path(__file__).resolve().parent.parent / "data" / "triage"
ROLES = ("root", "suspect", "symptom", "context")
AREAS = ("net", "socket", "gpu", "host", "program", "launch")
CONVERSION = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:l{0,2}|z|h{0,2})[diouxXsfcpgmlu]")


class LazyPattern:
    """A signature's regex, compiled the first time a line holds one of its keys: most of the catalogue's
    patterns never meet such a line, and compiling all of them took about 80 ms of every run."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern)
        return self._compiled

    def search(self, text: str) -> re.Match[str] | None:
        return self.compiled().search(text)

    def match(self, text: str) -> re.Match[str] | None:
        return self.compiled().match(text)


@dataclass(frozen=True)
class Signature:
    id: str
    role: str
    keys: tuple[str, ...]
    match: LazyPattern | None
    cause: str
    fix: str
    sources: tuple[str, ...]
    then: str = ""
    plan: tuple[tuple[str, str], ...] = field(default=())  # (VAR, note template)
    nccl_warn: str = ""
    area: str = "program"
    fixes: tuple[tuple[str, str], ...] = field(default=())  # (fabric, fix) offered only on that fabric
    fabrics: tuple[str, ...] = field(default=())  # where the cause can hold at all (empty: any)
    refine_cuda: bool = False  # a generic CUDA error line: the CUDA error text names the class (refine)
    explains: tuple[str, ...] = field(default=())  # a suspect that explains only these roots (empty: its area's)
    refined_by: tuple[str, ...] = field(default=())  # roots that, a few lines below in one message, say why
    told_below: bool = False  # a wrapper whose cause is the exception its traceback, printed under it, ends with


def _signature(raw: dict, sid: str) -> Signature:
    if raw["role"] not in ROLES:
        raise ValueError(f"triage data: {sid}: role {raw['role']!r} is not one of {ROLES}")
    if raw.get("area", "program") not in AREAS:
        raise ValueError(f"triage data: {sid}: area {raw.get('area')!r} is not one of {AREAS}")
    fixes = tuple((fab, text) for fab, text in (raw.get("fixes") or {}).items())
    return Signature(
        id=sid,
        role=raw["role"],
        keys=tuple(raw.get("key", ())),
        match=LazyPattern(raw["match"]) if raw.get("match") else None,
        cause=raw["cause"],
        fix=raw.get("fix", ""),
        sources=tuple(raw["sources"]),
        then=raw.get("then", ""),
        plan=tuple((p["var"], p["note"]) for p in raw.get("plan", ())),
        nccl_warn=raw.get("nccl_warn", ""),
        area=raw.get("area", "program"),
        fixes=fixes,
        fabrics=tuple(raw.get("fabrics", ())),
        refine_cuda=bool(raw.get("refine_cuda", False)),
        explains=tuple(raw.get("explains", ())),
        refined_by=tuple(raw.get("refined_by", ())),
        told_below=bool(raw.get("told_below", False)),
    )


@functools.cache
def signatures() -> tuple[Signature, ...]:
    """The signatures; one with `class: NAME` in place of an id is another form of a line that class explains (NCCL's
    WARN text quoted without its prefix): it is that class, with its fields (cause, fix, sources, ...) where it sets
    none of its own."""
    doc = load_data("signatures.yaml")
    base = _classes_doc()["classes"]
    out = []
    for raw in doc["signatures"]:
        cls = raw.get("class")
        out.append(_signature({**base[cls], **raw} if cls else raw, cls or raw["id"]))
    return tuple(out)


@functools.cache
def _classes_doc() -> dict:
    return load_data("classes.yaml")


def load_data(name: str) -> dict:
    """One of the catalogue's own data files: as tools/compile_triage.py stored it (ncclgen/triage/compiled.py) while
    the file is the one it was stored from, else parsed (an edited checkout before `make regen`)."""
    text = (DATA / name).read_text(encoding="utf-8")
    try:
        from .compiled import DOCS
    except ImportError:  # (while that tool writes it)
        DOCS = {}
    stored = DOCS.get(name)
    if stored is not None and stored[0] == yamlio.checksum(text):
        return cast("dict", stored[1])
    return parse_data(text)


def parse_data(text: str) -> dict:
    """A data file parsed with libyaml's parser where PyYAML has it (the pure-Python one took about 1 s of every run
    for these files; both parse the same YAML)."""
    return yaml.load(text, Loader=LOADER)


@functools.cache
def classes() -> dict[str, Signature]:
    return {cid: _signature(raw, cid) for cid, raw in _classes_doc()["classes"].items()}


@functools.cache
def _rules() -> tuple[tuple[str, re.Pattern[str] | None, re.Pattern[str] | None, str], ...]:
    out = []
    for r in _classes_doc()["rules"]:
        file = re.compile(r["file"]) if "file" in r else None
        text = re.compile(r["text"]) if "text" in r else None
        out.append((r["class"], file, text, r.get("level", "")))
    return tuple(out)


def class_of(level: str, fmt: str, where: str) -> str:
    """The class of an NCCL format string printed at ``level`` from ``where`` (src/file:line)."""
    path = where.rsplit(":", 1)[0]
    for cid, file, text, lvl in _rules():
        if lvl and lvl != level:
            continue
        if (file is None or file.search(path)) and (text is None or text.search(fmt)):
            return cid
    return "nccl-other"


@functools.cache
def _cuda_refinements() -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(r["text"]), r["class"]) for r in _classes_doc()["cuda"])


@functools.cache
def _event_refinements() -> tuple[tuple[str, re.Pattern[str], re.Pattern[str] | None, str], ...]:
    return tuple(
        (r["class"], re.compile(r["text"]), re.compile(r["file"]) if "file" in r else None, r["to"])
        for r in _classes_doc().get("events", ())
    )


def refine_event(cid: str, line: str, where: str = "") -> str:
    """A class refined by what the line's arguments say (the async event NCCL names in its %s), where the rule
    names a source file, only for a line printed there."""
    for source, rx, file, target in _event_refinements():
        if cid == source and rx.search(line) and (file is None or file.search(where)):
            return target
    return cid


def refine(cid: str, line: str) -> str:
    """A class refined by the CUDA error text the line carries ('out of memory' is a GPU memory failure)."""
    if classes()[cid].area not in ("gpu", "host", "program", "net"):
        return cid
    for rx, target in _cuda_refinements():
        if rx.search(line):
            return target
    return cid


def as_role(sig: Signature, role: str) -> Signature:
    return sig if sig.role == role else dataclasses.replace(sig, role=role)


def fill(template: str, groups: dict[str, str]) -> str:
    """``template`` with {name} replaced by the match's named groups (a missing one reads '?')."""
    return re.sub(r"\{(\w+)\}", lambda m: groups.get(m.group(1)) or "?", template)


def _three_columns(name: str) -> tuple[tuple[str, str, str], ...]:
    """The first three columns of each row of a generated TSV table (its # comments and header line skipped)."""
    rows = [line.split("\t") for line in (DATA / name).read_text().splitlines() if not line.startswith("#")]
    return tuple((r[0], r[1], r[2]) for r in rows[1:])  # rows[0]: the header


@functools.cache
def nccl_rows() -> tuple[tuple[str, str, str], ...]:
    """(level, format, where) for each row of nccl-warn.tsv."""
    return _three_columns("nccl-warn.tsv")


@functools.cache
def release_strings() -> tuple[tuple[str, str, str], ...]:
    """(kind, text, first release) of nccl-release-strings.tsv: the source files ('file') and failure texts
    ('format') of the releases with no source tag, read from their libnccl.so.2 (tools/nccl_release_strings.py)."""
    return _three_columns("nccl-release-strings.tsv")


@functools.cache
def nccl_files() -> frozenset[str]:
    """The stems of NCCL's own source files: those that print a WARN or INFO of nccl-warn.tsv (net_ib, socket, ...)
    and those a release's library names (ras/diagnostics_xid.cc in 2.32). Without the extension, since releases
    before 2.4 named them .cu (transport/net_ib.cu)."""
    tagged = {source_stem(where.rsplit(":", 1)[0]) for _lvl, _fmt, where in nccl_rows()}
    return frozenset(tagged | {source_stem(text) for kind, text, _first in release_strings() if kind == "file"})


def source_stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".", 1)[0]


def nccl_warn_formats() -> dict[str, str]:
    """NCCL WARN format string -> where (src/file:line)."""
    return {fmt: where for level, fmt, where in nccl_rows() if level == "WARN"}


# The literal text a format needs before a line without NCCL's prefix is taken for it (bare=True)
BARE_LITERAL = 24


@functools.cache
def nccl_index(level: str) -> tuple[tuple[LazyPattern, str, str, tuple[str, ...], int], ...]:
    """(regex, format, where, its literal parts, literal length; 0 when the format starts with a conversion) for
    each format of ``level`` and each text a release's library holds (level unknown), longest literal text first.
    A regex is compiled only for a line that holds all its literal parts: compiling all 1,700 took 0.2 s of a run
    that read one NCCL warning."""
    out = []
    released = [("?", text, f"libnccl.so.2 {first}") for kind, text, first in release_strings() if kind == "format"]
    for lvl, fmt, where in [*nccl_rows(), *released]:
        if lvl not in (level, "?"):
            continue
        literal = fmt.replace("\\n", "\n").replace('\\"', '"').split("\n")[0]
        parts = CONVERSION.split(literal)
        words = tuple(p.strip() for p in parts if p.strip())
        if sum(map(len, words)) < 8:  # "%s" alone or nearly: names nothing
            continue
        lead = r"\s*" if parts[0].strip() else ".*?"
        rx = LazyPattern(lead + ".*?".join(map(re.escape, words)))
        size = sum(len(p) for p in parts)
        out.append((size, rx, fmt, where, words, size if parts[0].strip() else 0))
    out.sort(key=lambda t: -t[0])
    return tuple(t[1:] for t in out)


@functools.lru_cache(maxsize=4096)
def nccl_source(text: str, level: str = "WARN", bare: bool = False) -> tuple[str, str, str] | None:
    """(format, src/file:line, class) of the NCCL line that printed ``text`` (the part after 'NCCL WARN ');
    ``bare``: text without NCCL's prefix, taken only for a format that starts with BARE_LITERAL characters."""
    rows: Sequence[tuple] = nccl_index(level)
    if bare:
        index = _bare_index(level)
        by_word = index.get(text.split(None, 1)[0] if text.strip() else "", ())
        rows = sorted(by_word + index[""], key=lambda r: r[5]) if by_word else index[""]
    for rx, fmt, where, words, *_ in rows:
        if all(w in text for w in words) and rx.match(text):
            return fmt, where, class_of(level, fmt, where)
    return None


@functools.cache
def _bare_index(level: str) -> dict[str, tuple[tuple[LazyPattern, str, str, tuple[str, ...], int, int], ...]]:
    """The formats a bare text may be taken for (those whose literal start is BARE_LITERAL long), by their
    first word, so that an error line of another program is not matched against every format; under "" the
    few whose first word runs into a conversion ("ibv_%s"), tried for every text. Each row ends with its
    place in nccl_index, so that the two lists merge in nccl_index's order (longest first)."""
    out: dict[str, list] = {"": []}
    for pos, row in enumerate(nccl_index(level)):
        head = row[1].split("%", 1)[0]
        if row[4] >= BARE_LITERAL:
            out.setdefault(head.split(None, 1)[0] if " " in head.strip() else "", []).append((*row, pos))
    return {word: tuple(rows) for word, rows in out.items()}
