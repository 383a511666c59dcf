"""`ncclgen bench`: collective bus bandwidth with torch.distributed, reported like nccl-tests.

Run under torchrun (one process per GPU). The numbers follow nccl-tests doc/PERFORMANCE.md:
algbw = S / t with S the total array size in bytes; busbw = algbw x 2(n-1)/n for all_reduce and
x (n-1)/n for all_gather and reduce_scatter, so busbw can be compared with the hardware link speed
whatever the number of ranks. With --cluster, busbw is also given as a share of the descriptor's
bound: NVLink (node.nvlink_gbps) when all ranks share one node, else the GPU's network rails; with
--backend nccl only, since gloo runs on CPUs over TCP.
torch is imported only inside :func:`measure`.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import UserError
from ..load.descriptor import Descriptor
from ..output import OUTPUT_MODE

OPS = ("all_reduce", "all_gather", "reduce_scatter")
BACKENDS = ("nccl", "gloo")
DTYPE, TYPE_NAME, ELEMENT_BYTES = "float32", "float", 4
_SIZE = re.compile(r"([0-9]{1,15})([KMG]?)B?", re.IGNORECASE)
_UNIT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}

RESULT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "ncclgen bench result (--json)",
    "description": "One sweep of one collective. Sizes in bytes, time in microseconds per operation "
    "(mean over iters, slowest rank), bandwidths in GB/s (1e9 bytes/s) as in nccl-tests.",
    "type": "object",
    "additionalProperties": False,
    "required": [
        "version",
        "op",
        "backend",
        "world_size",
        "nodes",
        "dtype",
        "iters",
        "warmup",
        "busbw_factor",
        "bound",
        "bound_reason",
        "results",
    ],
    "properties": {
        "version": {"const": 1},
        "op": {"enum": list(OPS)},
        "backend": {"enum": list(BACKENDS)},
        "world_size": {"type": "integer", "minimum": 1},
        "nodes": {"type": "integer", "minimum": 1, "description": "distinct host names among the ranks"},
        "dtype": {"const": DTYPE},
        "iters": {"type": "integer", "minimum": 1},
        "warmup": {"type": "integer", "minimum": 0},
        "busbw_factor": {"type": "number", "minimum": 0, "description": "busbw / algbw"},
        "bound": {
            "description": "the descriptor's bandwidth bound per GPU, or null without --cluster or bound",
            "oneOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["kind", "cluster", "gbps", "GBps"],
                    "properties": {
                        "kind": {"enum": ["nvlink", "rails", "efa"]},
                        "cluster": {"type": "string"},
                        "gbps": {"type": "number", "exclusiveMinimum": 0, "description": "Gbit/s"},
                        "GBps": {"type": "number", "exclusiveMinimum": 0, "description": "gbps / 8"},
                    },
                },
            ],
        },
        "bound_reason": {"type": "string", "description": "which bound applies and why"},
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["size", "count", "type", "time_us", "algbw_GBps", "busbw_GBps", "busbw_pct_of_bound"],
                "properties": {
                    "size": {"type": "integer", "minimum": 1, "description": "S, total bytes"},
                    "count": {"type": "integer", "minimum": 1, "description": "S / element size"},
                    "type": {"const": TYPE_NAME},
                    "time_us": {"type": "number", "exclusiveMinimum": 0},
                    "algbw_GBps": {"type": "number", "minimum": 0, "description": "S / time / 1e9"},
                    "busbw_GBps": {"type": "number", "minimum": 0, "description": "algbw_GBps * busbw_factor"},
                    "busbw_pct_of_bound": {"type": ["number", "null"]},
                },
            },
        },
    },
}


def parse_size(text: str) -> int:
    """'8' -> 8, '64K' -> 65536, '1G' -> 2**30 (binary units, as nccl-tests' -b/-e)."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise UserError(f"--sizes: {text!r} is not a size (a number of bytes with optional K, M or G)")
    return int(m.group(1)) * _UNIT[m.group(2).upper()]


def parse_sizes(spec: str) -> list[int]:
    """'8:1G' -> every power of two from 8 to 1 GiB; '1M' -> [1048576]."""
    lo_txt, _, hi_txt = spec.partition(":")
    lo = parse_size(lo_txt)
    hi = parse_size(hi_txt) if hi_txt else lo
    if lo < ELEMENT_BYTES:
        raise UserError(f"--sizes: {spec!r} starts below one {DTYPE} element ({ELEMENT_BYTES} bytes)")
    if hi < lo:
        raise UserError(f"--sizes: {spec!r} ends before it starts")
    sizes, p = [], 1
    while p < lo:
        p <<= 1
    while p <= hi:
        sizes.append(p)
        p <<= 1
    if not sizes:
        raise UserError(f"--sizes: no power of two between {lo} and {hi} bytes")
    return sizes


def bus_factor(op: str, n: int) -> float:
    """nccl-tests doc/PERFORMANCE.md: busbw = algbw x this."""
    return 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def element_count(op: str, size: int, n: int) -> int:
    """Elements in the S-byte array; for the gather/scatter ops a multiple of n (count per rank x n)."""
    count = size // ELEMENT_BYTES
    return count if op == "all_reduce" else count // n * n


@dataclass(frozen=True)
class Bound:
    kind: str  # nvlink | rails | efa
    cluster: str
    gbps: float


def bound_for(desc: Descriptor, nodes: int) -> tuple[Bound | None, str]:
    """(the per-GPU bound busbw is compared with, why it applies) for ranks spread over ``nodes``.

    One node: NVLink. Several: the network share of the slowest GPU - its rails' Gbit/s, a rail
    serving k GPUs counting 1/k for each, or EFA devices x Gbit/s / GPUs.
    """
    if nodes == 1:
        if desc.node.nvlink_gbps:
            return (
                Bound("nvlink", desc.name, float(desc.node.nvlink_gbps)),
                f"all ranks on one node: NVLink, node.nvlink_gbps of {desc.name}",
            )
        return None, f"all ranks on one node and {desc.name} declares no node.nvlink_gbps"
    net = desc.network
    if net.efa is not None:
        gbps = net.efa.devices_per_node * net.efa.gbps_per_device / desc.node.gpus_per_node
        return (
            Bound("efa", desc.name, gbps),
            f"{nodes} nodes: EFA {net.efa.devices_per_node} x {net.efa.gbps_per_device} Gb/s / "
            f"{desc.node.gpus_per_node} GPUs of {desc.name}",
        )
    per_gpu = {g.index: sum(r.gbps / len(r.gpus) for r in desc.rails_for_gpu(g.index)) for g in desc.node.gpus}
    slowest = min(per_gpu.values(), default=0)
    if not slowest:
        return None, f"{nodes} nodes and {desc.name} declares no compute rails for every GPU"
    return (
        Bound("rails", desc.name, slowest),
        f"{nodes} nodes: network rails per GPU (slowest GPU, sum of its rails' gbps) of {desc.name}",
    )


def row(op: str, n: int, size: int, time_us: float, bound: Bound | None) -> dict:
    algbw = size / (time_us * 1e-6) / 1e9
    busbw = algbw * bus_factor(op, n)
    return {
        "size": size,
        "count": size // ELEMENT_BYTES,
        "type": TYPE_NAME,
        "time_us": time_us,
        "algbw_GBps": algbw,
        "busbw_GBps": busbw,
        "busbw_pct_of_bound": busbw / (bound.gbps / 8) * 100 if bound else None,
    }


def _nothing() -> None:
    pass


def _collective(op: str, all_reduce: Callable, gather: Callable, scatter: Callable, full, part) -> Callable[[], object]:
    """One call of ``op`` on this size's tensors (bound here, so each size times its own tensors)."""
    if op == "all_reduce":
        return lambda: all_reduce(full)
    if op == "all_gather":
        return lambda: gather(full, part)
    if op == "reduce_scatter":
        return lambda: scatter(part, full)
    raise ValueError(f"unknown collective {op!r}")


def measure(
    op: str, backend: str, sizes: list[int], iters: int, warmup: int, progress: Callable[[int, int], None]
) -> tuple[int, int, int, list[tuple[int, float]]]:
    """(rank, world size, nodes, [(bytes, seconds per op)]) from a real torch.distributed sweep."""
    import time

    import torch
    import torch.distributed as dist

    if backend == "nccl":
        if not torch.cuda.is_available():
            raise UserError("--backend nccl needs CUDA GPUs; use --backend gloo to test on CPUs")
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        sync: Callable[[], object] = torch.cuda.synchronize
    else:
        device = torch.device("cpu")
        sync = _nothing  # gloo collectives on CPU tensors return when done

    dist.init_process_group(backend=backend)
    try:
        rank, n = dist.get_rank(), dist.get_world_size()
        hosts: list = [None] * n
        dist.all_gather_object(hosts, socket.gethostname())
        # torch 2.13 renamed the single-tensor collectives; older containers have only the old names.
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        todo = [c for c in (element_count(op, size, n) for size in sizes) if c]  # 0: too small for n ranks
        out = []
        for i, count in enumerate(todo):
            full = torch.ones(count, dtype=torch.float32, device=device)
            part = torch.ones(count // n, dtype=torch.float32, device=device)
            call = _collective(op, dist.all_reduce, gather, scatter, full, part)
            for _ in range(warmup):
                call()
            sync()
            dist.barrier()
            start = time.perf_counter()
            for _ in range(iters):
                call()
            sync()
            elapsed = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64, device=device)
            dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the collective is as slow as its slowest rank
            out.append((count * ELEMENT_BYTES, elapsed.item()))
            if rank == 0:
                progress(i + 1, len(todo))
        return rank, n, len(set(hosts)), out
    finally:
        dist.destroy_process_group()


def result(
    op: str, backend: str, n: int, nodes: int, iters: int, warmup: int, timings, desc: Descriptor | None
) -> dict:
    if desc is None:
        bound, why = None, "no --cluster given"
    elif backend != "nccl":
        # NVLink and the GPU rails carry NCCL's traffic; gloo moves CPU tensors over TCP sockets, so a
        # share of those bounds would mean nothing.
        bound, why = None, f"{backend} runs on CPUs over TCP: the NVLink and rail bounds apply to nccl only"
    else:
        bound, why = bound_for(desc, nodes)
    return {
        "version": 1,
        "op": op,
        "backend": backend,
        "world_size": n,
        "nodes": nodes,
        "dtype": DTYPE,
        "iters": iters,
        "warmup": warmup,
        "busbw_factor": bus_factor(op, n),
        "bound": (
            {"kind": bound.kind, "cluster": bound.cluster, "gbps": bound.gbps, "GBps": bound.gbps / 8}
            if bound
            else None
        ),
        "bound_reason": why,
        "results": [row(op, n, size, sec * 1e6, bound) for size, sec in timings],
    }


def table(res: dict) -> str:
    """nccl-tests-style text table of a :func:`result`."""
    b = res["bound"]
    lines = [
        f"# ncclgen bench: {res['op']}, {res['backend']}, {res['world_size']} ranks on {res['nodes']} "
        f"node(s), {res['dtype']}, {res['iters']} iters after {res['warmup']} warm-up",
        f"# busbw = algbw x {res['busbw_factor']:.4g} (nccl-tests doc/PERFORMANCE.md)",
        "# bound: "
        + (f"{b['kind']} {b['gbps']:g} Gb/s = {b['GBps']:g} GB/s per GPU; " if b else "none; ")
        + res["bound_reason"],
        f"#{'size':>12} {'count':>12} {'type':>6} {'time':>10} {'algbw':>8} {'busbw':>8}"
        + (f" {'busbw':>7}" if b else ""),
        f"#{'(B)':>12} {'(elements)':>12} {'':>6} {'(us)':>10} {'(GB/s)':>8} {'(GB/s)':>8}"
        + (f" {'(%)':>7}" if b else ""),
    ]
    for r in res["results"]:
        lines.append(
            f" {r['size']:>12} {r['count']:>12} {r['type']:>6} {r['time_us']:>10.2f} "
            f"{r['algbw_GBps']:>8.3f} {r['busbw_GBps']:>8.3f}" + (f" {r['busbw_pct_of_bound']:>7.1f}" if b else "")
        )
    return "\n".join(lines) + "\n"


# --sizes when not given: nccl-tests' usual -b 8 -e 1G on GPUs; on CPUs (gloo) a 1 GiB all_reduce
# takes seconds per iteration (the 8:1G sweep took 56 s on 2 cores), and a smoke test needs no more
# than 1 MiB.
DEFAULT_SIZES = {"nccl": "8:1G", "gloo": "8:1M"}


def require_torch() -> None:
    """One UserError naming the extra when torch or numpy is missing (the torch wheel does not pull
    numpy in, and torch.distributed's all_gather_object needs it)."""
    import importlib.util

    missing = [m for m in ("torch", "numpy") if importlib.util.find_spec(m) is None]
    if missing:
        raise UserError(
            f"bench needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} "
            "not installed: pip install 'ncclgen[bench]'"
        )


def require_matplotlib():
    """matplotlib.pyplot, or one UserError naming the extra that installs it."""
    try:
        import matplotlib
    except ImportError:
        raise UserError("--plot needs matplotlib, which is not installed: pip install 'ncclgen[plot]'") from None
    matplotlib.use("Agg")  # files only; no display on compute nodes
    import matplotlib.pyplot as plt

    return plt


def plot(res: dict, path: str) -> None:
    """busbw vs size (log2 x axis) as an image at ``path``, written atomically."""
    plt = require_matplotlib()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    rows = res["results"]
    ax.plot([r["size"] for r in rows], [r["busbw_GBps"] for r in rows], marker="o", label="busbw")
    ax.set_xscale("log", base=2)
    if res["bound"]:
        ax.axhline(
            res["bound"]["GBps"],
            linestyle="--",
            color="grey",
            label=f"{res['bound']['kind']} bound {res['bound']['GBps']:g} GB/s",
        )
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(f"{res['op']} ({res['backend']}), {res['world_size']} ranks on {res['nodes']} node(s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ncclgen-", suffix=os.path.splitext(path)[1] or ".png", dir=directory)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=120, bbox_inches="tight")
        os.chmod(tmp, OUTPUT_MODE)  # mkstemp makes 0600; every other output file is 0644
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)


def torchrun_env() -> None:
    """One clear error when not started by torchrun (or another launcher setting the same variables)."""
    missing = [v for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if v not in os.environ]
    if missing:
        raise UserError(
            f"bench runs one process per GPU under torchrun ({', '.join(missing)} not set), e.g. "
            "torchrun --nproc-per-node=8 -m ncclgen bench"
        )


def terminal_progress(done: int, total: int) -> None:
    """A progress line on a terminal; nothing when stderr is a file or pipe (batch logs stay clean)."""
    if sys.stderr.isatty():
        sys.stderr.write(f"\rbench: {done}/{total} sizes" + ("\n" if done == total else ""))
        sys.stderr.flush()
