"""Plan -> sbatch script. First a plain data model (SlurmScript), then a logic-free jinja2 template.

Everything that decides something (which #SBATCH options, which variables, which wrapper) happens in
build(); the templates in templates/slurm/ only lay the data out and quote it (ncclgen/render/shell.py).
The launch itself (torchrun options, `ray start` arguments, readiness and watchdog calls, the binding
wrapper and the Ray hook) comes from ncclgen/plan/launch.py, shared with the Kubernetes renderer.

The script reads top to bottom: #SBATCH lines, a header, one line per exported variable, the launch
(a function), then the programs the launch runs on the nodes, and the call of the launch function.

Imports stay light (no torch, ray or kubernetes): `ncclgen slurm` runs on login nodes.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from typing import Literal, Optional, Union

from .. import __version__, datapaths, jobside
from ..errors import UserError
from ..plan import Plan
from ..plan.build import prepends
from ..plan import launch as launchmod
from ..plan import preflight as preflightmod
from . import shell
from .shell import Raw

TIME_PATTERN = r"(\d+-)?\d{1,3}:\d{2}:\d{2}"  # same form as a workload's `time`
COMMENTS = ("short", "full")


@dataclass(frozen=True)
class Export:
    name: str
    value: str                   # quoted unless Raw
    comment: str                 # short: `# tier 1, rule-id` on the same line; full: the line above


def _export_value(e, plan: Plan) -> str:
    """The value to export: quoted, except a plugin's loader-path folder, which goes in front of the
    job's own loader path (plan.build.prepends)."""
    if prepends(e, plan.target):
        return Raw(shell.quote(e.value) + f'"${{{e.name}:+:${e.name}}}"')
    return e.value


@dataclass(frozen=True)
class Program:
    """A program the launch runs on the nodes, kept in a variable from a QUOTED heredoc (no expansion
    inside, so its text reaches the node byte for byte). Passed as an argument, never exported."""
    comment: str
    name: str
    text: str

    @property
    def delimiter(self) -> str:
        return f"{self.name}_EOF"


@dataclass(frozen=True)
class Step:
    """A per-node helper step started before the launch (the GPU monitor)."""
    comment: str
    argv: tuple[str, ...]


@dataclass(frozen=True)
class Torchrun:
    options: tuple[str, ...]     # launch.torchrun_options()
    rdzv_port: int
    wrapper: tuple[str, ...]     # tier 3: bash -c "$NCCLGEN_BIND" ncclgen-bind; else empty


@dataclass(frozen=True)
class Ray:
    port: int
    head: tuple[str, ...]          # `ray start --head ...` (launch.ray_head_argv) + Slurm's own flags
    worker: tuple[str, ...]        # `ray start --address=...` up to, not including, the agent port
    worker_flags: tuple[str, ...]  # after the agent port
    start_prefix: tuple[str, ...]  # tier 3: the bash -c that writes the hook module, then execs ray
    wait: tuple[str, ...]          # raywait.py wait arguments
    watch: tuple[str, ...]         # raywait.py watch arguments
    ready_timeout_s: int
    watch_interval_s: int
    agent_port: int


@dataclass(frozen=True)
class SlurmScript:
    """Everything the template prints, already decided and in output order."""
    sbatch: tuple[tuple[str, Optional[str]], ...]   # sorted; None = flag without value
    header: tuple[str, ...]                         # comment lines, control characters escaped
    comments: str                                   # short | full
    env: tuple[Export, ...]                         # the plan, in plan order
    plumbing: tuple[Export, ...]                    # launcher helper variables, not NCCL/PyTorch
    pass_env: tuple[tuple[str, str], ...]           # (name, start-up check) for --pass-env
    programs: tuple[Program, ...]
    nodes: int
    gpus_per_node: int
    srun: tuple[str, ...]                           # options every srun carries: --export=ALL, pyxis
    setup: tuple[str, ...]                          # bash -c "$NCCLGEN_SETUP" ncclgen-setup, or empty
    helpers: tuple[Step, ...]
    command: tuple[str, ...]
    launch: Union[Torchrun, Ray]
    version: str
    preflight: Optional[str] = None                 # the preflight's spec (JSON); None: --no-preflight
    preflight_exit: int = preflightmod.EXIT_PROBLEMS

    @property
    def template(self) -> str:
        return f"slurm/{'ray' if isinstance(self.launch, Ray) else 'torchrun'}.sh.j2"


