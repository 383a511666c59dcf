"""Tier rules: data in ncclgen/data/rules.yaml, evaluated here against a descriptor and a workload.

Logic that cannot be a literal (HCA lists, interface lists, CTA counts) lives in DERIVATIONS, named
from the data file; everything else (which variable, which tier, when, why, from where) is data.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from .. import datapaths
from ..load.descriptor import Descriptor
from ..load.schema import field, load_dataclass
from ..load.workload import Workload
from ..load.yamlio import load_file
from ..record import dataclass


@dataclass(frozen=True, kw_only=True)
class When:
    """Conditions of a rule; all given ones must hold."""

    fabric: tuple[str, ...] | None = field(None)
    not_fabric: tuple[str, ...] | None = field(None)
    plugin: tuple[str, ...] | None = field(None)
    not_plugin: tuple[str, ...] | None = field(None)
    nccl_min: str | None = field(None)
    nccl_below: str | None = field(None)
    torch_below: str | None = field(None)
    torch_min: str | None = field(None)
    compute_capability: tuple[str, ...] | None = field(None)
    launcher: tuple[str, ...] | None = field(None)
    framework: tuple[str, ...] | None = field(None)
    backend: tuple[str, ...] | None = field(None)
    nodes_min: int | None = field(None)
    model_b_min: float | None = field(None)
    memory_saving: bool | None = field(None)
    sharp: bool | None = field(None)
    debug: bool | None = field(None)
    bind: bool | None = field(None)
    transport: bool | None = field(None)


@dataclass(frozen=True, kw_only=True)
class Derive:
    derive: str = field(doc="name in rules.DERIVATIONS")


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One variable, the tier that emits it, when, why and from where."""

    id: str = field()
    tier: int = field(min=1, max=3)
    var: str = field()
    when: When = field(factory=When)
    value: str | Derive = field(scalar=True)
    reason: str = field()
    source: str = field()


@dataclass(frozen=True, kw_only=True)
class NotEmitted:
    """A variable ncclgen never emits although recipes set it, and why (listed in docs/tiers.md)."""

    var: str = field()
    reason: str = field()
    source: str = field()


@dataclass(frozen=True, kw_only=True)
class RuleFile:
    """rules.yaml: the rules, and the variables deliberately left out."""

    not_emitted: tuple[NotEmitted, ...] = field()
    rules: tuple[Rule, ...] = field()


@dataclass(frozen=True)
class Context:
    """What rule conditions and derivations look at."""

    cluster: Descriptor
    workload: Workload
    nodes: int
    debug: bool
    bind: bool
    transport: bool = True  # the in-job transport check is on (--transport-check on or warn)
    target: str = "host"  # the view: host (Slurm, env, explain) or pod (Kubernetes)


def version(v: str) -> tuple[int, ...]:
    """'2.6.0' -> (2, 6, 0); the release part only, so NGC's torch '2.6.0a0+ecf3bae40a' compares as 2.6.0."""
    release = re.match(r"[0-9]{1,9}(\.[0-9]{1,9})*", v)
    return tuple(int(p) for p in release.group(0).split(".")) if release else ()


# GPU families by compute capability major (NVIDIA, https://developer.nvidia.com/cuda-gpus): matched as a
# whole token of node.gpu_model ('H100-SXM5-80GB', 'NVIDIA GH200'); an unknown model matches no condition.
COMPUTE_CAPABILITY = {
    "8": ("A100", "A800", "A30", "A40", "A10", "A16", "A2", "L4", "L40", "L40S", "L20", "RTX6000ADA"),
    "9": ("H100", "H800", "H200", "H20", "GH200"),
    "10": ("B100", "B200", "B300", "GB200", "GB300"),
}


def compute_capability(gpu_model: str) -> str | None:
    """The compute capability major of a descriptor's gpu_model, or None when the family is not listed."""
    for major, families in COMPUTE_CAPABILITY.items():
        if re.search(r"(?<![A-Z0-9])(" + "|".join(families) + r")(?![A-Z0-9])", gpu_model.upper()):
            return major
    return None


@functools.lru_cache(maxsize=1)
def rule_file() -> RuleFile:
    doc = load_file(datapaths.data("rules.yaml"))
    data = load_dataclass(doc, doc.data, RuleFile)
    for i, r in enumerate(data.rules):
        if isinstance(r.value, Derive) and r.value.derive not in DERIVATIONS:
            raise doc.error(("rules", i, "value", "derive"), f"unknown derivation {r.value.derive!r}")
    return data


def load_rules() -> tuple[Rule, ...]:
    return rule_file().rules


def not_emitted() -> tuple[NotEmitted, ...]:
    return rule_file().not_emitted


def holds(w: When, ctx: Context) -> bool:
    return _cluster_holds(w, ctx) and _run_holds(w, ctx)


