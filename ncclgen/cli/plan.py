"""`ncclgen env` and `ncclgen explain`: the plan as text."""

from __future__ import annotations

import json
import re
import shlex
import textwrap

import click

from .. import __version__
from ..errors import UserError
from ..output import emit
from ..plan import flightrec, launch
from ..plan.build import prepends
from ..render import shell
from .common import make_plan, plan_options, request_from, target_option

# Every character str.splitlines breaks a line at: a line-oriented reader of a dotenv file may too.
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def header(p) -> str:
    return (
        f"ncclgen {__version__}: cluster {p.cluster.name}, tier {p.tier}, workload {p.workload.name}, "
        f"{p.launch.nodes} node(s)"
    )


def format_env(p, fmt: str) -> str:
    """shell: `export` lines safe to `source` for any value; dotenv: the same without `export`."""
    if fmt == "json":
        doc = {
            "cluster": p.cluster.name,
            "tier": p.tier,
            "workload": p.workload.name,
            "env": [e.as_json() for e in p.env],
        }
        return json.dumps(doc, indent=2) + "\n"
    prefix = "export " if fmt == "shell" else ""
    lines = [f"# {header(p)}"]
    for e in p.env:
        lines.append(f"# {e.label()}: {_one_line(e.reason)}")
        if fmt == "dotenv" and _LINE_BREAK.search(e.value):
            raise UserError(
                f"{e.name}: the value holds a line break, which a dotenv file cannot carry on one line "
                "(readers differ on quoting): use --format shell or --format json"
            )
        # $'...' where a control character is (one line per variable); "..." where ${SLURM_JOB_ID} expands
        value = flightrec.shell_word(e.value) or shell.comment_quote(e.value)
        if fmt == "shell" and prepends(e, p.target):
            value += f'"${{{e.name}:+:${e.name}}}"'  # in front of the loader path the shell already has
        lines.append(f"{prefix}{e.name}={value}")
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


@click.command()
@plan_options
@target_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["shell", "dotenv", "json"]),
    default="shell",
    show_default=True,
    help="shell: export lines to source; dotenv: NAME=value; json.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write here instead of stdout, atomically: one complete file (the last writer's), never a partial or mixed one.",
)
def env(fmt, output, **params):
    """Print the plan's environment.

    \b
    Example:
      ncclgen env --cluster h100-ib --tier 2 > nccl.env && source nccl.env
    """
    plan = make_plan(request_from(params))
    emit(format_env(plan, fmt), output)


@click.command()
@plan_options
@target_option
def explain(**params):
    """Every variable with its value, tier, reason and source; the binding per local rank; the launch.

    \b
    Example:
      ncclgen explain --cluster h100-ib --tier 3 --workload verl-sft
    """
    plan = make_plan(request_from(params))
    click.echo(render_explain(plan), nl=False)


def _backend_line(p) -> str:
    """Which class init_process_group(backend="nccl") builds for the cluster's PyTorch and the plan's env."""
    from ..lint.knowledge import nccl_backend

    torch = p.cluster.software.torch
    use = next((e.value for e in p.env if e.name == "TORCH_DIST_USE_NCCL2"), None)
    cls, why = nccl_backend(torch, use)
    return f"PyTorch 'nccl' backend: {cls} ({why})"


def _why_wrapper() -> textwrap.TextWrapper:
    return textwrap.TextWrapper(width=100, initial_indent="    why: ", subsequent_indent="         ")


def render_explain(p) -> str:
    out = [header(p), "", "ENVIRONMENT", *_env_section(p), "", *_binding_section(p), "", *_launch_section(p)]
    return "\n".join(out) + "\n"


def _env_section(p) -> list[str]:
    wrap = _why_wrapper()
    out = []
    width = max((len(e.name) for e in p.env), default=0)
    for e in p.env:
        value = shell.comment_quote(e.value) if shell.CONTROL.search(e.value) else e.value  # one line, as data
        out.append(f"  {e.name.ljust(width)}  {value}    [{e.label()}]")
        out += wrap.wrap(_one_line(e.reason))
        out.append(f"    source: {shell.one_line(e.source)}")
    return out


