"""Per-local-rank CPU/memory binding: local rank r drives GPU r, so it runs on GPU r's NUMA node."""

from __future__ import annotations

from ..load.descriptor import Descriptor
from ..record import dataclass


@dataclass(frozen=True)
class RankBinding:
    local_rank: int
    gpu: int
    numa: int
    cpus: str  # cpuset list of the GPU's NUMA node
    rails: tuple[str, ...]  # nearest compute rails, "hca:port" or netdev


def bindings(cluster: Descriptor) -> tuple[RankBinding, ...]:
    """One binding per GPU, in local-rank order (torchrun's LOCAL_RANK, Ray's assigned GPU id).

    Whole-NUMA-node binding, not a per-GPU slice: ranks on one node share its cores, memory
    controller and the NIC rails attached to that socket, which is what NCCL's own affinity uses.
    """
    out = []
    for g in sorted(cluster.node.gpus, key=lambda g: g.index):
        rails = tuple(f"{r.hca}:{r.port}" if r.hca else str(r.netdev) for r in cluster.rails_for_gpu(g.index))
        out.append(
            RankBinding(local_rank=g.index, gpu=g.index, numa=g.numa, cpus=cluster.numa(g.numa).cpus, rails=rails)
        )
    return tuple(out)
