"""Per-rank program for the requeue test: a stand-in for a training loop that saves on SIGTERM.

Usage (as a torchrun worker): python3 requeue_rank.py OUT_DIR
Writes OUT_DIR/started-<restart>-<node>-<local rank> (restart = SLURM_RESTART_COUNT, 0 on the first
run), then sleeps. On SIGTERM, which the job script sends to every step when Slurm's time-limit
warning arrives, it writes OUT_DIR/saved-<restart>-<node>-<local rank> (its "checkpoint") and exits 0.
"""

import os
import signal
import sys
import time


def main(out_dir: str) -> int:
    me = f"{os.environ.get('SLURM_RESTART_COUNT', '0')}-{os.environ['SLURMD_NODENAME']}-{os.environ['LOCAL_RANK']}"

    def save(_sig, _frame):
        open(os.path.join(out_dir, f"saved-{me}"), "w").close()
        sys.exit(0)

    signal.signal(signal.SIGTERM, save)
    open(os.path.join(out_dir, f"started-{me}"), "w").close()
    time.sleep(600)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
