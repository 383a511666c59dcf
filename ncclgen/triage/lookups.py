"""c10d's failed reverse lookups of its clients, timed by their own lines: a set-up they slowed, with no error.

c10d's store names each client by getnameinfo for its log lines (torch/csrc/distributed/c10d/socket.cpp); where the
resolver times out (err=-3, EAI_AGAIN), each lookup waits for the resolver's timeout, five seconds per try by default
and at most 30 (resolv.conf(5): timeout, attempts), before the next client is taken (pytorch#159007: one line every
ten seconds, a set-up of minutes). So the sign is a train of such lines from one process, each a resolver timeout
after the one before: two lines minutes apart are two stores (torchrun's agent, then the ranks') or a slow start-up
between them, not a slow lookup. A failure that comes at once (err=-2, EAI_NONAME) costs nothing, and lines without
a time show nothing of how long it took: those stay a note.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from . import catalogue, events
from .events import Event

LOOKUP = "reverse-dns-slow"
SLOWED = "reverse-dns-slowed"
RESOLVER_TIMEOUT = "-3"  # EAI_AGAIN
GAP_S = (4.0, 31.0)  # one resolver timeout between two lookups' lines: 5 s by default, 30 at most
TRAIN = 3  # lookups in a row, each one resolver timeout after the one before


def slowed(suspects: Iterable[Event]) -> Event | None:
    """The first lookup of the longest train of timed-out lookups one process printed, TRAIN or more in a row."""
    per: dict[tuple, list[Event]] = {}
    for e in suspects:
        if e.sig and e.sig.id == LOOKUP and e.time and e.groups.get("err") == RESOLVER_TIMEOUT:
            per.setdefault((e.line.file, e.node, e.rank), []).append(e)
    best: list[Event] = []
    for lookups in per.values():
        lookups.sort(key=lambda e: e.seq)
        train = lookups[:1]
        for prev, e in itertools.pairwise(lookups):
            gap = events.seconds(e.time) - events.seconds(prev.time)  # type: ignore[arg-type]
            train = [*train, e] if GAP_S[0] <= gap <= GAP_S[1] else [e]
            best = train if len(train) > len(best) else best
    if len(best) < TRAIN:
        return None
    first = best[0]
    span = events.seconds(best[-1].time) - events.seconds(first.time)  # type: ignore[arg-type]
    groups = {**first.groups, "n": str(len(best)), "span": f"{span:.0f}"}
    return Event(first.line, catalogue.classes()[SLOWED], groups, first.time, first.node, first.rank, first.seq)