def _binding_section(p) -> list[str]:
    out = [
        "BINDING (local rank -> GPU -> NUMA node)"
        + ("" if p.launch.bind else f": computed, applied only at tier 3 (this is tier {p.tier})")
    ]
    rows = [("RANK", "GPU", "NUMA", "CPUS", "RAILS")]
    rows += [(str(b.local_rank), str(b.gpu), str(b.numa), b.cpus, ",".join(b.rails) or "-") for b in p.binding]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    out += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    if p.launch.bind:
        out += [f"  {line}" for line in p.launch.applied_binding()]
    return out


def _resize_line(la) -> str:
    counts = f"{la.resize_min} or more" if la.resize_max is None else f"{la.resize_min} to {la.resize_max}"
    why = "; ".join(la.resize_why) or "nothing in the plan depends on it"
    return f"  Slurm node count: {counts} (a job resized at submission runs with the nodes it got; {why})"


def _launch_section(p) -> list[str]:
    from ..plan import preflight

    la = p.launch
    out = [
        "LAUNCH",
        f"  launcher: {la.launcher}, {la.nodes} node(s) x {la.gpus_per_node} GPUs",
        "  Slurm " + launch.slurm_ports(p.cluster.slurm.exclusive).describe(la.launcher),
        _resize_line(la),
        f"  preflight (every node or pod, before the launch; exit {preflight.EXIT_PROBLEMS} on a "
        "problem, --no-preflight to leave out): " + "; ".join(preflight.describe(preflight.spec(p))),
    ]
    from ..plan import transport

    out.append(transport.explain_line(p))
    out.append(flightrec.explain_line(p))
    cmd = shell.comment_line(la.command)
    if la.launcher == "torchrun":
        bind = launch.BIND_ARGV0 + " " if la.bind else ""
        out.append(
            f"  per node: torchrun --nnodes={la.nodes} {' '.join(la.torchrun_options())} "
            f"--rdzv-endpoint=<head-address>:{la.rdzv_port} --rdzv-id=<job-id> {bind}{cmd}"
        )
        if la.bind:
            out.append(
                f"  {launch.BIND_ARGV0}: runs each rank under numactl on its GPU's NUMA node (Slurm: a file in"
                " the node's private folder, on PATH; pods: bash /etc/ncclgen/bind.sh)"
            )
    else:
        out += _ray_lines(p, cmd)
    out += [f"  per-run (-- ARGS): {note}" for note in la.per_run]
    out.append("  " + _backend_line(p))
    if p.workload.setup:
        out.append(
            "  setup (once per node, before the launch; it may not change a name the plan owns): "
            + "; ".join(p.workload.setup)
        )
    return out + _pods_lines(p) + _verl_lines(p)


def _pods_lines(p) -> list[str]:
    """The QoS class `ncclgen k8s` pods get from this descriptor, and the keys that make them Guaranteed."""
    from ..errors import UserError
    from ..load import views
    from ..render.k8s import qos_note

    try:
        kube = views.view(p.cluster, "pod").kubernetes
    except UserError:  # no pod view for this descriptor: `ncclgen k8s` refuses it and says why
        return []
    text = "kubernetes pods (ncclgen k8s): " + qos_note(kube.resources, [s.name for s in kube.sidecars])
    return textwrap.wrap(text, 100, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)


def _ray_lines(p, cmd: str) -> list[str]:
    la = p.launch
    out = [
        f"  head: {shlex.join(la.ray_head_argv())}",
        f"  workers: {shlex.join(la.ray_worker_argv('<head-address>'))}",
        f"  wait: until {la.nodes} nodes and {la.want_gpus} GPUs joined (timeout "
        f"{la.ray_ready_timeout_s} s); watchdog every {la.ray_watch_interval_s} s",
    ]
    if la.bind:
        out.append("  tier 3: Ray worker hook " + ", ".join(f"{n}={v}" for n, v in launch.ray_hook_env(p.binding)))
    out.append(f"  driver (once, head node): {cmd}")
    return out


def _verl_lines(p) -> list[str]:
    wl = p.workload
    if wl.framework != "verl" or not wl.verl:
        return []
    from ..load import verl

    out = [
        f"  verl: {wl.verl}; every override above checked against its configuration "
        "(ncclgen/data/verl, from the released wheels)"
    ]
    t = verl.timeout(p.launch.command, wl.verl)
    if t:
        knob = f"set by {t['knob']}" if t["knob"] else "no config key sets it"
        out.append(f"  collective timeout: {t['seconds']} s, {knob}; ncclgen appends none (NCCL has no NCCL_TIMEOUT)")
        out += _why_wrapper().wrap(_one_line(t["why"]))
    return out
