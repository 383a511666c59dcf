"""Per-rank program for the triage test: one rank is killed with SIGKILL while the others wait in a gloo
collective.

Usage (as a torchrun worker): python3 kill_rank.py OUT_DIR MARKER
Every rank joins a gloo process group and a first all_reduce (so all are up), then the rank on node2
(SLURMD_NODENAME) with LOCAL_RANK 0 writes OUT_DIR/killed-<node> and sends itself SIGKILL, while every
other rank enters a second all_reduce that can only end when a peer goes away. MARKER is unused here: it
only makes this job's command lines findable with `pgrep -f` afterwards.
"""

import os
import signal
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

KILLED = ("node2", "0")


def main(out_dir: str) -> int:
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    t = torch.ones(4)
    dist.all_reduce(t)
    me = (os.environ["SLURMD_NODENAME"], os.environ["LOCAL_RANK"])
    if me == KILLED:
        open(os.path.join(out_dir, f"killed-{me[0]}"), "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    dist.all_reduce(t)  # waits for the killed rank
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
