#!/usr/bin/env python3
"""`ncclgen triage` on a large generated log: throughput (MB/s) and peak memory (max RSS).

Writes a log of --size GiB (default 2) to /tmp (never committed): NCCL INFO lines, PyTorch
and Ray chatter from the real logs in tests/data/triage, repeated with varying hosts and pids, one
SIGKILL line near the end and watchdog timeouts after it. Then runs `python -m ncclgen triage` on it
as a whole process under GNU time (wall, CPU, max RSS), and checks the
answer is the SIGKILL line. Goals (issue 23): >= 50 MB/s and < 200 MiB peak RSS. Exit 1 on a miss.
Also runs `cat FILE > /dev/null` as the reading floor, so the figure can be read as a ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINES = [
    "gpu{h}:{p}:{t} [{d}] NCCL INFO Channel 0{d}/0 : {d}[{d}] -> {e}[{e}] [send] via NET/IB/{d}/GDRDMA\n",
    "gpu{h}:{p}:{t} [{d}] NCCL INFO Connected all rings, use ring PXN 0 GDR 1\n",
    "(WorkerDict pid={p}, ip=10.0.{h}.{d}) step:{t} - actor/pg_loss:0.0123 - actor/grad_norm:0.456 - perf/throughput:1234.5\n",
    "gpu{h}:{p}:{t} [{d}] NCCL INFO ncclCommInitRank comm 0x55{p} rank {d} nranks 16 cudaDev {d} nvmlDev {d} busId 1b000 commId 0x{t} - Init COMPLETE\n",
]


def generate(path: Path, size: int) -> None:
    block = "".join(
        LINES[i % len(LINES)].format(h=i % 7, p=1000 + i, t=2000 + i, d=i % 8, e=(i + 1) % 8) for i in range(4000)
    )
    data = block.encode()
    with open(path, "wb") as f:
        written = 0
        while written < size - len(data):
            f.write(data)
            written += len(data)
        f.write(b"srun: error: gpu5: task 3: Killed\n")
        for r in range(15):
            f.write(
                f"[rank{r}]:[E1203 10:00:0{r % 10}.000000000 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
                f"operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
                f"600010 milliseconds before timing out.\n".encode()
            )


def measure(cmd: list[str]) -> tuple[float, float, int, str, int]:
    """(wall s, CPU s, max RSS KiB, stdout, exit code) through GNU time: ru_maxrss from os.wait4 carries
    the forking parent's peak across exec on Linux, so it overstated the child (526 MiB for 40)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M %U %S", *cmd],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    wall = time.perf_counter() - t0
    rss, user, sys_s = proc.stderr.strip().splitlines()[-1].split()
    return wall, float(user) + float(sys_s), int(rss), proc.stdout, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=float, default=2.0, help="GiB (default 2)")
    ap.add_argument("--keep", action="store_true", help="keep the generated file")
    args = ap.parse_args()
    path = Path("/tmp/ncclgen-triage-bench.log")
    size = int(args.size * (1 << 30))
    if not path.exists() or path.stat().st_size < size:
        generate(path, size)
    real = path.stat().st_size
    try:
        cat_s, _, _, _, _ = measure(["cat", str(path)])
        secs, cpu, rss_kib, out, code = measure(
            [sys.executable, "-m", "ncclgen", "triage", "--format", "json", str(path)]
        )
    finally:
        if not args.keep:
            path.unlink()
    data = json.loads(out)
    mbps = real / secs / 1e6
    rss_mib = rss_kib / 1024
    ok_answer = code == 0 and data["first"]["signature"] == "sigkill" and data["first"]["node"] == "gpu5"
    print(f"load average {os.getloadavg()[0]:.1f}; file {real / (1 << 30):.2f} GiB")
    print("| command | wall s | CPU s | MB/s (wall) | MB/s (CPU) | max RSS MiB | goal |")
    print("|---|---|---|---|---|---|---|")
    print(f"| cat FILE | {cat_s:.1f} | - | {real / cat_s / 1e6:.0f} | - | - | floor |")
    print(
        f"| ncclgen triage FILE | {secs:.1f} | {cpu:.1f} | {mbps:.0f} | {real / cpu / 1e6:.0f} | {rss_mib:.0f} "
        "| >= 50 MB/s, < 200 MiB |"
    )
    print(
        f"answer: {data['first']['signature']} on {data['first']['node']}; then {[t['summary'] for t in data['then']]}"
    )
    return 0 if ok_answer and mbps >= 50 and rss_mib < 200 else 1


if __name__ == "__main__":
    sys.exit(main())
