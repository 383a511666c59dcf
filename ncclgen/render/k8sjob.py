"""The parts every Kubernetes job kind shares: names and labels, the ConfigMap of programs the pods run
(per-rank binding, Ray bring-up, the Ray binding hook, the Ray driver's argv, the preflight), the
container's env and resources, and the pod template. ncclgen/render/k8skinds.py builds each custom
resource from them; ncclgen/render/k8s.py is the entry point (see its docstring for why each knob).
"""

from __future__ import annotations

import re

from .. import jobside
from ..errors import UserError
from ..load import podspec
from ..plan import flightrec
from ..plan import launch as launchmod
from ..plan import preflight as preflightmod
from ..plan import transport as transportmod
from . import pod as podparts
from . import shell

CONFIG_DIR = "/etc/ncclgen"
BIND_SCRIPT = "bind.sh"
SETUP_SCRIPT = "setup.sh"
# The preflight (ncclgen/jobside/preflight.py), its spec from the plan, and the script that runs it
# before exec'ing the launch: in every pod, before setup and launch.
PREFLIGHT_SCRIPT = "preflight.sh"
FR_VOLUME = "ncclgen-fr"  # the flight recorder's dumps (plan/flightrec.py POD_DIR)
PREFLIGHT_MODULE = "ncclgen_preflight.py"
PREFLIGHT_SPEC = "preflight.json"
# The transport check (ncclgen/jobside/transport.py, its parser beside it, its spec): it runs the pod's
# launch under it, after the setup (--transport-check off leaves it out).
TRANSPORT_MODULE = transportmod.MODULE
TRANSPORT_PARSER = transportmod.PARSER
TRANSPORT_SPEC = "transport.json"
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


def kubelet_literal(s: str) -> str:
    """Escape so the kubelet's $(VAR) expansion hands the process exactly ``s``.

    The kubelet turns `$$` into `$` and `$(NAME)` into NAME's value and keeps any other `$` as it is,
    so only a `$` followed by `$` or `(` needs doubling (`${PATH}` stays readable).
    """
    return re.sub(r"\$(?=[$(])", "$$", s)


def seconds(hms: str) -> int:
    """'[D-]HH:MM:SS' (the workload's wall-clock limit, as in the sbatch --time) -> seconds."""
    days, _, rest = hms.rpartition("-")
    h, m, s = (int(x) for x in rest.split(":"))
    return (int(days) if days else 0) * 86400 + h * 3600 + m * 60 + s


def label_value(value: str, what: str) -> str:
    if len(value) > 63 or not LABEL_VALUE.fullmatch(value):
        raise UserError(
            f"{what} {value!r} cannot be a Kubernetes label value (at most 63 letters, digits, "
            "'-', '_', '.', starting and ending with a letter or digit)"
        )
    return value


def program(name: str) -> str:
    """A node program from ncclgen/jobside/ as the ConfigMap holds it: one line naming its source
    file, then the module as it is (comments and blank lines kept, so it reads as in the repository)."""
    return f"# ncclgen/jobside/{name}.py, embedded by ncclgen\n" + jobside.source(name)


def explain_command(plan) -> str:
    """The `ncclgen explain` line that prints every variable's reason and source for this plan: the
    request as typed (a descriptor given as a file stays that file)."""
    return shell.join(plan.command_line("explain"))


