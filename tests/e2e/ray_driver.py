"""Ray driver for the Ray end-to-end tests, run once on the head node by the rendered sbatch script.

Usage: python3 ray_driver.py OUT_DIR NODES GPUS [hold|fail [MARKER]]
Connects with ray.init() (the script exports RAY_ADDRESS), checks that NODES nodes are alive with GPUS
GPUs in total, then runs GPUS tasks (num_gpus=1, num_cpus=0) that meet at a barrier, so all of them
hold their GPU at the same time and the scheduler must spread them over every (node, GPU) pair. Each
task reports its node, GPU ids, environment and CPU affinity; the driver writes OUT_DIR/ray.json.

With `hold` the driver writes OUT_DIR/holding once the tasks run and then waits far longer than the
failure test allows: only the script's failure handling can end such a job in time. With `fail` it
writes OUT_DIR/holding.json the same way, then its own exit time to OUT_DIR/failed-at and exits 1
(the driver-failure test; the tasks still hold their GPUs). MARKER is unused:
it makes the driver's command line findable with `pgrep -f` afterwards.
"""

import asyncio
import json
import os
import sys
import time

import ray

BARRIER_TIMEOUT_S = 180  # 4 fresh Ray workers on 2 cores start in 5-10 s (lab); generous but bounded
HOLD_S = 600


@ray.remote(num_cpus=0)
class Barrier:
    """Releases every caller once `parties` have arrived (an async actor: callers wait concurrently)."""

    def __init__(self, parties: int):
        self.parties = parties
        self.arrived = 0
        self.all_here = asyncio.Event()

    async def arrive(self) -> int:
        self.arrived += 1
        if self.arrived >= self.parties:
            self.all_here.set()
        await self.all_here.wait()
        return self.arrived

    async def count(self) -> int:
        return self.arrived


@ray.remote(num_gpus=1, num_cpus=0, max_retries=0)
def probe(barrier, hold: bool) -> dict:
    report = {  # read before anything else runs in this worker
        "affinity": sorted(os.sched_getaffinity(0)),
        "node": os.environ.get("SLURMD_NODENAME"),
        "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
        "env": dict(os.environ),
    }
    ray.get(barrier.arrive.remote(), timeout=BARRIER_TIMEOUT_S)
    if hold:
        time.sleep(HOLD_S)
    return report


def _write(path: str, data) -> None:
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(data, f, sort_keys=True)
    os.replace(path + ".tmp", path)  # the test never reads a half-written file


def main(out_dir: str, nodes: int, gpus: int, mode: str) -> int:
    hold = mode in ("hold", "fail")
    fail = mode == "fail"
    ray.init()
    alive = [n for n in ray.nodes() if n["Alive"]]
    total_gpus = ray.cluster_resources().get("GPU", 0)
    print(f"ray_driver: {len(alive)} nodes alive, {total_gpus:g} GPUs", flush=True)
    if len(alive) != nodes or total_gpus != gpus:
        print(f"ray_driver: ERROR: want {nodes} nodes and {gpus} GPUs", file=sys.stderr, flush=True)
        return 1
    barrier = Barrier.remote(gpus)
    refs = [probe.remote(barrier, hold) for _ in range(gpus)]
    if hold:
        deadline = time.monotonic() + BARRIER_TIMEOUT_S
        while ray.get(barrier.count.remote()) < gpus:
            if time.monotonic() > deadline:
                print("ray_driver: ERROR: tasks never all started", file=sys.stderr, flush=True)
                return 1
            time.sleep(0.2)
        _write(os.path.join(out_dir, "holding.json"), {"pid": os.getpid()})
        if fail:
            time.sleep(1)
            _write(os.path.join(out_dir, "failed-at"), time.time())
            return 1
    reports = ray.get(refs, timeout=BARRIER_TIMEOUT_S + (HOLD_S if hold else 0))
    _write(os.path.join(out_dir, "ray.json"), {"nodes_alive": len(alive), "gpus": total_gpus, "tasks": reports})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), (sys.argv[4:5] or [""])[0]))
