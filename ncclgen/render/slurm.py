"""Plan -> sbatch script. First a plain data model (SlurmScript), then a logic-free jinja2 template.

Everything that decides something (which #SBATCH options, which variables, which wrapper) happens in
build(); the templates in templates/slurm/ only lay the data out and quote it. Quoting is never left
to the template author: every value goes through `q` (shlex.quote) unless it is a `Raw` marker, used
only for expansions ncclgen itself writes (`"$HEAD_ADDR:29500"`), the TorchX `_noquote` idea.

Imports stay light (no torch, ray or kubernetes): `ncclgen slurm` runs on login nodes.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Optional, Union

from .. import __version__, datapaths, jobside
from ..plan import binding
from ..errors import UserError
from ..plan import Plan

TIME_PATTERN = r"(\d+-)?\d{1,3}:\d{2}:\d{2}"  # same form as a workload's `time`
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
RAY_AGENT_PORT = 52365       # ray[default]'s dashboard agent port; workers get 52365+i (see template)
RAY_WATCH_INTERVAL_S = 2     # watchdog period: the lab's SIGTERMed raylet was caught in 2.0 s
HOOK_MODULE = "ncclgen_raybind"


class Raw(str):
    """Shell text written verbatim: an expansion ncclgen controls. Any plain str is shell-quoted."""


@dataclass(frozen=True)
class Export:
    comment: str                 # one line, shown as `# <comment>` above the export
    name: str
    value: str                   # quoted unless Raw


@dataclass(frozen=True)
class Program:
    """A program passed to `bash -c` / `python3 -c`, kept in a variable from a QUOTED heredoc (no
    expansion inside, so its text reaches the node byte for byte)."""
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
    num_cpus: int
    start_prefix: tuple[str, ...]  # tier 3: the bash -c that writes the hook module, then execs ray
    want_nodes: int
    want_gpus: int
    ready_timeout_s: int
    watch_interval_s: int
    agent_port: int
    dashboard: str                 # --include-dashboard=false|true for the head


@dataclass(frozen=True)
class SlurmScript:
    """Everything the template prints, already decided and in output order."""
    sbatch: tuple[tuple[str, Optional[str]], ...]   # sorted; None = flag without value
    header: tuple[str, ...]                         # comment lines, control characters escaped
    env: tuple[Export, ...]                         # the plan, in plan order
    plumbing: tuple[Export, ...]                    # launcher helper variables, not NCCL/PyTorch
    programs: tuple[Program, ...]
    exported_programs: tuple[str, ...]              # programs a step reads from its environment
    nodes: int
    gpus_per_node: int
    srun: tuple[str, ...]                           # options every srun carries: --export=ALL, pyxis
    helpers: tuple[Step, ...]
    command: tuple[str, ...]
    launch: Union[Torchrun, Ray]

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
    regenerate: tuple[str, ...] = field(default=())  # argv that reproduces this script


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
    exported: list[str] = []
    if launch.launcher == "torchrun":
        wrapper: tuple[str, ...] = ()
        if launch.bind:
            programs.append(Program(
                "Tier 3 binding: runs each local rank under numactl on its GPU's NUMA node "
                "(from the descriptor's NUMA map).", "NCCLGEN_BIND",
                binding.wrapper_script(plan.binding, launch.bind_memory)))
            wrapper = ("bash", "-c", Raw('"$NCCLGEN_BIND"'), "ncclgen-bind")
        spec: Union[Torchrun, Ray] = Torchrun(options=tuple(launch.torchrun_options()),
                                              rdzv_port=launch.rdzv_port, wrapper=wrapper)
    else:
        prefix: tuple[str, ...] = ()
        if launch.bind:
            plumbing += [
                Export("GPU id -> CPUs of its NUMA node, read by the Ray worker hook.",
                       "NCCLGEN_GPU_CPUS", binding.gpu_cpu_map(plan.binding)),
                Export("per-job folder each `ray start` step writes the hook module into (node-local: no "
                       "shared file system assumed).",
                       "NCCLGEN_HOOK_DIR", Raw('"${TMPDIR:-/tmp}/ncclgen-$SLURM_JOB_ID"')),
                Export("makes the hook module importable by every Ray worker.",
                       "PYTHONPATH", Raw('"$NCCLGEN_HOOK_DIR${PYTHONPATH:+:$PYTHONPATH}"')),
                Export("Ray worker setup hook (a Ray internal, checked in Ray 2.60; read by every worker "
                       "at start-up): binds each GPU task/actor to its GPU's CPUs.",
                       "__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR", f"{HOOK_MODULE}.hook"),
            ]
            programs.append(Program(
                "Tier 3 binding under Ray: the worker hook module (ncclgen/jobside/raybind.py), written to "
                "$NCCLGEN_HOOK_DIR by each `ray start` step.", "NCCLGEN_RAY_HOOK", jobside.source("raybind")))
            exported.append("NCCLGEN_RAY_HOOK")
            prefix = ("bash", "-c", _HOOK_WRITER, "ncclgen-raybind")
        programs.append(Program(
            "Ray readiness check and node watchdog (ncclgen/jobside/raywait.py): `wait` polls ray.nodes() "
            "every 0.5 s, `watch` exits 5 when a node is no longer alive.", "NCCLGEN_RAY_WAIT",
            jobside.source("raywait")))
        spec = Ray(port=launch.ray_port, num_cpus=launch.cpus_per_node, start_prefix=prefix,
                   want_nodes=launch.nodes, want_gpus=launch.nodes * launch.gpus_per_node,
                   ready_timeout_s=launch.ray_ready_timeout_s, watch_interval_s=RAY_WATCH_INTERVAL_S,
                   agent_port=RAY_AGENT_PORT, dashboard=str(opts.ray_dashboard).lower())

    helpers = ()
    if opts.monitor:
        helpers = (Step("GPU monitor, one per node, in the background until the job ends (ncclgen monitor "
                        "handles SIGTERM); the file name is expanded on each node.",
                        ("bash", "-c", 'exec ncclgen monitor -o '
                                       '"ncclgen-monitor-${SLURM_JOB_ID}-${SLURMD_NODENAME}.jsonl"')),)

    return SlurmScript(
        sbatch=sbatch_options(plan, opts),
        header=tuple(_header(plan, opts)),
        env=tuple(Export(f"{e.label()}: {_one_line(e.reason)} [source: {_one_line(e.source)}]", e.name, e.value)
                  for e in plan.env),
        plumbing=tuple(plumbing),
        programs=tuple(programs),
        exported_programs=tuple(exported),
        nodes=launch.nodes,
        gpus_per_node=launch.gpus_per_node,
        srun=tuple(srun),
        helpers=helpers,
        command=launch.command,
        launch=spec,
    )


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
        if value is not None and _CONTROL.search(value):
            raise UserError(f"{option} {value!r}: control characters (newline, tab, ...) are not allowed in "
                            "an #SBATCH value: a newline would end the #SBATCH line")
    return tuple(sorted(out.items()))


def render(script: SlurmScript) -> str:
    env = _environment()
    return env.get_template(script.template).render(s=script, version=__version__)


def render_plan(plan: Plan, opts: Options) -> str:
    return render(build(plan, opts))


# --- helpers -------------------------------------------------------------------------------------

# Written on each node by the `ray start` step: tmp file + rename, because fake nodes (and several
# steps) may share one host and write the same path at once.
_HOOK_WRITER = ('mkdir -p "$NCCLGEN_HOOK_DIR" && '
                f'printf "%s\\n" "$NCCLGEN_RAY_HOOK" > "$NCCLGEN_HOOK_DIR/.{HOOK_MODULE}.$$" && '
                f'mv -f "$NCCLGEN_HOOK_DIR/.{HOOK_MODULE}.$$" "$NCCLGEN_HOOK_DIR/{HOOK_MODULE}.py" && '
                'exec "$@"')


def _header(plan: Plan, opts: Options) -> list[str]:
    launch = plan.launch
    lines = [f"Generated by ncclgen {__version__}: cluster {plan.cluster.name}, tier {plan.tier}, workload "
             f"{plan.workload.name}, {launch.nodes} node(s) x {launch.gpus_per_node} GPUs."]
    if opts.regenerate:
        lines.append("Regenerate: " + " ".join(comment_quote(a) for a in opts.regenerate))
    output = _output_of(opts.regenerate)
    lines.append("Run with: sbatch " + (comment_quote(output) if output else "<this file>"))
    return [_escape_controls(line) for line in lines]


def _output_of(argv: tuple[str, ...]) -> str:
    for flag in ("-o", "--output"):
        if flag in argv[:-1]:
            return argv[argv.index(flag) + 1]
    return ""


def comment_quote(arg: str) -> str:
    """shlex.quote, or bash $'...' when the argument holds control characters: a raw newline inside a
    `# Regenerate:` comment would turn the rest of the argument into a command."""
    if not _CONTROL.search(arg):
        return shlex.quote(arg)
    out = []
    for ch in arg:
        if ch in "\\'":
            out.append("\\" + ch)
        elif _CONTROL.match(ch):
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, f"\\x{ord(ch):02x}"))
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def _escape_controls(text: str) -> str:
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _one_line(text: str) -> str:
    return _escape_controls(" ".join(text.split()))


def quote(value) -> str:
    """The `q` filter: shlex.quote, except Raw text ncclgen wrote itself."""
    return str(value) if isinstance(value, Raw) else shlex.quote(str(value))


def quote_always(value) -> str:
    """The `qa` filter for export values: always quoted, so `NAME==bond0` reads as the assignment it is
    (bash accepts it unquoted, but people and shellcheck read `==` as a typo)."""
    text = quote(value)
    return text if isinstance(value, Raw) or text.startswith(("'", '"')) else f"'{text}'"


def args(argv) -> str:
    """The `args` filter: ' a b c', each quoted, for appending to a command line."""
    return "".join(" " + quote(a) for a in argv)


def args_lines(argv) -> str:
    """The `args_lines` filter: one argument per continuation line, for long commands."""
    return "".join(" \\\n    " + quote(a) for a in argv)


def sbatch_value(value: Optional[str]) -> str:
    """The `sbatch_value` filter: '' for a flag, else '=' + the quoted value.

    sbatch reads #SBATCH lines with its own parser: quotes work as in the shell, but a backslash
    escapes the next character even inside single quotes, so backslashes are doubled.
    """
    if value is None:
        return ""
    return "=" + shlex.quote(value).replace("\\", "\\\\")


def heredoc(program: Program) -> str:
    """The `heredoc` filter: the program text, newline-terminated; refuses text that would end the
    quoted heredoc early (cannot happen with ncclgen's own programs, checked anyway)."""
    text = program.text if program.text.endswith("\n") else program.text + "\n"
    if program.delimiter in text.splitlines():
        raise ValueError(f"{program.name}: program text contains its heredoc delimiter")
    return text


def _bytecode_cache(jinja2):
    """Compiled templates under $XDG_CACHE_HOME/ncclgen (keyed by template source): compiling them is
    a third of a render's time. No cache where that folder cannot be made (read-only home)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "ncclgen", "jinja2")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(folder) if os.access(folder, os.W_OK) else None


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
    env.filters.update(q=quote, qa=quote_always, args=args, args_lines=args_lines, sbatch_value=sbatch_value, heredoc=heredoc)
    return env
