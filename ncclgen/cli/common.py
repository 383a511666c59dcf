"""Options shared by env, explain, diff, slurm and k8s; they become a pipeline Request."""

from __future__ import annotations

import click
import click.shell_completion

from .. import pipeline
from ..plan import TARGETS, Plan, Request
from ..plan.request import TRANSPORT_CHECKS


def complete_cluster(ctx, param, incomplete):
    """Shell completion for --cluster: the descriptor names found in the search folders."""
    from ..load import descriptor

    return [click.shell_completion.CompletionItem(n) for n in descriptor.available() if n.startswith(incomplete)]


def complete_workload(ctx, param, incomplete):
    """Shell completion for --workload: the workload names found in the search folders."""
    from ..load import workload

    return [click.shell_completion.CompletionItem(n) for n in workload.available() if n.startswith(incomplete)]


def cluster_option(help: str):
    """--cluster/-c NAME|PATH with shell completion of the descriptor names."""
    return click.option("--cluster", "-c", metavar="NAME|PATH", shell_complete=complete_cluster, help=help)


def plan_options(f):
    """--cluster, --tier, --workload, --nodes, --set, --debug and `-- ARGS` (defaults: ncclgen/load/defaults.py)."""
    f = click.argument("extra_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- ARGS...]")(f)
    f = click.option("--debug", is_flag=True, help="NCCL_DEBUG=INFO with NET subsystem logging.")(f)
    f = click.option(
        "--transport-check",
        type=click.Choice(TRANSPORT_CHECKS),
        default="on",
        show_default=True,
        help="Check on every node (Slurm step or pod) what NCCL chose at init (net, plugin, HCAs, GPUDirect "
        "RDMA, version) against the plan: on ends the job (the check exits 7) on a difference, warn prints "
        "it and runs on, off leaves the check and its NCCL_DEBUG settings out.",
    )(f)
    f = click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="NAME=VALUE",
        help="Override or add a variable (repeatable); linted like everything else: an error stops, "
        "a warning or info prints on stderr.",
    )(f)
    f = click.option(
        "--set-unchecked",
        "unchecked_sets",
        multiple=True,
        metavar="NAME=VALUE",
        help="As --set, for a name ncclgen's knowledge base does not know (your application's) or a search "
        "path (PYTHONPATH): passed unchecked and labelled 'unchecked' in the script and explain, as "
        "`unchecked: true` in a file. Names that make a shell, the loader or Python run code stay refused.",
    )(f)
    f = click.option("--nodes", type=click.IntRange(1, 4096), help="Node count (default: the workload's).")(f)
    f = click.option(
        "--workload",
        "-w",
        metavar="NAME|PATH",
        shell_complete=complete_workload,
        help="Bundled workload name or YAML file (default: verl-grpo-qwen2-7b).",
    )(f)
    f = click.option(
        "--tier",
        "-t",
        type=click.IntRange(1, 3),
        metavar="1|2|3",
        help="1 stable, 2 performance, 3 expert (cumulative; default 1).",
    )(f)
    f = cluster_option("Descriptor name or file (default: h100-ib).")(f)
    return f


def target_option(f):
    """--target for commands that print a plan without rendering it for a scheduler (env, explain)."""
    return click.option(
        "--target",
        type=click.Choice(TARGETS),
        default="host",
        show_default=True,
        help="host: the view from a Slurm job on the node; pod: from a Kubernetes pod.",
    )(f)


def request_from(params: dict) -> Request:
    """The pipeline Request for plan_options' (and target_option's) parameters, popped from ``params``."""
    return pipeline.request(
        params.pop("cluster"),
        params.pop("tier"),
        params.pop("workload"),
        params.pop("nodes"),
        tuple(params.pop("sets")),
        params.pop("debug"),
        target=params.pop("target", "host"),
        extra_args=tuple(params.pop("extra_args")),
        unchecked_sets=tuple(params.pop("unchecked_sets")),
        transport_check=params.pop("transport_check", "on"),
    )


def make_plan(req: Request) -> Plan:
    """pipeline.make_plan, then lint's warnings and infos about the plan on stderr, one line each."""
    from ..lint.gate import advisories

    plan = pipeline.make_plan(req)
    for line in advisories(plan):
        click.echo(line, err=True)
    return plan
