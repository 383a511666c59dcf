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

import textwrap

from .. import __version__, jobside
from ..errors import UserError
from ..load import envnames
from ..plan import Plan, flightrec
from ..plan import launch as launchmod
from ..plan import preflight as preflightmod
from ..plan import transport as transportmod
from ..plan.build import prepends
from ..record import dataclass
from . import containers, options, pluginnote, sbatchopts, shell, slurmtransport, templates
from .options import SlurmOptions as Options
from .shell import Raw

COMMENTS = ("short", "full")


@dataclass(frozen=True)
class Export:
    name: str
    value: str  # quoted unless Raw
    comment: str  # short: `# tier 1, rule-id` on the same line; full: the line above


def _export_value(e, plan: Plan) -> str:
    """Quoted, except a plugin's loader-path folder (before the job's own: build.prepends) and ${SLURM_JOB_ID}."""
    if prepends(e, plan.target):
        return Raw(shell.quote(e.value) + f'"${{{e.name}:+:${e.name}}}"')
    return Raw(word) if (word := flightrec.shell_word(e.value)) else e.value


@dataclass(frozen=True)
class NodeFile:
    """A file each node's private folder gets (ncclgen/jobside/node.sh writes it there once), kept in
    a variable read from a QUOTED heredoc at the end of the script (`read`, not `$(cat <<...)`, where
    bash 5.2 ends the heredoc and the substitution at a line `DELIMITER)`): no expansion inside, so
    its text reaches the node byte for byte. ``name`` None: node.sh itself, which every step evals from the variable."""

    source: str  # the one line above the text: where it comes from (ncclgen/jobside/preflight.py)
    name: str | None  # its path in the folder: preflight.py, bin/ncclgen-bind, pythonpath/ncclgen_raybind.py
    var: str
    text: str

    @property
    def delimiter(self) -> str:
        """A heredoc delimiter no line of the text starts with (bash 5.2 also ends a heredoc at a line
        `DELIMITER)` inside $(...); the script reads programs with `read`, and this is the second guard)."""
        lines = self.text.splitlines()
        n = 0
        while any(line.startswith(self._delimiter(n)) for line in lines):
            n += 1
        return self._delimiter(n)

    def _delimiter(self, n: int) -> str:
        return f"{self.var}_EOF" + (f"_{n}" if n else "")


@dataclass(frozen=True)
class Step:
    """A per-node helper step started before the launch (the GPU monitor), outside any container."""

    comment: tuple[str, ...]  # lines
    argv: tuple[str, ...]


@dataclass(frozen=True)
class Torchrun:
    options: tuple[str, ...]  # launch.torchrun_options()
    wrapper: tuple[str, ...]  # tier 3: ncclgen-bind (bin/ in the node's folder, on the step's PATH); else empty


@dataclass(frozen=True)
class Ray:
    head: tuple[str, ...]  # `ray start --head ...` (launch.ray_head_argv) + Slurm's own flags
    ready_timeout_s: int
    watch_interval_s: int


