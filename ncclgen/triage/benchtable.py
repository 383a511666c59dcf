"""nccl-tests' output: its results table, device list and summary (NVIDIA/nccl-tests src/common.cu, src/util.cu).

nodes.Facts reads each line with these: a row shows the run got past NCCL init, the device list names the
hosts, two summaries close together are processes that each ran a test of their own, and a row whose '#wrong'
column is above zero is a collective that returned wrong data (no error line says so).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .reader import Line

# A row of nccl-tests' results table (NVIDIA/nccl-tests src/common.cu: size, count, type, redop, root, times):
# collectives ran, so the run got past NCCL init even when the excerpt ends before "# Avg bus bandwidth".
# NCCL 1's tests print "bytes N type op" rows ("100 100 char sum 0.038 ..."). The table's banner ("out-of-place
# in-place") with no row after it: the first collective never returned, or the excerpt ends there.
TYPES = r"(?:float|half|bfloat16|double|char|u?int(?:8|32|64)?|fp8_\w+|f8e\w+)"  # the data types a row names
BENCH_ROW = re.compile(r"^(?:\S*[:>]\s*)?\s*\d+\s+\d+\s+" + TYPES + r"\s+\w+\s+(?:-?\d+\s+)?[\d.]+\s")
BENCH_BANNER = re.compile(r"out-of-place\s+in-place|^(?:\S*[:>]\s*)?# nThread \d+ nGpus \d+ minBytes")
# nccl-tests' device list (src/common.cu: "#  Rank %2d Group %2d Pid %6d on %10s device %2d [...] NAME"); rccl-tests'
# own form the same
BENCH_RANK = re.compile(r"^(?:\S*[:>]\s*)?#\s+Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?P<host>\S+)\s+device")
TABLE_STOPS = "nccl-tests printed result rows and no closing '# Avg bus bandwidth' line"  # rows, no average
SUMMARY_GAP = 4  # lines between two nccl-tests summaries with no header or table between ('# Out of bounds', '#')
# The summary's verdict (nccl-tests src/util.cu, and src/common.cu before 2.14: '# Out of bounds values : %d %s'
# with the count of wrong elements and OK or FAILED)
OUT_OF_BOUNDS = re.compile(r"Out of bounds values : (\d+) FAILED")


TYPE = re.compile(TYPES + "$")
# A count printed with '%6g': digits, or one digit, a fraction and an exponent past a million. Times and
# bandwidths are printed with a fixed number of decimals, and earlier releases' maximum error with an exponent
# of its own sign ('2e-07'), so neither reads as one.
COUNT = re.compile(r"\d+|\d(?:\.\d+)?e\+\d+")
# Before 2.13 a row had no root column and each half ended with the largest difference, printed '%5.0le'
# ('2e-07'; 8274cb4 src/common.cu): where a later row has its busbw, such a row has that maximum error.
MAX_ERROR = re.compile(r"\d(?:\.\d+)?e[-+]\d+")
PER_ITERATION = 18  # values after the type where each half also prints i_min, i_max, i_p99 and i_cv%


def wrong(text: str) -> bool:
    """A result row whose out-of-place or in-place '#wrong' counts wrong elements, or the summary's FAILED verdict.

    The row (nccl-tests src/util.cu writeBenchmarkLineBody, 2.19.6): size, count, type, redop, root, then for each
    half time, algbw, busbw and #wrong (with -R per-iteration timing, four more each), then a timestamp where one is
    asked for. Since 2.13 (commit 51af557, 'Data corruption errors now reported in number of wrong elements instead
    of max delta') #wrong is a count; before, that column held the largest difference ('2e-07', within tolerance).
    """
    if "Out of bounds" in text:
        return bool((m := OUT_OF_BOUNDS.search(text)) and int(m.group(1)) > 0)
    words = text.split()
    t = next((i for i, w in enumerate(words) if TYPE.match(w)), None)
    if t is None:
        return False
    if any(MAX_ERROR.fullmatch(w) for w in words[t + 3 : t + 6]):
        # a row of a release before 2.13 (no root column; all_gather's rows no redop either): each half's largest
        # difference, which only a wrong result takes to a whole unit (2e-07 is rounding)
        return any(MAX_ERROR.fullmatch(w) and float(w) >= 1 for w in words[t + 3 :])
    half = 8 if len(words) - t - 1 >= PER_ITERATION else 4
    counts = [words[j] for j in (t + 6, t + 6 + half) if j < len(words)]
    return any(COUNT.fullmatch(w) and float(w) >= 1 for w in counts)


MAX_ENTRIES = 1024  # files (start lines, summaries) or hosts kept


class Bench:
    """What nccl-tests' lines say over all the logs: it started (its start line or table banner), printed result rows,
    ran as separate processes, counted wrong results, and which hosts its device list names."""

    def __init__(self) -> None:
        self.banner = False  # nccl-tests printed its start line or its results table's banner
        self.rows = False  # nccl-tests printed a result row (its closing average line is a success)
        self.summaries: dict[str, int] = {}  # file -> line number of its last "# Avg bus bandwidth"
        self.starts: dict[str, bool] = {}  # file -> a result row since its last start line ('# nThread ...')
        self.twin: Line | None = None  # a start or summary line right after another: processes that each ran a test
        self.twin_what = ""
        self.wrong: Line | None = None  # the first row (or summary) counting wrong results
        self.hosts: set[str] = set()  # hosts the device list ('#  Rank 0 Group 0 Pid 1 on HOST device') names

    def add(self, line: Line) -> bool:
        """Read one line; True for a result row (the run got past NCCL init)."""
        text = line.text
        row = bool(BENCH_ROW.search(text))
        if row:
            self.rows = True
            if line.file in self.starts:
                self.starts[line.file] = True
            self.wrong = self.wrong or (line if wrong(text) else None)
        elif ("out-of-place" in text or "# nThread" in text) and BENCH_BANNER.search(text):
            self.banner = True
            if "# nThread" in text:
                self._start(line)
        if " Pid " in text and (b := BENCH_RANK.match(text)) and len(self.hosts) < MAX_ENTRIES:
            self.hosts.add(b.group("host"))
        if "Out of bounds values" in text and wrong(text):
            self.wrong = self.wrong or line
        if "Avg bus bandwidth" in text:
            self._summary(line)
        return row

    def _start(self, line: Line) -> None:
        """nccl-tests prints its start line only from its main process (src/util.cu; every process is the main one
        where MPI does not tell it its rank): a second one in a file before any result row is a second process that
        runs a test of its own, not a second test (whose rows would come between)."""
        if self.starts.get(line.file) is False and self.twin is None:
            self.twin, self.twin_what = line, "two start lines ('# nThread'), no result row between"
        if len(self.starts) < MAX_ENTRIES or line.file in self.starts:
            self.starts[line.file] = False

    def _summary(self, line: Line) -> None:
        """The summary comes once, from the main process (src/common.cu, PRINT on is_main_proc): a second summary
        within a few lines of the first is a second process that ran its own test, not a second test (whose header
        and table would come between)."""
        last = self.summaries.get(line.file)
        if last is not None and line.lineno - last <= SUMMARY_GAP and self.twin is None:
            self.twin, self.twin_what = line, "two result summaries, no table between"
        if len(self.summaries) < MAX_ENTRIES or line.file in self.summaries:
            self.summaries[line.file] = line.lineno
