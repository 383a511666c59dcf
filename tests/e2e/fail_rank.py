"""Per-rank program for the failure test: one rank fails, the others would wait for a long time.

Usage (as a torchrun worker): python3 fail_rank.py OUT_DIR MARKER
The rank on SLURM_NODEID 1 with LOCAL_RANK 0 exits 3 after 3 s; every other rank sleeps 300 s, far
past the test's 60 s bound, so only the launcher's failure handling can end the job in time.
MARKER is unused here: it only makes this job's command lines findable with `pgrep -f` afterwards.
Each rank first writes OUT_DIR/started-<node>-<local rank> so the test knows all four really ran.
"""

import os
import sys
import time

FAILING = ("1", "0")  # (SLURM_NODEID, LOCAL_RANK); c10d's group rank follows arrival order instead
EXIT_CODE = 3


def main(out_dir: str) -> int:
    me = (os.environ["SLURM_NODEID"], os.environ["LOCAL_RANK"])
    open(os.path.join(out_dir, f"started-{me[0]}-{me[1]}"), "w").close()
    if me == FAILING:
        time.sleep(3)
        return EXIT_CODE
    time.sleep(300)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
