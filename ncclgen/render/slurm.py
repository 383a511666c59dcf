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
import re
from dataclasses import dataclass

from .. import __version__, datapaths, jobside
from ..errors import UserError
from ..load import envnames, sbatch
from ..plan import Plan
from ..plan import launch as launchmod
from ..plan import preflight as preflightmod
from ..plan.build import prepends
from . import apptainer, options, pluginnote, pyxis, shell
from .options import SlurmOptions as Options
from .shell import Raw

TIME_PATTERN = r"(\d+-)?\d{1,3}:\d{2}:\d{2}"  # same form as a workload's `time`
COMMENTS = ("short", "full")


@dataclass(frozen=True)
class Export:
    name: str
    value: str  # quoted unless Raw
    comment: str  # short: `# tier 1, rule-id` on the same line; full: the line above


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
    srun: tuple[str, ...] = ("--export=ALL",)  # its own srun options: the monitor runs outside the container


@dataclass(frozen=True)
class Torchrun:
    options: tuple[str, ...]  # launch.torchrun_options()
    rdzv_port: int
    wrapper: tuple[str, ...]  # tier 3: bash -c "$NCCLGEN_BIND" ncclgen-bind; else empty


@dataclass(frozen=True)
class Ray:
    port: int
    head: tuple[str, ...]  # `ray start --head ...` (launch.ray_head_argv) + Slurm's own flags
    worker: tuple[str, ...]  # `ray start --address=...` up to, not including, the agent port
    worker_flags: tuple[str, ...]  # after the agent port
    start_prefix: tuple[str, ...]  # tier 3: the bash -c that writes the hook module, then execs ray
    wait: tuple[str, ...]  # raywait.py wait arguments
    watch: tuple[str, ...]  # raywait.py watch arguments
    ready_timeout_s: int
    watch_interval_s: int
    agent_port: int


@dataclass(frozen=True)
class Requeue:
    """--requeue: Slurm signals the batch shell `seconds` before the time limit (#SBATCH --signal=B:...)."""

    signal: str  # USR1 | USR2, as bash's `trap` names it
    seconds: int
    grace_s: int  # how long the steps get to save before the job is requeued


@dataclass(frozen=True)
class SlurmScript:
    """Everything the template prints, already decided and in output order."""

    sbatch: tuple[tuple[str, str | None], ...]  # sorted; None = flag without value
    header: tuple[str, ...]  # comment lines, control characters escaped
    comments: str  # short | full
    env: tuple[Export, ...]  # the plan, in plan order
    plumbing: tuple[Export, ...]  # launcher helper variables, not NCCL/PyTorch
    pass_env: tuple[tuple[str, str], ...]  # (name, start-up check) for --pass-env
    programs: tuple[Program, ...]
    nodes: int
    gpus_per_node: int
    srun: tuple[str, ...]  # options every srun carries: --export=ALL, pyxis
    setup: tuple[str, ...]  # bash -c "$NCCLGEN_SETUP" ncclgen-setup, or empty
    helpers: tuple[Step, ...]
    command: tuple[str, ...]
    launch: Torchrun | Ray
    version: str
    preflight: str | None = None  # the preflight's spec (JSON); None: --no-preflight
    preflight_exit: int = preflightmod.EXIT_PROBLEMS
    requeue: Requeue | None = None
    monitor: bool = False  # NCCLGEN_MONITOR_OUT is set beside the job's log
    notes: tuple[str, ...] = ()  # one-line notes for stderr (an image rewritten ...)
    keep: tuple[str, ...] = ()  # lines of names the environment scrub keeps (planned or --pass-env)

    @property
    def scrub_patterns(self) -> str:
        """The bash case patterns of the names the script removes unless planned."""
        return " | ".join(f"{p}*" for p in launchmod.SCRUBBED_PREFIXES)

    @property
    def template(self) -> str:
        return f"slurm/{'ray' if isinstance(self.launch, Ray) else 'torchrun'}.sh.j2"


