"""What ncclgen's step start costs on one node: node.sh and the transport check's entry before the launch.

Why (issue 28): on a real cluster every node runs its part of a step on its own CPUs, so what ncclgen adds
to a launch is one node's cost, not 64 nodes' queued on this machine's 2 cores (launch_scale.py measures
that). This script runs the programs exactly as a step runs them (`bash -c 'eval "$NCCLGEN_NODE_SH"'
ncclgen-node ncclgen_transport torchrun`, with the rendered local-ci tier-3 torchrun script's environment)
--runs times in a row, each as the first step on a new node (a fresh folder: mkdir, lock, files, chmod)
and then as a later step on one node (the folder ready), beside the bare launch (`torchrun` alone).
torchrun is a stub that records when it started and exits; python3 on the steps' PATH is a stub too (the
check's Python starts only after the launch ends: not part of the launch), so only the shell work is
timed. Figures: the median time from the step's start to the launch's start, and the CPU time per step
(the harness's own loop counted in every row, so compare rows, not absolutes).

Usage:
    python benchmarks/node_step.py [--runs N]
Prints a table; exit status 0 (no goal of its own: launch_scale.py holds the issue's goal).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = """name: node-step
description: node step benchmark
launcher: torchrun
framework: torch
nodes: 2
time: '00:10:00'
command: [python3, work.py]
"""
# The step's programs and environment from the rendered script, then N steps; one line per step:
# the time it started and the time the launch (the torchrun stub) started.
HARNESS = r"""
set -u
script=$1 mode=$2 runs=$3
eval "$(sed -n '/^ncclgen_programs()/,/^}/p' "$script")"
eval "$(awk '/^IFS= read -r -d .. NCCLGEN_/,/_EOF$/' "$script")"
ncclgen_programs
for ((i = 0; i < runs; i++)); do
  case $mode in
    plain) export SLURMD_NODENAME=bench-plain ;;
    first) export SLURMD_NODENAME=bench-first-$i ;;
    later) export SLURMD_NODENAME=bench-later ;;
  esac
  t0=$EPOCHREALTIME
  if [[ $mode == plain ]]; then
    torchrun >/dev/null 2>&1
  else
    bash -c 'eval "$NCCLGEN_NODE_SH"' ncclgen-node ncclgen_transport torchrun >/dev/null 2>&1
  fi
  read -r t1 <"$NODE_STEP_STAMP"
  printf '%s %s\n' "$t0" "$t1"
done
"""
STUB_TORCHRUN = '#!/bin/bash\nprintf "%s\\n" "$EPOCHREALTIME" > "$NODE_STEP_STAMP"\n'
STUB_PYTHON = "#!/bin/sh\nexit 0\n"


def _render(work: Path) -> Path:
    wl = work / "workload.yaml"
    wl.write_text(WORKLOAD, encoding="utf-8")
    out = work / "job.sh"
    args = ["slurm", "--cluster", "local-ci", "--tier", "3", "--workload", str(wl), "--no-preflight", "-o", str(out)]
    subprocess.run([sys.executable, "-m", "ncclgen", *args], check=True, timeout=120, cwd=ROOT)
    return out


def _run(work: Path, script: Path, mode: str, runs: int) -> tuple[float, float]:
    """(median ms from step start to launch start, CPU ms per step) of ``runs`` steps in ``mode``."""
    env = {
        "PATH": f"{work / 'bin'}:/usr/bin:/bin",
        "HOME": str(work),
        "TMPDIR": str(work / "tmp"),
        "NODE_STEP_STAMP": str(work / "stamp"),
        "NCCLGEN_CHECK_AFTER_S": "30",
    }
    if mode == "later":  # the folder made and ready before the timed steps
        subprocess.run(
            ["bash", "-c", HARNESS, "harness", str(script), "later", "1"], env=env, check=True, capture_output=True
        )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        ["bash", "-c", HARNESS, "harness", str(script), mode, str(runs)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000 / runs
    starts = [float(b) - float(a) for a, b in (line.split() for line in done.stdout.splitlines())]
    return statistics.median(starts) * 1000, cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=40, help="steps per row (default 40)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="node-step-") as tmp:
        work = Path(tmp)
        (work / "bin").mkdir()
        (work / "tmp").mkdir()
        for name, text in (("torchrun", STUB_TORCHRUN), ("python3", STUB_PYTHON)):
            (work / "bin" / name).write_text(text, encoding="utf-8")
            (work / "bin" / name).chmod(0o755)
        script = _render(work)
        rows = {mode: _run(work, script, mode, args.runs) for mode in ("plain", "first", "later")}
    plain_cpu = rows["plain"][1]
    print(f"node_step: {args.runs} steps per row, load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    print(f"{'step':<34} {'to launch ms':>12} {'CPU ms':>8} {'+ CPU ms':>9}")
    labels = {
        "plain": "bare launch (torchrun stub)",
        "first": "ncclgen, first step on a node",
        "later": "ncclgen, later step",
    }
    for mode, (ms, cpu) in rows.items():
        extra = "" if mode == "plain" else f"{cpu - plain_cpu:>+9.2f}"
        print(f"{labels[mode]:<34} {ms:>12.2f} {cpu:>8.2f} {extra:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
