"""`ncclgen discover`, `doctor`, `bench`, `monitor`: the commands that run on a GPU node.

A node that lacks what a command needs (no GPU, no NVML) is reported in one line with exit status 1,
like a failed doctor check; bad flags or files are UserErrors (exit 2). Heavy imports (torch,
pynvml, matplotlib) happen inside ncclgen.node, only in the command that needs them.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys

import click

from ..errors import UserError
from ..load import descriptor
from ..node import Unavailable
from ..output import emit
from .common import complete_cluster

SYSFS_HELP = "Read sysfs (and /proc/net/route) under this folder instead of /, e.g. a tree captured on a node."


@contextlib.contextmanager
def _node_required(command: str):
    """Unavailable -> one line on stderr, exit status 1 (the node, not the input, is the problem)."""
    try:
        yield
    except Unavailable as exc:
        raise click.ClickException(f"{command}: {exc}") from None


def _writable(path):
    """Refuse an output path whose folder is missing before doing minutes of work."""
    if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise UserError("output folder does not exist", file=path)


@click.command(
    epilog="""\b
Examples:
  ncclgen discover -o clusters/my-cluster.yaml --name my-cluster
  ncclgen discover --sysfs-root ./captured-node   # a tree copied from /sys and /proc/net
"""
)
@click.option(
    "--sysfs-root", default="/", show_default=True, type=click.Path(exists=True, file_okay=False), help=SYSFS_HELP
)
@click.option("--name", help="Cluster name, a DNS-1123 label (default: from the host name).")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write here instead of stdout, atomically: one complete file (the last writer's), never a partial or mixed one.",
)
def discover(sysfs_root, name, output):
    """Write a cluster descriptor for this node, from NVML (GPUs) and sysfs (HCAs, NICs, NUMA).

    Each GPU is paired with its nearest HCA ports by PCIe distance (PIX/PXB < PHB < NODE < SYS).
    Ports nearest to no GPU, DOWN, or Ethernet on an InfiniBand node become storage / in-band; every
    such inference carries a '# guess:' comment. The output is validated before it is written.
    Exit status 1 on a node without an NVIDIA GPU.
    """
    from ..node import discover as mod

    _writable(output)
    with _node_required("discover"):
        text = mod.discover(sysfs_root, name=name)
    emit(text, output)


@click.command(
    epilog="""\b
Examples:
  ncclgen doctor --cluster h100-ib
  srun --ntasks-per-node=1 ncclgen doctor --cluster clusters/my-cluster.yaml --format json
"""
)
@click.option(
    "--cluster",
    "-c",
    metavar="NAME|PATH",
    shell_complete=complete_cluster,
    help="Descriptor name or file (default: NCCLGEN_CLUSTER or ncclgen.yaml's cluster:).",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--sysfs-root", default="/", show_default=True, type=click.Path(exists=True, file_okay=False), help=SYSFS_HELP
)
@click.pass_context
def doctor(ctx, cluster, fmt, sysfs_root):
    """Check this node against a descriptor: GPUs (NVML), compute HCA ports (ACTIVE, LinkUp, rate,
    link layer, NUMA), each GPU's rails against the PCIe tree (nearest HCA, as discover pairs them),
    GPUDirect RDMA (nvidia_peermem, or the DMA-BUF path), the bootstrap interfaces, NUMA CPU lists,
    ulimit -l, /dev/shm (against kubernetes.shm_size in a pod), numactl and the NCCL/PyTorch
    variables of the current environment (ncclgen lint rules).

    Prints a pass/info/warn/fail table; exit status 0 when nothing fails, 1 otherwise.
    """
    from ..node import doctor as mod

    if not cluster:
        from ..load import defaults

        found = defaults.configured_cluster()
        if found is None:
            raise click.UsageError(
                "no cluster to check against: give --cluster NAME|PATH or set cluster: in ncclgen.yaml"
            )
        cluster = found[0]
        click.echo(f"doctor: checking against {cluster} (from {found[1]})", err=True)
    desc = descriptor.load_cluster(cluster)
    checks = mod.run(desc, sysfs_root=sysfs_root)
    click.echo((mod.render_json if fmt == "json" else mod.render_text)(desc, checks), nl=False)
    ctx.exit(1 if mod.failed(checks) else 0)


@click.command(
    epilog="""\b
Examples:
  torchrun --nproc-per-node=8 -m ncclgen bench --cluster h100-ib --json allreduce.json
  srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=$HEAD:29500 \\
      -m ncclgen bench --sizes 1M:4G --op all_gather --cluster h100-ib
  torchrun --nproc-per-node=2 -m ncclgen bench --backend gloo   # CPU smoke test (pip install 'ncclgen[bench]')