@dataclass(frozen=True)
class Options:
    """Scheduler choices from the command line; None means the descriptor's or workload's default."""
    job_name: Optional[str] = None
    time: Optional[str] = None
    partition: Optional[str] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    container_image: Optional[str] = None
    monitor: bool = False
    ray_dashboard: bool = False      # the head's web dashboard costs seconds of bring-up; opt in
    preflight: bool = True           # check every node before the launch (ncclgen/jobside/preflight.py)
    comments: Literal["short", "full"] = "short"
    pass_env: tuple[str, ...] = ()               # variables the job takes from its environment (--pass-env)
    flags: tuple[str, ...] = field(default=())   # these options as typed, for the Regenerate: line
    output: Optional[str] = None                 # the -o path, named in the header's `Run with:`


def build(plan: Plan, opts: Options) -> SlurmScript:
    """The whole script as data; raises UserError for values that cannot be written safely."""
    launch = plan.launch
    slurm = plan.cluster.slurm
    image = opts.container_image or slurm.container_image
    srun = ["--export=ALL"]
    if image:
        srun.append(f"--container-image={image}")
        if slurm.container_mounts:  # descriptor.check() refused ',' inside a mount
            srun.append(f"--container-mounts={','.join(slurm.container_mounts)}")

    plumbing: list[Export] = []
    programs: list[Program] = []
    setup: tuple[str, ...] = ()
    if plan.workload.setup:
        # In each step (same node, same container as the program it precedes), so a pyxis container,
        # a module environment or a venv set up here is the one the program runs in.
        programs.append(Program("the workload's setup lines, run by every step before its program",
                                "NCCLGEN_SETUP", launchmod.setup_program(plan.workload.setup)))
        setup = ("bash", "-c", Raw('"$NCCLGEN_SETUP"'), launchmod.SETUP_ARGV0)
    checks = None
    if opts.preflight:
        checks = preflightmod.encode(preflightmod.spec(plan))
        programs.append(Program("preflight: what the plan relies on, checked on every node before the launch",
                                "NCCLGEN_PREFLIGHT", jobside.source("preflight", compact=True)))
    spec: Union[Torchrun, Ray]
    if launch.launcher == "torchrun":
        wrapper: tuple[str, ...] = ()
        if launch.bind:
            programs.append(Program("binding wrapper: each local rank under numactl on its GPU's NUMA node",
                                    "NCCLGEN_BIND", launchmod.bind_wrapper(plan.binding, launch.bind_memory)))
            wrapper = ("bash", "-c", Raw('"$NCCLGEN_BIND"'), launchmod.BIND_ARGV0)
        spec = Torchrun(options=tuple(launch.torchrun_options()), rdzv_port=launch.rdzv_port, wrapper=wrapper)
    else:
        prefix: tuple[str, ...] = ()
        if launch.bind:
            hook_env = [Export(n, v, "read by the Ray worker hook") for n, v in launchmod.ray_hook_env(plan.binding)]
            plumbing += [
                Export("NCCLGEN_HOOK_DIR", Raw('"${TMPDIR:-/tmp}/ncclgen-$SLURM_JOB_ID"'),
                       "node-local folder each `ray start` step writes the hook module into"),
                Export("PYTHONPATH", Raw('"$NCCLGEN_HOOK_DIR${PYTHONPATH:+:$PYTHONPATH}"'),
                       "makes the hook module importable by every Ray worker"),
                *hook_env,
            ]
            programs.append(Program("Ray worker hook (tier 3): binds each GPU worker to its GPU's CPUs",
                                    "NCCLGEN_RAY_HOOK", jobside.source("raybind", compact=True)))
            prefix = ("bash", "-c", _HOOK_WRITER, "ncclgen-raybind", Raw('"$NCCLGEN_RAY_HOOK"'))
        programs.append(Program("Ray readiness check (wait) and node watchdog (watch)", "NCCLGEN_RAY_WAIT",
                                jobside.source("raywait", compact=True)))
        addr = Raw('"$NCCLGEN_RAY_ADDR"')
        head = [*launch.ray_head_argv(), Raw('--node-ip-address="$HEAD_ADDR"'),
                f"--include-dashboard={str(opts.ray_dashboard).lower()}", "--block"]
        worker = launch.ray_worker_argv(Raw('"$HEAD_ADDR"'))
        spec = Ray(port=launch.ray_port, head=tuple(head), worker=tuple(worker[:3]), worker_flags=tuple(worker[3:]),
                   start_prefix=prefix, wait=tuple(_with_addr(launch.ray_wait_args("ADDR"), addr)),
                   watch=tuple(_with_addr(launch.ray_watch_args("ADDR"), addr)),
                   ready_timeout_s=launch.ray_ready_timeout_s, watch_interval_s=launch.ray_watch_interval_s,
                   agent_port=launchmod.RAY_AGENT_PORT)

    helpers: tuple[Step, ...] = ()
    if opts.monitor:
        helpers = (Step("GPU monitor on every node until the job ends (ncclgen monitor handles SIGTERM)",
                        ("bash", "-c", 'exec ncclgen monitor -o '
                                       '"ncclgen-monitor-${SLURM_JOB_ID}-${SLURMD_NODENAME}.jsonl"')),)

    if opts.comments not in COMMENTS:
        raise UserError(f"--comments {opts.comments!r}: expected short or full")
    full = opts.comments == "full"
    return SlurmScript(
        sbatch=sbatch_options(plan, opts),
        header=tuple(_header(plan, opts)),
        comments=opts.comments,
        env=tuple(Export(e.name, _export_value(e, plan),
                         f"{e.label()}: {shell.one_line(e.reason)} [source: {shell.one_line(e.source)}]"
                         if full else shell.escape_controls(e.short_label))
                  for e in plan.env),
        plumbing=tuple(plumbing),
        pass_env=_pass_env(plan, opts.pass_env, plumbing),
        programs=tuple(programs),
        nodes=launch.nodes,
        gpus_per_node=launch.gpus_per_node,
        srun=tuple(srun),
        setup=setup,
        helpers=helpers,
        command=launch.command,
        launch=spec,
        version=__version__,
        preflight=checks,
    )


