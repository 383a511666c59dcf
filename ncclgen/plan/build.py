"""The plan: (descriptor, workload, tier) -> env with reasons, per-rank binding, launch spec.

This is the only place env logic lives. Renderers (render_slurm, render_k8s) and the `env` / `explain`
commands consume a Plan and never look at rules. Pipeline: load -> plan -> lint -> render.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional

from . import binding, launch, rules
from ..load.descriptor import ENV_NAME, Descriptor
from ..errors import UserError
from ..load.workload import Workload

TIERS = (1, 2, 3)
BIND_TIER = 3


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str
    tier: int          # 1..3 for rules and vendor settings, 0 for overrides
    origin: str        # "rule <id>", "vendor", "descriptor env", "workload env", "--set"
    reason: str
    source: str

    def label(self) -> str:
        """'tier 2, rule ib-qps' or 'override, --set': the prefix of every explaining comment."""
        return f"tier {self.tier}, {self.origin}" if self.tier else f"override, {self.origin}"


@dataclass(frozen=True)
class Plan:
    cluster: Descriptor
    workload: Workload
    tier: int
    debug: bool
    env: tuple[EnvVar, ...]
    binding: tuple[binding.RankBinding, ...]
    launch: launch.Launch

    def env_dict(self) -> dict[str, str]:
        return {e.name: e.value for e in self.env}


def parse_set(items) -> tuple[tuple[str, str], ...]:
    """--set NAME=VALUE pairs; the value may hold anything, '=' and ',' included."""
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not re.fullmatch(ENV_NAME, name):
            raise UserError(f"--set {item!r}: expected NAME=VALUE with NAME a valid variable name")
        if "\0" in value:
            raise UserError(f"--set {name}: NUL byte in value")
        out.append((name, value))
    return tuple(out)


def build(cluster: Descriptor, workload: Workload, tier: int, *, nodes: Optional[int] = None,
          overrides: tuple[tuple[str, str], ...] = (), debug: bool = False) -> Plan:
    """Evaluate the rules up to ``tier`` and apply vendor settings and overrides, in that order."""
    if tier not in TIERS:
        raise UserError(f"--tier {tier}: expected 1 (stable), 2 (performance) or 3 (expert)")
    n = nodes if nodes is not None else workload.nodes
    if n < 1:
        raise UserError(f"--nodes {n}: expected at least 1")
    bind = tier >= BIND_TIER
    ctx = rules.Context(cluster=cluster, workload=workload, nodes=n, debug=debug, bind=bind)

    env: dict[str, EnvVar] = {}
    for t in TIERS[:tier]:
        for rule in rules.load_rules():
            if rule.tier != t:
                continue
            value = rules.evaluate(rule, ctx)
            if value is not None and getattr(env.get(rule.var), "origin", "") != "vendor":
                # The vendor's published value for this system wins over a generic rule.
                env[rule.var] = EnvVar(rule.var, value, t, f"rule {rule.id}", rule.reason, rule.source)
        for s in cluster.vendor_env:
            if s.tier == t:
                _put(env, EnvVar(s.name, s.value, t, "vendor", s.reason, _cite(cluster, s.source)))
    for origin, settings in (("descriptor env", cluster.env), ("workload env", workload.env)):
        for s in settings:
            src = _cite(cluster, s.source) if origin == "descriptor env" else workload.sources.get(s.source or "", s.source or "")
            _put(env, EnvVar(s.name, s.value, 0, origin, s.reason, src or origin))
    for name, value in overrides:
        _put(env, EnvVar(name, value, 0, "--set", "set on the command line", "--set"))

    spec = launch.Launch(
        launcher=workload.launcher,
        command=launch.derive_command(workload, cluster, n),
        nodes=n,
        gpus_per_node=cluster.node.gpus_per_node,
        cpus_per_node=cluster.cpus_per_node,
        bind=bind,
        bind_memory=cluster.node.bind_memory,
    )
    return Plan(cluster=cluster, workload=workload, tier=tier, debug=debug, env=tuple(env.values()),
                binding=binding.bindings(cluster), launch=spec)


def _put(env: dict[str, EnvVar], var: EnvVar) -> None:
    """Later settings win; say which rule they replaced so `explain` shows the override."""
    old = env.get(var.name)
    if old is not None and old.value != var.value:
        var = replace(var, reason=f"{var.reason} (replaces {old.origin} value {old.value!r})")
    env[var.name] = var


def _cite(cluster: Descriptor, source: Optional[str]) -> str:
    if source is None:
        return f"descriptor {cluster.name}"
    return cluster.sources.get(source, source)
