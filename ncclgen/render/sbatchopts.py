"""The #SBATCH lines of an ncclgen sbatch script, and what --requeue needs: sorted options (submitit's
order), checked against sbatch's own option list (ncclgen/load/sbatch.py), with no control character
that would end an #SBATCH line."""

from __future__ import annotations

import re

from ..errors import UserError
from ..load import sbatch
from ..plan import Plan
from ..record import dataclass
from . import shell
from .options import SlurmOptions as Options

TIME_PATTERN = r"(\d+-)?\d{1,3}:\d{2}:\d{2}"  # same form as a workload's `time`


@dataclass(frozen=True)
class Requeue:
    """--requeue: Slurm signals the batch shell `seconds` before the time limit (#SBATCH --signal=B:...)."""

    signal: str  # USR1 | USR2, as bash's `trap` names it
    seconds: int
    grace_s: int  # how long the steps get to save before the job is requeued


def sbatch_options(plan: Plan, opts: Options) -> tuple[tuple[str, str | None], ...]:
    """#SBATCH (option, value) pairs sorted by option, as submitit does, so output is deterministic."""
    slurm = plan.cluster.slurm
    launch = plan.launch
    time = _checked_time_and_logs(plan, opts)
    gpus = f"{slurm.gres_type}:{launch.gpus_per_node}" if slurm.gres_type else str(launch.gpus_per_node)
    extra = _extra_sbatch(plan, opts, gpus)
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
    _no_controls(out)
    return tuple(sorted(out.items()))


def _checked_time_and_logs(plan: Plan, opts: Options) -> str:
    """The job's time limit; UserError for a bad one, or a log path that names a script."""
    time = opts.time or plan.workload.time
    if not re.fullmatch(TIME_PATTERN, time):
        raise UserError(f"--time {time!r}: expected [D-]HH:MM:SS")
    for flag, value in (("--output", opts.log_output), ("--error", opts.log_error)):
        if value is not None and value.endswith((".sh", ".sbatch")):
            raise UserError(
                f"{flag} {value!r}: {flag} names the job's log (#SBATCH {flag}); write the script itself with -o FILE"
            )
    return time


def _no_controls(out: dict[str, str | None]) -> None:
    for option, value in out.items():
        if value is not None and shell.CONTROL.search(value):
            raise UserError(
                f"{option} {value!r}: control characters (newline, tab, ...) are not allowed in "
                "an #SBATCH value: a newline would end the #SBATCH line"
            )


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