def _pass_env(plan: Plan, names: tuple[str, ...], plumbing: list[Export]) -> tuple[tuple[str, str], ...]:
    """--pass-env NAME: the job reads NAME from the environment sbatch hands it (the submission
    environment, unless the site's --export says otherwise) and stops at start-up with one line when it
    is unset or empty. Only the name is ever written; the value stays in the environment (a secret,
    e.g. WANDB_API_KEY, never lands in the script or its Regenerate: line)."""
    planned = {e.name for e in plan.env} | {e.name for e in plumbing}
    out: list[tuple[str, str]] = []
    for name in names:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise UserError(f"--pass-env {name!r}: expected an environment variable name (letters, digits "
                            "and '_', not starting with a digit)")
        if name in planned:
            raise UserError(f"--pass-env {name}: the script sets {name} itself (see ncclgen explain); the "
                            "value from the environment would be replaced")
        if name in (n for n, _ in out):
            continue
        message = (f"ncclgen: ERROR: --pass-env {name}: {name} is empty or not set in the job environment "
                   "(export it before sbatch, which passes the submission environment unless --export says "
                   "otherwise)")
        out.append((name, f"if [[ -z ${{{name}:-}} ]]; then echo {shell.quote(message)} >&2; exit 2; fi"))
    return tuple(out)


def _with_addr(argv: list[str], addr: Raw) -> list[str]:
    return [addr if a == "ADDR" else a for a in argv]


def sbatch_options(plan: Plan, opts: Options) -> tuple[tuple[str, Optional[str]], ...]:
    """#SBATCH (option, value) pairs sorted by option, as submitit does, so output is deterministic."""
    slurm = plan.cluster.slurm
    launch = plan.launch
    time = opts.time or plan.workload.time
    if not re.fullmatch(TIME_PATTERN, time):
        raise UserError(f"--time {time!r}: expected [D-]HH:MM:SS")
    gpus = f"{slurm.gres_type}:{launch.gpus_per_node}" if slurm.gres_type else str(launch.gpus_per_node)
    chosen: dict[str, Optional[str]] = {
        "--job-name": opts.job_name or plan.workload.name,
        "--nodes": str(launch.nodes),
        "--ntasks-per-node": "1",
        "--gpus-per-node": gpus,
        "--cpus-per-task": str(slurm.cpus_per_task or launch.cpus_per_node),
        "--time": time,
        "--output": "ncclgen-%j.out",
        "--partition": opts.partition or slurm.partition,
        "--account": opts.account or slurm.account,
        "--qos": opts.qos or slurm.qos,
        "--constraint": slurm.constraint,
        "--mem": slurm.mem,
    }
    out = {k: v for k, v in chosen.items() if v is not None}
    if slurm.exclusive:
        out["--exclusive"] = None
    for key, value in slurm.extra_sbatch.items():
        option = f"--{key}"
        if option in chosen or option == "--exclusive":
            raise UserError(f"cluster {plan.cluster.name}: {option} is set by ncclgen (flag or descriptor "
                            "field), not through extra_sbatch", path=f"slurm.extra_sbatch.{key}")
        out[option] = value or None  # an empty value means a flag: `requeue: ""` -> --requeue
    for option, value in out.items():
        if value is not None and shell.CONTROL.search(value):
            raise UserError(f"{option} {value!r}: control characters (newline, tab, ...) are not allowed in "
                            "an #SBATCH value: a newline would end the #SBATCH line")
    return tuple(sorted(out.items()))


