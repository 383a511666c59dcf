"""How a workload's command becomes processes: the one place that knows the launch.

The sbatch template, the Kubernetes renderer and `ncclgen explain` all take their torchrun options,
`ray start` arguments, readiness/watchdog invocations, Ray binding-hook plumbing and the per-rank
binding wrapper from here, so the three cannot drift apart. Scheduler-specific parts (srun options,
KubeRay's rayStartParams spelling, where a file lives) stay with each renderer.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..load.patterns import PLAN_PREFIXES
from ..record import dataclass
from . import overrides, rules

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
# is removed from what the scheduler hands the job (sbatch exports the submitting shell).
SCRUBBED_PREFIXES = PLAN_PREFIXES

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
    # The node counts the plan holds for unchanged (a job resized at submission runs within them), and
    # the settings that bound them: resize_range().
    resize_min: int = 1
    resize_max: int | None = None
    resize_why: tuple[str, ...] = ()

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


def resize_range(ctx: rules.Context, tier: int, omitted: set[str]) -> tuple[int, int | None, tuple[str, ...]]:
    """(lowest, highest or None, why): the node counts for which this plan's environment is the same.

    Only a tier rule with `nodes_min` looks at the count (ncclgen/data/rules.yaml). The launch takes the
    count from the allocation (torchrun --nnodes, verl's trainer.nnodes, the Ray readiness check), as
    verl's own Slurm example does (trainer.nnodes="$SLURM_JOB_NUM_NODES", volcengine/verl@c7bdc2358bb7
    examples/slurm/dapo_multinode_slurm.slurm).
    """
    lo, hi, why = 1, None, []
    for rule in rules.load_rules():
        m = rule.when.nodes_min
        if not m or rule.tier > tier or rule.var in omitted:
            continue
        if rules.evaluate(rule, dataclasses.replace(ctx, nodes=max(ctx.nodes, m))) is None:
            continue  # it would not apply at any count
        if m <= ctx.nodes:
            lo = max(lo, m)
            why.append(f"{rule.var} (rule {rule.id}) is planned from {m} nodes")
        else:
            hi = m - 1 if hi is None else min(hi, m - 1)
            why.append(f"{rule.var} (rule {rule.id}) would be planned from {m} nodes")
    return lo, hi, tuple(why)


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
    line stops the step (set -e) before its program starts, and so does a setup that set, changed or
    unset a name the plan owns (a sourced file's export: the loader refuses the lines that do it).
    """
    owned = "^(" + "|".join(PLAN_PREFIXES) + ")"
    before = [
        "declare -A ncclgen_plan=()",
        f"for ncclgen_n in $(compgen -e); do [[ ! $ncclgen_n =~ {owned} ]] || ncclgen_plan[$ncclgen_n]=${{!ncclgen_n}}; done",
    ]
    after = [
        "ncclgen_changed=()",
        "for ncclgen_n in $(compgen -e); do",
        f"  [[ $ncclgen_n =~ {owned} ]] || continue",
        '  [[ -n ${ncclgen_plan[$ncclgen_n]+set} && ${ncclgen_plan[$ncclgen_n]} == "${!ncclgen_n}" ]] || ncclgen_changed+=("$ncclgen_n")',
        "  unset 'ncclgen_plan[$ncclgen_n]'",
        "done",
        'for ncclgen_n in "${!ncclgen_plan[@]}"; do ncclgen_changed+=("$ncclgen_n"); done',
        'for ncclgen_n in "${ncclgen_changed[@]}"; do',
        "  echo \"ncclgen: ERROR: the workload's setup changed $ncclgen_n, a name the plan owns"
        " (set it with --set $ncclgen_n=VALUE or in the descriptor's env:)\" >&2",
        "done",
        "((${#ncclgen_changed[@]} == 0)) || exit 1",
        "unset ncclgen_n ncclgen_plan ncclgen_changed",
    ]
    return "\n".join(["set -euo pipefail", *before, *lines, *after, 'exec "$@"']) + "\n"


def setup_lines(lines: tuple[str, ...]) -> str:
    """The workload's setup lines as the file a Slurm node runs once per job (ncclgen/jobside/node.sh
    sources it in a child bash with `set -euo pipefail`, then keeps what it exported for every step)."""
    return "\n".join(lines) + "\n"


