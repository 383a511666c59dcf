"""How soon a rendered Ray-on-Slurm script has its Ray cluster ready, next to verl's fixed sleeps.

Why: verl's examples/slurm/ray_on_slurm.slurm waits `sleep 10` after the head and `sleep 5` after each
worker (volcengine/verl examples/slurm/ray_on_slurm.slurm): 15 s for 2 nodes, whether the cluster is up or not. ncclgen's script
polls until every node and GPU is registered and prints "Ray cluster ready ... after X s". The goal
is a ready time at least 2x sooner than the sleeps, measured on a real 2-node local Slurm cluster.

Usage (root; needs slurmctld/slurmd/munge, see tests/slurm_harness.py):
    python benchmarks/ray_ready.py [--runs K] [--workdir DIR]
Starts its own LocalSlurm, submits the local-ci Ray job K times (default 3), stops the cluster.
Exit status 1 when a job fails, prints no ready line, or the median misses the goal.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import slurm_harness  # noqa: E402  (tests/ is not a package)

NODES = 2
VERL_SLEEP_S = 10 + 5 * (NODES - 1)  # head sleep + one sleep per extra node
GOAL_RATIO = 2.0
JOB_TIMEOUT_S = 300
READY = re.compile(r"Ray cluster ready.*?after ([0-9.]+) ?s")
# The smallest driver: connect and leave. The benchmark measures bring-up, not work.
DRIVER = "import ray; ray.init(); print('driver sees', len([n for n in ray.nodes() if n['Alive']]), 'nodes')"


def _render(workdir: Path) -> Path:
    wl = workdir / "ray-ready.yaml"
    wl.write_text(
        yaml.safe_dump(
            {
                "name": "ray-ready",
                "description": "Ray bring-up benchmark (connect and exit)",
                "launcher": "ray",
                "framework": "torch",
                "nodes": NODES,
                "time": "00:10:00",
                "command": [sys.executable, "-c", DRIVER],
            }
        ),
        encoding="utf-8",
    )
    script = workdir / "ray-ready.sh"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ncclgen",
            "slurm",
            "--cluster",
            "local-ci",
            "--tier",
            "3",
            "--workload",
            str(wl),
            "--partition",
            "debug",
            "-o",
            str(script),
        ],
        check=True,
    )
    return script


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="jobs to submit (default 3)")
    ap.add_argument(
        "--workdir",
        help="cluster and job folder (default: a fresh one under /tmp; keep "
        "it short, munge's socket path must fit 107 characters)",
    )
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    reason = slurm_harness.unavailable_reason()
    if reason:
        print(f"ray_ready: {reason}", file=sys.stderr)
        return 2
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="ncclgen-rr-"))
    workdir.mkdir(parents=True, exist_ok=True)
    script = _render(workdir)
    cluster = slurm_harness.LocalSlurm(workdir / "slurm", nodes=NODES)
    ready, walls = [], []
    load_before = os.getloadavg()[0]  # Ray start-up is CPU-bound: other work on the machine shows here
    try:
        cluster.start()
        for i in range(args.runs):
            t0 = time.monotonic()
            job = cluster.sbatch(script, cwd=workdir)
            result = cluster.wait(job, timeout=JOB_TIMEOUT_S)
            walls.append(time.monotonic() - t0)
            log = (workdir / f"ncclgen-{job}.out").read_text(encoding="utf-8", errors="replace")
            m = READY.search(log)
            if (result.state, result.exit_code) != ("COMPLETED", 0) or not m:
                print(
                    f"ray_ready: job {job} {result.state} exit {result.exit_code}, ready line "
                    f"{'found' if m else 'missing'}:\n{log}",
                    file=sys.stderr,
                )
                return 1
            ready.append(float(m.group(1)))
            print(f"run {i + 1}: job {job}: {m.group(0)}; job wall {walls[-1]:.1f} s", flush=True)
    finally:
        cluster.stop()

    median = statistics.median(ready)
    ratio = VERL_SLEEP_S / median
    print(
        f"\n{NODES}-node local-ci Ray job, {args.runs} runs (seconds); load average before/after "
        f"{load_before:.1f}/{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"{'':<28} {'min':>6} {'median':>7} {'max':>6}")
    print(f"{'ncclgen: cluster ready':<28} {min(ready):>6.1f} {median:>7.1f} {max(ready):>6.1f}")
    print(f"{'job wall (submit to end)':<28} {min(walls):>6.1f} {statistics.median(walls):>7.1f} {max(walls):>6.1f}")
    print(f"{'verl fixed sleeps (10 + 5)':<28} {VERL_SLEEP_S:>6.1f} {VERL_SLEEP_S:>7.1f} {VERL_SLEEP_S:>6.1f}")
    met = ratio >= GOAL_RATIO
    print(f"ready {ratio:.2f}x sooner than the sleeps (median); goal >= {GOAL_RATIO:g}x: {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