@dataclass(frozen=True)
class SlurmScript:
    """Everything the template prints, already decided and in output order."""

    sbatch: tuple[tuple[str, str | None], ...]  # sorted; None = flag without value
    header: tuple[str, ...]  # comment lines, control characters escaped
    comments: str  # short | full
    env: tuple[Export, ...]  # the plan, in plan order
    plumbing: tuple[Export, ...]  # launcher helper variables, not NCCL/PyTorch
    pass_env: tuple[tuple[str, str], ...]  # (name, start-up check) for --pass-env
    files: tuple[NodeFile, ...]  # node.sh first, then what it writes into each node's folder
    nodes: int
    gpus_per_node: int
    srun: tuple[str, ...]  # options every container step carries: --export=ALL, pyxis
    container: tuple[str, ...]  # Apptainer: `apptainer exec ... IMAGE` before each container step's program
    helpers: tuple[Step, ...]
    command: tuple[str, ...]
    launch: Torchrun | Ray
    ports: launchmod.Ports
    resize: tuple[int, int | None, str]  # node counts the plan holds for, and why
    version: str
    preflight: bool = True
    transport: bool = False  # each node's launch runs under bin/ncclgen_transport (slurmtransport.py)
    preflight_exit: int = preflightmod.EXIT_PROBLEMS
    requeue: sbatchopts.Requeue | None = None
    monitor: bool = False  # NCCLGEN_MONITOR_OUT is set beside the job's log
    notes: tuple[str, ...] = ()  # one-line notes for stderr (an image rewritten ...)
    keep: tuple[str, ...] = ()  # lines of names the environment scrub keeps (planned or --pass-env)
    fr: tuple[str, str] = ("", "")  # the flight recorder's folder (a shell word) and on which node(s)

    @property
    def scrub_patterns(self) -> str:
        """The bash case patterns of the names the script removes unless planned."""
        return " | ".join(f"{p}*" for p in launchmod.SCRUBBED_PREFIXES)

    @property
    def launcher(self) -> str:
        return "ray" if isinstance(self.launch, Ray) else "torchrun"

    @property
    def front(self) -> tuple[str, ...]:
        """What each node runs before its launch (node.sh): the preflight, then the transport check."""
        pre = ("preflight.py", "@preflight.json", "--") if self.preflight else ()
        return pre + ("ncclgen_transport",) * self.transport

    @property
    def resize_condition(self) -> str:
        """The bash test of a node count the plan does not hold for, with a trailing ' || '; or ''."""
        lo, hi, _ = self.resize
        tests = ([f"${{#NCCLGEN_NODES[@]}} < {lo}"] if lo > 1 else []) + (
            [f"${{#NCCLGEN_NODES[@]}} > {hi}"] if hi is not None else []
        )
        return "".join(f"{t} || " for t in tests)

    @property
    def resize_text(self) -> str:
        lo, hi, _ = self.resize
        if hi is None:
            return f"{lo} or more node(s)" if lo > 1 else "any number of nodes"
        return f"{lo} node(s)" if lo == hi else f"{lo} to {hi} nodes"

    @property
    def resize_comment(self) -> str:
        if not self.resize_condition:
            return (
                "The launch takes the node count from the allocation: a job resized at submission (sbatch -N) "
                "runs with the nodes it got."
            )
        return f"The plan holds for {self.resize_text}: a job resized within them at submission (sbatch -N) runs."

    @property
    def resize_why_parts(self) -> list[str]:
        """The refusal's reason, in pieces of at most 100 characters (echo joins them with spaces)."""
        why = self.resize[2]
        text = (
            f"({why}; regenerate it with ncclgen slurm --nodes N)"
            if why
            else "(regenerate it with ncclgen slurm --nodes N)"
        )
        return textwrap.wrap(text, 100, break_long_words=False, break_on_hyphens=False)

    @property
    def written(self) -> list[str]:
        """NCCLGEN_FILES: NAME=VARIABLE for every file node.sh writes, in lines."""
        return textwrap.wrap(" ".join(f"{f.name}={f.var}" for f in self.files if f.name), 100, break_long_words=False)

    @property
    def file_vars(self) -> list[str]:
        return [f.var for f in self.files]

    @property
    def template(self) -> str:
        return f"slurm/{'ray' if isinstance(self.launch, Ray) else 'torchrun'}.sh.j2"


JOBSIDE = "ncclgen/jobside/"
PLUMBING = [
    # verl's own Slurm example sets it (volcengine/verl@c7bdc2358bb7 examples/slurm/dapo_multinode_slurm.slurm)
    Export("PYTHONUNBUFFERED", "1", "the driver's and ranks' output reaches the job's log as it is written"),
]


