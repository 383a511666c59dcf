"""How long `ncclgen slurm` / `ncclgen k8s` take as whole processes, and what the slurm path imports.

Why: ncclgen runs in job-submission wrappers and CI loops, so its cost is a process start, not a
function call. Goals: `ncclgen slurm` takes at most 0.5x the wall time of TorchX's own sbatch
dry run (`torchx run --dryrun -s slurm dist.ddp -j 2x8`, the peer that renders the same kind of
script) measured in the same run; at most 0.1 s over a bare `python -c pass` (so the slurm path must
not import the kubernetes client or torch); and `ncclgen k8s` under 0.6 s wall.

Usage: python benchmarks/render.py [--runs N] [--torchx PATH]
  N timed runs per command after one warm-up (median). TorchX is not a dependency: install it in its
  own virtualenv (`python3 -m venv /tmp/tx && /tmp/tx/bin/pip install torch==2.13.0 torchx`) and pass
  --torchx /tmp/tx/bin/torchx; without it the ratio is skipped.
Exit status 1 when a goal is missed or the slurm path imports a heavy module.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

SLURM_OVERHEAD_GOAL_S = 0.1
TORCHX_RATIO_GOAL = 0.5
K8S_WALL_GOAL_S = 0.6
HEAVY = ("kubernetes", "torch", "ray")  # none of them is needed to render an sbatch script
ARGS = ["--cluster", "h100-ib", "--tier", "3"]


def _ncclgen() -> list[str]:
    """The console script pip installed for this interpreter (what users run), else `-m ncclgen`.

    Not shutil.which: a version manager's shim on PATH (pyenv's is a bash script) would add its own
    start-up to every run, and the baseline below runs this interpreter directly.
    """
    exe = os.path.join(sysconfig.get_path("scripts"), "ncclgen")
    return [exe] if os.access(exe, os.X_OK) else [sys.executable, "-m", "ncclgen"]


CPU_S: dict[str, float] = {}  # argv[1:3] joined -> median CPU seconds (user + sys) of the child


def _median_s(argv: list[str], runs: int) -> float:
    """Median wall seconds; the median CPU seconds go to CPU_S (steadier than wall on a loaded machine)."""
    subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
    )  # warm-up: page cache, .pyc files
    times, cpu = [], []
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    CPU_S[" ".join(argv[1:3])] = statistics.median(cpu)
    return statistics.median(times)


def _imported(argv_tail: list[str]) -> set[str]:
    """Top-level packages a real `ncclgen slurm` process imports (from -X importtime on stderr)."""
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ncclgen", *argv_tail],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
    )
    mods = set()
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            mods.add(name.split(".")[0])
    return mods


def _compile_bytecode() -> None:
    """Write ncclgen's .pyc files, as `pip install` does for a wheel.

    Why: an editable checkout run under PYTHONDONTWRITEBYTECODE=1 (set on this project's machines)
    has none, so every run would compile ~50 modules again (about 60 ms) and time the checkout,
    not what users run; the peers it is compared with are wheels, compiled at install.
    """
    import compileall

    import ncclgen

    compileall.compile_dir(os.path.dirname(ncclgen.__file__), quiet=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="timed runs per command (default 15)")
    ap.add_argument("--torchx", default=shutil.which("torchx"), help="torchx executable (default: on PATH)")
    args = ap.parse_args(argv)
    runs = args.runs
    if runs < 1:
        ap.error("--runs must be >= 1")

    _compile_bytecode()
    rows, ok = [], True
    bare = _median_s([sys.executable, "-c", "pass"], runs)
    rows.append(("python -c pass", bare, "", "", "baseline"))
    slurm = _median_s([*_ncclgen(), "slurm", *ARGS], runs)
    met = slurm - bare <= SLURM_OVERHEAD_GOAL_S
    ok &= met
    rows.append(
        (
            "ncclgen slurm " + " ".join(ARGS),
            slurm,
            f"{slurm - bare:+.3f}",
            f"{slurm / bare:.2f}x",
            f"overhead <= {SLURM_OVERHEAD_GOAL_S} s: {'met' if met else 'MISSED'}",
        )
    )
    if importlib.util.find_spec("ncclgen.cli.k8s") is None:
        rows.append(("ncclgen k8s " + " ".join(ARGS), None, "", "", "skipped: ncclgen.cli.k8s not there yet"))
    else:
        k8s = _median_s([*_ncclgen(), "k8s", *ARGS], runs)
        met = k8s < K8S_WALL_GOAL_S
        ok &= met
        rows.append(
            (
                "ncclgen k8s " + " ".join(ARGS),
                k8s,
                f"{k8s - bare:+.3f}",
                f"{k8s / bare:.2f}x",
                f"wall < {K8S_WALL_GOAL_S} s: {'met' if met else 'MISSED'}",
            )
        )

    if args.torchx:
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "train.py"), "w").close()
            tx = _median_s(
                [
                    args.torchx,
                    "run",
                    "--dryrun",
                    "-s",
                    "slurm",
                    "dist.ddp",
                    "-j",
                    "2x8",
                    "--script",
                    os.path.join(d, "train.py"),
                ],
                runs,
            )
        met = slurm / tx <= TORCHX_RATIO_GOAL
        ok &= met
        rows.append(
            (
                "torchx run --dryrun -s slurm dist.ddp",
                tx,
                f"{tx - bare:+.3f}",
                f"{tx / bare:.2f}x",
                f"ncclgen slurm / torchx = {slurm / tx:.2f} <= {TORCHX_RATIO_GOAL}: {'met' if met else 'MISSED'}",
            )
        )
    else:
        rows.append(("torchx run --dryrun -s slurm dist.ddp", None, "", "", "skipped: no torchx (see --torchx)"))

    heavy = sorted(set(HEAVY) & _imported(["slurm", *ARGS]))
    ok &= not heavy

    print(
        f"{runs} runs per command, median wall time; python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'command':<40} {'median s':>9} {'overhead':>9} {'ratio':>7}  goal")
    for name, t, over, ratio, goal in rows:
        print(f"{name:<40} {'-' if t is None else f'{t:.3f}':>9} {over:>9} {ratio:>7}  {goal}")
    print("median CPU s (user + sys): " + ", ".join(f"{k}: {v:.3f}" for k, v in CPU_S.items()))
    print("ncclgen slurm imports " + (", ".join(heavy) + ": MISSED" if heavy else f"none of {', '.join(HEAVY)}: met"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