def build(plan: Plan, opts: Options) -> SlurmScript:
    """The whole script as data; raises UserError for values that cannot be written safely."""
    launch = plan.launch
    srun, notes = container_options(plan, opts)
    notes = [*notes, *filter(None, [pluginnote.note(plan, opts)])]

    plumbing: list[Export] = apptainer_env(plan, opts)
    programs: list[Program] = []
    setup: tuple[str, ...] = ()
    if plan.workload.setup:
        # In each step (same node, same container as the program it precedes), so a pyxis container,
        # a module environment or a venv set up here is the one the program runs in.
        programs.append(
            Program(
                "the workload's setup lines, run by every step before its program",
                "NCCLGEN_SETUP",
                launchmod.setup_program(plan.workload.setup),
            )
        )
        setup = ("bash", "-c", Raw('"$NCCLGEN_SETUP"'), launchmod.SETUP_ARGV0)
    checks = None
    if opts.preflight:
        checks = preflightmod.encode(preflightmod.spec(plan))
        programs.append(
            Program(
                "preflight: what the plan relies on, checked on every node before the launch",
                "NCCLGEN_PREFLIGHT",
                jobside.source("preflight", compact=True),
            )
        )
    spec: Torchrun | Ray
    if launch.launcher == "torchrun":
        wrapper: tuple[str, ...] = ()
        if launch.bind:
            programs.append(
                Program(
                    "binding wrapper: each local rank under numactl on its GPU's NUMA node",
                    "NCCLGEN_BIND",
                    launchmod.bind_wrapper(plan.binding, launch.bind_memory),
                )
            )
            wrapper = ("bash", "-c", Raw('"$NCCLGEN_BIND"'), launchmod.BIND_ARGV0)
        spec = Torchrun(options=tuple(launch.torchrun_options()), rdzv_port=launch.rdzv_port, wrapper=wrapper)
    else:
        prefix: tuple[str, ...] = ()
        if launch.bind:
            hook_env = [Export(n, v, "read by the Ray worker hook") for n, v in launchmod.ray_hook_env(plan.binding)]
            plumbing += [
                Export(
                    "NCCLGEN_HOOK_DIR",
                    Raw('"${TMPDIR:-/tmp}/ncclgen-$SLURM_JOB_ID"'),
                    "node-local folder each `ray start` step writes the hook module into",
                ),
                Export(
                    "PYTHONPATH",
                    Raw('"$NCCLGEN_HOOK_DIR${PYTHONPATH:+:$PYTHONPATH}"'),
                    "makes the hook module importable by every Ray worker",
                ),
                *hook_env,
            ]
            programs.append(
                Program(
                    "Ray worker hook (tier 3): binds each GPU worker to its GPU's CPUs",
                    "NCCLGEN_RAY_HOOK",
                    jobside.source("raybind", compact=True),
                )
            )
            prefix = ("bash", "-c", _HOOK_WRITER, "ncclgen-raybind", Raw('"$NCCLGEN_RAY_HOOK"'))
        programs.append(
            Program(
                "Ray readiness check (wait) and node watchdog (watch)",
                "NCCLGEN_RAY_WAIT",
                jobside.source("raywait", compact=True),
            )
        )
        addr = Raw('"$NCCLGEN_RAY_ADDR"')
        head = [
            *launch.ray_head_argv(),
            Raw('--node-ip-address="$HEAD_ADDR"'),
            f"--include-dashboard={str(opts.ray_dashboard).lower()}",
            "--block",
        ]
        worker = launch.ray_worker_argv(Raw('"$HEAD_ADDR"'))
        spec = Ray(
            port=launch.ray_port,
            head=tuple(head),
            worker=tuple(worker[:3]),
            worker_flags=tuple(worker[3:]),
            start_prefix=prefix,
            wait=tuple(_with_addr(launch.ray_wait_args("ADDR"), addr)),
            watch=tuple(_with_addr(launch.ray_watch_args("ADDR"), addr)),
            ready_timeout_s=launch.ray_ready_timeout_s,
            watch_interval_s=launch.ray_watch_interval_s,
            agent_port=launchmod.RAY_AGENT_PORT,
        )

    helpers: tuple[Step, ...] = ()
    if opts.monitor:
        programs.append(
            Program(
                "GPU monitor (ncclgen/jobside/monitor.py): NVML samples to JSONL until SIGTERM",
                "NCCLGEN_MONITOR",
                jobside.source("monitor"),
            )
        )
        helpers = (
            Step(
                "GPU monitor on every node until the job ends, on the host (outside any container: it "
                "needs python3 and the driver's libnvidia-ml, nothing from the image), writing "
                "ncclgen-monitor-JOB-NODE.jsonl beside the job's log",
                ("python3", "-c", Raw('"$NCCLGEN_MONITOR"'), Raw('"$NCCLGEN_MONITOR_OUT"'), str(MONITOR_INTERVAL_S)),
            ),
        )

    requeue = requeue_settings(plan, opts)
    command = launch.command
    if requeue is not None and plan.workload.framework == "verl":
        command = verl_resume_command(command)

    if opts.comments not in COMMENTS:
        raise UserError(f"--comments {opts.comments!r}: expected short or full")
    full = opts.comments == "full"
    pass_env = _pass_env(plan, opts.pass_env, plumbing)
    return SlurmScript(
        sbatch=sbatch_options(plan, opts),
        header=tuple(_header(plan, opts)),
        comments=opts.comments,
        env=tuple(
            Export(
                e.name,
                _export_value(e, plan),
                _wrapped(f"{e.label()}: {shell.one_line(e.reason)} [source: {shell.one_line(e.source)}]")
                if full
                else shell.escape_controls(e.short_label),
            )
            for e in plan.env
        ),
        plumbing=tuple(plumbing),
        pass_env=pass_env,
        programs=tuple(programs),
        nodes=launch.nodes,
        gpus_per_node=launch.gpus_per_node,
        srun=tuple(srun),
        setup=setup,
        helpers=helpers,
        command=command,
        launch=spec,
        version=__version__,
        preflight=checks,
        requeue=requeue,
        monitor=opts.monitor,
        notes=tuple(notes),
        keep=_keep_lines([e.name for e in plan.env] + [n for n, _ in pass_env]),
    )


