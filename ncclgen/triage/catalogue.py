"""The signatures triage recognises: ncclgen/data/triage/signatures.yaml, loaded once and compiled."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

DATA = Path(__file__).resolve().parent.parent / "data" / "triage"
ROLES = ("root", "suspect", "symptom", "context")


@dataclass(frozen=True)
class Signature:
    id: str
    role: str
    keys: tuple[str, ...]
    match: re.Pattern[str]
    cause: str
    fix: str
    sources: tuple[str, ...]
    then: str = ""
    plan: tuple[tuple[str, str], ...] = field(default=())  # (VAR, note template)
    nccl_warn: str = ""


@functools.cache
def signatures() -> tuple[Signature, ...]:
    doc = yaml.safe_load((DATA / "signatures.yaml").read_text())
    out = []
    for raw in doc["signatures"]:
        if raw["role"] not in ROLES:
            raise ValueError(f"signatures.yaml: {raw['id']}: role {raw['role']!r} is not one of {ROLES}")
        out.append(
            Signature(
                id=raw["id"],
                role=raw["role"],
                keys=tuple(raw["key"]),
                match=re.compile(raw["match"]),
                cause=raw["cause"],
                fix=raw["fix"],
                sources=tuple(raw["sources"]),
                then=raw.get("then", ""),
                plan=tuple((p["var"], p["note"]) for p in raw.get("plan", ())),
                nccl_warn=raw.get("nccl_warn", ""),
            )
        )
    return tuple(out)


def fill(template: str, groups: dict[str, str]) -> str:
    """``template`` with {name} replaced by the match's named groups (a missing one reads '?')."""
    return re.sub(r"\{(\w+)\}", lambda m: groups.get(m.group(1)) or "?", template)


@functools.cache
def nccl_warn_formats() -> dict[str, str]:
    """NCCL WARN format string -> where (src/file:line), from nccl-warn.tsv."""
    table: dict[str, str] = {}
    for line in (DATA / "nccl-warn.tsv").read_text().splitlines():
        if line.startswith("#") or line.startswith("format\t"):
            continue
        fmt, where = line.split("\t")[:2]
        table[fmt] = where
    return table


@functools.cache
def nccl_warn_index() -> tuple[tuple[re.Pattern[str], str, str], ...]:
    """(regex, format, where) for each WARN format, longest first, to name an uncatalogued warning."""
    out = []
    for fmt, where in sorted(nccl_warn_formats().items(), key=lambda kv: -len(kv[0])):
        literal = fmt.replace("\\n", "\n").replace('\\"', '"').split("\n")[0]
        parts = re.split(r"%[-+ #0]*\d*(?:\.\d+)?(?:l{0,2}|z|h{0,2})[diouxXsfcpg]", literal)
        if sum(len(p) for p in parts) < 12:  # "%s" alone or nearly: names nothing
            continue
        out.append((re.compile(".*?".join(re.escape(p) for p in parts)), fmt, where))
    return tuple(out)


def nccl_source(text: str) -> tuple[str, str] | None:
    """(format, src/file:line) of the NCCL WARN that printed ``text`` (the part after 'NCCL WARN ')."""
    for rx, fmt, where in nccl_warn_index():
        if rx.match(text):
            return fmt, where
    return None
