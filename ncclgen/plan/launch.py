"""How a workload's command becomes processes: the one place that knows the launch.

The sbatch template, the Kubernetes renderer and `ncclgen explain` all take their torchrun options,
`ray start` arguments, readiness/watchdog invocations, Ray binding-hook plumbing and the per-rank
binding wrapper from here, so the three cannot drift apart. Scheduler-specific parts (srun options,
KubeRay's rayStartParams spelling, where a file lives) stay with each renderer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import overrides

if TYPE_CHECKING:
    from ..load.descriptor import Descriptor
    from ..load.workload import Workload
    from .binding import RankBinding

RDZV_PORT = 29500  # c10d rendezvous store on the head node
RAY_PORT = 6379  # Ray GCS
RAY_READY_TIMEOUT_S = 300
# Watchdog period: a raylet stopped by SIGTERM leaves `ray start --block` running, so only the node
# table shows the loss; a 2 s period keeps the job's fail-fast bound within seconds.
RAY_WATCH_INTERVAL_S = 2
# ray[default]'s dashboard agent port (ray python/ray/_private/ray_constants.py
# DEFAULT_DASHBOARD_AGENT_LISTEN_PORT); each extra Slurm node on one host takes the next one.
RAY_AGENT_PORT = 52365

# The Ray worker setup hook: Ray's default_worker.py imports and calls the function named by this
# variable in every worker process (a Ray internal, checked in Ray 2.60).
RAY_HOOK_ENV = "__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR"
HOOK_MODULE = "ncclgen_raybind"  # ncclgen/jobside/raybind.py, written under this module name
GPU_CPUS_ENV = "NCCLGEN_GPU_CPUS"  # read by ncclgen/jobside/raybind.py
BIND_ARGV0 = "ncclgen-bind"  # $0 of the per-rank binding wrapper
SETUP_ARGV0 = "ncclgen-setup"  # $0 of the workload's setup program

# The job environment is the plan: a variable with one of these prefixes that the plan does not set
# is removed from what the scheduler hands the job (sbatch exports the submitting shell). NCCL reads
# NCCL_* (src/misc/param.cc ncclGetEnv), PyTorch TORCH_NCCL_*, TORCH_DISTRIBUTED_* and TORCH_FR_*
# (torch/csrc/distributed/c10d), gloo GLOO_*, UCX and libfabric (the NCCL net plugins' transports)
# UCX_* and FI_*.
SCRUBBED_PREFIXES = ("NCCL_", "TORCH_NCCL_", "TORCH_DIST", "TORCH_FR_", "GLOO_", "UCX_", "FI_")

# verl derives these from the plan; typing them in a workload would say the count twice (checked with
# every other override by ncclgen/load/verl.py, which holds the same tuple as DERIVED).
DERIVED_VERL_KEYS = ("trainer.nnodes", "trainer.n_gpus_per_node")


@dataclass(frozen=True)
class Launch:
    launcher: str  # torchrun | ray
    command: tuple[str, ...]  # per-rank program (torchrun) or driver (ray), derived overrides included
    nodes: int
    gpus_per_node: int
    cpus_per_node: int
    bind: bool  # tier 3: each local rank / Ray GPU worker bound to its NUMA node
    bind_memory: bool
    rdzv_port: int = RDZV_PORT
    ray_port: int = RAY_PORT
    ray_ready_timeout_s: int = RAY_READY_TIMEOUT_S
    ray_watch_interval_s: int = RAY_WATCH_INTERVAL_S
    per_run: tuple[str, ...] = ()  # how each `-- ARG` reached the command (plan/overrides.py), for explain

    def applied_binding(self) -> tuple[str, ...]:
        """What the binding really does under this launcher, one line each, for explain and diff.

        torchrun ranks run under numactl (bind_wrapper); Ray GPU tasks and actors get CPU affinity only,
        from the worker hook (ncclgen/jobside/raybind.py calls os.sched_setaffinity, no memory policy).
        """
        if self.launcher == "torchrun":
            mem = " --membind=<numa>" if self.bind_memory else " (no --membind: descriptor bind_memory is false)"
            return (f"each rank runs under: numactl --physcpubind=<cpus>{mem}",)
        why = (
            "the Ray hook sets no memory policy, so descriptor bind_memory: true is not applied"
            if self.bind_memory
            else "descriptor bind_memory is false"
        )
        return (
            "each Ray GPU task or actor: CPU affinity to its GPU's <cpus> (Ray worker hook, sched_setaffinity)",
            f"no memory binding: {why}",
        )

    # -- torchrun ---------------------------------------------------------------------------------
    def torchrun_options(self) -> list[str]:
        """Scheduler-independent torchrun options; renderers add --nnodes/--rdzv-endpoint/--rdzv-id."""
        return [
            f"--nproc-per-node={self.gpus_per_node}",
            "--rdzv-backend=c10d",
            # A failed rank fails the job: restarts would re-run a half-finished step on a
            # possibly broken node; Slurm/Kubernetes requeue the job instead.
            "--max-restarts=0",
            # The whole job must rendezvous within 10 minutes (slow image pulls, pyxis imports).
            "--rdzv-conf=join_timeout=600",
            "--no-python",
        ]

    # -- Ray ----------------------------------------------------------------------------------------
    def ray_start_params(self) -> dict[str, str]:
        """The resources every `ray start` declares (KubeRay's rayStartParams take the same keys).

        --num-gpus is the plan's GPUs per node, the count verl's trainer.n_gpus_per_node and the
        readiness check use; --num-cpus the node's CPUs (pods and steps get no CPU limit).
        """
        return {"num-gpus": str(self.gpus_per_node), "num-cpus": str(self.cpus_per_node)}

    def ray_start_flags(self) -> list[str]:
        return [f"--{k}={v}" for k, v in self.ray_start_params().items()] + ["--disable-usage-stats"]

    def ray_head_argv(self) -> list[str]:
        return ["ray", "start", "--head", f"--port={self.ray_port}", *self.ray_start_flags()]

    def ray_worker_argv(self, head: str) -> list[str]:
        """``head``: the head's address without the port (an IP, a Service name, or a renderer's own
        shell expansion, whose str subclass the address argument keeps)."""
        return ["ray", "start", type(head)(f"--address={head}:{self.ray_port}"), *self.ray_start_flags(), "--block"]

    @property
    def want_gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def ray_wait_args(self, address: str) -> list[str]:
        """Arguments of jobside/raywait.py `wait`: ready once every node and GPU joined."""
        return ["wait", address, str(self.nodes), str(self.want_gpus), str(self.ray_ready_timeout_s)]

    def ray_watch_args(self, address: str) -> list[str]:
        """Arguments of jobside/raywait.py `watch`: exit 5 once a node is gone."""
        return ["watch", address, str(self.nodes), str(self.ray_watch_interval_s)]


def derive_command(
    workload: Workload, cluster: Descriptor, nodes: int, extra: tuple[str, ...] = ()
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The workload command plus what ncclgen derives, so no count is typed twice, and the per-run
    arguments ``extra``; also one line per per-run argument saying how it got there.

    verl's main_ppo takes the Ray cluster shape from trainer.nnodes and trainer.n_gpus_per_node. No
    timeout is appended: since verl 0.8.0 nothing reads actor_rollout_ref.nccl_timeout (the knowledge
    base in ncclgen/data/verl records the timeout each entry really uses; `explain` states it). A verl
    command is Hydra's: a per-run override replaces the workload's value in place (plan/overrides.py);
    any other command gets them appended.
    """
    cmd = tuple(workload.command)
    notes: tuple[str, ...] = ()
    rest = extra
    if workload.framework == "verl":
        cmd, rest, notes = overrides.merge(cmd, extra)
    if workload.framework == "verl" and workload.launcher == "ray":
        cmd += (f"trainer.nnodes={nodes}", f"trainer.n_gpus_per_node={cluster.node.gpus_per_node}")
    how = "appended (a key the workload does not set)" if workload.framework == "verl" else "appended"
    return cmd + rest, notes + tuple(f"{a}: {how}" for a in rest if not any(n.startswith(a + ":") for n in notes))