class Job:
    """One rendering: the names, the ConfigMap's files and the pod templates derived from the plan."""

    def __init__(
        self,
        plan,
        kind: str,
        name: str,
        namespace: str | None,
        image: str,
        pod: podspec.PodSettings,
        preflight: bool = True,
        ttl: int | None = None,
    ):
        self.plan, self.kind, self.name, self.namespace, self.image = plan, kind, name, namespace, image
        self.ttl = ttl  # seconds finished pods are kept (None: the kind has no such field)
        self.pod = pod
        self.preflight = preflight
        self.transport = transportmod.enabled(plan)
        self.launch = plan.launch
        self.ray = plan.launch.launcher == "ray"
        # Tier 3 Ray binding: the same worker-setup hook as the sbatch script (ncclgen/jobside/raybind.py).
        self.ray_bind = self.ray and self.launch.bind
        self.labels = {
            "app.kubernetes.io/name": name,
            "app.kubernetes.io/managed-by": "ncclgen",
            "ncclgen.io/cluster": label_value(plan.cluster.name, "cluster name"),
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
            files[RAYWAIT_MODULE] = program("raywait")
        if self.ray_bind:
            files[RAYBIND_MODULE] = program("raybind")
        if self.kind == "rayjob":
            files[RAY_DRIVER_SCRIPT] = self._ray_driver_script()
        if self.plan.workload.setup:
            files[SETUP_SCRIPT] = launchmod.setup_program(self.plan.workload.setup)
        if self.preflight:
            files[PREFLIGHT_SCRIPT] = self.preflight_script()
            files[PREFLIGHT_MODULE] = program("preflight")
            files[PREFLIGHT_SPEC] = preflightmod.encode(preflightmod.spec(self.plan)) + "\n"
        if self.transport:
            files[TRANSPORT_MODULE] = program("transport")
            files[TRANSPORT_PARSER] = program("nccllines")
            files[TRANSPORT_SPEC] = transportmod.encode(transportmod.spec(self.plan)) + "\n"
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
            f"python3 -S {CONFIG_DIR}/{PREFLIGHT_MODULE} @{CONFIG_DIR}/{PREFLIGHT_SPEC} || exit\n"
            'exec "$@"\n'
        )

    @property
    def start(self) -> list[str]:
        """What runs before every launch command: the preflight (first: setup may be expensive), then setup,
        then the transport check, which runs the launch as its child (exit 7 on a difference)."""
        check = ["python3", "-S", f"{CONFIG_DIR}/{TRANSPORT_MODULE}", f"@{CONFIG_DIR}/{TRANSPORT_SPEC}", "--"]
        return (
            (["bash", f"{CONFIG_DIR}/{PREFLIGHT_SCRIPT}"] if self.preflight else [])
            + self.setup
            + check * self.transport
        )

    @property
    def config_name(self) -> str:
        return f"{self.name}-ncclgen"

    def config_map(self) -> dict:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": self.meta(self.config_name),
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
        return [{"name": n, "value": kubelet_literal(v)} for n, v in env] + [s.env() for s in self.pod.secret_env]

    def resources(self) -> dict:
        kube = self.plan.cluster.kubernetes
        qty = {kube.gpu_resource: str(self.launch.gpus_per_node)}
        qty.update({k: str(v) for k, v in kube.resources.items()})
        cpu = qty.get("cpu")
        if cpu is not None and not re.fullmatch(r"[1-9][0-9]*", cpu):
            # The static CPU manager gives exclusive CPUs only to a Guaranteed pod's containers whose
            # CPU request is an integer (kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/).
            raise UserError(
                f"kubernetes.resources.cpu {cpu!r}: expected whole CPUs (an integer such as 16), so the "
                "kubelet's static CPU manager can pin the pod to its own CPUs"
            )
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
        if env and flightrec.pod_volume(self.plan):  # an emptyDir: kubelet makes the folder torch writes to
            mounts.append({"name": FR_VOLUME, "mountPath": flightrec.POD_DIR})
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
            c["command"] = [kubelet_literal(a) for a in command]
        if args is not None:
            c["args"] = [kubelet_literal(a) for a in args]
        if ports:
            c["ports"] = ports
        return c

    def pod_template(self, container: dict, component: str, annotations: dict | None = None) -> dict:
        kube = self.plan.cluster.kubernetes
        meta_annotations = dict(self.pod.annotations)
        meta_annotations.update(annotations or {})
        meta_annotations["ncclgen.io/explain"] = explain_command(self.plan)
        volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": kube.shm_size}}]
        if flightrec.pod_volume(self.plan):
            volumes.append({"name": FR_VOLUME, "emptyDir": {}})
        if self.files:
            volumes.append({"name": "ncclgen", "configMap": {"name": self.config_name}})
        volumes += [v.volume() for v in self.pod.volumes]
        spec: dict = {"containers": [container], "volumes": volumes}
        native, plain = podparts.sidecars(kube, kubelet_literal)
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

    def meta(self, name: str) -> dict:
        """An object's metadata; a namespace only when --namespace or the descriptor set one, so the
        manifests apply in any namespace (`kubectl apply -n TEAM -f`)."""
        ns = {"namespace": self.namespace} if self.namespace else {}
        return {"name": name, **ns, "labels": dict(self.labels)}

    def job_meta(self) -> dict:
        return self.meta(self.name)

    def torchrun_command(self) -> list[str]:
        """torchrun without what the operator's PET_* variables set, the bind wrapper, the command."""
        la = self.launch
        opts = [o for o in la.torchrun_options() if o.split("=", 1)[0] not in OPERATOR_SETS]
        bind = ["bash", f"{CONFIG_DIR}/{BIND_SCRIPT}"] if la.bind else []
        return ["torchrun", *opts, *bind, *la.command]
