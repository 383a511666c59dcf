"""The launch spec: how the workload's command becomes processes, independent of the scheduler."""

from __future__ import annotations

from dataclasses import dataclass

from ..load.descriptor import Descriptor
from ..load.workload import Workload

RDZV_PORT = 29500      # c10d rendezvous store on the head node
RAY_PORT = 6379        # Ray GCS
RAY_READY_TIMEOUT_S = 300


@dataclass(frozen=True)
class Launch:
    launcher: str                 # torchrun | ray
    command: tuple[str, ...]      # per-rank program (torchrun) or driver (ray), derived overrides included
    nodes: int
    gpus_per_node: int
    cpus_per_node: int
    bind: bool                    # tier 3: each local rank / Ray GPU worker bound to its NUMA node
    bind_memory: bool
    rdzv_port: int = RDZV_PORT
    ray_port: int = RAY_PORT
    ray_ready_timeout_s: int = RAY_READY_TIMEOUT_S

    def torchrun_options(self) -> list[str]:
        """Scheduler-independent torchrun options; renderers add --nnodes/--rdzv-endpoint/--rdzv-id."""
        return [f"--nproc-per-node={self.gpus_per_node}",
                "--rdzv-backend=c10d",
                # A failed rank fails the job: restarts would re-run a half-finished step on a
                # possibly broken node; Slurm/Kubernetes requeue the job instead.
                "--max-restarts=0",
                # The whole job must rendezvous within 10 minutes (slow image pulls, pyxis imports).
                "--rdzv-conf=join_timeout=600",
                "--no-python"]


def derive_command(workload: Workload, cluster: Descriptor, nodes: int) -> tuple[str, ...]:
    """The workload command plus what ncclgen derives, so no count is typed twice.

    verl's main_ppo takes the Ray cluster shape and the process-group timeout from Hydra overrides
    (verl-launch.md sec. 1); NCCL has no timeout variable, so the timeout goes here.
    """
    cmd = tuple(workload.command)
    if workload.framework == "verl" and workload.launcher == "ray":
        cmd += (f"trainer.nnodes={nodes}",
                f"trainer.n_gpus_per_node={cluster.node.gpus_per_node}",
                f"actor_rollout_ref.nccl_timeout={workload.timeout_s}")
    return cmd