"""
)
# nccl-tests' defaults (its banner: "warmup iters: 5 iters: 20"), and its usual -b 8 -e 1G sweep.
@click.option(
    "--sizes",
    metavar="MIN:MAX",
    help="Message sizes in bytes: powers of two from MIN to MAX (K/M/G = 2^10/2^20/2^30), or one "
    "size.  [default: 8:1G with nccl, 8:1M with gloo]",
)
@click.option("--iters", type=click.IntRange(min=1), default=20, show_default=True, help="Timed iterations per size.")
@click.option(
    "--warmup", type=click.IntRange(min=0), default=5, show_default=True, help="Untimed iterations per size first."
)
@click.option(
    "--op", type=click.Choice(["all_reduce", "all_gather", "reduce_scatter"]), default="all_reduce", show_default=True
)
@click.option(
    "--backend",
    type=click.Choice(["nccl", "gloo"]),
    default="nccl",
    show_default=True,
    help="torch.distributed backend: nccl on GPUs, gloo on CPUs.",
)
@click.option(
    "--cluster",
    "-c",
    metavar="NAME|PATH",
    shell_complete=complete_cluster,
    help="Descriptor: also print busbw as % of its NVLink (one node) or rail (several nodes) bound (nccl backend).",
)
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the results as JSON (rank 0).")
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False),
    help="Draw busbw vs size to this PNG (rank 0; needs pip install 'ncclgen[plot]').",
)
def bench(sizes, iters, warmup, op, backend, cluster, json_path, plot_path):
    """Measure collective bus bandwidth with torch.distributed, one process per GPU under torchrun.

    Rank 0 prints an nccl-tests-style table: size, count, type, time, algbw = size/time and
    busbw = algbw x 2(n-1)/n (all_reduce) or x (n-1)/n (all_gather, reduce_scatter). The share of the
    descriptor's bound is shown with --backend nccl only. Needs torch and numpy: pip install
    'ncclgen[bench]'.
    """
    from ..node import bench as mod

    size_list = mod.parse_sizes(sizes or mod.DEFAULT_SIZES[backend])
    desc = descriptor.load_cluster(cluster) if cluster else None
    _writable(json_path)
    _writable(plot_path)
    if plot_path:
        mod.require_matplotlib()
    mod.require_torch()
    mod.torchrun_env()
    rank, n, nodes, timings = mod.measure(op, backend, size_list, iters, warmup, mod.terminal_progress)
    if rank != 0:
        return
    res = mod.result(op, backend, n, nodes, iters, warmup, timings, desc)
    click.echo(mod.table(res), nl=False)
    if json_path:
        emit(json.dumps(res, indent=2) + "\n", json_path)
    if plot_path:
        mod.plot(res, plot_path)


@click.group(
    invoke_without_command=True,
    epilog="""\b
Examples:
  ncclgen monitor --interval 5 -o gpu-$(hostname).jsonl &   # background step; killed at job end
  ncclgen monitor --duration 60                             # one minute to stdout
  ncclgen monitor summary gpu-node01.jsonl
""",
)
@click.option(
    "--interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True, help="Seconds between samples."
)
@click.option(
    "--duration", type=click.FloatRange(min=0), help="Stop after this many seconds (default: on SIGTERM/SIGINT)."
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write JSONL here instead of stdout.")
@click.pass_context
def monitor(ctx, interval, duration, output):
    """Sample every GPU through NVML (utilisation, memory, power, PCIe and NVLink throughput) as
    JSONL, one object per GPU per sample; unsupported metrics are null. Stops cleanly on SIGTERM or
    SIGINT with the file flushed. `monitor summary FILE` reports per-GPU utilisation.
    """
    if ctx.invoked_subcommand is not None:
        return
    from ..node import monitor as mod

    with contextlib.ExitStack() as stack:
        if output:
            try:
                out = stack.enter_context(open(output, "w", encoding="utf-8"))
            except OSError as exc:
                raise UserError(f"cannot write: {exc.strerror}", file=output) from None
        else:
            out = sys.stdout  # type: ignore[assignment]  # a TextIO like the file opened above
        with _node_required("monitor"):
            mod.run(out, interval, duration)


@monitor.command(
    "summary",
    epilog="""\b
Example:
  ncclgen monitor summary gpu-node01.jsonl gpu-node02.jsonl
""",
)
@click.argument("files", nargs=-1, required=True, type=click.Path())
def summary(files):
    """Per-GPU mean, p5 and p95 utilisation and the share of samples above 85% (the seed article's
    target) from `ncclgen monitor` JSONL files."""
    from ..node import monitor as mod

    click.echo(mod.render_summary(mod.summarize(list(files))), nl=False)
