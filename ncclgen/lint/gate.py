"""The lint step of the pipeline: a plan whose user-supplied settings NCCL and PyTorch really read."""

from __future__ import annotations

from ..errors import UserError
from ..plan import Plan


def check_plan(plan: Plan) -> None:
    """Refuse to render a variable the linter calls an error (invented, removed, invalid value).

    ncclgen's own rules are tested to lint clean (tests/test_plan.py), so a plan made of rules alone
    skips the knowledge-base load; anything else (--set, vendor, descriptor and workload env) is
    linted together with the rule values it sits beside.
    """
    if all(e.origin.is_builtin for e in plan.env):
        return
    from .linter import lint_pairs

    by_line = {i + 1: e for i, e in enumerate(plan.env)}
    # plan.cluster is already the plan's view (host or pod): a host-only name in a pod is an error.
    for f in lint_pairs([(e.name, e.value, line) for line, e in by_line.items()], plan.cluster, target=plan.target):
        if f.severity == "error":
            var = by_line.get(f.line or 0)
            origin = str(var.origin) if var is not None else "plan"
            raise UserError(f"{f.variable} ({origin}): {f.message}" + (f"; fix: {f.fix}" if f.fix else ""))
