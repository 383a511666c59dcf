"""nccl-tests' output: its results table, device list and summary (NVIDIA/nccl-tests src/common.cu, src/util.cu).

nodes.Facts reads each line with these: a row shows the run got past NCCL init, the device list names the
hosts, two summaries close together are processes that each ran a test of their own, and a row whose '#wrong'
column is above zero is a collective that returned wrong data (no error line says so).
"""

from __future__ import annotations

import re

# A row of nccl-tests' results table (NVIDIA/nccl-tests src/common.cu: size, count, type, redop, root, times):
# collectives ran, so the run got past NCCL init even when the excerpt ends before "# Avg bus bandwidth".
# NCCL 1's tests print "bytes N type op" rows ("100 100 char sum 0.038 ..."). The table's banner ("out-of-place
# in-place") with no row after it: the first collective never returned, or the excerpt ends there.
BENCH_ROW = re.compile(
    r"^(?:\S*[:>]\s*)?\s*\d+\s+\d+\s+(?:float|half|bfloat16|double|char|u?int(?:8|32|64)?|fp8_\w+|f8e\w+)\s+\w+\s+(?:-?\d+\s+)?[\d.]+\s"
)
BENCH_BANNER = re.compile(r"out-of-place\s+in-place|^(?:\S*[:>]\s*)?# nThread \d+ nGpus \d+ minBytes")
# nccl-tests' device list (src/common.cu: "#  Rank %2d Group %2d Pid %6d on %10s device %2d [...] NAME"); rccl-tests'
# own form the same
BENCH_RANK = re.compile(r"^(?:\S*[:>]\s*)?#\s+Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?P<host>\S+)\s+device")
TABLE_STOPS = "nccl-tests printed result rows and no closing '# Avg bus bandwidth' line"  # rows, no average
SUMMARY_GAP = 4  # lines between two nccl-tests summaries with no header or table between ('# Out of bounds', '#')
# The summary's verdict (nccl-tests src/util.cu, and src/common.cu before 2.14: '# Out of bounds values : %d %s'
# with the count of wrong elements and OK or FAILED)
OUT_OF_BOUNDS = re.compile(r"Out of bounds values : (\d+) FAILED")


TYPE = re.compile(r"(?:float|half|bfloat16|double|char|u?int(?:8|32|64)?|fp8_\w+|f8e\w+)$")
# A count printed with '%6g': digits, or one digit, a fraction and an exponent past a million. Times and
# bandwidths are printed with a fixed number of decimals, and earlier releases' maximum error with an exponent
# of its own sign ('2e-07'), so neither reads as one.
COUNT = re.compile(r"\d+|\d(?:\.\d+)?e\+\d+")
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
    half = 8 if len(words) - t - 1 >= PER_ITERATION else 4
    counts = [words[j] for j in (t + 6, t + 6 + half) if j < len(words)]
    return any(COUNT.fullmatch(w) and float(w) >= 1 for w in counts)
