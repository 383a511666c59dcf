"""`ncclgen k8s`: the plan as Kubernetes manifests (PyTorchJob, RayJob or TrainJob, plus a ConfigMap)."""

from __future__ import annotations

import click

from ..output import emit
from .common import make_plan, plan_options


@click.command()
@plan_options
@click.option(
    "--kind",
    type=click.Choice(["pytorchjob", "rayjob", "trainjob"]),
    help="Custom resource to render (default: rayjob for Ray workloads, pytorchjob for torchrun "
    "ones; a Ray workload may also run as a PyTorchJob; trainjob: a Kubeflow Trainer v2 "
    "TrainJob and its TrainingRuntime, for torchrun workloads).",
)
@click.option("--name", metavar="NAME", help="Job name, a DNS-1035 label (default: the workload's name).")
@click.option("--namespace", metavar="NS", help="Namespace (default: the descriptor's kubernetes.namespace).")
@click.option("--image", metavar="IMAGE", help="Container image (default: the descriptor's kubernetes.image).")
@click.option(
    "--volume",
    "volumes",
    multiple=True,
    metavar="SPEC",
    help="Mount a volume in every container (repeatable): pvc:CLAIM:/mount/path, "
    "hostpath:/host/path:/mount/path or configmap:NAME:/mount/path, optionally ending :ro. "
    "Added to the descriptor's kubernetes.volumes.",
)
@click.option("--service-account", metavar="NAME", help="Pod serviceAccountName.")
@click.option("--priority-class", metavar="NAME", help="Pod priorityClassName.")
@click.option(
    "--image-pull-secret",
    "pull_secrets",
    multiple=True,
    metavar="NAME",
    help="Secret to pull the image with (repeatable).",
)
@click.option("--scheduler-name", metavar="NAME", help="Pod schedulerName, e.g. volcano.")
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="KEY=VALUE",
    help="Label on every object and pod (repeatable), e.g. kueue.x-k8s.io/queue-name=QUEUE.",
)
@click.option("--annotation", "annotations", multiple=True, metavar="KEY=VALUE", help="Pod annotation (repeatable).")
@click.option(
    "--secret-env",
    "secret_env",
    multiple=True,
    metavar="NAME=SECRET:KEY",
    help="Variable NAME from key KEY of Secret SECRET (repeatable): a secretKeyRef, so the value "
    "never appears in the manifests.",
)
@click.option(
    "--no-preflight",
    is_flag=True,
    help="Leave out the preflight (on by default: each pod first checks the HCA ports, bootstrap "
    "interfaces, plugin and topology files, GPUs, /dev/shm, locked memory and numactl the plan "
    "relies on; a problem ends the container with exit 6, one line each, before the launch).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write here instead of stdout, atomically: one complete file (the last writer's), never a partial or mixed one.",
)
def k8s(
    cluster,
    tier,
    workload,
    nodes,
    sets,
    unchecked_sets,
    debug,
    extra_args,
    kind,
    name,
    namespace,
    image,
    volumes,
    service_account,
    priority_class,
    pull_secrets,
    scheduler_name,
    labels,
    annotations,
    secret_env,
    no_preflight,
    output,
):
    """Render Kubernetes manifests: the plan's env in every container, GPUs and RDMA devices in
    requests and limits, IPC_LOCK, a memory-backed /dev/shm, and tier 3 NUMA binding.

    \b
    Examples:
      ncclgen k8s --cluster h100-ib --tier 2 | kubectl apply -f -
      ncclgen k8s --workload verl-sft --kind pytorchjob --name sft-run1 -o sft.yaml
      ncclgen k8s --workload verl-sft --kind trainjob --volume pvc:ckpt:/ckpt \
          --secret-env WANDB_API_KEY=wandb:api-key --label kueue.x-k8s.io/queue-name=team-a
    """
    from ..load import podspec
    from ..render import k8s as render_k8s

    plan = make_plan(
        cluster, tier, workload, nodes, sets, debug, extra_args, target="pod", unchecked_sets=unchecked_sets
    )
    pod = podspec.merge(
        plan.cluster.kubernetes.pod_settings(),
        volumes=volumes,
        service_account=service_account,
        priority_class=priority_class,
        image_pull_secrets=pull_secrets,
        scheduler_name=scheduler_name,
        labels=labels,
        annotations=annotations,
        secret_env=secret_env,
        reserved_labels=render_k8s.reserved_labels(),
        env_names=[e.name for e in plan.env],
    )
    emit(
        render_k8s.render(
            plan, kind=kind, name=name, namespace=namespace, image=image, pod=pod, preflight=not no_preflight
        ),
        output,
    )