def _keep_lines(names: list[str], width: int = 100) -> tuple[str, ...]:
    """The names the environment scrub keeps, sorted, in lines of at most ``width`` characters."""
    wanted = sorted({n for n in names if n.startswith(launchmod.SCRUBBED_PREFIXES)})
    lines: list[str] = []
    for name in wanted:
        if lines and len(lines[-1]) + 1 + len(name) <= width:
            lines[-1] += " " + name
        else:
            lines.append(name)
    return tuple(lines)


def _pass_env(plan: Plan, names: tuple[str, ...], plumbing: list[Export]) -> tuple[tuple[str, str], ...]:
    """--pass-env NAME: the job reads NAME from the environment sbatch hands it (the submission
    environment, unless the site's --export says otherwise) and stops at start-up with one line when it
    is unset or empty. Only the name is ever written; the value stays in the environment (a secret,
    e.g. WANDB_API_KEY, never lands in the script or its Regenerate: line)."""
    planned = {e.name for e in plan.env} | {e.name for e in plumbing}
    out: list[tuple[str, str]] = []
    for name in names:
        bad = envnames.name_problem(name)  # the one name policy (load/envnames.py)
        if bad:
            raise UserError(f"--pass-env: {bad}")
        why = envnames.refused(name) or envnames.policy().paths.get(name)
        if why:  # the env-name policy, as for every other source (a passed value cannot be checked)
            raise UserError(f"--pass-env {name}: a job may not be told to need {name}: {why}")
        if name in planned:
            raise UserError(
                f"--pass-env {name}: the script sets {name} itself (see ncclgen explain); the "
                "value from the environment would be replaced"
            )
        if name in (n for n, _ in out):
            continue
        message = (
            f"ncclgen: ERROR: --pass-env {name}: {name} is empty or not set in the job environment "
            "(export it before sbatch, which passes the submission environment unless --export says "
            "otherwise)"
        )
        out.append((name, f"if [[ -z ${{{name}:-}} ]]; then echo {shell.quote(message)} >&2; exit 2; fi"))
    return tuple(out)


