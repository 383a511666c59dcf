"""Kubernetes manifests from a Plan: a PyTorchJob (kubeflow.org/v1), a RayJob (ray.io/v1) or a Kubeflow
Trainer v2 TrainJob with its TrainingRuntime (trainer.kubeflow.org/v1alpha1), plus a ConfigMap holding
the scripts the pods run (per-rank binding, Ray bring-up, the Ray binding hook, the Ray driver's argv).

Pod settings (volumes, service account, priority class, image pull secrets, scheduler, labels,
annotations, Secret-backed env, affinity) come from ncclgen/load/podspec.py, already checked. Object
names and labels are stable (derived from --name, never from time or a hash of the content), so a
kustomize overlay can address them (examples/kustomize/).

Manifests are plain dicts dumped by PyYAML's safe dumper with sorted keys, never text. They are not
built from the `kubernetes` client's typed models: with client 37 (pydantic models) importing
V1PodTemplateSpec alone takes 0.55 s of CPU on the 2-core CI machine (0.76 s wall for the import, even
bypassing the package root), more than the whole 0.6 s budget of `ncclgen k8s` (0.37 s as it is).
Instead, tests/k8s_validate.py checks every rendered object against those same typed models (unknown
keys and wrong types rejected) and against the CRDs' structural schemas, as the API server would.

Why each knob (NVIDIA Network Operator docs, docs.nvidia.com/networking/display/kubernetes2570; the
vendors' own pod manifests cited in clusters/*.yaml; kubeflow/training-operator v1.9; ray-project/kuberay):
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

import yaml

from .. import jobside
from ..errors import UserError
from ..load import podspec
from ..plan import launch as launchmod
from ..plan import preflight as preflightmod
from . import pod as podparts
from . import shell

KINDS = ("pytorchjob", "rayjob", "trainjob")
CONFIG_DIR = "/etc/ncclgen"
BIND_SCRIPT = "bind.sh"
SETUP_SCRIPT = "setup.sh"
# The preflight (ncclgen/jobside/preflight.py), its spec from the plan, and the script that runs it
# before exec'ing the launch: in every pod, before setup and launch.
PREFLIGHT_SCRIPT = "preflight.sh"
PREFLIGHT_MODULE = "ncclgen_preflight.py"
PREFLIGHT_SPEC = "preflight.json"
RAY_HEAD_SCRIPT = "ray-head.sh"
RAY_WORKER_SCRIPT = "ray-worker.sh"
# The two standalone modules the sbatch script embeds too (stdlib + Ray, no ncclgen import).
RAYWAIT_MODULE = "ncclgen_raywait.py"
RAYBIND_MODULE = "ncclgen_raybind.py"
# The RayJob's driver: its argv is in this ConfigMap script, parsed by exactly one bash as the sbatch script
# is; spec.entrypoint only names it (see _Job.rayjob for the shells that re-parse the entrypoint).
RAY_DRIVER_SCRIPT = "ray-driver.sh"

DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
# KubeRay appends 6 characters to a RayJob's name for its RayCluster, whose longest Service suffix is
# "-serve-svc": 63 - 10 - 6 = 47 (kuberay ray-operator/controllers/ray/utils/constant.go).
RAYJOB_NAME_MAX = 47
# torchrun options the training operator already sets through PET_* (or that would override them):
#   --nproc-per-node: PET_NPROC_PER_NODE comes from spec.nprocPerNode (the same number);
#   --rdzv-backend=c10d: without --rdzv-endpoint c10d ignores PET_MASTER_ADDR/PORT; the operator's
#     non-elastic mode is torchrun's default static rendezvous at MASTER_ADDR:MASTER_PORT;
#   --rdzv-conf=join_timeout=600: static rendezvous reads only `timeout`, whose default is already
#     600 s (torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py).
OPERATOR_SETS = ("--nproc-per-node", "--rdzv-backend", "--rdzv-conf")
# What the training operator injects into every PyTorchJob container besides PYTHONUNBUFFERED
# (kubeflow/training-operator v1.9.0 pkg/controller.v1/pytorch/envvar.go).
# Kubeflow Trainer (v2.3.0, github.com/kubeflow/trainer@658725bdae5c7e3a0854d93ac6ff492e109a22ab): the
# torch plugin injects PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR (the pod
# <job>-node-0-0.<job>) and PET_MASTER_PORT (29500) into the container `node` of the replicated job
# labelled trainjob-ancestor-step=trainer (pkg/runtime/framework/plugins/torch/torch.go,
# pkg/constants/constants.go). The TrainJob uses only `runtimeRef` and `trainer`, present in every v2
# release; the pod settings are in the TrainingRuntime rendered with it.
TRAINER_API = "trainer.kubeflow.org/v1alpha1"
TRAINER_NODE = "node"
TRAINER_ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
OPERATOR_ENV = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
    "PET_NNODES",
    "PET_NODE_RANK",
    "PET_NPROC_PER_NODE",
)


def default_kind(plan) -> str:
    """rayjob for Ray workloads, pytorchjob for torchrun ones."""
    return "rayjob" if plan.launch.launcher == "ray" else "pytorchjob"


def render(
    plan,
    *,
    kind: str | None = None,
    name: str | None = None,
    namespace: str | None = None,
    image: str | None = None,
    pod: podspec.PodSettings | None = None,
    preflight: bool = True,
) -> str:
    """The manifests as one YAML stream (ConfigMap first when there is one, then the job)."""
    docs = documents(plan, kind=kind, name=name, namespace=namespace, image=image, pod=pod, preflight=preflight)
    # width: never fold a long scalar (the entrypoint, the explain line) over several lines.
    return yaml.dump_all(
        docs,
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        explicit_start=True,
        width=1 << 20,
    )


def documents(
    plan,
    *,
    kind: str | None = None,
    name: str | None = None,
    namespace: str | None = None,
    image: str | None = None,
    pod: podspec.PodSettings | None = None,
    preflight: bool = True,
) -> list[dict]:
    """The manifests as data: [ConfigMap?, PyTorchJob | RayJob | TrainingRuntime + TrainJob].

    ``pod``: the pod settings (default: the descriptor's, kubernetes section); see podspec.merge for
    the command line's.
    """
    kube = plan.cluster.kubernetes
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
    job = _Job(
        plan,
        kind,
        _job_name(plan, kind, name),
        _namespace(kube.namespace if namespace is None else namespace),
        _image(pick_image(plan, image)),
        kube.pod_settings() if pod is None else pod,
        preflight,
    )
    out = [job.config_map()] if job.files else []
    if kind == "pytorchjob":
        out.append(job.pytorchjob())
    elif kind == "rayjob":
        out.append(job.rayjob())
    else:
        out += [job.trainingruntime(), job.trainjob()]
    return out


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


def pick_image(plan, image: str | None) -> str:
    """--image, else the workload's image, else the descriptor's kubernetes.image when a site set one,
    else (verl) the image verl's CI ran for the targeted release, else the descriptor default."""
    from ..load import descriptor
    from ..load import workload as workloadmod

    if image is not None:
        return image
    wl = plan.workload
    site = plan.cluster.kubernetes.image
    floating = next(f.default for f in dataclasses.fields(descriptor.Kubernetes) if f.name == "image")
    if wl.image or site != floating:
        return wl.image or site
    return workloadmod.image(wl) or site


def _image(image: str) -> str:
    if not image or any(c.isspace() or not c.isprintable() for c in image):
        raise UserError(
            f"--image {image!r}: expected an image reference without spaces or control "
            "characters, e.g. verlai/verl:latest"
        )
    return image


def _label_value(value: str, what: str) -> str:
    if len(value) > 63 or not LABEL_VALUE.fullmatch(value):
        raise UserError(
            f"{what} {value!r} cannot be a Kubernetes label value (at most 63 letters, digits, "
            "'-', '_', '.', starting and ending with a letter or digit)"
        )
    return value


def _kubelet_literal(s: str) -> str:
    """Escape so the kubelet's $(VAR) expansion hands the process exactly ``s``.

    The kubelet turns `$$` into `$` and `$(NAME)` into NAME's value and keeps any other `$` as it is,
    so only a `$` followed by `$` or `(` needs doubling (`${PATH}` stays readable).
    """
    return re.sub(r"\$(?=[$(])", "$$", s)


def _seconds(hms: str) -> int:
    """'[D-]HH:MM:SS' (the workload's wall-clock limit, as in the sbatch --time) -> seconds."""
    days, _, rest = hms.rpartition("-")
    h, m, s = (int(x) for x in rest.split(":"))
    return (int(days) if days else 0) * 86400 + h * 3600 + m * 60 + s


def explain_command(plan) -> str:
    """The `ncclgen explain` line that prints every variable's reason and source for this plan: the
    request as typed (a descriptor given as a file stays that file)."""
    return shell.join(plan.command_line("explain"))


# -- the job --------------------------------------------------------------------------------------------


class _Job:
    """One rendering: the names, the ConfigMap's files and the pod templates derived from the plan."""

    def __init__(
        self, plan, kind: str, name: str, namespace: str, image: str, pod: podspec.PodSettings, preflight: bool = True
    ):
        self.plan, self.kind, self.name, self.namespace, self.image = plan, kind, name, namespace, image
        self.pod = pod
        self.preflight = preflight
        self.launch = plan.launch
        self.ray = plan.launch.launcher == "ray"
        # Tier 3 Ray binding: the same worker-setup hook as the sbatch script (ncclgen/jobside/raybind.py).
        self.ray_bind = self.ray and self.launch.bind
        self.labels = {
            "app.kubernetes.io/name": name,
            "app.kubernetes.io/managed-by": "ncclgen",
            "ncclgen.io/cluster": _label_value(plan.cluster.name, "cluster name"),
            "ncclgen.io/tier": str(plan.tier),
        }
        for key, value in pod.labels.items():
            if key in self.labels:
                raise UserError(f"label {key}: ncclgen sets this label itself (it names the job's objects)")
            self.labels[key] = value
        self.files = self._files()

    # ConfigMap ------------------------------------------------------------------------------------------
    def _files(self) -> dict[str, str]:
        files = {}
        if self.launch.bind and not self.ray:
            files[BIND_SCRIPT] = launchmod.bind_wrapper(self.plan.binding, self.launch.bind_memory)
        if self.ray and self.kind == "pytorchjob":
            files[RAY_HEAD_SCRIPT] = self._ray_head_script()
            files[RAY_WORKER_SCRIPT] = self._ray_worker_script()
            files[RAYWAIT_MODULE] = jobside.source("raywait")
        if self.ray_bind:
            files[RAYBIND_MODULE] = jobside.source("raybind")
        if self.kind == "rayjob":
            files[RAY_DRIVER_SCRIPT] = self._ray_driver_script()
        if self.plan.workload.setup:
            files[SETUP_SCRIPT] = launchmod.setup_program(self.plan.workload.setup)
        if self.preflight:
            files[PREFLIGHT_SCRIPT] = self.preflight_script()
            files[PREFLIGHT_MODULE] = jobside.source("preflight")
            files[PREFLIGHT_SPEC] = preflightmod.encode(preflightmod.spec(self.plan)) + "\n"
        return files

    def _ray_driver_script(self) -> str:
        """The driver's argv, quoted for one bash parse exactly as the sbatch script quotes it."""
        return (
            "\n".join(
                [
                    f"# ncclgen: the Ray driver of the RayJob {self.name} (workload {self.plan.workload.name}), run by",
                    "# Ray's job supervisor from the RayJob's fixed entrypoint. The argv is here, and not in the",
                    "# entrypoint, because KubeRay's submitter (bash), `ray job submit` (list2cmdline) and the",
                    "# supervisor (/bin/sh) would each re-parse it there.",
                    "exec " + shell.join(self.launch.command),
                ]
            )
            + "\n"
        )

    @property
    def setup(self) -> list[str]:
        """`bash /etc/ncclgen/setup.sh`: the workload's setup lines, then exec of what follows."""
        return ["bash", f"{CONFIG_DIR}/{SETUP_SCRIPT}"] if self.plan.workload.setup else []

    @staticmethod
    def preflight_script() -> str:
        """Runs the preflight, then execs its arguments (the setup or the launch); exit 6 on a problem."""
        return (
            f"# ncclgen preflight: what the plan relies on, checked in this pod before the launch; a problem\n"
            f"# prints one line each and ends the container with status {preflightmod.EXIT_PROBLEMS}.\n"
            f"python3 {CONFIG_DIR}/{PREFLIGHT_MODULE} @{CONFIG_DIR}/{PREFLIGHT_SPEC} || exit\n"
            'exec "$@"\n'
        )

    @property
    def start(self) -> list[str]:
        """What runs before every launch command: the preflight (first: setup may be expensive), then setup."""
        return (["bash", f"{CONFIG_DIR}/{PREFLIGHT_SCRIPT}"] if self.preflight else []) + self.setup

    @property
    def config_name(self) -> str:
        return f"{self.name}-ncclgen"

    def config_map(self) -> dict:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": self.config_name, "namespace": self.namespace, "labels": dict(self.labels)},
            "data": dict(self.files),
        }

    # scripts for a Ray workload run as a PyTorchJob -----------------------------------------------------
    def _ray_prologue(self, role: str, *before_unset: str) -> list[str]:
        lines = [
            f"# ncclgen: Ray {role} for the PyTorchJob {self.name} (Ray workload {self.plan.workload.name}).",
            "set -euo pipefail",
            *before_unset,
            # The operator's torchrun variables mean something else here (RANK is the node rank,
            # MASTER_PORT the Ray GCS port): Ray workers must not inherit them, as on Slurm.
            f"unset {' '.join(OPERATOR_ENV)}",
        ]
        if self.ray_bind:
            # The binding hook module is importable by every Ray worker through PYTHONPATH, which is
            # prepended here (a container env entry would replace the image's own PYTHONPATH).
            lines.append(launchmod.prepend_path(CONFIG_DIR))
        return lines

    def _ray_head_script(self) -> str:
        """Master pod: Ray head, wait until every node and GPU joined (like the sbatch poller), driver."""
        la = self.launch
        local = f"127.0.0.1:{la.ray_port}"  # the GCS listens on every interface of the pod
        lines = [
            *self._ray_prologue("head and driver"),
            shell.join(la.ray_head_argv()),
            shell.join(["python3", f"{CONFIG_DIR}/{RAYWAIT_MODULE}", *la.ray_wait_args(local)]),
            f"export RAY_ADDRESS={local}",
            'exec "$@"',
        ]
        return "\n".join(lines) + "\n"

    def _worker_start(self) -> str:
        """`ray start --address="$head":PORT ...`: the head's name expands in the pod, the rest is quoted."""
        return shell.args(self.launch.ray_worker_argv(shell.Raw('"$head"'))).strip()

    def _ray_worker_script(self) -> str:
        """Worker pods join the head at the master's Service name, which the operator puts in MASTER_ADDR.

        A worker that starts before the head's GCS exists waits for it (`ray start --address` retries the GCS
        connection; seen on the local Slurm cluster); one that never
        joins makes the head's wait fail, which fails the master and so the job.
        """
        lines = [
            *self._ray_prologue("worker", 'head="${MASTER_ADDR:?set by the training operator}"'),
            "exec " + self._worker_start(),
        ]
        return "\n".join(lines) + "\n"

    # pod templates --------------------------------------------------------------------------------------
    def env(self) -> list[dict]:
        env = [(e.name, e.value) for e in self.plan.env]
        if self.ray_bind:
            env += launchmod.ray_hook_env(self.plan.binding)
        taken = {n for n, _ in env}
        for s in self.pod.secret_env:
            if s.name in taken:
                raise UserError(
                    f"--secret-env {s.name}: the plan already sets {s.name} (see ncclgen explain); "
                    "a second entry would silently replace it"
                )
        # A Secret-backed variable is a reference: ncclgen never sees, and so never writes, its value.
        return [{"name": n, "value": _kubelet_literal(v)} for n, v in env] + [s.env() for s in self.pod.secret_env]

    def resources(self) -> dict:
        kube = self.plan.cluster.kubernetes
        qty = {kube.gpu_resource: str(self.launch.gpus_per_node)}
        qty.update({k: str(v) for k, v in kube.resources.items()})
        # descriptor.check() already refused hugepages without a cpu/memory request.
        # Extended resources cannot be overcommitted: requests must equal limits.
        return {"limits": dict(qty), "requests": dict(qty)}

    def container(
        self,
        name: str,
        command: list[str] | None,
        args: list[str] | None = None,
        ports: list[dict] | None = None,
        *,
        env: bool = True,
        resources: bool = True,
    ) -> dict:
        kube = self.plan.cluster.kubernetes
        security: dict = {"capabilities": {"add": list(kube.capabilities)}} if kube.capabilities else {}
        if kube.privileged:
            security["privileged"] = True
        mounts: list[dict] = [{"name": "dshm", "mountPath": "/dev/shm"}]
        if self.files:
            mounts.append({"name": "ncclgen", "mountPath": CONFIG_DIR, "readOnly": True})
        # The descriptor's (pod view: the platform's too) and --volume's volumes; a volume only a
        # sidecar mounts has no mount here.
        mounts += [m for m in (v.mount() for v in self.pod.volumes) if m is not None]
        c: dict = {"name": name, "image": self.image, "volumeMounts": mounts}
        if env:
            c["env"] = self.env()
        if resources:
            c["resources"] = self.resources()
        if security:
            c["securityContext"] = security
        if command is not None:
            c["command"] = [_kubelet_literal(a) for a in command]
        if args is not None:
            c["args"] = [_kubelet_literal(a) for a in args]
        if ports:
            c["ports"] = ports
        return c

    def pod_template(self, container: dict, component: str, annotations: dict | None = None) -> dict:
        kube = self.plan.cluster.kubernetes
        meta_annotations = dict(self.pod.annotations)
        meta_annotations.update(annotations or {})
        meta_annotations["ncclgen.io/explain"] = explain_command(self.plan)
        volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": kube.shm_size}}]
        if self.files:
            volumes.append({"name": "ncclgen", "configMap": {"name": self.config_name}})
        volumes += [v.volume() for v in self.pod.volumes]
        spec: dict = {"containers": [container], "volumes": volumes}
        native, plain = podparts.sidecars(kube, _kubelet_literal)
        if native:
            spec["initContainers"] = native
        spec["containers"] += plain
        spec.update(self.pod.pod_spec())
        if kube.host_network:
            # Without ClusterFirstWithHostNet a hostNetwork pod resolves with the node's DNS and cannot
            # find the Services the operators create (the master's address, the Ray head).
            spec["hostNetwork"] = True
            spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        if kube.node_selector:
            spec["nodeSelector"] = dict(kube.node_selector)
        if kube.tolerations:
            spec["tolerations"] = [
                {
                    k: v
                    for k, v in (("key", t.key), ("operator", t.operator), ("value", t.value), ("effect", t.effect))
                    if v is not None
                }
                for t in kube.tolerations
            ]
        labels = dict(self.labels)
        labels["app.kubernetes.io/component"] = component
        return {"metadata": {"labels": labels, "annotations": meta_annotations}, "spec": spec}

    def _job_meta(self) -> dict:
        return {"name": self.name, "namespace": self.namespace, "labels": dict(self.labels)}

    # PyTorchJob -----------------------------------------------------------------------------------------
    def pytorchjob(self) -> dict:
        la = self.launch
        if self.ray:
            # A Ray workload as a PyTorchJob: the master runs the Ray head and the driver, the workers
            # join it. The operator's MASTER_PORT is the port named pytorchjob-port: the Ray GCS port.
            port = la.ray_port
            master_cmd = [*self.start, "bash", f"{CONFIG_DIR}/{RAY_HEAD_SCRIPT}", *la.command]
            worker_cmd = [*self.start, "bash", f"{CONFIG_DIR}/{RAY_WORKER_SCRIPT}"]
        else:
            # No --nnodes/--rdzv-endpoint/--node-rank: torchrun reads PET_NNODES, PET_NODE_RANK,
            # PET_MASTER_ADDR, PET_MASTER_PORT and PET_NPROC_PER_NODE, which the operator injects.
            port = la.rdzv_port
            master_cmd = worker_cmd = [*self.start, *self._torchrun_command()]
        ports = [{"name": "pytorchjob-port", "containerPort": port, "protocol": "TCP"}]

        def replica(replicas: int, command: list[str], component: str) -> dict:
            # restartPolicy Never + backoffLimit 0: a failed rank fails the job, as in the sbatch script.
            return {
                "replicas": replicas,
                "restartPolicy": "Never",
                "template": self.pod_template(self.container("pytorch", command, ports=ports), component),
            }

        specs = {"Master": replica(1, master_cmd, "master")}
        if la.nodes > 1:
            specs["Worker"] = replica(la.nodes - 1, worker_cmd, "worker")
        return {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": self._job_meta(),
            "spec": {
                "nprocPerNode": str(la.gpus_per_node),
                # Running: when the job ends, delete pods still running (a hung rank's GPUs are freed)
                # but keep the finished ones and their logs.
                "runPolicy": {
                    "backoffLimit": 0,
                    "cleanPodPolicy": "Running",
                    "activeDeadlineSeconds": _seconds(self.plan.workload.time),
                },
                "pytorchReplicaSpecs": specs,
            },
        }

    # RayJob ---------------------------------------------------------------------------------------------
    def rayjob(self) -> dict:
        la = self.launch
        # num-gpus/num-cpus as in the sbatch script's `ray start`. The plan's env is in every Ray
        # container, so runtimeEnvYAML env_vars is not needed: raylets, and so every Ray worker and the
        # driver the job submitter starts on the head, inherit the container's environment.
        params = la.ray_start_params()
        command = args = None
        annotations = {}
        if self.ray_bind or self.start:
            # PYTHONPATH must be prepended (an env entry would replace the image's) and the preflight
            # and the setup lines run before `ray start` (the driver the submitter starts inherits the head's environment),
            # so the container runs KubeRay's generated `ray start` itself, the documented way to
            # customise it.
            annotations["ray.io/overwrite-container-cmd"] = "true"
            command = ["/bin/bash", "-c", "--"]
            prefix = f"{launchmod.prepend_path(CONFIG_DIR)}; " if self.ray_bind else ""
            run = shell.join(self.start) + " " if self.start else ""
            args = [f'{prefix}ulimit -n 65536; exec {run}/bin/bash -c "$KUBERAY_GEN_RAY_START_CMD"']
        head = {
            "rayStartParams": dict(params),
            "template": self.pod_template(self.container("ray-head", command, args), "head", annotations),
        }
        cluster: dict = {"headGroupSpec": head}
        if la.nodes > 1:
            n = la.nodes - 1
            cluster["workerGroupSpecs"] = [
                {
                    "groupName": "workers",
                    "replicas": n,
                    "minReplicas": n,
                    "maxReplicas": n,
                    "rayStartParams": dict(params),
                    "template": self.pod_template(self.container("ray-worker", command, args), "worker", annotations),
                }
            ]
        return {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": self._job_meta(),
            "spec": {
                # Fixed text that KubeRay's submitter (bash -ce, ray-project/kuberay@v1.7.0
                # ray-operator/controllers/ray/common/job.go BuildJobSubmitCommand), `ray job submit`
                # (subprocess.list2cmdline, ray 2.60.0 dashboard/modules/job/cli.py) and the job
                # supervisor (Popen(shell=True), dashboard/modules/job/job_supervisor.py) all leave as it
                # is; the argv is in the ConfigMap (tests/test_rayjob_entrypoint.py runs that chain).
                "entrypoint": f"bash {CONFIG_DIR}/{RAY_DRIVER_SCRIPT}",
                "shutdownAfterJobFinishes": True,
                "activeDeadlineSeconds": _seconds(self.plan.workload.time),
                "rayClusterSpec": cluster,
            },
        }

    # Kubeflow Trainer v2: TrainingRuntime + TrainJob ------------------------------------------------------
    def _torchrun_command(self) -> list[str]:
        """torchrun without what the operator's PET_* variables set, the bind wrapper, the command."""
        la = self.launch
        opts = [o for o in la.torchrun_options() if o.split("=", 1)[0] not in OPERATOR_SETS]
        bind = ["bash", f"{CONFIG_DIR}/{BIND_SCRIPT}"] if la.bind else []
        return ["torchrun", *opts, *bind, *la.command]

    def trainingruntime(self) -> dict:
        """A namespaced runtime holding what a TrainJob cannot carry in every Trainer v2 release: the pod
        template (security context, /dev/shm, host network, volumes, placement, service account, pull
        secrets, priority, scheduler) around the container `node` the torch plugin fills in.

        One Indexed Job of numNodes pods (the trainer sets parallelism and completions); backoffLimit 0
        and restartPolicy Never: a failed rank fails the job, as in the sbatch script; the workload's wall
        clock limit is the Job's activeDeadlineSeconds.
        """
        template = self.pod_template(self.container(TRAINER_NODE, None, env=False, resources=False), "node")
        template["spec"]["restartPolicy"] = "Never"
        job_labels = {TRAINER_ANCESTOR_LABEL: "trainer"}
        return {
            "apiVersion": TRAINER_API,
            "kind": "TrainingRuntime",
            "metadata": self._job_meta(),
            "spec": {
                "mlPolicy": {"numNodes": self.launch.nodes, "torch": {}},
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": TRAINER_NODE,
                                "template": {
                                    "metadata": {"labels": job_labels},
                                    "spec": {
                                        "backoffLimit": 0,
                                        "activeDeadlineSeconds": _seconds(self.plan.workload.time),
                                        "template": template,
                                    },
                                },
                            }
                        ]
                    }
                },
            },
        }

    def trainjob(self) -> dict:
        """The TrainJob: the plan's command, env, resources and node count, on the runtime above."""
        la = self.launch
        return {
            "apiVersion": TRAINER_API,
            "kind": "TrainJob",
            "metadata": self._job_meta(),
            "spec": {
                "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": self.name},
                "trainer": {
                    "image": self.image,
                    "command": [_kubelet_literal(a) for a in [*self.start, *self._torchrun_command()]],
                    "env": self.env(),
                    "numNodes": la.nodes,
                    "numProcPerNode": la.gpus_per_node,
                    "resourcesPerNode": self.resources(),
                },
            },
        }


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
