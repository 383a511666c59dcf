"""PyTorch's per-rank progress counters at a failure: the ranks of a process group not in the collective the
others wait in (the flight recorder's verdict, read from text logs when no dump was kept).

ProcessGroupNCCL prints the group's last enqueued and last completed work sequence numbers when its watchdog
catches a timeout or an error ('Exception (either an error or timeout) detected by watchdog at work: S, last
enqueued NCCL work: E, last completed NCCL work: C.'; 'Timeout at NCCL work: S, ...' in torch 2.2-2.4) and when
another rank's timeout asks it to dump ('Received a dump signal due to a collective timeout from rank R ... Last
enqueued NCCL work: E, last completed NCCL work: C.', HeartbeatMonitor::getNCCLWatchdogTimeoutErrorMsg), all in
pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp. The ranks of one group call the same
collectives in the same order, so at the failure a rank with nothing pending while others wait, or one that
enqueued a different number of collectives than the rest, is out of step. The periodic 'NCCL Work update
periodically' line is progress while running, not a failure's state: it is not read.
"""

from __future__ import annotations

import re

from . import catalogue
from .events import Event, locate, when
from .reader import Line

COUNTERS = re.compile(
    r"[Ll]ast enqueued (?:NCCL )?work:? (?P<enq>-?\d+), last (?:started work: -?\d+, )?completed (?:NCCL )?(?:work:? )?"
    r"(?P<done>-?\d+)"
)
GROUP = re.compile(r"\[PG ID (?P<id>\d+)(?: PG GUID (?P<guid>\S+?))?(?= Rank)")
MAX_RANKS = 4096


class Progress:
    """The last counters each (process group, rank) printed at a failure (bounded)."""

    def __init__(self) -> None:
        self.ranks: dict[str, dict[str, tuple[int, int, Event]]] = {}

    def add(self, line: Line, seq: int) -> None:
        if "nqueued" not in line.text or "update periodically" in line.text:
            return
        m = COUNTERS.search(line.text)
        node, rank = locate(line.text, {})
        if m is None or rank is None:
            return
        g = GROUP.search(line.text)
        group = f"{g.group('id')}/{g.group('guid') or ''}" if g else "0/"  # without a prefix: the default group
        ranks = self.ranks.setdefault(group, {})
        if rank in ranks or len(ranks) >= MAX_RANKS:
            return  # the first report at the failure
        ev = Event(line, None, {}, when(line), node, rank, seq)
        ranks[rank] = (int(m.group("enq")), int(m.group("done")), ev)

    def finding(self) -> Event | None:
        """The first out-of-step rank's line, as a ranks-out-of-step root, or None when the ranks agree."""
        for ranks in self.ranks.values():
            if len(ranks) < 2:
                continue
            if (odd := _odd(ranks)) is None:
                continue
            who, text = odd
            first = min((ranks[r][2] for r in who), key=lambda ev: ev.seq)
            sig = catalogue.classes()["ranks-out-of-step"]
            return Event(first.line, sig, {"text": text}, first.time, first.node, first.rank, first.seq)
        return None


def _odd(ranks: dict[str, tuple[int, int, Event]]) -> tuple[list[str], str] | None:
    """(the out-of-step ranks, what shows it): ranks idle while others wait, else the fewest ranks that
    enqueued another count than the rest (ties: the ranks behind)."""
    waiting = sorted((r for r, (e, d, _) in ranks.items() if d < e), key=int)
    idle = sorted((r for r, (e, d, _) in ranks.items() if d >= e), key=int)
    if waiting and idle:
        text = (
            f"rank {_names(idle)} had no collective pending (last enqueued {_counts(ranks, idle)}, all completed) "
            f"while rank {_names(waiting)} waited in work {_counts(ranks, waiting)}"
        )
        return idle, text
    by_count: dict[int, list[str]] = {}
    for r, (e, _d, _ev) in ranks.items():
        by_count.setdefault(e, []).append(r)
    if len(by_count) < 2:
        return None
    count, odd = min(by_count.items(), key=lambda kv: (len(kv[1]), kv[0]))
    rest = sorted((r for r in ranks if r not in odd), key=int)
    odd = sorted(odd, key=int)
    text = f"rank {_names(odd)} last enqueued work {count}, rank {_names(rest)} work {_counts(ranks, rest)}"
    return odd, text


def _names(ranks: list[str]) -> str:
    return ", ".join(ranks[:8]) + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")


def _counts(ranks: dict[str, tuple[int, int, Event]], who: list[str]) -> str:
    return "/".join(str(c) for c in sorted({ranks[r][0] for r in who}))
