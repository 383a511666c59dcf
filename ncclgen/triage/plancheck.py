"""Check a triaged cause against the plan the job was launched with.

The plan comes from --cluster/--tier/--workload, or from the `# Regenerate: ncclgen slurm ...` line when
the job script is among the inputs (ncclgen's sbatch scripts carry it). A signature's `plan:` entries
say which variable of the plan bears on its cause; a note is printed only when the plan sets it.
"""

from __future__ import annotations

import itertools
import shlex

from .. import pipeline
from ..errors import UserError
from . import catalogue
from .analyse import Result


def plan_env(cluster, tier, workload, regenerate: str | None) -> tuple[dict[str, str], str] | None:
    """(the plan's env, how it was found), or None when no plan is at hand."""
    if not (cluster or tier or workload) and regenerate:
        argv = shlex.split(regenerate)[2:]  # drop 'ncclgen slurm|k8s'
        opts: dict[str, str] = {}
        for flag, value in itertools.pairwise(argv):
            if flag in ("--cluster", "--tier", "--workload", "--nodes"):
                opts[flag[2:]] = value
        cluster, workload = opts.get("cluster"), opts.get("workload")
        tier = int(opts["tier"]) if opts.get("tier", "").isdigit() else None
        origin = f"the job script's Regenerate: line ({regenerate})"
    elif cluster or tier or workload:
        origin = "--cluster/--tier/--workload"
    else:
        return None
    try:
        plan = pipeline.make_plan(pipeline.request(cluster, tier, workload))
    except UserError as exc:
        raise UserError(f"the plan to check against does not load ({origin}): {exc.message}") from None
    return plan.env_dict(), origin


def notes(result: Result, env: dict[str, str]) -> list[str]:
    """Plan notes for the first failure and the context events (NCCL fell back to sockets, ...)."""
    out = []
    events = ([result.first] if result.first and result.status == "cause" else []) + result.contexts
    for ev in events:
        if ev.sig is None:
            continue
        for var, note in ev.sig.plan:
            if var in env:
                out.append(catalogue.fill(note, {**ev.groups, "value": env[var]}))
    return out
