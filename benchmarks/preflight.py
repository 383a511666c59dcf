"""How long the node-side preflight takes on one node, next to its goal of 1 s.

Why: the preflight runs on every node before the launch (a Slurm step, or the pod's command), so its
time is added to every job's start. The issue's goal is <= 1 s per node. The program runs exactly as a
job runs it (`python3 -c "$NCCLGEN_PREFLIGHT" SPEC`, a fresh interpreter each time), on:

- this machine with the local-ci spec (loopback bootstrap, 2 GPUs, /dev/shm, numactl), the passing
  path; the GPUs are the fake device nodes this script creates (tests/slurm_harness.py does the same);
- a fake DGX H100 sysfs tree (tests/sysfs_fixtures.py) with the h100-ib spec: 8 HCAs, bond0, 8 GPUs,
  the path with the most sysfs reads (it ends in failures here: bond0 has no address on this machine
  and the locked-memory limit is not unlimited, which is also the failing path's cost).

A bare `python3 -c pass` is the baseline. Usage:
    python benchmarks/preflight.py [--runs N]
Exit status 1 when a median misses the goal.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
import sysfs_fixtures  # noqa: E402  (tests/ is not a package)

from ncclgen import jobside  # noqa: E402
from ncclgen.pipeline import make_plan, request  # noqa: E402
from ncclgen.plan import preflight  # noqa: E402

GOAL_S = 1.0


def _time(argv: list[str], env: dict[str, str], runs: int) -> tuple[list[float], int]:
    times, code = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        r = subprocess.run(argv, env=env, capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
        code = r.returncode
    return times, code


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="runs per case (default 15)")
    args = ap.parse_args(argv)
    program = jobside.source("preflight")
    base_env = {"PATH": os.environ.get("PATH", os.defpath)}
    with tempfile.TemporaryDirectory() as tmp:
        dev = Path(tmp, "dev")
        dev.mkdir()
        for i in range(8):
            (dev / f"nvidia{i}").write_text("")
        os.symlink("/dev/shm", dev / "shm")
        dgx = Path(tmp, "dgx")
        sysfs_fixtures.dgx_h100(dgx)
        cases = [
            ("python3 -c pass (baseline)", [sys.executable, "-c", "pass"], base_env),
            (
                "preflight, local-ci spec, this machine",
                [
                    sys.executable,
                    "-c",
                    program,
                    preflight.encode(preflight.spec(make_plan(request("local-ci", 3, "verl-sft", None, (), False)))),
                ],
                {**base_env, "NCCLGEN_PREFLIGHT_DEV": str(dev)},
            ),
            (
                "preflight, h100-ib spec, fake DGX H100 tree",
                [
                    sys.executable,
                    "-c",
                    program,
                    preflight.encode(preflight.spec(make_plan(request("h100-ib", 3, "verl-sft", None, (), False)))),
                ],
                {**base_env, "NCCLGEN_PREFLIGHT_SYSFS": str(dgx / "sys"), "NCCLGEN_PREFLIGHT_DEV": str(dev)},
            ),
        ]
        print(f"load average {os.getloadavg()[0]:.2f}, {args.runs} runs each, {sys.executable}")
        print("| case | exit | median s | max s | goal |")
        print("|---|---|---|---|---|")
        missed = False
        for name, cmd, env in cases:
            times, code = _time(cmd, env, args.runs)
            med, worst = statistics.median(times), max(times)
            goal = "baseline" if "baseline" in name else ("met" if med <= GOAL_S else "**missed**")
            missed |= goal == "**missed**"
            print(f"| {name} | {code} | {med:.3f} | {worst:.3f} | {goal} |")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