# -- ports -----------------------------------------------------------------------------------------------
# A job that holds its nodes exclusively uses the launchers' default ports. One that shares its nodes
# (no --exclusive) takes them from its job id, as verl- and torchtitan-based Slurm scripts do
# (MASTER_PORT=$((BASE + SLURM_JOB_ID % SPAN))): two jobs on one node then meet only when their ids are
# SPAN apart. The range 20000-31999 lies above Ray's worker ports (10002-19999, `ray start`
# --min/--max-worker-port) and below Linux's ephemeral ports (net.ipv4.ip_local_port_range 32768-60999).
PORT_BASE, PORT_SPAN = 20000, 12000
RAY_BLOCK = 100  # a Ray job's block: GCS, client server, then one dashboard agent port per node index
RAY_CLIENT_PORT = 10001  # ray start --ray-client-server-port default (ray scripts.py)


@dataclass(frozen=True)
class Ports:
    """The ports a Slurm job's launch listens on, as bash arithmetic on SLURM_JOB_ID (or fixed)."""

    shared: bool  # the job does not hold its nodes exclusively: ports from the job id
    rdzv: str  # torchrun's c10d store on the head
    ray: str  # Ray GCS on the head
    ray_client: str
    agent: str  # dashboard agent port of node index 0; node i listens on agent + i

    def describe(self, launcher: str) -> str:
        """One line for explain."""
        if not self.shared:
            fixed = (
                f"rendezvous {RDZV_PORT}"
                if launcher == "torchrun"
                else (
                    f"Ray GCS {RAY_PORT}, client server {RAY_CLIENT_PORT}, dashboard agents {RAY_AGENT_PORT} + node index"
                )
            )
            return f"ports: {fixed} (the job holds its nodes exclusively)"
        if launcher == "torchrun":
            which = f"rendezvous {self.rdzv}"
        else:
            which = f"Ray GCS {self.ray}, client server GCS + 1, dashboard agents GCS + 2 + node index"
        return f"ports: {which}, from the job id (the job shares its nodes: two jobs on one node stay apart)"


def slurm_ports(exclusive: bool) -> Ports:
    if exclusive:
        return Ports(False, str(RDZV_PORT), str(RAY_PORT), str(RAY_CLIENT_PORT), str(RAY_AGENT_PORT))
    block = f"{PORT_BASE} + SLURM_JOB_ID % {PORT_SPAN // RAY_BLOCK} * {RAY_BLOCK}"
    return Ports(True, f"{PORT_BASE} + SLURM_JOB_ID % {PORT_SPAN}", block, f"{block} + 1", f"{block} + 2")


def ray_worker_program(launch: Launch) -> str:
    """A Ray worker node (bash), so one step starts every worker: its dashboard agent port from its
    index in the step (SLURM_NODEID counts the step's nodes, measured on Slurm 22.05; the head has
    NCCLGEN_AGENT_PORT), since several Slurm nodes may share one host."""
    flags = " ".join(launch.ray_start_flags())
    return (
        "set -euo pipefail\n"
        "# node i of the workers' step listens on NCCLGEN_AGENT_PORT + 1 + i\n"
        'exec ray start --address="$NCCLGEN_RAY_ADDR" '
        "--dashboard-agent-listen-port=$((NCCLGEN_AGENT_PORT + 1 + SLURM_NODEID)) "
        f"{flags} --block\n"
    )


def ray_driver_program(launch: Launch) -> str:
    """The Ray driver step (bash): the readiness check, then the driver ("$@" after `--`) beside the
    node watchdog, in one step on the head node. Exit 3: not ready; 5: the watchdog saw a node go;
    otherwise the driver's status."""
    wait = " ".join(launch.ray_wait_args('"$NCCLGEN_RAY_ADDR"'))
    watch = " ".join(launch.ray_watch_args('"$NCCLGEN_RAY_ADDR"'))
    return f"""set -uo pipefail
[[ ${{1:-}} != -- ]] || shift
# srun passes the clean-up's SIGTERM on; each program runs in the background so the trap runs at once.
trap 'kill -TERM $(jobs -p) 2>/dev/null; exit 143' TERM
python3 "$NCCLGEN_DIR/raywait.py" {wait} &
status=0
wait "$!" || status=$?
if ((status != 0)); then
  echo "ncclgen: ERROR: the Ray cluster is not ready (readiness check status $status)" >&2
  exit 3
fi
# Watchdog: a raylet stopped by SIGTERM leaves its `ray start --block` running; only the node table
# shows the loss.
python3 "$NCCLGEN_DIR/raywait.py" {watch} &
watchdog=$!
# RAY_ADDRESS makes the driver's ray.init() join this cluster.
RAY_ADDRESS=$NCCLGEN_RAY_ADDR "$@" &
driver=$!
wait -n
if kill -0 "$driver" 2>/dev/null; then
  echo "ncclgen: ERROR: the Ray watchdog ended (a Ray node is gone); stopping the driver" >&2
  kill -TERM "$driver"
  exit 5
fi
status=0
wait "$driver" || status=$?
kill -TERM "$watchdog" 2>/dev/null
exit "$status"
"""


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