def _with_addr(argv: list[str], addr: Raw) -> list[str]:
    return [addr if a == "ADDR" else a for a in argv]


def sbatch_options(plan: Plan, opts: Options) -> tuple[tuple[str, str | None], ...]:
    """#SBATCH (option, value) pairs sorted by option, as submitit does, so output is deterministic."""
    slurm = plan.cluster.slurm
    launch = plan.launch
    time = opts.time or plan.workload.time
    if not re.fullmatch(TIME_PATTERN, time):
        raise UserError(f"--time {time!r}: expected [D-]HH:MM:SS")
    gpus = f"{slurm.gres_type}:{launch.gpus_per_node}" if slurm.gres_type else str(launch.gpus_per_node)
    extra = _extra_sbatch(plan, opts, gpus)
    for flag, value in (("--output", opts.log_output), ("--error", opts.log_error)):
        if value is not None and value.endswith((".sh", ".sbatch")):
            raise UserError(
                f"{flag} {value!r}: {flag} names the job's log (#SBATCH {flag}); write the script itself with -o FILE"
            )
    # An array's tasks share one job id (%A) and differ by index (%a): %j would give each its own id.
    default_log = "ncclgen-%A_%a.out" if "--array" in extra else "ncclgen-%j.out"
    chosen: dict[str, str | None] = {
        "--job-name": opts.job_name or plan.workload.name,
        "--nodes": str(launch.nodes),
        "--ntasks-per-node": "1",
        "--gpus-per-node": gpus,
        "--cpus-per-task": str(slurm.cpus_per_task or launch.cpus_per_node),
        "--time": time,
        "--output": opts.log_output or default_log,
        "--error": opts.log_error,
        "--partition": opts.partition or slurm.partition,
        "--account": opts.account or slurm.account,
        "--qos": opts.qos or slurm.qos,
        "--constraint": opts.constraint or slurm.constraint,
        "--reservation": opts.reservation,
        "--dependency": opts.dependency,
        "--mem": slurm.mem,
    }
    out: dict[str, str | None] = {k: v for k, v in chosen.items() if v is not None}
    if slurm.exclusive:
        out["--exclusive"] = None
    out.update(extra)
    requeue = requeue_settings(plan, opts)
    if requeue is not None:
        out["--requeue"] = None
        out.pop("--no-requeue", None)
        out["--signal"] = f"B:{requeue.signal}@{requeue.seconds}"
        # A requeued job starts again with the same job id and log file: append, keep the first run's.
        out.setdefault("--open-mode", "append")
    for option, value in out.items():
        if value is not None and shell.CONTROL.search(value):
            raise UserError(
                f"{option} {value!r}: control characters (newline, tab, ...) are not allowed in "
                "an #SBATCH value: a newline would end the #SBATCH line"
            )
    return tuple(sorted(out.items()))


def _extra_sbatch(plan: Plan, opts: Options, gpus: str) -> dict[str, str | None]:
    """The descriptor's slurm.extra_sbatch, then --sbatch KEY[=VALUE] (a later one wins), checked against
    sbatch's option list (ncclgen/load/sbatch.py)."""
    out: dict[str, str | None] = {}
    items: list[tuple[str, str | bool | int, str | None, str | None]] = [
        (key, value, f"slurm.extra_sbatch.{key}", None) for key, value in plan.cluster.slurm.extra_sbatch.items()
    ]
    items += [(key, value, None, f"--sbatch {key}") for key, value in opts.sbatch_pairs]
    for key, value, path, flag in items:
        try:
            name, checked = sbatch.check(key, value, gpu_request=gpus)
        except sbatch.SbatchOptionError as e:
            if path:
                raise UserError(f"cluster {plan.cluster.name}: {e}", path=path) from None
            raise UserError(f"{flag}: {e}") from None
        for twin in (name, f"no-{name}", name[3:] if name.startswith("no-") else None):
            if twin:
                out.pop(f"--{twin}", None)
        out[f"--{name}"] = checked
    return out


