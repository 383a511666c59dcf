"""The custom resources, one builder each, from the parts a Job shares (ncclgen/render/k8sjob.py):
Kubeflow's PyTorchJob (kubeflow.org/v1), KubeRay's RayJob (ray.io/v1) and Kubeflow Trainer v2's
TrainingRuntime + TrainJob (trainer.kubeflow.org/v1alpha1). Keys are written in API order
(apiVersion, kind, metadata, spec): the dumper in ncclgen/render/k8s.py keeps that order.
"""

from __future__ import annotations

from ..plan import launch as launchmod
from . import shell
from .k8sjob import (
    CONFIG_DIR,
    RAY_DRIVER_SCRIPT,
    RAY_HEAD_SCRIPT,
    RAY_WORKER_SCRIPT,
    TRAINER_ANCESTOR_LABEL,
    TRAINER_API,
    TRAINER_NODE,
    Job,
    kubelet_literal,
    seconds,
)


def pytorchjob(job: Job) -> dict:
    la = job.launch
    if job.ray:
        # A Ray workload as a PyTorchJob: the master runs the Ray head and the driver, the workers
        # join it. The operator's MASTER_PORT is the port named pytorchjob-port: the Ray GCS port.
        port = la.ray_port
        master_cmd = [*job.start, "bash", f"{CONFIG_DIR}/{RAY_HEAD_SCRIPT}", *la.command]
        worker_cmd = [*job.start, "bash", f"{CONFIG_DIR}/{RAY_WORKER_SCRIPT}"]
    else:
        # No --nnodes/--rdzv-endpoint/--node-rank: torchrun reads PET_NNODES, PET_NODE_RANK,
        # PET_MASTER_ADDR, PET_MASTER_PORT and PET_NPROC_PER_NODE, which the operator injects.
        port = la.rdzv_port
        master_cmd = worker_cmd = [*job.start, *job.torchrun_command()]
    ports = [{"name": "pytorchjob-port", "containerPort": port, "protocol": "TCP"}]

    def replica(replicas: int, command: list[str], component: str) -> dict:
        # restartPolicy Never + backoffLimit 0: a failed rank fails the job, as in the sbatch script.
        return {
            "replicas": replicas,
            "restartPolicy": "Never",
            "template": job.pod_template(job.container("pytorch", command, ports=ports), component),
        }

    specs = {"Master": replica(1, master_cmd, "master")}
    if la.nodes > 1:
        specs["Worker"] = replica(la.nodes - 1, worker_cmd, "worker")
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": job.job_meta(),
        "spec": {
            "nprocPerNode": str(la.gpus_per_node),
            # Running: when the job ends, delete pods still running (a hung rank's GPUs are freed)
            # but keep the finished ones and their logs, until ttlSecondsAfterFinished deletes the job.
            "runPolicy": {
                "backoffLimit": 0,
                "cleanPodPolicy": "Running",
                "activeDeadlineSeconds": seconds(job.plan.workload.time),
                **({"ttlSecondsAfterFinished": job.ttl} if job.ttl is not None else {}),
            },
            "pytorchReplicaSpecs": specs,
        },
    }


def rayjob(job: Job) -> dict:
    la = job.launch
    # num-gpus/num-cpus as in the sbatch script's `ray start`. The plan's env is in every Ray
    # container, so runtimeEnvYAML env_vars is not needed: raylets, and so every Ray worker and the
    # driver the job submitter starts on the head, inherit the container's environment.
    params = la.ray_start_params()
    command = args = None
    annotations = {}
    if job.ray_bind or job.start:
        # PYTHONPATH must be prepended (an env entry would replace the image's) and the preflight
        # and the setup lines run before `ray start` (the driver the submitter starts inherits the head's environment),
        # so the container runs KubeRay's generated `ray start` itjob, the documented way to
        # customise it.
        annotations["ray.io/overwrite-container-cmd"] = "true"
        command = ["/bin/bash", "-c", "--"]
        prefix = f"{launchmod.prepend_path(CONFIG_DIR)}; " if job.ray_bind else ""
        run = shell.join(job.start) + " " if job.start else ""
        args = [f'{prefix}ulimit -n 65536; exec {run}/bin/bash -c "$KUBERAY_GEN_RAY_START_CMD"']
    head = {
        "rayStartParams": dict(params),
        "template": job.pod_template(job.container("ray-head", command, args), "head", annotations),
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
                "template": job.pod_template(job.container("ray-worker", command, args), "worker", annotations),
            }
        ]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": job.job_meta(),
        "spec": {
            # Fixed text that KubeRay's submitter (bash -ce, ray-project/kuberay@v1.7.0
            # ray-operator/controllers/ray/common/job.go BuildJobSubmitCommand), `ray job submit`
            # (subprocess.list2cmdline, ray 2.60.0 dashboard/modules/job/cli.py) and the job
            # supervisor (Popen(shell=True), dashboard/modules/job/job_supervisor.py) all leave as it
            # is; the argv is in the ConfigMap (tests/test_rayjob_entrypoint.py runs that chain).
            "entrypoint": f"bash {CONFIG_DIR}/{RAY_DRIVER_SCRIPT}",
            "shutdownAfterJobFinishes": True,
            # Without it KubeRay deletes the RayCluster, its pods and their logs the moment the job ends
            # (default 0: tests/data/crds/ray.io_rayjobs.yaml; kuberay's RayJobSpec: "the TTL to clean
            # up RayCluster", only with shutdownAfterJobFinishes).
            **({"ttlSecondsAfterFinished": job.ttl} if job.ttl is not None else {}),
            "activeDeadlineSeconds": seconds(job.plan.workload.time),
            "rayClusterSpec": cluster,
        },
    }


def trainingruntime(job: Job) -> dict:
    """A namespaced runtime holding what a TrainJob cannot carry in every Trainer v2 release: the pod
    template (security context, /dev/shm, host network, volumes, placement, service account, pull
    secrets, priority, scheduler) around the container `node` the torch plugin fills in.

    One Indexed Job of numNodes pods (the trainer sets parallelism and completions); backoffLimit 0
    and restartPolicy Never: a failed rank fails the job, as in the sbatch script; the workload's wall
    clock limit is the Job's activeDeadlineSeconds.
    """
    template = job.pod_template(job.container(TRAINER_NODE, None, env=False, resources=False), "node")
    template["spec"]["restartPolicy"] = "Never"
    job_labels = {TRAINER_ANCESTOR_LABEL: "trainer"}
    return {
        "apiVersion": TRAINER_API,
        "kind": "TrainingRuntime",
        "metadata": job.job_meta(),
        "spec": {
            "mlPolicy": {"numNodes": job.launch.nodes, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": TRAINER_NODE,
                            "template": {
                                "metadata": {"labels": job_labels},
                                "spec": {
                                    "backoffLimit": 0,
                                    "activeDeadlineSeconds": seconds(job.plan.workload.time),
                                    "template": template,
                                },
                            },
                        }
                    ]
                }
            },
        },
    }


def trainjob(job: Job) -> dict:
    """The TrainJob: the plan's command, env, resources and node count, on the runtime above."""
    la = job.launch
    return {
        "apiVersion": TRAINER_API,
        "kind": "TrainJob",
        "metadata": job.job_meta(),
        "spec": {
            "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": job.name},
            "trainer": {
                "image": job.image,
                "command": [kubelet_literal(a) for a in [*job.start, *job.torchrun_command()]],
                "env": job.env(),
                "numNodes": la.nodes,
                "numProcPerNode": la.gpus_per_node,
                "resourcesPerNode": job.resources(),
            },
        },
    }
