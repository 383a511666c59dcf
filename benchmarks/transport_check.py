"""What the transport check costs: CPU per rank while NCCL initialises, and after init.

Why: the check (ncclgen/jobside/transport.py) runs beside every node's launch. Its goal is under 50 ms
of CPU per rank at init and nothing measurable after. NCCL is not here (no GPU), so the log is
generated in NCCL's formats (as tests/nccl_standin.py writes them) at a realistic size: per rank the
version, plugin, device and network lines, the comm and Init COMPLETE lines, --channels NET channel
lines each way, --noise other INIT lines the check must skip (NCCL 2.30.7 prints about 100-300 INIT
lines per rank on an 8-GPU node: topology, tuning, ring/tree layout, proxy setup), written by --ranks
processes into one folder.

Measured: process CPU time (time.process_time) of the check's polls until every rank's file has been
read (= its cost per rank at init), then of --idle-s seconds of polling at the check's rate (0.25 s)
with nothing new (= its cost after init, per second). The ranks themselves pay only NCCL's own
line-buffered writes (src/debug.cc setlinebuf), the same as NCCL_DEBUG=INFO to stdout.

    python benchmarks/transport_check.py [--ranks 8] [--channels 32] [--noise 200] [--idle-s 5]
Exit status 1 when the cost per rank at init misses the goal.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from ncclgen.jobside import transport  # noqa: E402

GOAL_MS = 50.0
HOST = "gpu-node-1"


def rank_log(rank: int, ranks: int, channels: int, noise: int) -> str:
    p = f"{HOST}:{4000 + rank}:{4000 + rank} [{rank}] NCCL INFO "
    lines = [
        "NCCL version 2.30.7+cuda12.9",
        "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB [2]mlx5_4:1/IB [3]mlx5_5:1/IB [4]mlx5_6:1/IB "
        "[5]mlx5_9:1/IB [6]mlx5_10:1/IB [7]mlx5_11:1/IB [RO]; OOB bond0:10.0.0.1<0>",
        "Using network IB",
        f"comm 0x55d0c0de{rank:04x} rank {rank} nRanks {ranks * 2} nNodes 2 localRanks {ranks} localRank {rank} MNNVL 0",
    ]
    lines += [f"Setting affinity for GPU {rank} to ffffffff,00000000 [{i}]" for i in range(noise)]
    lines.append(
        f"ncclCommInitRankConfig comm 0x55d0c0de{rank:04x} rank {rank} nranks {ranks * 2} cudaDev {rank} "
        f"nvmlDev {rank} busId 1b000 commId 0x7e1d3c5b2a190f00 - Init COMPLETE"
    )
    for c in range(channels):
        lines.append(f"Channel {c:02d}/0 : {rank + ranks}[{rank}] -> {rank}[{rank}] [receive] via NET/IB/{rank}/GDRDMA")
        lines.append(f"Channel {c:02d}/0 : {rank}[{rank}] -> {rank + ranks}[{rank}] [send] via NET/IB/{rank}/GDRDMA")
        lines.append(f"Channel {c:02d}/0 : {rank}[{rank}] -> {(rank + 1) % ranks}[{(rank + 1) % ranks}] via P2P/IPC")
    lines.append("Connected all rings, use ring PXN 0 GDR 1")
    return "".join(p + line + "\n" for line in lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--channels", type=int, default=32)
    ap.add_argument("--noise", type=int, default=200)
    ap.add_argument("--idle-s", type=float, default=5.0)
    o = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        size = 0
        for r in range(o.ranks):
            text = rank_log(r, o.ranks, o.channels, o.noise)
            size += len(text)
            Path(folder, f"{HOST}.{4000 + r}.log").write_text(text)
        spec = {
            "v": 1,
            "debug_file": f"{folder}/%h.%p.log",
            "net": "IB",
            "hcas": [f"mlx5_{i}:1" for i in (0, 3, 4, 5, 6, 9, 10, 11)],
            "gdr": True,
            "nccl": "2.30.7",
            "mode": "on",
        }
        os.environ.pop("NCCL_DEBUG_FILE", None)
        lines: list[str] = []
        check = transport.Check(spec, "node1", HOST, emit=lines.append, start=0)
        cpu0 = time.process_time()
        check.poll()
        init_ms = (time.process_time() - cpu0) * 1000
        assert check.summarised and not check.problems, lines
        polls = int(o.idle_s / transport.POLL_S)
        cpu0 = time.process_time()
        for _ in range(polls):
            check.poll()
        idle_ms_per_s = (time.process_time() - cpu0) * 1000 / (polls * transport.POLL_S)
    per_rank = init_ms / o.ranks
    load = os.getloadavg()[0]
    print(f"load average {load:.1f}; {o.ranks} ranks, {size // o.ranks} bytes of NCCL lines per rank")
    print("| measure | value | goal | ratio to goal |")
    print("|---|---|---|---|")
    print(f"| check CPU per rank at init | {per_rank:.2f} ms | < {GOAL_MS:.0f} ms | {per_rank / GOAL_MS:.3f} |")
    print(
        f"| check CPU after init (idle polling) | {idle_ms_per_s:.3f} ms per s | ~0 | {idle_ms_per_s / 1000:.5f} of one CPU |"
    )
    print(lines[-1])
    return 0 if per_rank < GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
