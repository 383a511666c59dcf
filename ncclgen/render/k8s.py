"""Kubernetes manifests from a Plan: a PyTorchJob (kubeflow.org/v1), a RayJob (ray.io/v1) or a Kubeflow
Trainer v2 TrainJob with its TrainingRuntime (trainer.kubeflow.org/v1alpha1), plus a ConfigMap holding
the scripts the pods run (per-rank binding, Ray bring-up, the Ray binding hook, the Ray driver's argv).

Pod settings (volumes, service account, priority class, image pull secrets, scheduler, labels,
annotations, Secret-backed env, affinity) come from ncclgen/load/podspec.py, already checked. Object
names and labels are stable (derived from --name, never from time or a hash of the content), so a
kustomize overlay can address them (examples/kustomize/).

Manifests are plain dicts dumped by PyYAML's safe dumper, never text; each object's keys in API order
(apiVersion, kind, metadata, spec or data; `name` first in a container), the rest sorted. They are not
built from the `kubernetes` client's typed models: with client 37 (pydantic models) importing
V1PodTemplateSpec alone takes 0.55 s of CPU on the 2-core CI machine (0.76 s wall for the import, even
bypassing the package root), more than the whole 0.6 s budget of `ncclgen k8s` (0.37 s as it is).
Instead, tests/k8s_validate.py checks every rendered object against those same typed models (unknown
keys and wrong types rejected) and against the CRDs' structural schemas, as the API server would.

Why each knob (NVIDIA Network Operator docs, docs.nvidia.com/networking/display/kubernetes2570; the
vendors' own pod manifests cited in clusters/*.yaml; kubeflow/training-operator v1.9; ray-project/kuberay).
The parts every kind shares are in render/k8sjob.py, each custom resource in render/k8skinds.py:
- GPUs and the descriptor's device resources go in BOTH requests and limits: extended resources cannot
  be overcommitted, and a request alone is rejected.
- IPC_LOCK: RDMA memory registration pins memory. privileged only where the vendor requires it.
- /dev/shm: a memory-backed emptyDir; the container runtime's 64 MiB default starves NCCL's SHM
  transport and PyTorch data loaders.
- In a container's command, args and env values a `$` before `(` or `$` is written `$$`: the kubelet
  expands `$(NAME)` there and reduces `$$` to `$`, so each value reaches the process as the plan says.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap

import yaml

from .. import __version__
from ..errors import UserError
from ..load import k8snames, podspec
from . import k8skinds, shell
from .k8sjob import (  # noqa: F401  (re-exported: the names tests and other modules use)
    BIND_SCRIPT,
    CONFIG_DIR,
    PREFLIGHT_MODULE,
    PREFLIGHT_SCRIPT,
    PREFLIGHT_SPEC,
    RAY_DRIVER_SCRIPT,
    RAY_HEAD_SCRIPT,
    RAY_WORKER_SCRIPT,
    RAYBIND_MODULE,
    RAYWAIT_MODULE,
    SETUP_SCRIPT,
    TRAINER_ANCESTOR_LABEL,
    TRAINER_NODE,
    Job,
    explain_command,
    kubelet_literal,
)

_Job = Job
_kubelet_literal = kubelet_literal
KINDS = ("pytorchjob", "rayjob", "trainjob")
DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
# KubeRay appends 6 characters to a RayJob's name for its RayCluster, whose longest Service suffix is
# "-serve-svc": 63 - 10 - 6 = 47 (kuberay ray-operator/controllers/ray/utils/constant.go).
RAYJOB_NAME_MAX = 47
# How long a finished job's pods (and their logs, which `ncclgen triage` reads) stay: an hour unless
# --ttl-after-finished says otherwise.
DEFAULT_TTL = 3600
# Kubeflow Trainer v2.3.0 has no TTL on a TrainJob (kubeflow/trainer#4052, open), and a JobSet TTL in the
# runtime made the controller recreate the deleted JobSet (kubeflow/trainer#2981 on v2.1.0, #3779): the
# pods of a TrainJob stay until the TrainJob is deleted.
NO_TTL = ("trainjob",)


def default_kind(plan) -> str:
    """rayjob for Ray workloads, pytorchjob for torchrun ones."""
    return "rayjob" if plan.launch.launcher == "ray" else "pytorchjob"


def render(plan, *, flags: tuple[str, ...] = (), **options) -> str:
    """The manifests as one YAML stream, under a header that says how to regenerate and explain them.

    ``flags``: the k8s options as typed, for the Regenerate line; ``options``: see documents().
    """
    job = _job(plan, **options)
    docs = _documents(job)
    # width: never fold a long scalar (the entrypoint, the explain line) over several lines.
    body = yaml.dump_all(
        docs,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        explicit_start=True,
        width=1 << 20,
    )
    return header(job, flags) + body


def documents(plan, **options) -> list[dict]:
    """The manifests as data: the job (PyTorchJob | RayJob | TrainingRuntime + TrainJob), then the
    ConfigMap of the programs its pods run, when there is one.

    Options: kind, name, namespace, image, pod (default: the descriptor's pod settings; see
    podspec.merge for the command line's), preflight (default on), ttl (seconds finished pods stay).
    """
    return _documents(_job(plan, **options))


def _documents(job: Job) -> list[dict]:
    if job.kind == "pytorchjob":
        out = [k8skinds.pytorchjob(job)]
    elif job.kind == "rayjob":
        out = [k8skinds.rayjob(job)]
    else:  # the runtime first: Trainer's webhook checks that a TrainJob's runtimeRef exists
        out = [k8skinds.trainingruntime(job), k8skinds.trainjob(job)]
    out += [job.config_map()] if job.files else []
    too_big = k8snames.object_meta_errors(out)  # with ncclgen's own annotations in (explain, plugin, networks)
    if too_big:
        raise UserError(too_big[0])
    return out


def _job(
    plan,
    *,
    kind: str | None = None,
    name: str | None = None,
    namespace: str | None = None,
    image: str | None = None,
    pod: podspec.PodSettings | None = None,
    preflight: bool = True,
    ttl: int | None = None,
) -> Job:
    kube = plan.cluster.kubernetes
    kind = _kind(plan, kind)
    if ttl is not None and kind in NO_TTL:
        raise UserError(
            "--ttl-after-finished: Kubeflow Trainer v2.3.0 has no TTL for a TrainJob (kubeflow/trainer#4052), and a "
            "JobSet TTL made its controller recreate the JobSet (kubeflow/trainer#2981); the pods stay until the "
            "TrainJob is deleted"
        )
    ns = kube.namespace if namespace is None else namespace
    return Job(
        plan,
        kind,
        _job_name(plan, kind, name),
        _namespace(ns) if ns is not None else None,
        _image(plan, image, preflight),
        kube.pod_settings() if pod is None else pod,
        preflight,
        None if kind in NO_TTL else DEFAULT_TTL if ttl is None else ttl,
    )


def _kind(plan, kind: str | None) -> str:
    kind = kind or default_kind(plan)
    if kind not in KINDS:
        raise UserError(f"--kind {kind!r}: expected one of {', '.join(KINDS)}")
    if kind == "rayjob" and plan.launch.launcher != "ray":
        raise UserError(
            f"--kind rayjob: workload {plan.workload.name} is launched by torchrun (one process "
            "per GPU), not as a Ray driver; use --kind pytorchjob"
        )
    if kind == "trainjob" and plan.launch.launcher == "ray":
        raise UserError(
            f"--kind trainjob: workload {plan.workload.name} is a Ray driver; Kubeflow Trainer's "
            "torch runtime starts torchrun, not a Ray cluster; use --kind rayjob or pytorchjob"
        )
    return kind


def reserved_labels() -> tuple[str, ...]:
    """Label keys ncclgen sets on every object itself (a --label must not replace them)."""
    return (
        "app.kubernetes.io/name",
        "app.kubernetes.io/managed-by",
        "app.kubernetes.io/component",
        "ncclgen.io/cluster",
        "ncclgen.io/tier",
        TRAINER_ANCESTOR_LABEL,
    )


# -- names and flags ------------------------------------------------------------------------------------


def _job_name(plan, kind: str, name: str | None) -> str:
    """DNS-1035 (both operators' webhooks), short enough for every object the operator derives."""
    given = name is not None
    if name is None:
        name = str(plan.workload.name)
    what = f"--name {name!r}" if given else f"workload name {name!r} (the default --name)"
    if kind == "rayjob":
        limit, why = RAYJOB_NAME_MAX, "KubeRay appends a suffix for the RayCluster and its Services"
    elif kind == "trainjob":
        # JobSet names the pods' hostnames <name>-node-0-<index> (PET_MASTER_ADDR is <name>-node-0-0).
        longest = f"-{TRAINER_NODE}-0-{plan.launch.nodes - 1}"
        limit, why = 63 - len(longest), f"JobSet names a pod's hostname <name>{longest}"
    else:
        # The operator names pods and Services <name>-master-0 and <name>-worker-<i>.
        longest = f"-worker-{plan.launch.nodes - 2}" if plan.launch.nodes > 1 else "-master-0"
        limit, why = 63 - len(longest), f"the operator names a pod and a Service <name>{longest}"
    if not DNS1035.fullmatch(name) or len(name) > limit:
        raise UserError(
            f"{what}: expected a DNS-1035 label (lower-case letters, digits and '-', starting "
            f"with a letter, ending with a letter or digit) of at most {limit} characters for a "
            f"{ {'rayjob': 'RayJob', 'trainjob': 'TrainJob'}.get(kind, 'PyTorchJob') } ({why})"
            + ("" if given else "; pass --name")
        )
    return name


def _namespace(ns: str) -> str:
    if not DNS1123.fullmatch(ns) or len(ns) > 63:
        raise UserError(
            f"--namespace {ns!r}: expected a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)"
        )
    return ns


def image_choice(plan, image: str | None) -> tuple[str, str | None]:
    """(image, who chose it): --image, else the workload's image, else the descriptor's kubernetes.image
    when a site set one; else nobody (None): verl's CI image for the targeted release, or the default."""
    from ..load import descriptor
    from ..load import workload as workloadmod

    if image is not None:
        return image, "--image"
    wl = plan.workload
    site = plan.cluster.kubernetes.image
    floating = next(f.default for f in dataclasses.fields(descriptor.Kubernetes) if f.name == "image")
    if wl.image:
        return wl.image, "the workload"
    if site != floating:
        return site, "kubernetes.image"
    return workloadmod.image(wl) or site, None


def pick_image(plan, image: str | None) -> str:
    return image_choice(plan, image)[0]


def _image(plan, image: str | None, preflight: bool) -> str:
    chosen, by = image_choice(plan, image)
    if not chosen or any(c.isspace() or not c.isprintable() for c in chosen):
        raise UserError(
            f"--image {chosen!r}: expected an image reference without spaces or control "
            "characters, e.g. verlai/verl:latest"
        )
    need = plugin_in_image(plan)
    if need is not None and by is None:
        plugin, path, hint = need
        raise UserError(
            f"{plan.cluster.name}: the pods load {plugin} from the container image ({path}), and nobody chose "
            f"one that has it ({chosen} is the default); pass --image{(' ' + hint) if hint else ''}"
        )
    return chosen


def plugin_in_image(plan) -> tuple[str, str, str] | None:
    """(plugin, library path, how to get an image) when the pod view's net plugin must come from the
    image (no volume brings its folder from the node), else None."""
    from ..load import plugins

    net = plan.cluster.network
    plugin = plugins.get(net.net_plugin)
    if plugin is None or not net.plugin_dir or plan.target != "pod":  # a host view has no pod volumes
        return None
    mounted = any(
        m is not None and (net.plugin_dir + "/").startswith(m["mountPath"].rstrip("/") + "/")
        for m in (v.mount() for v in plan.cluster.kubernetes.pod_settings().volumes)
    )
    if mounted:
        return None
    loc = plugin.location(plan.cluster.kubernetes.flavour)
    return plugin.id, f"{net.plugin_dir}/{plugin.library}", (loc.image_hint if loc else None) or ""


# -- the header -----------------------------------------------------------------------------------------


def header(job: Job, flags: tuple[str, ...] = ()) -> str:
    """Comment lines before the first document: what this is, how to regenerate and explain it, and
    what the pods rely on that no manifest field shows (the net plugin's source, how long pods stay)."""
    plan, la = job.plan, job.launch
    kind = {"pytorchjob": "PyTorchJob", "rayjob": "RayJob", "trainjob": "TrainJob"}[job.kind]
    lines = [
        f"Generated by ncclgen {__version__}: {kind} {job.name} for cluster {plan.cluster.name}, tier {plan.tier}, "
        f"workload {plan.workload.name}, {la.nodes} node(s) x {la.gpus_per_node} GPUs.",
        "Regenerate: " + shell.comment_line(plan.command_line("k8s", flags)),
        "Every value's reason and source: " + shell.comment_line(plan.command_line("explain")),
    ]
    notes = [_plugin_note(job), _qos_note(job), _ttl_note(job)]
    out = [f"# {line}" for line in lines]
    for note in notes:
        if note:
            out += ["#"] + ["# " + w for w in textwrap.wrap(note, 96, break_on_hyphens=False)]
    return "\n".join(out) + "\n"


def _plugin_note(job: Job) -> str:
    from ..load import plugins

    net = job.plan.cluster.network
    plugin = plugins.get(net.net_plugin)
    if plugin is None or not net.plugin_dir:
        return ""
    where = "the image " + job.image if plugin_in_image(job.plan) else "the node (a hostPath volume)"
    check = (
        f"each pod's preflight checks {', '.join(plugin.files)} there and ends the pod with status 6 if one is "
        "missing, before NCCL starts"
        if job.preflight
        else "--no-preflight: nothing checks them before NCCL starts"
    )
    return f"Net plugin: {plugin.id} in {net.plugin_dir}, from {where}; {check}."


def _qos_note(job: Job) -> str:
    kube = job.plan.cluster.kubernetes
    return "Pods: " + qos_note(kube.resources, [s.name for s in kube.sidecars])


def qos_note(resources, sidecars: list[str]) -> str:
    """The pods' QoS class by the API server's rule, and how to get Guaranteed: only when every container,
    sidecars too, has cpu and memory limits equal to its requests (kubernetes pkg/apis/core/v1/helper/qos
    GetPodQOS). ``resources``: the descriptor's kubernetes.resources; ``sidecars``: the pod's sidecar
    names (ncclgen writes no cpu or memory for them: their vendors publish none)."""
    missing = [r for r in ("cpu", "memory") if r not in resources]
    stuck = (
        f"; sidecar {', '.join(sidecars)} has no cpu or memory request (its vendor publishes none), so the "
        "pods stay Burstable even then"
        if sidecars
        else ""
    )
    if missing:
        qos = "BestEffort" if len(missing) == 2 else "Burstable"  # GPUs and devices do not count
        return (
            f"QoS {qos}, not Guaranteed: kubernetes.resources sets no {' or '.join(missing)}; set "
            "kubernetes.resources.cpu (whole CPUs) and kubernetes.resources.memory in the descriptor to keep "
            f"the pods from eviction first and let the kubelet pin them (docs/kubernetes.md){stuck}."
        )
    if sidecars:
        return (
            f"QoS Burstable, not Guaranteed: sidecar {', '.join(sidecars)} has no cpu or memory request "
            "(its vendor publishes none), so the kubelet does not pin the pod's CPUs (docs/kubernetes.md)."
        )
    return (
        f"QoS Guaranteed ({resources['cpu']} CPUs, {resources['memory']} memory, requests equal "
        "to limits); a kubelet with the static CPU manager gives them CPUs of their own (docs/kubernetes.md)."
    )


def _ttl_note(job: Job) -> str:
    if job.ttl is None:
        return "Finished pods and their logs stay until the TrainJob is deleted (Trainer v2.3.0 has no TTL for it)."
    return (
        f"Finished pods and their logs stay {job.ttl} s after the job ends (ttlSecondsAfterFinished; "
        "--ttl-after-finished), then the operator deletes them: `ncclgen triage` reads them before that."
    )


# -- YAML -----------------------------------------------------------------------------------------------

# Keys written first, in this order, in every mapping; the rest follow sorted.
KEY_ORDER = {k: i for i, k in enumerate(("apiVersion", "kind", "metadata", "name", "namespace", "spec", "data"))}


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings (the ConfigMap's scripts) as literal blocks.

    The emitter falls back to a quoted style by itself whenever a literal block could not hold the
    string exactly (trailing spaces, control characters), so every value still round-trips.
    No anchors or aliases: each pod template reads on its own, as kubectl shows it.
    """

    def ignore_aliases(self, data):
        return True


# PyYAML with allow_unicode writes NEL, U+2028 and U+2029 raw, and a YAML reader folds them into line
# breaks or spaces ('a\x85b' reads back as 'a b'): such a string is written double-quoted, where the
# emitter escapes them (\N, \L, \P). Inputs refuse these characters (errors.UNSAFE_CHARS); this keeps
# the manifest a faithful copy of the data even so.
_YAML_BREAKS = re.compile("[\x85\u2028\u2029]")


def _represent_str(dumper, data):
    if _YAML_BREAKS.search(data):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)


_Dumper.add_representer(str, _represent_str)


def _represent_dict(dumper, data):
    """A mapping in KEY_ORDER, then sorted: deterministic, and read in the order the API documents it."""
    items = sorted(data.items(), key=lambda kv: (KEY_ORDER.get(kv[0], len(KEY_ORDER)), kv[0]))
    return dumper.represent_mapping("tag:yaml.org,2002:map", items)


_Dumper.add_representer(dict, _represent_dict)
