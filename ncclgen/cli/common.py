"""Options shared by env, explain, diff, slurm and k8s; they become a pipeline Request."""

from __future__ import annotations

import dataclasses

import click

from .. import pipeline
from ..plan import Plan, Request
from .options import COMPLETIONS, click_options

complete_cluster = COMPLETIONS["cluster"]  # --cluster of doctor, bench, lint, triage
complete_workload = COMPLETIONS["workload"]


def cluster_option(help: str):
    """--cluster/-c NAME|PATH with shell completion of the descriptor names."""
    return click.option("--cluster", "-c", metavar="NAME|PATH", shell_complete=complete_cluster, help=help)


def plan_options(f):
    """The Request's options but --target (declared on its fields, plan/request.py), then `-- ARGS`
    (defaults: ncclgen/load/defaults.py)."""
    f = click.argument("extra_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- ARGS...]")(f)
    return click_options(Request, skip=("target", "extra_args"))(f)


def target_option(f):
    """--target for commands that print a plan without rendering it for a scheduler (env, explain)."""
    return click_options(Request, only=("target",))(f)


def request_from(params: dict) -> Request:
    """The pipeline Request for plan_options' (and target_option's) parameters, popped from ``params``:
    every field of Request by its name (None where the option was not given: the pipeline's defaults)."""
    values = {f.name: params.pop(f.name) for f in dataclasses.fields(Request) if f.name in params}
    for name in ("sets", "unchecked_sets", "extra_args"):
        values[name] = tuple(values.get(name, ()))
    return pipeline.request(**values)


def make_plan(req: Request) -> Plan:
    """pipeline.make_plan, then lint's warnings and infos about the plan on stderr, one line each."""
    from ..lint.gate import advisories

    plan = pipeline.make_plan(req)
    for line in advisories(plan):
        click.echo(line, err=True)
    return plan
