"""Launch overhead at scale: ncclgen's Slurm launch beside one plain srun step, on N fake nodes.

Why (issue 28): one srun client per node made the launch 5-6x as slow as one
`srun --nodes=N --ntasks-per-node=1` step at 64 nodes, with 118-128 srun processes on the batch host.
This script starts a local Slurm cluster of N fake nodes (tests/slurm_harness.py; every node is this
machine), and in the same run submits:
  - plain: a batch script whose one step is `srun --nodes=N --ntasks=N --ntasks-per-node=1 STUB`;
  - ncclgen's rendered local-ci script (torchrun, and Ray), with and without the preflight.
STUB stands in for torchrun / `ray start` on every node (torchrun and ray on the job's PATH are stubs
that record the node and the time, then hold the step like the real ones): the launch is over when the last
node's stub started.
Each job's time is from its batch script's first command (a line this script adds after the #SBATCH
lines) to that last start. Ratio = ncclgen's time / the plain step's, median of --runs.
While each job runs, the srun processes of the job on this host are counted every 20 ms (the maximum
is reported). The Ray stubs hold their step for 10 s and the readiness check then fails (no Ray runs):
only the bring-up of `ray start` on every node is measured, not the readiness check or the driver.
Python on the jobs' PATH is this interpreter's installation (sys.base_prefix/bin) ahead of any shim, and the
transport check starts after the window (CHECK_AFTER_S): every fake node shares this machine's CPUs.

Usage (root; slurmctld, slurmd and munge installed, as for the Slurm tests):
    python benchmarks/launch_scale.py [--nodes 2,8,32,64] [--runs 3] [--workdir DIR]
Exit status 1 when a goal is missed at the largest N: <= 2.5x with the preflight, <= 1.3x without,
<= 8 srun clients on the batch host.
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
sys.path.insert(0, str(ROOT / "tests"))
import slurm_harness  # noqa: E402  (tests/ is not a package)

GOALS = {"preflight": 2.5, "no-preflight": 1.3}
MAX_SRUN = 8
JOB_TIMEOUT_S = 600
STUB = """#!/bin/bash
printf '%s %s\\n' "$SLURMD_NODENAME" "$EPOCHREALTIME" >> "$LAUNCH_SCALE_OUT/starts.$SLURM_JOB_ID"
# torchrun and `ray start --block` hold their step while the job runs
if [[ $(basename "$0") == ray ]]; then exec sleep 10; else exec sleep 5; fi
"""
# The transport check's Python starts NCCLGEN_CHECK_AFTER_S (default 1) after each node's launch, beside the ranks.
# On a real cluster it runs on that node's own CPUs; here every fake node shares this machine's, so it would slow the
# nodes still starting: it starts after the measured window instead (the stubs end first).
CHECK_AFTER_S = "30"


def _render(work: Path, launcher: str, nodes: int, preflight: bool) -> Path:
    wl = work / f"{launcher}.yaml"
    wl.write_text(
        f"name: scale-{launcher}\ndescription: launch benchmark\nlauncher: {launcher}\nframework: torch\n"
        f"nodes: {nodes}\ntime: '00:10:00'\ncommand: [python3, work.py]\n",
        encoding="utf-8",
    )
    out = work / f"{launcher}-{nodes}-{'pf' if preflight else 'nopf'}.sh"
    args = ["slurm", "--cluster", "local-ci", "--tier", "3", "--workload", str(wl), "--partition", "debug"]
    args += [] if preflight else ["--no-preflight"]
    subprocess.run([sys.executable, "-m", "ncclgen", *args, "-o", str(out)], check=True, timeout=120)
    return _stamped(out)


def _stamped(script: Path) -> Path:
    """The script with its first command recording the time: after the #SBATCH and comment lines."""
    lines = script.read_text(encoding="utf-8").splitlines(keepends=True)
    i = next(n for n, line in enumerate(lines) if n and not line.startswith("#"))
    lines.insert(i, 'printf "%s\\n" "$EPOCHREALTIME" > "$LAUNCH_SCALE_OUT/t0.$SLURM_JOB_ID"\n')
    script.write_text("".join(lines), encoding="utf-8")
    return script


def _plain(work: Path, nodes: int) -> Path:
    path = work / f"plain-{nodes}.sh"
    path.write_text(
        "#!/bin/bash\n"
        f"#SBATCH --nodes={nodes}\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=h100:2\n"
        "#SBATCH --cpus-per-task=2\n#SBATCH --partition=debug\n#SBATCH --output=ncclgen-%j.out\n"
        'printf "%s\\n" "$EPOCHREALTIME" > "$LAUNCH_SCALE_OUT/t0.$SLURM_JOB_ID"\n'
        'srun --nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 torchrun\n',
        encoding="utf-8",
    )
    return path


