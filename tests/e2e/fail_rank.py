"""Per-rank program for the failure test: one rank fails, the others would wait for a long time.

Usage (as a torchrun worker): python3 fail_rank.py OUT_DIR MARKER
The rank on node2 (SLURMD_NODENAME) with LOCAL_RANK 0 exits 3 after 3 s; every other rank sleeps 300 s, far
past the test's 60 s bound, so only the launcher's failure handling can end the job in time.
MARKER is unused here: it only makes this job's command lines findable with `pgrep -f` afterwards.
Each rank first writes OUT_DIR/started-<node>-<local rank> so the test knows all four really ran.
The failing rank writes its own exit time (time.time()) to OUT_DIR/failed-at just before it exits:
the fail-fast test measures from there to the job's end as slurmctld recorded it.
"""

import os
import sys
import time

# (SLURMD_NODENAME, LOCAL_RANK): by node name, since c10d's group rank follows arrival order.
FAILING = ("node2", "0")
EXIT_CODE = 3


def main(out_dir: str) -> int:
    me = (os.environ["SLURMD_NODENAME"], os.environ["LOCAL_RANK"])
    open(os.path.join(out_dir, f"started-{me[0]}-{me[1]}"), "w").close()
    if me == FAILING:
        time.sleep(3)
        with open(os.path.join(out_dir, "failed-at.tmp"), "w") as f:
            f.write(repr(time.time()))
        os.replace(os.path.join(out_dir, "failed-at.tmp"), os.path.join(out_dir, "failed-at"))
        return EXIT_CODE
    time.sleep(300)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
