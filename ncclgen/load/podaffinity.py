"""The descriptor's kubernetes.affinity: the same keys as the Kubernetes API (nodeAffinity, podAffinity,
podAntiAffinity), checked as the API server would (kubernetes pkg/apis/core/validation/validation.go
ValidateNodeSelectorRequirement, ValidatePodAffinityTerm; apimachinery ValidateLabelSelectorRequirement)."""

from __future__ import annotations

import re
from typing import Literal

from ..record import dataclass
from .k8snames import DNS1123_LABEL, Invalid, label_value, qualified_name
from .schema import field


@dataclass(frozen=True, kw_only=True)
class NodeSelectorRequirement:
    """A node label requirement, e.g. key: agentpool, operator: In, values: [gpu]."""

    key: str = field(doc="node label key")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"] = field(doc="how to match")
    values: tuple[str, ...] = field(
        (), doc="values (In, NotIn: at least one; Gt, Lt: one integer; Exists, DoesNotExist: none)"
    )


@dataclass(frozen=True, kw_only=True)
class NodeSelectorTerm:
    """Requirements that must all hold."""

    matchExpressions: tuple[NodeSelectorRequirement, ...] = field((), doc="by node label")
    matchFields: tuple[NodeSelectorRequirement, ...] = field((), doc="by node field (metadata.name)")


@dataclass(frozen=True, kw_only=True)
class NodeSelector:
    """Terms of which at least one must hold."""

    nodeSelectorTerms: tuple[NodeSelectorTerm, ...] = field(doc="terms, ORed")


@dataclass(frozen=True, kw_only=True)
class PreferredSchedulingTerm:
    """A preferred node term with its weight."""

    weight: int = field(doc="1-100", min=1, max=100)
    preference: NodeSelectorTerm = field(doc="the term")


@dataclass(frozen=True, kw_only=True)
class NodeAffinity:
    """Which nodes the pods may or should run on."""

    requiredDuringSchedulingIgnoredDuringExecution: NodeSelector | None = field(None, doc="hard rule")
    preferredDuringSchedulingIgnoredDuringExecution: tuple[PreferredSchedulingTerm, ...] = field((), doc="soft rules")


@dataclass(frozen=True, kw_only=True)
class LabelSelectorRequirement:
    """A pod label requirement."""

    key: str = field(doc="pod label key")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = field(doc="how to match")
    values: tuple[str, ...] = field((), doc="values (In, NotIn: at least one; Exists, DoesNotExist: none)")


@dataclass(frozen=True, kw_only=True)
class LabelSelector:
    """Pods selected by labels."""

    matchLabels: dict[str, str] = field(factory=dict, doc="label -> value, ANDed")
    matchExpressions: tuple[LabelSelectorRequirement, ...] = field((), doc="requirements, ANDed")


@dataclass(frozen=True, kw_only=True)
class PodAffinityTerm:
    """Pods matching labelSelector, in the same topology domain (topologyKey)."""

    labelSelector: LabelSelector | None = field(None, doc="which pods")
    topologyKey: str = field(doc="node label naming the domain, e.g. kubernetes.io/hostname or ib/torset")
    namespaces: tuple[str, ...] = field((), doc="namespaces of those pods (default: the job's)")


@dataclass(frozen=True, kw_only=True)
class WeightedPodAffinityTerm:
    """A preferred pod term with its weight."""

    weight: int = field(doc="1-100", min=1, max=100)
    podAffinityTerm: PodAffinityTerm = field(doc="the term")


@dataclass(frozen=True, kw_only=True)
class PodAffinity:
    """Pod (anti-)affinity rules."""

    requiredDuringSchedulingIgnoredDuringExecution: tuple[PodAffinityTerm, ...] = field((), doc="hard rules")
    preferredDuringSchedulingIgnoredDuringExecution: tuple[WeightedPodAffinityTerm, ...] = field((), doc="soft rules")


@dataclass(frozen=True, kw_only=True)
class Affinity:
    """Pod affinity, as in the Kubernetes API (core/v1 Affinity)."""

    nodeAffinity: NodeAffinity | None = field(None, doc="node affinity, e.g. Azure's agentpool")
    podAffinity: PodAffinity | None = field(None, doc="run near pods, e.g. the same ib/torset")
    podAntiAffinity: PodAffinity | None = field(None, doc="run apart from pods, e.g. one per node")