SIGNAL_PATTERN = r"B:(?:SIG)?(USR1|USR2)@(\d+)"
DEFAULT_SIGNAL = "B:USR1@300"
REQUEUE_MARGIN_S = 10  # kept for `scontrol requeue` itself before the time limit


def requeue_settings(plan: Plan, opts: Options) -> Requeue | None:
    """None unless the job is requeued: --requeue, or `requeue: true` in the descriptor / --sbatch."""
    slurm = plan.cluster.slurm
    gpus = f"{slurm.gres_type}:{plan.launch.gpus_per_node}" if slurm.gres_type else str(plan.launch.gpus_per_node)
    asked = opts.requeue or "--requeue" in _extra_sbatch(plan, opts, gpus)
    if not asked:
        if opts.signal is not None:
            raise UserError("--signal: only with --requeue (the script acts on the signal by requeueing the job)")
        return None
    spec = opts.signal or DEFAULT_SIGNAL
    m = re.fullmatch(SIGNAL_PATTERN, spec)
    if not m or not 30 <= int(m.group(2)) <= 65535:
        raise UserError(
            f"--signal {spec!r}: expected B:USR1@SECONDS or B:USR2@SECONDS with 30 <= SECONDS <= "
            "65535 (B: sends it to the batch shell, which stops the steps and requeues the job)"
        )
    seconds = int(m.group(2))
    return Requeue(signal=m.group(1), seconds=seconds, grace_s=seconds - REQUEUE_MARGIN_S)


# verl (trainer/config/ppo_trainer.yaml and sft_trainer*.yaml in the verl 0.7.0 and 0.9.1 wheels):
# trainer.save_freq (default -1: never), trainer.resume_mode (auto: the newest checkpoint in
# trainer.default_local_dir), trainer.default_local_dir (default checkpoints/PROJECT/EXPERIMENT, relative).
VERL_SAVE, VERL_RESUME, VERL_DIR = "trainer.save_freq", "trainer.resume_mode", "trainer.default_local_dir"


def verl_resume_command(command: tuple[str, ...]) -> tuple[str, ...]:
    """A verl command that resumes after a requeue; UserError naming the missing setting otherwise."""
    given = {}
    for arg in command:
        key, sep, value = arg.lstrip("+").partition("=")
        if sep:
            given[key] = value
    save = given.get(VERL_SAVE, "-1")
    if not save.isdigit() or int(save) < 1:
        raise UserError(
            f"--requeue: a requeued verl job restarts from its last checkpoint, and {VERL_SAVE}="
            f"{save} saves none; add `-- {VERL_SAVE}=N` (steps between checkpoints)"
        )
    folder = given.get(VERL_DIR, "")
    if not folder.startswith("/"):
        raise UserError(
            f"--requeue: {VERL_DIR} must be an absolute folder on storage every node shares (the "
            f"requeued job may run on other nodes, in a fresh container); add `-- {VERL_DIR}="
            "/shared/checkpoints/RUN`"
        )
    mode = given.get(VERL_RESUME)
    if mode is None:
        return (*command, f"{VERL_RESUME}=auto")
    if mode != "auto":
        raise UserError(
            f"--requeue: {VERL_RESUME}={mode} would not resume from the newest checkpoint after a "
            f"requeue; use {VERL_RESUME}=auto"
        )
    return command


MONITOR_INTERVAL_S = 5
CONTAINER_NAME = Raw('--container-name="ncclgen-$SLURM_JOB_ID"')


