"""`ncclgen k8s`: the plan as Kubernetes manifests (PyTorchJob or RayJob, plus a ConfigMap)."""

from __future__ import annotations

import click

from ..output import emit
from .common import make_plan, plan_options


@click.command()
@plan_options
@click.option("--kind", type=click.Choice(["pytorchjob", "rayjob"]),
              help="Custom resource to render (default: rayjob for Ray workloads, pytorchjob for torchrun "
                   "ones; a Ray workload may also run as a PyTorchJob).")
@click.option("--name", metavar="NAME", help="Job name, a DNS-1035 label (default: the workload's name).")
@click.option("--namespace", metavar="NS", help="Namespace (default: the descriptor's kubernetes.namespace).")
@click.option("--image", metavar="IMAGE", help="Container image (default: the descriptor's kubernetes.image).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (atomically) instead of stdout.")
def k8s(cluster, tier, workload, nodes, sets, debug, extra_args, kind, name, namespace, image, output):
    """Render Kubernetes manifests: the plan's env in every container, GPUs and RDMA devices in
    requests and limits, IPC_LOCK, a memory-backed /dev/shm, and tier 3 NUMA binding.

    \b
    Examples:
      ncclgen k8s --cluster h100-ib --tier 2 | kubectl apply -f -
      ncclgen k8s --workload verl-sft --kind pytorchjob --name sft-run1 -o sft.yaml
    """
    from ..render import k8s as render_k8s

    plan = make_plan(cluster, tier, workload, nodes, sets, debug, extra_args, target="pod")
    emit(render_k8s.render(plan, kind=kind, name=name, namespace=namespace, image=image), output)
