"""Pod settings a real cluster needs: volumes, service account, priority class, image pull secrets,
scheduler, labels, annotations, Secret-backed env and affinity.

The same settings come from the descriptor's ``kubernetes`` section and from `ncclgen k8s` options;
:func:`merge` combines them (the command line wins per key, lists are appended). Every value is checked
here the way the API server would check it (k8s.io/apimachinery pkg/util/validation and
kubernetes pkg/apis/core/validation, kubernetes/kubernetes@v1.34.0), so a bad one stops the render
with one line instead of a rejected ``kubectl apply``.

A Secret-backed variable is rendered as a ``secretKeyRef``: ncclgen only ever knows the Secret's name
and key, never its value, so no manifest, annotation or comment can contain it.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Literal

from ..errors import UserError
from .schema import field

# k8s.io/apimachinery/pkg/util/validation/validation.go
DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = rf"{DNS1123_LABEL}(\.{DNS1123_LABEL})*"
QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE = rf"({QUALIFIED_NAME})?"
CONFIG_KEY = r"[-._a-zA-Z0-9]+"  # IsConfigMapKey: Secret and ConfigMap data keys
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"  # a name every shell can export as well
ANNOTATIONS_MAX = 256 * 1024  # TotalAnnotationSizeLimitB

VOLUME_KINDS = ("pvc", "hostpath", "configmap")
VOLUME_SYNTAX = (
    "pvc:CLAIM:/mount/path, hostpath:/host/path:/mount/path or configmap:NAME:/mount/path, optionally followed by :ro"
)
# Paths ncclgen mounts itself (render/k8s.py): a user volume there would shadow them.
RESERVED_MOUNTS = ("/dev/shm", "/etc/ncclgen")


class Invalid(ValueError):
    """A bad value; the caller names where it came from (an option or a descriptor key)."""


# -- single values -----------------------------------------------------------------------------------------


def subdomain(value: str, what: str) -> str:
    """A DNS-1123 subdomain (IsDNS1123Subdomain): the name of a Secret, ConfigMap, PVC, ServiceAccount,
    PriorityClass, or a scheduler."""
    if not isinstance(value, str) or len(value) > 253 or not re.fullmatch(DNS1123_SUBDOMAIN, value):
        raise Invalid(
            f"{what} {value!r} is not a DNS-1123 subdomain (lower-case letters, digits, '-' and "
            "'.', starting and ending with a letter or digit, at most 253 characters)"
        )
    return value


def qualified_name(key: str, what: str) -> str:
    """A label or annotation key (IsQualifiedName): [DNS-1123 subdomain '/'] name of at most 63."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not re.fullmatch(DNS1123_SUBDOMAIN, prefix)):
        raise Invalid(f"{what} {key!r}: prefix {prefix!r} is not a DNS-1123 subdomain")
    if not name or len(name) > 63 or not re.fullmatch(QUALIFIED_NAME, name):
        raise Invalid(
            f"{what} {key!r}: {name!r} is not a qualified name (at most 63 letters, digits, "
            "'-', '_', '.', starting and ending with a letter or digit, after an optional "
            "DNS-subdomain prefix and '/')"
        )
    return key


def label_value(value: str, what: str) -> str:
    if not isinstance(value, str) or len(value) > 63 or not re.fullmatch(LABEL_VALUE, value):
        raise Invalid(
            f"{what} {value!r} is not a label value (at most 63 letters, digits, '-', '_', '.', "
            "starting and ending with a letter or digit, or empty)"
        )
    return value


def env_name(value: str, what: str) -> str:
    from . import envnames  # the one name policy

    bad = envnames.name_problem(value)
    if bad:
        raise Invalid(f"{what}: {bad}")
    return value


def key_value(text: str, what: str) -> tuple[str, str]:
    """KEY=VALUE from the command line."""
    key, eq, value = text.partition("=")
    if not eq:
        raise Invalid(f"{what} {text!r}: expected KEY=VALUE")
    return key, value