def _node_files(plan: Plan, opts: Options) -> list[NodeFile]:
    """node.sh and the files it writes into each node's folder: the per-node programs of this job.

    One more per-node program is one more entry here and either one more overlapping step (as the
    monitor) or one more word in front of the launch (SlurmScript.front, as the preflight and the
    transport check: its non-zero exit ends the launch step through --kill-on-bad-exit=1)."""
    launch = plan.launch
    files = [
        NodeFile(
            JOBSIDE + "node.sh: every step's start on every node",
            None,
            "NCCLGEN_NODE_SH",
            jobside.source("node.sh", compact=True),
        )
    ]
    if plan.workload.setup:
        files.append(
            NodeFile(
                "the workload's setup: lines, run once per node",
                "setup.sh",
                "NCCLGEN_SETUP",
                launchmod.setup_lines(plan.workload.setup),
            )
        )
    if opts.preflight:
        files += [
            NodeFile(
                JOBSIDE + "preflight.py", "preflight.py", "NCCLGEN_PREFLIGHT", jobside.source("preflight", compact=True)
            ),
            NodeFile(
                "ncclgen/plan/preflight.py: the checks, from the plan",
                "preflight.json",
                "NCCLGEN_PREFLIGHT_SPEC",
                preflightmod.encode(preflightmod.spec(plan)),
            ),
        ]
    if launch.launcher == "torchrun" and launch.bind:
        files.append(
            NodeFile(
                "ncclgen/plan/launch.py (bind_wrapper): each local rank under numactl on its GPU's NUMA node",
                f"bin/{launchmod.BIND_ARGV0}",
                "NCCLGEN_BIND",
                "#!/usr/bin/env bash\n" + launchmod.bind_wrapper(plan.binding, launch.bind_memory),
            )
        )
    if launch.launcher == "ray":
        files += [
            NodeFile(JOBSIDE + "raywait.py", "raywait.py", "NCCLGEN_RAY_WAIT", jobside.source("raywait", compact=True)),
            NodeFile(
                "ncclgen/plan/launch.py (ray_worker_program)",
                "ray-worker.sh",
                "NCCLGEN_RAY_WORKER",
                launchmod.ray_worker_program(launch),
            ),
            NodeFile(
                "ncclgen/plan/launch.py (ray_driver_program)",
                "ray-driver.sh",
                "NCCLGEN_RAY_DRIVER",
                launchmod.ray_driver_program(launch),
            ),
        ]
        if launch.bind:
            files.append(
                NodeFile(
                    JOBSIDE + "raybind.py (the Ray worker hook, the only module on PYTHONPATH from the folder)",
                    f"pythonpath/{launchmod.HOOK_MODULE}.py",
                    "NCCLGEN_RAY_HOOK",
                    jobside.source("raybind", compact=True),
                )
            )
    if opts.monitor:
        files.append(
            NodeFile(JOBSIDE + "monitor.py", "monitor.py", "NCCLGEN_MONITOR", jobside.source("monitor", compact=True))
        )
    if transportmod.enabled(plan):
        files += [NodeFile(*f) for f in slurmtransport.node_files(plan, JOBSIDE)]
    return files