# -- tier 3 binding -------------------------------------------------------------------------------------


def bind_wrapper(binds: tuple[RankBinding, ...], bind_memory: bool) -> str:
    """A bash program that execs its arguments under numactl for $LOCAL_RANK.

    Used as `torchrun --no-python bash -c "$SCRIPT" ncclgen-bind CMD...` on Slurm (no shared file
    system needed) and from a ConfigMap on Kubernetes. Fails loudly rather than run unbound.
    """
    lines = ["set -euo pipefail", f'rank="${{LOCAL_RANK:?{BIND_ARGV0}: LOCAL_RANK is not set}}"', 'case "$rank" in']
    groups: dict[str, list[str]] = {}  # one case per binding, e.g. `0|1|2|3)` for a NUMA node's GPUs
    for b in binds:
        mem = f" --membind={b.numa}" if bind_memory else ""
        groups.setdefault(f"numactl --physcpubind={b.cpus}{mem}", []).append(str(b.local_rank))
    for cmd, ranks in groups.items():
        lines.append(f'  {"|".join(ranks)}) set -- {cmd} -- "$@" ;;')
    lines += [f'  *) echo "{BIND_ARGV0}: no binding for LOCAL_RANK=$rank" >&2; exit 2 ;;', "esac", 'exec "$@"']
    return "\n".join(lines) + "\n"


def setup_program(lines: tuple[str, ...]) -> str:
    """A bash program running the workload's setup lines in order, then exec'ing its arguments.

    Renderers pass it as an argument (`bash -c "$PROGRAM" ncclgen-setup CMD...`), so the lines reach
    the node byte for byte and run in the same step, container and environment as CMD. A failing
    line stops the step (set -e) before its program starts.
    """
    return "\n".join(["set -euo pipefail", *lines, 'exec "$@"']) + "\n"


def gpu_cpu_map(binds: tuple[RankBinding, ...]) -> str:
    """'0=0-55,112-167;1=...': GPU id -> CPUs, for the Ray worker hook (NCCLGEN_GPU_CPUS)."""
    return ";".join(f"{b.gpu}={b.cpus}" for b in binds)


def ray_hook_env(binds: tuple[RankBinding, ...]) -> list[tuple[str, str]]:
    """The variables every Ray node needs for the tier 3 worker hook (besides PYTHONPATH, which each
    renderer prepends to the image's own: `prepend_path`)."""
    return [(GPU_CPUS_ENV, gpu_cpu_map(binds)), (RAY_HOOK_ENV, f"{HOOK_MODULE}.hook")]


def prepend_path(folder_expr: str) -> str:
    """Bash that puts a folder before the image's own PYTHONPATH (a plain assignment would replace it)."""
    return f'export PYTHONPATH="{folder_expr}${{PYTHONPATH:+:$PYTHONPATH}}"'