# -- volumes -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Volume:
    """One pod volume and its mount in the job's main container: from `--volume` (named after what it
    mounts) or the descriptor's kubernetes.volumes (named there, possibly not mounted in the main
    container, e.g. a sidecar's)."""

    kind: Literal["pvc", "hostpath", "configmap"]
    source: str  # claim name, host path or ConfigMap name
    mount_path: str | None
    read_only: bool = False
    given_name: str | None = None  # the descriptor's name; None: derived from the source
    host_path_type: str | None = None
    sub_path: str | None = None

    @property
    def name(self) -> str:
        """A stable DNS-1123 label naming the volume: the descriptor's, or one derived from what it mounts
        (so a kustomize patch can address it by name): pvc-<claim>, hostpath-<path>, configmap-<name>; a
        short hash of the source is appended where the readable form had to be shortened or changed."""
        if self.given_name:
            return self.given_name
        if self.kind == "hostpath":
            readable = self.source.strip("/").replace("/", "-")
            exact = re.fullmatch(r"[a-z0-9/]*", self.source) is not None  # no '-' of its own: injective
        else:
            readable = self.source.replace(".", "-")
            exact = "." not in self.source
        base = f"{self.kind}-{readable}" if readable else self.kind
        if exact and len(base) <= 63:
            return base
        digest = hashlib.sha256(self.source.encode()).hexdigest()[:8]
        readable = re.sub(r"[^a-z0-9]+", "-", readable.lower()).strip("-")
        return f"{self.kind}-{readable}"[:54].rstrip("-") + f"-{digest}"

    def volume(self) -> dict:
        if self.kind == "pvc":
            src: dict = {"persistentVolumeClaim": {"claimName": self.source}}
            if self.read_only:
                src["persistentVolumeClaim"]["readOnly"] = True
        elif self.kind == "hostpath":
            # Directory (for --volume): the path must exist on the node; a typo fails the pod instead of
            # mounting whatever is there (the default type checks nothing).
            src = {"hostPath": {"path": self.source}}
            if self.host_path_type or self.given_name is None:
                src["hostPath"]["type"] = self.host_path_type or "Directory"
        else:
            src = {"configMap": {"name": self.source}}
        return {"name": self.name, **src}

    def mount(self) -> dict | None:
        if self.mount_path is None:
            return None
        m: dict = {"name": self.name, "mountPath": self.mount_path}
        if self.read_only or (self.kind == "configmap" and self.given_name is None):
            m["readOnly"] = True
        if self.sub_path:
            m["subPath"] = self.sub_path
        return m


def from_descriptor(v) -> Volume:
    """A descriptor kubernetes.volumes entry (ncclgen/load/descriptor.py Volume) as a pod volume."""
    kind: Literal["pvc", "hostpath", "configmap"]
    if v.pvc is not None:
        kind, source = "pvc", v.pvc
    elif v.host_path is not None:
        kind, source = "hostpath", v.host_path
    else:
        kind, source = "configmap", v.config_map
    return Volume(kind, source, v.mount_path, v.read_only, v.name, v.host_path_type, v.sub_path)


def abs_path(path: str, what: str) -> str:
    if not path.startswith("/"):
        raise Invalid(f"{what} {path!r} must be an absolute path")
    if any(part == ".." for part in path.split("/")):
        raise Invalid(f"{what} {path!r} must not contain '..'")  # validatePathNoBacksteps
    if any(not c.isprintable() for c in path):
        raise Invalid(f"{what} {path!r} contains a control character")
    return posixpath.normpath(path)


def parse_volume(text: str) -> Volume:
    """pvc:CLAIM:/mount/path | hostpath:/host/path:/mount/path | configmap:NAME:/mount/path [:ro]."""
    parts = text.split(":")
    read_only = len(parts) == 4 and parts[3] == "ro"
    if read_only:
        parts = parts[:3]
    if len(parts) != 3 or parts[0] not in VOLUME_KINDS:
        raise Invalid(f"{text!r}: expected {VOLUME_SYNTAX} (paths cannot contain ':')")
    kind, source, mount = parts
    if kind == "hostpath":
        source = abs_path(source, "host path")
    else:
        subdomain(source, "PersistentVolumeClaim name" if kind == "pvc" else "ConfigMap name")
    mount = abs_path(mount, "mount path")
    check_mount(mount, repr(text))
    return Volume(kind, source, mount, read_only)  # type: ignore[arg-type]


