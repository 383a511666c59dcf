"""Step 2 of load -> plan -> lint -> render: a descriptor, a workload and a tier become a Plan.

The Plan carries the env (each value with its tier, origin, reason and source), the per-rank binding
and the launch spec. Renderers consume a Plan and never look at rules.
"""

from .build import BIND_TIER, TIERS, EnvVar, Origin, OriginKind, Plan, build, parse_set
from .request import TARGETS, Request

__all__ = ["BIND_TIER", "TARGETS", "TIERS", "EnvVar", "Origin", "OriginKind", "Plan", "Request", "build", "parse_set"]
