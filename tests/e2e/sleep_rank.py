"""Per-rank program for the monitor test: sleeps SECONDS so the job lives long enough to be sampled.

Usage (as a torchrun worker): python3 sleep_rank.py SECONDS
"""

import sys
import time

time.sleep(float(sys.argv[1]))
