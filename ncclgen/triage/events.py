"""One kept log line as an event: which signature it matches, when, on which node and rank.

The prefixes read are those the logs really carry: NCCL's `host:pid:tid [dev]`, PyTorch's
`[rankN]:[E0429 13:55:49.384 ...]` and `[Rank N]`, Ray's `(WorkerDict pid=830, ip=10.0.0.2)`,
srun's `srun: error: NODE: task N:`, ncclgen's `node NAME`, and ISO-8601 or glog time stamps.
Times carry no year in glog form, so they sort as month-day-time, which is enough within one job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import catalogue
from .reader import Line

NCCL_PREFIX = re.compile(r"^\s*(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\]")
RAY_PREFIX = re.compile(r"\((?:\w+) pid=(?P<pid>\d+)(?:, ip=(?P<ip>[\d.]+))?\)")
TORCH_RANK = re.compile(r"\[rank(?P<rank>\d+)\]:|\[(?:PG [^\]]*)?Rank (?P<rank2>\d+)\]|\brank\s*:\s*(?P<rank3>\d+)")
SRUN = re.compile(r"srun: error: (?P<node>[\w.-]+): tasks? (?P<task>\d+)")
NODE_WORD = re.compile(r"\bnode (?P<node>[A-Za-z0-9][\w.-]*)")
HOST_FIELD = re.compile(r"\bhost\s*:\s*(?P<node>[A-Za-z0-9][\w.-]*)")
ISO = re.compile(r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<t>\d\d:\d\d:\d\d(?:[.,]\d+)?)")
# glog/c10 form: [E321 02:07:08.408271257 ...] is March 21 (month without a leading zero), E1021 October 21
GLOG = re.compile(r"\[?[IWEF](?P<mo>[01]?\d)(?P<d>[0-3]\d) (?P<t>\d\d:\d\d:\d\d(?:\.\d+)?)")
ERROR_LINE = re.compile(
    r"NCCL WARN|Traceback \(most recent call last\)|\b\w*(?:Error|Exception): |srun: error:|slurmstepd: error:|\bFATAL\b|\bERROR\b"
)
REGENERATE = re.compile(r"Regenerate: (?P<argv>ncclgen .*)$")


@dataclass
class Event:
    line: Line
    sig: catalogue.Signature | None  # None: an error line no signature matches
    groups: dict[str, str] = field(default_factory=dict)
    time: str | None = None  # sortable: MM-DD HH:MM:SS.ffffff
    node: str | None = None
    rank: str | None = None
    seq: int = 0  # reading order

    @property
    def where(self) -> str:
        return f"{self.line.file}:{self.line.lineno}"


def timestamp(text: str) -> str | None:
    m = ISO.search(text) or GLOG.search(text)
    if not m:
        return None
    t = m.group("t").replace(",", ".")
    whole, _, frac = t.partition(".")
    return f"{int(m.group('mo')):02d}-{m.group('d')} {whole}.{(frac + '000000')[:6]}"


def locate(text: str, groups: dict[str, str]) -> tuple[str | None, str | None]:
    """(node, rank) named by the line's prefixes or the signature's own groups."""
    node = groups.get("node")
    rank = None
    if m := NCCL_PREFIX.search(text):
        node = node or m.group("host")
    if m := RAY_PREFIX.search(text):
        node = node or m.group("ip")
    if m := SRUN.search(text):
        node, rank = node or m.group("node"), m.group("task")
    if m := TORCH_RANK.search(text):
        rank = m.group("rank") or m.group("rank2") or m.group("rank3")
    if node is None and (m := NODE_WORD.search(text) or HOST_FIELD.search(text)):
        node = m.group("node")
    return node, rank


def classify(line: Line, seq: int) -> Event | None:
    """The event for ``line``: the first signature whose key and regex match, else an error line, else None."""
    text = line.text
    for sig in catalogue.signatures():
        if any(k in text for k in sig.keys) and (m := sig.match.search(text)):
            groups = {k: v for k, v in m.groupdict().items() if v is not None}
            node, rank = locate(text, groups)
            return Event(line, sig, groups, timestamp(text), node, rank, seq)
    if ERROR_LINE.search(text):
        node, rank = locate(text, {})
        return Event(line, None, {}, timestamp(text), node, rank, seq)
    return None
