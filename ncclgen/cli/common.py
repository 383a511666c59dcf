"""Options shared by env, explain, slurm and k8s, and the load -> plan -> lint step they share."""

from __future__ import annotations

import click

from ..load import defaults, descriptor, workload as workloadmod
from .. import plan as planmod
from ..errors import UserError


def plan_options(f):
    """--cluster, --tier, --workload, --nodes, --set, --debug (defaults: see ncclgen/load/defaults.py)."""
    f = click.option("--debug", is_flag=True, help="NCCL_DEBUG=INFO with NET subsystem logging.")(f)
    f = click.option("--set", "sets", multiple=True, metavar="NAME=VALUE",
                     help="Override or add a variable (repeatable); linted like everything else.")(f)
    f = click.option("--nodes", type=click.IntRange(1, 4096), help="Node count (default: the workload's).")(f)
    f = click.option("--workload", "-w", metavar="NAME|PATH",
                     help="Bundled workload name or YAML file (default: verl-grpo-qwen2-7b).")(f)
    f = click.option("--tier", "-t", type=click.IntRange(1, 3), metavar="1|2|3",
                     help="1 stable, 2 performance, 3 expert (cumulative; default 1).")(f)
    f = click.option("--cluster", "-c", metavar="NAME|PATH",
                     help="Descriptor name or file (default: h100-ib).")(f)
    return f


def make_plan(cluster, tier, workload, nodes, sets, debug) -> planmod.Plan:
    """load -> plan -> lint: a plan whose user-supplied settings NCCL/PyTorch really read."""
    desc = descriptor.load_cluster(cluster or defaults.default("cluster"))
    wl = workloadmod.load_workload(workload or defaults.default("workload"))
    p = planmod.build(desc, wl, tier or defaults.default("tier"), nodes=nodes,
                      overrides=planmod.parse_set(sets), debug=debug)
    gate(p)
    return p


def gate(p: planmod.Plan) -> None:
    """Refuse to render a variable the linter calls an error (invented, removed, invalid value).

    ncclgen's own rules are tested to lint clean (tests/test_plan.py), so a plan made of rules alone
    skips the knowledge-base load; anything else (--set, vendor, descriptor and workload env) is linted
    together with the rule values it sits beside.
    """
    if all(e.origin.startswith("rule ") for e in p.env):
        return
    from .. import lint

    pairs = [(e.name, e.value, i + 1) for i, e in enumerate(p.env)]
    for f in lint.lint_pairs(pairs, p.cluster):
        if f.severity == "error":
            origin = p.env[f.line - 1].origin if 0 < f.line <= len(p.env) else "plan"
            raise UserError(f"{f.variable} ({origin}): {f.message}" + (f"; fix: {f.fix}" if f.fix else ""))
