"""The lint step of the pipeline: a plan whose user-supplied settings NCCL and PyTorch really read."""

from __future__ import annotations

from ..errors import UserError, collect
from ..plan import Plan


def _findings(plan: Plan) -> list[tuple]:
    """(finding, origin) for the plan's env; [] for a plan made of ncclgen's rules alone.

    ncclgen's own rules are tested to lint clean (tests/test_plan.py), so such a plan skips the
    knowledge-base load; anything else (--set, vendor, descriptor and workload env) is linted together
    with the rule values it sits beside.
    """
    if all(e.origin.is_builtin for e in plan.env):
        return []
    from .linter import lint_pairs

    by_line = {i + 1: e for i, e in enumerate(plan.env)}
    # plan.cluster is already the plan's view (host or pod): a host-only name in a pod is an error.
    out = []
    for f in lint_pairs([(e.name, e.value, line) for line, e in by_line.items()], plan.cluster, target=plan.target):
        var = by_line.get(f.line or 0)
        out.append((f, var.origin if var is not None else "plan"))
    return out


def check_plan(plan: Plan) -> None:
    """Refuse to render a plan with any lint error, reporting every one of them at once (as lint does): a
    value from a file is refused at its file:line:col and key path (env[0].value), one from a flag by name."""
    found = []
    for f, origin in _findings(plan):
        if f.severity == "error":
            fix = f"; fix: {f.fix}" if f.fix else ""
            at = getattr(origin, "at", None)
            message = f"{f.variable} ({origin}): {f.message}{fix}"
            found.append(at.error(message) if at is not None else UserError(message))
    collect(found)


def advisories(plan: Plan) -> list[str]:
    """One stderr line per warning or info lint finds in the plan (errors already stopped it), each
    pointing to the commands that say more: the rendered output stays exactly the script/manifest."""
    return [
        f"ncclgen: {f.severity}: {f.code} {f.variable} ({origin}): {f.message}"
        + (f"; fix: {f.fix}" if f.fix else "")
        + " (ncclgen lint on the output, ncclgen explain for the plan)"
        for f, origin in _findings(plan)
        if f.severity != "error"
    ]
