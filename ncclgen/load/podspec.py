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

import posixpath
import re
from collections.abc import Iterable
from dataclasses import field as dc_field
from typing import Literal

from ..errors import UserError
from ..record import dataclass
from .k8snames import (  # noqa: F401 (re-exported: podspec.subdomain, podspec.Invalid ...)
    ANNOTATIONS_MAX,
    CONFIG_KEY,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    ENV_NAME,
    LABEL_VALUE,
    QUALIFIED_NAME,
    Invalid,
    annotation_key,
    check_annotations_size,
    env_name,
    key_value,
    label_key,
    label_value,
    qualified_name,
    subdomain,
)
from .podaffinity import Affinity, affinity_errors, as_manifest  # noqa: F401 (re-exported)

VOLUME_KINDS = ("pvc", "hostpath", "configmap")
VOLUME_SYNTAX = (
    "pvc:CLAIM:/mount/path, hostpath:/host/path:/mount/path or configmap:NAME:/mount/path, optionally followed by :ro"
)
# Paths ncclgen mounts itself (render/k8s.py): a user volume there would shadow them.
RESERVED_MOUNTS = ("/dev/shm", "/etc/ncclgen")


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
        import hashlib  # here: only long or dotted names need it, and `ncclgen k8s` imports it for nothing else

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
        _option("--label", label_key, k, "label key")
        lab[k] = _option(f"--label {k}", label_value, v, "value")
    for k in reserved_labels:
        if k in lab:
            raise UserError(f"--label {k}: ncclgen sets this label itself (it names the job's objects)")
    ann = dict(base.annotations)
    for text in annotations:
        k, v = _option("--annotation", key_value, text, "--annotation")
        ann[_option("--annotation", annotation_key, k, "annotation key")] = v
    _option("--annotation", check_annotations_size, ann, "annotations with the descriptor's")
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
