"""`ncclgen diff`: the env effect of a change of tier or descriptor (logic: ncclgen/plan/diff.py)."""

from __future__ import annotations

import dataclasses

import click

from ..plan.diff import diff_json, render_diff
from .common import make_plan, plan_options, request_from


@click.command()
@plan_options
@click.option("--vs-tier", type=click.IntRange(1, 3), metavar="1|2|3", help="Compare with this tier.")
@click.option("--vs-cluster", metavar="NAME|PATH", help="Compare with this descriptor (e.g. the changed file).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: for a reviewer; json: for tools (both sides, reasons, sources).",
)
def diff(vs_tier, vs_cluster, fmt, **params):
    """Which variables a change of tier or descriptor adds, removes or changes, each with its reason.

    The first side is --cluster/--tier, the second the same with --vs-tier and/or --vs-cluster
    applied. Both sides are linted like any render. Exit status 0 whether or not they differ.

    \b
    Examples:
      ncclgen diff --cluster h100-ib --tier 1 --vs-tier 3
      git show HEAD~1:clusters/a.yaml > /tmp/old.yaml
      ncclgen diff --cluster /tmp/old.yaml --vs-cluster clusters/a.yaml --tier 3
    """
    if vs_tier is None and vs_cluster is None:
        raise click.UsageError("give --vs-tier and/or --vs-cluster: the side to compare with")
    req = request_from(params)
    a = make_plan(req)
    b = make_plan(dataclasses.replace(req, cluster=vs_cluster or req.cluster, tier=vs_tier or req.tier))
    names = (req.cluster, vs_cluster or req.cluster)
    click.echo((render_diff if fmt == "text" else diff_json)(a, b, names), nl=False)