def build(plan: Plan, opts: Options) -> SlurmScript:
    """The whole script as data; raises UserError for values that cannot be written safely."""
    launch = plan.launch
    srun, notes = containers.container_options(plan, opts)
    notes = [*notes, *filter(None, [pluginnote.note(plan, opts)])]
    plumbing = [*(Export(*e) for e in containers.apptainer_env(plan, opts)), *PLUMBING]
    spec: Torchrun | Ray
    if launch.launcher == "torchrun":
        wrapper = (launchmod.BIND_ARGV0,) if launch.bind else ()
        spec = Torchrun(options=tuple(launch.torchrun_options()), wrapper=wrapper)
    else:
        if launch.bind:
            plumbing += [Export(n, v, "read by the Ray worker hook") for n, v in launchmod.ray_hook_env(plan.binding)]
        head = [
            *launch.ray_head_argv()[:3],
            Raw('--port="$NCCLGEN_RAY_PORT"'),
            *launch.ray_start_flags(),
            Raw('--node-ip-address="$HEAD_ADDR"'),
            Raw('--ray-client-server-port="$NCCLGEN_RAY_CLIENT_PORT"'),
            Raw('--dashboard-agent-listen-port="$NCCLGEN_AGENT_PORT"'),
            f"--include-dashboard={str(opts.ray_dashboard).lower()}",
            "--block",
        ]
        spec = Ray(
            head=tuple(head), ready_timeout_s=launch.ray_ready_timeout_s, watch_interval_s=launch.ray_watch_interval_s
        )
    helpers: tuple[Step, ...] = ()
    if opts.monitor:
        helpers = (
            Step(
                (
                    "GPU monitor on every node until the job ends, on the host (outside any container: it",
                    "needs python3 and the driver's libnvidia-ml, nothing from the image), writing",
                    "ncclgen-monitor-JOB-NODE.jsonl beside the job's log: an overlapping step, disowned so",
                    "`wait` never returns for it.",
                ),
                ("monitor.py", Raw('"$NCCLGEN_MONITOR_OUT"'), str(MONITOR_INTERVAL_S)),
            ),
        )
    requeue = sbatchopts.requeue_settings(plan, opts)
    command = _runtime_counts(launch.command, launch)
    if requeue is not None and plan.workload.framework == "verl":
        command = sbatchopts.verl_resume_command(command)
    if opts.comments not in COMMENTS:
        raise UserError(f"--comments {opts.comments!r}: expected short or full")
    pass_env = _pass_env(plan, opts.pass_env, plumbing)
    return SlurmScript(
        sbatch=sbatchopts.sbatch_options(plan, opts),
        header=tuple(_header(plan, opts)),
        comments=opts.comments,
        env=tuple(_exports(plan, opts.comments == "full")),
        plumbing=tuple(plumbing),
        pass_env=pass_env,
        files=tuple(_node_files(plan, opts)),
        nodes=launch.nodes,
        gpus_per_node=launch.gpus_per_node,
        srun=tuple(srun[: containers.wrapper_start(srun)]),
        container=tuple(srun[containers.wrapper_start(srun) :]),
        helpers=helpers,
        command=command,
        launch=spec,
        ports=launchmod.slurm_ports(plan.cluster.slurm.exclusive),
        resize=(launch.resize_min, launch.resize_max, "; ".join(launch.resize_why)),
        version=__version__,
        preflight=opts.preflight,
        transport=transportmod.enabled(plan),
        requeue=requeue,
        monitor=opts.monitor,
        notes=tuple(notes),
        keep=_keep_lines([e.name for e in plan.env] + [n for n, _ in pass_env]),
        fr=flightrec.script_folder(plan),
    )


def _exports(plan: Plan, full: bool) -> list[Export]:
    return [
        Export(
            e.name,
            _export_value(e, plan),
            _wrapped(f"{e.label()}: {shell.one_line(e.reason)} [source: {shell.one_line(e.source)}]")
            if full
            else shell.escape_controls(e.short_label),
        )
        for e in plan.env
    ]


def _runtime_counts(command: tuple[str, ...], launch: launchmod.Launch) -> tuple[str, ...]:
    """verl's derived trainer.nnodes from the allocation, so a job resized at submission runs with the
    nodes it got (launch.resize_range says which counts the plan holds for)."""
    derived = f"trainer.nnodes={launch.nodes}"
    return tuple(Raw('trainer.nnodes="$SLURM_JOB_NUM_NODES"') if a == derived else a for a in command)


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


MONITOR_INTERVAL_S = 5


def render(script: SlurmScript) -> str:
    return templates.environment().get_template(script.template).render(s=script)


def render_plan(plan: Plan, opts: Options) -> str:
    return render(build(plan, opts))


def render_plan_with_notes(plan: Plan, opts: Options) -> tuple[str, tuple[str, ...]]:
    """The script and the notes the CLI prints on stderr (e.g. an image reference rewritten)."""
    script = build(plan, opts)
    return render(script), script.notes


# --- helpers -------------------------------------------------------------------------------------


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
        lines = [*templates.wrap_comment(generated).split("\n# "), first, *rest, run]
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


def _wrapped(text: str, width: int = 98) -> str:
    """A --comments full comment as lines under 100 characters with their '# ' (the template writes the
    first '# '); a word longer than that (a path, a URL) stays whole on its own line."""
    import textwrap

    return "\n# ".join(textwrap.wrap(text, width - 2, break_long_words=False, break_on_hyphens=False))