def render(script: SlurmScript) -> str:
    return _environment().get_template(script.template).render(s=script)


def render_plan(plan: Plan, opts: Options) -> str:
    return render(build(plan, opts))


# --- helpers -------------------------------------------------------------------------------------

# Written on each node by the `ray start` step from its first argument (the module text): tmp file +
# rename, because fake nodes (and several steps) may share one host and write the same path at once.
_MOD = launchmod.HOOK_MODULE
_HOOK_WRITER = ('mkdir -p "$NCCLGEN_HOOK_DIR" && '
                f'printf "%s\\n" "$1" > "$NCCLGEN_HOOK_DIR/.{_MOD}.$$" && '
                f'mv -f "$NCCLGEN_HOOK_DIR/.{_MOD}.$$" "$NCCLGEN_HOOK_DIR/{_MOD}.py" && '
                'shift && exec "$@"')


def _header(plan: Plan, opts: Options) -> list[str]:
    launch = plan.launch
    lines = [f"Generated by ncclgen {__version__}: cluster {plan.cluster.name}, tier {plan.tier}, workload "
             f"{plan.workload.name}, {launch.nodes} node(s) x {launch.gpus_per_node} GPUs.",
             "Regenerate: " + shell.comment_line(plan.command_line("slurm", opts.flags)),
             "Run with: sbatch " + (shell.comment_quote(opts.output) if opts.output else "<this file>"),
             "Every value's reason and source: " + shell.comment_line(plan.command_line("explain"))]
    return [shell.escape_controls(line) for line in lines]


def heredoc(program: Program) -> str:
    """The `heredoc` filter: the program text, newline-terminated; refuses text that would end the
    quoted heredoc early (cannot happen with ncclgen's own programs, checked anyway)."""
    text = program.text if program.text.endswith("\n") else program.text + "\n"
    if program.delimiter in text.splitlines():
        raise ValueError(f"{program.name}: program text contains its heredoc delimiter")
    return text


def _bytecode_cache(jinja2):
    """Compiled templates under $XDG_CACHE_HOME/ncclgen (keyed by template source): compiling them is
    a third of a render's time.

    Loading a cached template runs its code, so whoever can write the folder could run code in every
    render. The folder is used only when it is a real directory (not a symlink) owned by this user with
    no access for group or others, and every folder above it is not writable by others unless sticky;
    otherwise, or where it cannot be made (read-only home), there is no cache (issue 15).
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(os.path.abspath(base), "ncclgen", "jinja2")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if not _owner_only(folder):
            return None
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(folder)


def _owner_only(folder: str) -> bool:
    """``folder`` is ours alone, and nobody else can swap it or a folder above it for their own."""
    import stat

    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return False
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(folder, 0o700)          # ours: tighten it (an older ncclgen made it with the umask)
        if stat.S_IMODE(os.lstat(folder).st_mode) & 0o077:
            return False
    parent = os.path.dirname(folder)
    while True:
        pst = os.stat(parent)
        if pst.st_mode & stat.S_IWOTH and not pst.st_mode & stat.S_ISVTX:
            return False
        if pst.st_uid not in (0, os.getuid()) and pst.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
        up = os.path.dirname(parent)
        if up == parent:
            return True
        parent = up


@functools.lru_cache(maxsize=1)
def _environment():
    """One jinja2 environment per process: it caches the compiled templates."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(datapaths.bundled("templates")),
        bytecode_cache=_bytecode_cache(jinja2),
        autoescape=False, undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
        trim_blocks=True, lstrip_blocks=True,
        # bash's ${#ARRAY[@]} would open a jinja comment; the templates have no jinja comments.
        comment_start_string="<%#", comment_end_string="#%>")
    env.filters.update(q=shell.quote, qa=shell.quote_always, args=shell.args, args_lines=shell.args_lines,
                       sbatch_value=shell.sbatch_value, heredoc=heredoc)
    return env