def container_options(plan: Plan, opts: Options) -> tuple[list, list[str]]:
    """srun options every step carries ([--export=ALL, pyxis ...]) and notes for stderr.

    One named container per job and node (pyxis --container-name): the first step on a node creates
    it from the image, every later step (Ray head, readiness check, driver, torchrun) joins it, so
    files written outside the mounts survive from step to step. pyxis removes unnamed containers after
    each step (pyxis README, --container-name).
    """
    slurm = plan.cluster.slurm
    image = opts.container_image or slurm.container_image
    srun: list = ["--export=ALL"]
    notes: list[str] = []
    runtime = opts.container_runtime or slurm.container_runtime
    if image and runtime != "pyxis":  # Apptainer wraps the program: its argv ends the step's srun options
        image, note = apptainer.image_ref(image)
        mounts = [*slurm.container_mounts, *opts.container_mounts]
        workdir = _workdir(opts.container_workdir)
        return srun + apptainer.exec_argv(runtime, image, mounts, workdir), [note] if note else []
    mounts = [pyxis.check_mount(m) for m in (*slurm.container_mounts, *opts.container_mounts)]
    if not image:
        if opts.container_workdir or opts.container_mounts or opts.container_runtime:
            flag = next(
                f
                for f, v in (
                    ("--container-workdir", opts.container_workdir),
                    ("--container-mounts", opts.container_mounts),
                    ("--container-runtime", opts.container_runtime),
                )
                if v
            )
            raise UserError(
                f"{flag}: only with a container image (--container-image or the descriptor's slurm.container_image)"
            )
        return srun, notes
    image, note = pyxis.image_ref(image)
    if note:
        notes.append(note)
    srun += [f"--container-image={image}", CONTAINER_NAME]
    if mounts:
        srun.append(f"--container-mounts={','.join(mounts)}")
    if opts.container_workdir is not None:
        srun.append(f"--container-workdir={_workdir(opts.container_workdir)}")
    return srun, notes


def _workdir(path: str | None) -> str | None:
    if path is not None and (not path.startswith("/") or shell.CONTROL.search(path)):
        raise UserError(f"--container-workdir {path!r}: expected an absolute path inside the container")
    return path


def apptainer_env(plan: Plan, opts: Options) -> list[Export]:
    """What an Apptainer step would otherwise lose: LD_LIBRARY_PATH (a net plugin's folder) reaches the
    program only as APPTAINERENV_LD_LIBRARY_PATH (ncclgen/render/apptainer.py)."""
    runtime = opts.container_runtime or plan.cluster.slurm.container_runtime
    image = opts.container_image or plan.cluster.slurm.container_image
    if runtime == "pyxis" or not image or "LD_LIBRARY_PATH" not in plan.env_dict():
        return []
    name = apptainer.env_prefix(runtime) + "LD_LIBRARY_PATH"
    return [Export(name, Raw('"$LD_LIBRARY_PATH"'), f"{runtime} passes the planned LD_LIBRARY_PATH only as {name}")]


def render(script: SlurmScript) -> str:
    return _environment().get_template(script.template).render(s=script)


def render_plan(plan: Plan, opts: Options) -> str:
    return render(build(plan, opts))


def render_plan_with_notes(plan: Plan, opts: Options) -> tuple[str, tuple[str, ...]]:
    """The script and the notes the CLI prints on stderr (e.g. an image reference rewritten)."""
    script = build(plan, opts)
    return render(script), script.notes


# --- helpers -------------------------------------------------------------------------------------

# Written on each node by the `ray start` step from its first argument (the module text): tmp file +
# rename, because fake nodes (and several steps) may share one host and write the same path at once.
_MOD = launchmod.HOOK_MODULE
_HOOK_WRITER = (
    'mkdir -p "$NCCLGEN_HOOK_DIR" && '
    f'printf "%s\\n" "$1" > "$NCCLGEN_HOOK_DIR/.{_MOD}.$$" && '
    f'mv -f "$NCCLGEN_HOOK_DIR/.{_MOD}.$$" "$NCCLGEN_HOOK_DIR/{_MOD}.py" && '
    'shift && exec "$@"'
)


