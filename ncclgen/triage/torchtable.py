"""torchrun's failure table: the host, rank and time of a failed rank on lines of their own.

torch/distributed/elastic/multiprocessing/errors/__init__.py prints, under ChildFailedError, one block per failed
rank ('time      : 2024-08-20_11:37:36', 'host      : NAME', 'rank      : 4 (local_rank: 0)', 'exitcode  : -9').
The event on the exitcode line takes host and rank from the lines above it; the ChildFailedError line, which has
no time of its own, takes the table's earliest time: when the agent saw a rank fail, which can be long before
the other ranks' time-stamped timeouts.
"""

from __future__ import annotations

import re

from .events import Event
from .reader import Line

CHILD_FAILED = "elastic-child-failed"  # torchrun's ChildFailedError, above its table
FIELD = re.compile(r"^\s*(?:\[[^\]]*\]:?\s*)?(?P<field>host|rank|time)\s{2,}: (?P<value>\S+)")
SPAN = 6  # lines from a field to the event it belongs to
# time.strftime('%Y-%m-%d_%H:%M:%S'), the table's form
TIME = re.compile(r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)_(?P<t>\d\d:\d\d:\d\d)$")
TABLE_SPAN = 40  # lines from ChildFailedError to the times of its table


class Table:
    def __init__(self) -> None:
        self.fields: dict[str, tuple[str, int, str]] = {}  # field -> (file, line, value)
        self.child: Event | None = None  # the last ChildFailedError read

    def read(self, line: Line) -> tuple[bool, Event | None]:
        """(whether the line is a table field, the ChildFailedError it made earlier in time, if any)."""
        m = FIELD.match(line.text)
        if m is None:
            return False, None
        self.fields[m.group("field")] = (line.file, line.lineno, m.group("value"))
        ev, t = self.child, TIME.match(m.group("value"))
        if ev is None or t is None or ev.line.file != line.file or not 0 < line.lineno - ev.line.lineno <= TABLE_SPAN:
            return True, None
        stamp = f"{t.group('mo')}-{t.group('d')} {t.group('t')}.000000"
        if ev.time is not None and stamp >= ev.time:
            return True, None
        ev.time = stamp
        return True, ev

    def fill(self, ev: Event) -> None:
        """Node and rank from the table lines just above the event."""
        if ev.sig is not None and ev.sig.id == CHILD_FAILED:
            self.child = ev
        for fld, attr in (("host", "node"), ("rank", "rank")):
            got = self.fields.get(fld)
            if got and getattr(ev, attr) is None and got[0] == ev.line.file and 0 < ev.line.lineno - got[1] <= SPAN:
                setattr(ev, attr, got[2])
