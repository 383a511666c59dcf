"""Per-rank program for the torchrun end-to-end test: one gloo all-reduce, then a JSON report.

Usage (as a torchrun worker): python3 allreduce.py OUT_DIR
Writes OUT_DIR/rank-<RANK>.json with what the test asserts on: world size, the all-reduce result,
this process's environment and CPU affinity. A JSON file per rank, not log lines, so the test checks
values exactly (commas and `^` in env values included) without parsing interleaved output.
"""

import json
import os
import sys

import torch
import torch.distributed as dist


def main(out_dir: str) -> None:
    # Read before init: torch or gloo must not be what makes the binding look right.
    affinity = sorted(os.sched_getaffinity(0))
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    report = {
        "rank": rank,
        "world_size": world,
        "local_rank": int(os.environ["LOCAL_RANK"]),
        "node": os.environ.get("SLURMD_NODENAME"),
        "allreduce": t.item(),
        "affinity": affinity,
        "env": dict(os.environ),
    }
    dist.destroy_process_group()
    path = os.path.join(out_dir, f"rank-{rank}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(report, f, sort_keys=True)
    os.replace(path + ".tmp", path)  # the test never reads a half-written file


if __name__ == "__main__":
    main(sys.argv[1])