def affinity_errors(a: Affinity) -> list[tuple[tuple, str]]:
    """(key path under affinity, message) for what the API server would refuse
    (ValidateNodeSelectorRequirement, ValidateLabelSelectorRequirement, ValidatePodAffinityTerm)."""
    errors: list[tuple[tuple, str]] = []

    def requirement(path: tuple, r, *, node_field: bool = False) -> None:
        try:
            if node_field:
                if r.key != "metadata.name":
                    raise Invalid(f"field {r.key!r}: only metadata.name is supported")
            else:
                qualified_name(r.key, "key")
        except Invalid as exc:
            errors.append(((*path, "key"), str(exc)))
        n = len(r.values)
        if r.operator in ("In", "NotIn") and n == 0:
            errors.append(((*path, "values"), f"{r.operator} needs at least one value"))
        elif r.operator in ("Exists", "DoesNotExist") and n:
            errors.append(((*path, "values"), f"{r.operator} takes no values"))
        elif r.operator in ("Gt", "Lt") and (n != 1 or not re.fullmatch(r"-?[0-9]+", r.values[0])):
            errors.append(((*path, "values"), f"{r.operator} takes exactly one integer value"))
        for i, v in enumerate(r.values):
            if r.operator not in ("Gt", "Lt") and not node_field:
                try:
                    label_value(v, "value")
                except Invalid as exc:
                    errors.append(((*path, "values", i), str(exc)))

    def term(path: tuple, t: NodeSelectorTerm) -> None:
        for i, r in enumerate(t.matchExpressions):
            requirement((*path, "matchExpressions", i), r)
        for i, r in enumerate(t.matchFields):
            requirement((*path, "matchFields", i), r, node_field=True)

    def pod_term(path: tuple, t: PodAffinityTerm) -> None:
        try:
            qualified_name(t.topologyKey, "topologyKey")
        except Invalid as exc:
            errors.append(((*path, "topologyKey"), str(exc)))
        for i, ns in enumerate(t.namespaces):
            if not re.fullmatch(DNS1123_LABEL, ns) or len(ns) > 63:
                errors.append(((*path, "namespaces", i), f"{ns!r} is not a namespace (DNS-1123 label)"))
        sel = t.labelSelector
        if sel is not None:
            for k, v in sel.matchLabels.items():
                for check, val, what in ((qualified_name, k, "label key"), (label_value, v, "label value")):
                    try:
                        check(val, what)
                    except Invalid as exc:
                        errors.append(((*path, "labelSelector", "matchLabels", k), str(exc)))
            for i, r in enumerate(sel.matchExpressions):
                requirement((*path, "labelSelector", "matchExpressions", i), r)

    na = a.nodeAffinity
    if na is not None:
        req = na.requiredDuringSchedulingIgnoredDuringExecution
        if req is not None:
            p = ("nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
            if not req.nodeSelectorTerms:
                errors.append(((*p, "nodeSelectorTerms"), "needs at least one term"))
            for i, t in enumerate(req.nodeSelectorTerms):
                term((*p, "nodeSelectorTerms", i), t)
        for i, pt in enumerate(na.preferredDuringSchedulingIgnoredDuringExecution):
            term(("nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution", i, "preference"), pt.preference)
    for which in ("podAffinity", "podAntiAffinity"):
        pa = getattr(a, which)
        if pa is None:
            continue
        for i, t in enumerate(pa.requiredDuringSchedulingIgnoredDuringExecution):
            pod_term((which, "requiredDuringSchedulingIgnoredDuringExecution", i), t)
        for i, w in enumerate(pa.preferredDuringSchedulingIgnoredDuringExecution):
            pod_term(
                (which, "preferredDuringSchedulingIgnoredDuringExecution", i, "podAffinityTerm"), w.podAffinityTerm
            )
    return errors


def as_manifest(value):
    """A (nested) affinity dataclass as the API's JSON: empty and unset fields left out."""
    import dataclasses

    if dataclasses.is_dataclass(value):
        out = {}
        for f in dataclasses.fields(value):
            v = as_manifest(getattr(value, f.name))
            if v not in (None, (), [], {}):
                out[f.name] = v
        return out
    if isinstance(value, (tuple, list)):
        return [as_manifest(v) for v in value]
    if isinstance(value, dict):
        return {k: as_manifest(v) for k, v in value.items()}
    return value