def check_mount(mount: str, what: str) -> None:
    """The one rule for a mount path from any source (--volume, the descriptor's kubernetes.volumes):
    not the container's root, and not over, under or around a folder ncclgen mounts itself."""
    mount = posixpath.normpath(mount)
    if mount in ("/", "//"):
        raise Invalid(f"{what}: cannot mount over the container's root")
    for reserved in RESERVED_MOUNTS:
        if mount == reserved or mount.startswith(reserved + "/") or reserved.startswith(mount + "/"):
            raise Invalid(f"{what}: mount path {mount} overlaps {reserved}, which ncclgen mounts itself")


def check_volumes(volumes: Iterable[Volume]) -> tuple[Volume, ...]:
    """No two volumes at one mount path (the API server: "must be unique"), none nested in another
    (the result would depend on mount order), and distinct names."""
    out: list[Volume] = []
    for v in volumes:
        if v.mount_path is not None:
            check_mount(v.mount_path, f"volume {v.name}")
        for w in out:
            if v.name == w.name and (v.given_name or w.given_name):
                raise Invalid(f"volume name {v.name} is used twice")
            if v.mount_path is None or w.mount_path is None:
                continue
            if v.mount_path == w.mount_path:
                raise Invalid(f"mount path {v.mount_path} is used twice ({w.kind}:{w.source} and {v.kind}:{v.source})")
            if v.mount_path.startswith(w.mount_path + "/") or w.mount_path.startswith(v.mount_path + "/"):
                raise Invalid(f"mount paths {w.mount_path} and {v.mount_path} are nested")
            if v.name == w.name:
                raise Invalid(
                    f"{v.kind}:{v.source} is mounted twice ({w.mount_path} and {v.mount_path}); mount it once"
                )
        out.append(v)
    return tuple(out)


# -- Secret-backed env -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SecretEnv:
    name: str
    secret: str
    key: str

    def env(self) -> dict:
        return {"name": self.name, "valueFrom": {"secretKeyRef": {"name": self.secret, "key": self.key}}}


def _secret_name_refused(name: str) -> str | None:
    """The env-name policy (load/envnames.py) for a Secret-backed variable, whatever the source: a name
    that runs code is refused, and so is a search path or plugin name, since the value (in the Secret)
    cannot be checked here and a Secret entry has no opt-in."""
    from . import envnames

    why = envnames.refused(name)
    if why:
        return f"{name} may not be set from a Secret: {why}"
    if name in envnames.policy().paths:
        return f"{name} may not be set from a Secret: {envnames.policy().paths[name]}; ncclgen cannot check a Secret's value"
    return None


def parse_secret_env(text: str) -> SecretEnv:
    """NAME=SECRET:KEY."""
    name, eq, ref = text.partition("=")
    secret, colon, key = ref.partition(":")
    if not eq or not colon:
        raise Invalid(f"{text!r}: expected NAME=SECRET:KEY (the variable, the Secret's name and the key in the Secret)")
    env_name(name, "variable name")
    why = _secret_name_refused(name)
    if why:
        raise Invalid(f"{text!r}: {why}")
    subdomain(secret, "Secret name")
    if len(key) > 253 or not re.fullmatch(CONFIG_KEY, key):
        raise Invalid(f"{text!r}: Secret key {key!r} is not a valid key (letters, digits, '-', '_' and '.')")
    return SecretEnv(name, secret, key)


# -- affinity (the descriptor's kubernetes.affinity; same keys as the Kubernetes API) ----------------------


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