def _sruns(job: str) -> int:
    """srun processes of this job on this host now."""
    want = f"SLURM_JOB_ID={job}".encode()
    n = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm", "rb") as f:
                if f.read().strip() != b"srun":
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                n += want in f.read().split(b"\0")
        except OSError:
            continue
    return n


def _run(cluster, script: Path, work: Path, nodes: int) -> tuple[float, int]:
    job = cluster.sbatch(script, cwd=work)
    most, deadline = 0, time.monotonic() + JOB_TIMEOUT_S
    starts = work / f"starts.{job}"
    while time.monotonic() < deadline:
        most = max(most, _sruns(job))
        state = cluster._run(["scontrol", "show", "job", "-o", job]).stdout
        if any(f"JobState={s}" in state for s in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")):
            break
        time.sleep(0.02)
    lines = starts.read_text().split("\n") if starts.exists() else []
    stamps = [float(line.split()[1]) for line in lines if line.strip()]
    if len({line.split()[0] for line in lines if line.strip()}) != nodes:
        raise SystemExit(
            f"job {job} ({script.name}): {len(stamps)} starts of {nodes} nodes; see {work}/ncclgen-{job}.out"
        )
    return max(stamps) - float((work / f"t0.{job}").read_text()), most


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", default="2,8,32,64")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    reason = slurm_harness.unavailable_reason()
    if reason:
        print(f"launch_scale: {reason}", file=sys.stderr)
        return 2
    base = Path(args.workdir or tempfile.mkdtemp(prefix="launch-scale-"))
    rows, failed = [], []
    sizes = [int(n) for n in args.nodes.split(",")]
    for nodes in sizes:
        work = base / f"n{nodes}"
        (work / "bin").mkdir(parents=True, exist_ok=True)
        for name in ("torchrun", "ray"):
            (work / "bin" / name).write_text(STUB, encoding="utf-8")
            (work / "bin" / name).chmod(0o755)
        # LocalSlurm.env copies these into the jobs. python3 is this interpreter's installation, not a version
        # manager's shim on this host's PATH (pyenv's runs a dozen processes before Python starts).
        os.environ["PATH"] = f"{work / 'bin'}:{Path(sys.base_prefix) / 'bin'}:{os.environ['PATH']}"
        os.environ["NCCLGEN_CHECK_AFTER_S"] = CHECK_AFTER_S
        os.environ["LAUNCH_SCALE_OUT"] = str(work)
        cluster = slurm_harness.LocalSlurm(base / f"slurm{nodes}", nodes=nodes)
        cluster.start()
        try:
            scripts = {"plain srun step": _plain(work, nodes)}
            for launcher in ("torchrun", "ray"):
                for pf in (True, False):
                    scripts[f"{launcher}, {'preflight' if pf else 'no-preflight'}"] = _render(work, launcher, nodes, pf)
            times: dict[str, list[float]] = {k: [] for k in scripts}
            sruns: dict[str, int] = dict.fromkeys(scripts, 0)
            for _ in range(args.runs):
                for key, script in scripts.items():
                    t, most = _run(cluster, script, work, nodes)
                    times[key].append(t)
                    sruns[key] = max(sruns[key], most)
        finally:
            cluster.stop()
        plain = statistics.median(times["plain srun step"])
        for key in scripts:
            med = statistics.median(times[key])
            rows.append((nodes, key, med, med / plain, sruns[key]))
            kind = key.split(", ")[-1]
            if nodes == sizes[-1] and kind in GOALS and med / plain > GOALS[kind]:
                failed.append(f"{nodes} nodes, {key}: {med / plain:.2f}x > {GOALS[kind]}x")
            if key != "plain srun step" and sruns[key] > MAX_SRUN:
                failed.append(f"{nodes} nodes, {key}: {sruns[key]} srun processes > {MAX_SRUN}")
    load = os.getloadavg()[0]
    print(f"launch_scale: median of {args.runs} run(s), load average {load:.1f}, {os.cpu_count()} CPUs")
    print(f"{'nodes':>5}  {'launch':<26} {'median s':>9} {'ratio':>6} {'max srun':>8}")
    for nodes, key, med, ratio, most in rows:
        print(f"{nodes:>5}  {key:<26} {med:>9.3f} {ratio:>5.2f}x {most:>8}")
    for line in failed:
        print(f"launch_scale: goal missed: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