def _cluster_holds(w: When, ctx: Context) -> bool:
    """The conditions on the descriptor: fabric, plugin, versions, GPU."""
    net = ctx.cluster.network
    nccl = version(ctx.cluster.software.nccl)
    checks = (
        w.fabric is None or net.fabric in w.fabric,
        w.not_fabric is None or net.fabric not in w.not_fabric,
        w.plugin is None or net.net_plugin in w.plugin,
        w.not_plugin is None or net.net_plugin not in w.not_plugin,
        w.nccl_min is None or nccl >= version(w.nccl_min),
        w.nccl_below is None or nccl < version(w.nccl_below),
        w.torch_below is None or version(ctx.cluster.software.torch) < version(w.torch_below),
        w.torch_min is None or version(ctx.cluster.software.torch) >= version(w.torch_min),
        w.compute_capability is None or compute_capability(ctx.cluster.node.gpu_model) in w.compute_capability,
        w.sharp is None or net.sharp == w.sharp,
    )
    return all(checks)


def _run_holds(w: When, ctx: Context) -> bool:
    """The conditions on the workload and the request."""
    wl = ctx.workload
    checks = (
        w.launcher is None or wl.launcher in w.launcher,
        w.framework is None or wl.framework in w.framework,
        w.backend is None or wl.backend in w.backend,
        w.nodes_min is None or ctx.nodes >= w.nodes_min,
        w.model_b_min is None or (wl.model_params_b or 0) >= w.model_b_min,
        w.memory_saving is None or wl.nccl_memory_saving == w.memory_saving,
        w.debug is None or ctx.debug == w.debug,
        w.bind is None or ctx.bind == w.bind,
        w.transport is None or ctx.transport == w.transport,
    )
    return all(checks)


# -- derivations: descriptor facts -> NCCL value syntax (see NCCL v2.30.7 src/misc/utils.cc) ----------


def _ib_hca(ctx: Context) -> str | None:
    """'=' then every compute rail's hca:port once, in descriptor order (network.compute)."""
    ports = []
    for r in ctx.cluster.network.compute:
        entry = f"{r.hca}:{r.port}"
        if r.hca and entry not in ports:
            ports.append(entry)
    return "=" + ",".join(ports) if ports else None


def _nccl_socket_ifname(ctx: Context) -> str:
    """network.bootstrap_interfaces joined by commas, after '=' when they are exact names, after '^' when
    they are names to exclude."""
    net = ctx.cluster.network
    prefix = {"exact": "=", "exclude": "^"}.get(net.bootstrap_match, "")
    return prefix + ",".join(net.bootstrap_interfaces)


def _gloo_socket_ifname(ctx: Context) -> str | None:
    """network.bootstrap_interfaces joined by commas; nothing for prefixes (Gloo matches exactly)."""
    net = ctx.cluster.network
    return ",".join(net.bootstrap_interfaces) if net.bootstrap_match == "exact" else None


def _roce_gid_index(ctx: Context) -> str | None:
    """network.roce.gid_index; skipped when it is auto."""
    roce = ctx.cluster.network.roce
    return None if roce is None or roce.gid_index == "auto" else str(roce.gid_index)


def _roce_traffic_class(ctx: Context) -> str | None:
    """network.roce.traffic_class; skipped when not declared."""
    roce = ctx.cluster.network.roce
    return None if roce is None or roce.traffic_class is None else str(roce.traffic_class)


def _topo_file(ctx: Context) -> str | None:
    """network.topo_file; skipped when not declared."""
    return ctx.cluster.network.topo_file


def _min_ctas(ctx: Context) -> str | None:
    """2 x the number of compute rails (network.compute), at most 32."""
    rails = len(ctx.cluster.network.compute)
    return str(min(32, 2 * rails)) if rails else None


def _fr_dump_file(ctx: Context) -> str:
    """The job's flight-recorder folder and file prefix (plan/flightrec.py)."""
    from . import flightrec

    return flightrec.dump_file(ctx.cluster, ctx.target)


DERIVATIONS: dict[str, Callable[[Context], Any]] = {
    "fr_dump_file": _fr_dump_file,
    "ib_hca": _ib_hca,
    "nccl_socket_ifname": _nccl_socket_ifname,
    "gloo_socket_ifname": _gloo_socket_ifname,
    "roce_gid_index": _roce_gid_index,
    "roce_traffic_class": _roce_traffic_class,
    "topo_file": _topo_file,
    "min_ctas": _min_ctas,
}


def evaluate(rule: Rule, ctx: Context) -> str | None:
    """The rule's value for ``ctx``, or None when it does not apply."""
    if not holds(rule.when, ctx):
        return None
    if isinstance(rule.value, Derive):
        return DERIVATIONS[rule.value.derive](ctx)
    return rule.value