# -- the merged settings -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodSettings:
    """Everything above, merged from the descriptor and the command line, ready for the renderer."""

    volumes: tuple[Volume, ...] = ()
    service_account: str | None = None
    priority_class: str | None = None
    image_pull_secrets: tuple[str, ...] = ()
    scheduler_name: str | None = None
    labels: dict = dc_field(default_factory=dict)
    annotations: dict = dc_field(default_factory=dict)
    secret_env: tuple[SecretEnv, ...] = ()
    affinity: dict | None = None

    def pod_spec(self) -> dict:
        """The PodSpec fields these settings set (volumes and env are the renderer's to place)."""
        spec: dict = {}
        if self.service_account:
            spec["serviceAccountName"] = self.service_account
        if self.priority_class:
            spec["priorityClassName"] = self.priority_class
        if self.scheduler_name:
            spec["schedulerName"] = self.scheduler_name
        if self.image_pull_secrets:
            spec["imagePullSecrets"] = [{"name": s} for s in self.image_pull_secrets]
        if self.affinity:
            spec["affinity"] = self.affinity
        return spec


def _option(what: str, fn, *args):
    try:
        return fn(*args)
    except Invalid as exc:
        raise UserError(f"{what}: {exc}") from None


def merge(
    base: PodSettings,
    *,
    volumes: Iterable[str] = (),
    service_account: str | None = None,
    priority_class: str | None = None,
    image_pull_secrets: Iterable[str] = (),
    scheduler_name: str | None = None,
    labels: Iterable[str] = (),
    annotations: Iterable[str] = (),
    secret_env: Iterable[str] = (),
    reserved_labels: Iterable[str] = (),
    env_names: Iterable[str] = (),
) -> PodSettings:
    """``base`` (the descriptor's) with the command line's options on top; UserError on a bad value.

    ``reserved_labels``: label keys ncclgen sets itself; ``env_names``: the plan's variables, which a
    Secret-backed variable must not shadow (two env entries of one name: the last silently wins).
    """
    vols = list(base.volumes) + [_option("--volume", parse_volume, v) for v in volumes]
    _option("--volume", check_volumes, vols)
    lab = dict(base.labels)
    for text in labels:
        k, v = _option("--label", key_value, text, "--label")
        _option("--label", qualified_name, k, "label key")
        lab[k] = _option(f"--label {k}", label_value, v, "value")
    for k in reserved_labels:
        if k in lab:
            raise UserError(f"--label {k}: ncclgen sets this label itself (it names the job's objects)")
    ann = dict(base.annotations)
    for text in annotations:
        k, v = _option("--annotation", key_value, text, "--annotation")
        ann[_option("--annotation", qualified_name, k, "annotation key")] = v
    if sum(len(k) + len(v) for k, v in ann.items()) > ANNOTATIONS_MAX:
        raise UserError("--annotation: annotations larger than 256 KiB in total")
    secrets = list(base.secret_env) + [_option("--secret-env", parse_secret_env, s) for s in secret_env]
    seen: dict[str, SecretEnv] = {}
    plan_env = set(env_names)
    for s in secrets:
        if s.name in seen:
            raise UserError(
                f"--secret-env {s.name}: set twice ({seen[s.name].secret}:{seen[s.name].key} and {s.secret}:{s.key})"
            )
        if s.name in plan_env:
            raise UserError(
                f"--secret-env {s.name}: the plan already sets {s.name} (see ncclgen explain); "
                "a second entry would silently replace it"
            )
        seen[s.name] = s
    pulls = list(base.image_pull_secrets)
    for p in image_pull_secrets:
        _option("--image-pull-secret", subdomain, p, "Secret name")
        if p not in pulls:
            pulls.append(p)
    for opt, value, what in (
        ("--service-account", service_account, "ServiceAccount name"),
        ("--priority-class", priority_class, "PriorityClass name"),
        ("--scheduler-name", scheduler_name, "scheduler name"),
    ):
        if value is not None:
            _option(opt, subdomain, value, what)
    return PodSettings(
        volumes=tuple(vols),
        service_account=service_account if service_account is not None else base.service_account,
        priority_class=priority_class if priority_class is not None else base.priority_class,
        image_pull_secrets=tuple(pulls),
        scheduler_name=scheduler_name if scheduler_name is not None else base.scheduler_name,
        labels=lab,
        annotations=ann,
        secret_env=tuple(secrets),
        affinity=base.affinity,
    )
