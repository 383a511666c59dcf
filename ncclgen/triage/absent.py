"""The ranks of a process group that printed no timeout in the collective the others timed out in: the ranks the
others waited for, named from text logs when no flight-recorder dump was kept.

ProcessGroupNCCL's watchdog prints '[PG ID P ... Rank R] Watchdog caught collective operation timeout:
WorkNCCL(SeqNum=S, OpType=OP, NumelIn=I, NumelOut=O, Timeout(ms)=T)' on each rank whose work timed out (WorkNCCL's
operator<<, pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp). An all-gather's output holds one
input per rank and a reduce-scatter's input one output per rank, so O/I (I/O) is the group's size. A rank of the
group with no timeout of its own at S never reached that collective (it failed, hung or was busy in work of its
own) or its log is not among the inputs. Other collectives do not show the size, and the highest rank in a pasted
excerpt is no bound worth blaming a rank on: those are left to the flight recorder.
PyTorch's flight-recorder analyser reasons the same way on dumps (torch/distributed/flight_recorder/components/
utils.py, 'Not all ranks joining collective').
"""

from __future__ import annotations

from dataclasses import field

from ..record import dataclass
from . import catalogue
from .events import Event, order

MAX_WORKS = 64  # (group, SeqNum, OpType) kept
MAX_RANKS = 4096
MAX_NAMED = 16  # ranks a finding lists by number


@dataclass
class Work:
    """One collective some ranks of a group timed out in."""

    first: Event  # the first timeout line read
    size: int | None  # the group's size, where the element counts show it
    ms: str | None  # the timeout
    ranks: set[int] = field(default_factory=set)


class Timeouts:
    """The ranks that timed out in each (process group, SeqNum, OpType), bounded; and each SeqNum's timeouts by
    OpType, whatever the line says of its group and rank (for desync)."""

    def __init__(self) -> None:
        self.works: dict[tuple[str, str, str], Work] = {}
        self.ops: dict[str, dict[str, list[Event]]] = {}  # SeqNum -> OpType -> events

    def add(self, ev: Event) -> None:
        """A watchdog-timeout event (its signature's groups: the group and rank before the text, the WorkNCCL fields)."""
        g = ev.groups
        if len(self.ops) < MAX_WORKS:
            same = self.ops.setdefault(g.get("seq", ""), {}).setdefault(g.get("op", ""), [])
            if len(same) < MAX_WORKS:
                same.append(ev)
        if not g.get("grank") or not g.get("seq"):
            return
        key = (g.get("pg") or "0", g["seq"], g.get("op", ""))
        if key not in self.works and len(self.works) >= MAX_WORKS:
            return
        work = self.works.setdefault(key, Work(ev, _size(g), g.get("ms")))
        if len(work.ranks) < MAX_RANKS:
            work.ranks.add(int(g["grank"]))

    @property
    def p2p(self) -> bool:
        """Point-to-point work timed out (pipeline stages): it advances the counters of the ranks in it only."""
        return any(op in ("SEND", "RECV", "RECVANYSOURCE") for by_op in self.ops.values() for op in by_op)

    def desync(self) -> Event | None:
        """Ranks that timed out at one SeqNum in different collectives called different collectives (the flight
        recorder's COLLECTIVE_TYPE_MISMATCH): the collective fewest ranks were in is the odd one out, as a finding
        at its first line."""
        for seq, by_op in self.ops.items():
            if len(by_op) > 1:
                odd = min(by_op.values(), key=lambda evs: (len(evs), order(evs[0])))[0]
                ops = ", ".join(f"{op} on {len(evs)}" for op, evs in sorted(by_op.items()))
                sig = catalogue.classes()["watchdog-op-mismatch"]
                groups = {**odd.groups, "text": f"SeqNum {seq}: {ops}"}
                return Event(odd.line, sig, groups, odd.time, odd.node, odd.rank, odd.seq)
        return None

    def finding(self) -> Event | None:
        """The first collective two or more ranks of its group timed out in while others printed nothing, as a
        finding at its first timeout line; None when no group's size is known or every rank of it timed out."""
        for (pg, seq, op), work in self.works.items():
            size, ranks = work.size, work.ranks
            if size is None or len(ranks) < 2 or max(ranks) >= size or len(ranks) == size:
                continue
            missing = [r for r in range(size) if r not in ranks]
            wait = f" for {int(work.ms) // 1000} s" if work.ms else ""
            text = (
                f"{_names(sorted(ranks))} of the {size}-rank group {pg} waited{wait} in {op} SeqNum {seq}; "
                f"{_names(missing)} printed no timeout there"
            )
            sig = catalogue.classes()["ranks-absent"]
            first = work.first
            return Event(first.line, sig, {"text": text}, first.time, first.node, first.rank, first.seq)
        return None


def _size(g: dict[str, str]) -> int | None:
    """The group's size from an all-gather's or reduce-scatter's element counts (None for other collectives)."""
    nin, nout, op = g.get("nin"), g.get("nout"), g.get("op", "")
    if not nin or not nout or int(nin) == 0 or int(nout) == 0:
        return None
    big, small = (int(nout), int(nin)) if "ALLGATHER" in op else (int(nin), int(nout))
    if "ALLGATHER" not in op and "REDUCE_SCATTER" not in op:
        return None
    size, rest = divmod(big, small)
    return size if rest == 0 and 2 <= size <= MAX_RANKS else None


def _names(ranks: list[int]) -> str:
    """'rank 0', 'ranks 0, 3', 'ranks 0-7' or 'ranks 0, 2, 4, ... (40 ranks)'."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if ranks[-1] - ranks[0] == len(ranks) - 1:
        return f"ranks {ranks[0]}-{ranks[-1]}"
    if len(ranks) > MAX_NAMED:
        return "ranks " + ", ".join(map(str, ranks[:MAX_NAMED])) + f", ... ({len(ranks)} ranks)"
    return "ranks " + ", ".join(map(str, ranks))