def _header(plan: Plan, opts: Options) -> list[str]:
    """The comment lines after #SBATCH. With --comments full every line stays within 100 characters: the
    commands are continued with ' \\' onto '#   ' lines, which `ncclgen triage` joins when it reads the
    Regenerate command back from the script (triage/reader.py)."""
    launch = plan.launch
    generated = (
        f"Generated by ncclgen {__version__}: cluster {plan.cluster.name}, tier {plan.tier}, workload "
        f"{plan.workload.name}, {launch.nodes} node(s) x {launch.gpus_per_node} GPUs."
    )
    explain_argv = plan.command_line("explain")
    explain = shell.comment_line(explain_argv)
    regenerate_argv = plan.command_line("slurm", options.argv(opts))
    regenerate = "Regenerate: " + shell.comment_line(regenerate_argv)
    run = "Run with: sbatch " + (shell.comment_quote(opts.output) if opts.output else "<this file>")
    if opts.comments == "full":
        first, *rest = _command_lines(regenerate_argv, first="Regenerate: ")
        lines = [*wrap_comment(generated).split("\n# "), first, *rest, run]
        lines += ["Every value's reason and source:", *_command_lines(explain_argv)]
    else:
        lines = [generated, regenerate, run, f"Every value's reason and source: {explain}"]
    return [shell.escape_controls(line) for line in lines]


def _command_lines(argv: list[str], width: int = 100, first: str = "  ") -> list[str]:
    """A command for `# ` comment lines, after ``first``, continued with ' \\' onto lines indented by two
    more spaces, so no line passes ``width`` (a longer argument stays whole on its own line)."""
    lines: list[str] = []
    for word in (shell.comment_quote(a) for a in argv):
        if lines and len(lines[-1]) + 1 + len(word) <= width - 4:
            lines[-1] += " " + word
        else:
            lines.append((first if not lines else "  ") + word)
    return [line + " \\" for line in lines[:-1]] + lines[-1:]


def heredoc(program: Program) -> str:
    """The `heredoc` filter: the program text, newline-terminated; refuses text that would end the
    quoted heredoc early (cannot happen with ncclgen's own programs, checked anyway)."""
    text = program.text if program.text.endswith("\n") else program.text + "\n"
    if program.delimiter in text.splitlines():
        raise ValueError(f"{program.name}: program text contains its heredoc delimiter")
    return text


@functools.lru_cache(maxsize=1)
def _environment():
    """One jinja2 environment per process: it caches the compiled templates."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(datapaths.bundled("templates")),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        # bash's ${#ARRAY[@]} would open a jinja comment; the templates have no jinja comments.
        comment_start_string="<%#",
        comment_end_string="#%>",
    )
    env.filters.update(
        q=shell.quote,
        qa=shell.quote_always,
        args=shell.args,
        args_lines=shell.args_lines,
        sbatch_value=shell.sbatch_value,
        heredoc=heredoc,
        wrap_comment=wrap_comment,
    )
    return env


def wrap_comment(text: str, indent: int = 0, width: int = 100) -> str:
    """The `wrap_comment` filter: a comment's text in lines of at most ``width`` characters, each after
    ``indent`` spaces and '# ' (the template writes the first line's); a longer word stays whole."""
    import textwrap

    lines = textwrap.wrap(text, width - indent - 2, break_long_words=False, break_on_hyphens=False)
    return ("\n" + " " * indent + "# ").join(lines)


def _wrapped(text: str, width: int = 98) -> str:
    """A --comments full comment as lines under 100 characters with their '# ' (the template writes the
    first '# '); a word longer than that (a path, a URL) stays whole on its own line."""
    import textwrap

    return "\n# ".join(textwrap.wrap(text, width - 2, break_long_words=False, break_on_hyphens=False))
