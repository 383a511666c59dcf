"""`ncclgen k8s`: the plan as Kubernetes manifests (PyTorchJob, RayJob or TrainJob, plus a ConfigMap)."""

from __future__ import annotations

import click

from ..output import emit
from ..render.options import K8sOptions, argv
from .common import make_plan, plan_options, request_from
from .options import click_options, from_click


@click.command()
@plan_options
@click_options(K8sOptions)
def k8s(**params):
    """Render Kubernetes manifests: the plan's env in every container, GPUs and RDMA devices in
    requests and limits, IPC_LOCK, a memory-backed /dev/shm, and tier 3 NUMA binding.

    \b
    Examples:
      ncclgen k8s --cluster h100-ib --tier 2 | kubectl apply -f -
      ncclgen k8s --workload verl-sft --kind pytorchjob --name sft-run1 -o sft.yaml
      ncclgen k8s --workload verl-sft --kind trainjob --volume pvc:ckpt:/ckpt \
          --secret-env WANDB_API_KEY=wandb:api-key --label kueue.x-k8s.io/queue-name=team-a
    """
    from ..render import k8s as render_k8s

    opts = from_click(K8sOptions, params)
    plan = make_plan(request_from({**params, "target": "pod"}))
    pod = opts.pod_settings(plan, reserved_labels=render_k8s.reserved_labels())
    text = render_k8s.render(
        plan,
        flags=tuple(argv(opts)),
        ttl=opts.ttl_seconds,
        kind=opts.kind,
        name=opts.name,
        namespace=opts.namespace,
        image=opts.image,
        pod=pod,
        preflight=opts.preflight,
    )
    emit(text, opts.output)
