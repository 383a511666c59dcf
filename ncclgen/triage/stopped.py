"""A rank that left the training loop one process-group timeout before the others timed out in a collective:
the stop decision was taken on some ranks only, and the rest waited in their next collective for it.

A training loop's stop line ('Time limit of 1d reached. Stopping training.', Lightning's '`Trainer.fit` stopped:
`max_epochs=N` reached.') is no failure by itself: every healthy run prints one. It is the cause only where the
first watchdog timeout comes Timeout(ms) after it (within SLACK_S): the ranks that stayed in the loop entered
their next collective right after it, and the watchdog fired a timeout later (anemoi-core#1064: a stop check
under rank_zero_only). Times are the lines' own (events.timestamp: month, day, time of day).
"""

from __future__ import annotations

from . import catalogue, events
from .absent import Timeouts
from .events import Event

STOP = "training-stop"
SLACK_S = 120.0  # between the stop line plus the timeout and the first timeout line


def finding(stop: Event | None, timeouts: Timeouts) -> Event | None:
    """The stop line as a suspect that explains the timeouts, where their times say it; else None."""
    if stop is None or stop.time is None:
        return None
    start = events.seconds(stop.time)
    for work in timeouts.works.values():
        first = work.first
        if first.time is None or not work.ms:
            continue
        waited = events.seconds(first.time) - start
        if abs(waited - int(work.ms) / 1000) <= SLACK_S:
            sig = catalogue.as_role(stop.sig, "suspect")  # type: ignore[arg-type]
            return Event(stop.line, sig, stop.groups, stop.time, stop.node, stop.rank, stop.seq)
    return None
