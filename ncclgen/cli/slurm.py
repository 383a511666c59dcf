"""`ncclgen slurm`: render an sbatch script from the plan."""

from __future__ import annotations

import click

from ..output import emit
from .common import make_plan, plan_options


@click.command()
@plan_options
@click.option("--time", metavar="[D-]HH:MM:SS", help="#SBATCH --time (default: the workload's).")
@click.option("--partition", "-p", help="#SBATCH --partition (default: the descriptor's).")
@click.option("--account", "-A", help="#SBATCH --account (default: the descriptor's).")
@click.option("--qos", help="#SBATCH --qos (default: the descriptor's).")
@click.option("--job-name", "-J", help="#SBATCH --job-name (default: the workload's name).")
@click.option("--constraint", "-C", metavar="LIST", help="#SBATCH --constraint (default: the descriptor's).")
@click.option("--reservation", metavar="NAME", help="#SBATCH --reservation.")
@click.option("--dependency", "-d", metavar="TYPE:JOBID[:...]", help="#SBATCH --dependency, e.g. afterok:1234.")
@click.option(
    "--output",
    "log_output",
    metavar="PATTERN",
    help="#SBATCH --output: the job's log (default ncclgen-%j.out; ncclgen-%A_%a.out for an array).",
)
@click.option("--error", "log_error", metavar="PATTERN", help="#SBATCH --error (default: into the --output log).")
@click.option(
    "--sbatch",
    "sbatch_items",
    multiple=True,
    metavar="KEY[=VALUE]",
    help="Any other #SBATCH option (repeatable), e.g. --sbatch mail-type=END --sbatch array=0-3%1; "
    "checked against sbatch's option list, like the descriptor's slurm.extra_sbatch.",
)
@click.option(
    "--requeue",
    is_flag=True,
    help="Before the time limit (--signal), stop the steps with SIGTERM so they can save, then requeue "
    "the job; verl jobs need trainer.save_freq and an absolute trainer.default_local_dir and get "
    "trainer.resume_mode=auto.",
)
@click.option(
    "--signal",
    metavar="B:USR1@SECONDS",
    help="With --requeue: #SBATCH --signal, when Slurm warns the batch shell (default B:USR1@300).",
)
@click.option(
    "--container-image",
    metavar="IMAGE",
    help="pyxis/enroot image for every srun step (default: the descriptor's, if any); "
    "REGISTRY/IMAGE is written as pyxis's REGISTRY#IMAGE.",
)
@click.option("--container-workdir", metavar="PATH", help="pyxis working folder inside the container.")
@click.option(
    "--container-mounts",
    "container_mounts",
    multiple=True,
    metavar="SRC[:DST[:FLAGS]]",
    help="pyxis mount (repeatable), added to the descriptor's slurm.container_mounts.",
)
@click.option(
    "--monitor",
    is_flag=True,
    help="Sample every GPU through NVML on every node for the whole job (a standalone program: "
    "python3 on the node, nothing from the image), into ncclgen-monitor-JOB-NODE.jsonl "
    "beside the job's log.",
)
@click.option(
    "--ray-dashboard",
    is_flag=True,
    help="Start the Ray head's web dashboard (off by default: it delays bring-up by seconds).",
)
@click.option(
    "--pass-env",
    "pass_env",
    multiple=True,
    metavar="NAME",
    help="Variable the job takes from its environment at run time (repeatable), e.g. a secret "
    "such as WANDB_API_KEY: only its name is written; the job stops at start-up if it is unset.",
)
@click.option(
    "--no-preflight",
    is_flag=True,
    help="Leave out the preflight step (on by default: before the launch, every node checks the HCA "
    "ports, bootstrap interfaces, plugin and topology files, GPUs, /dev/shm, locked memory and "
    "numactl the plan relies on; a problem ends the job with exit 6, one line each).",
)
@click.option(
    "--comments",
    type=click.Choice(["short", "full"]),
    default="short",
    show_default=True,
    help="short: `# tier, rule` beside each export; full: each value's reason and source above it.",
)
@click.option(
    "-o",
    "--script",
    "output",
    type=click.Path(dir_okay=False),
    help="Write the script here (mode 0755) instead of stdout, atomically: one complete file (the last writer's), never a partial or mixed one.",
)
def slurm(
    cluster,
    tier,
    workload,
    nodes,
    sets,
    unchecked_sets,
    debug,
    extra_args,
    time,
    partition,
    account,
    qos,
    job_name,
    constraint,
    reservation,
    dependency,
    log_output,
    log_error,
    sbatch_items,
    requeue,
    signal,
    container_image,
    container_workdir,
    container_mounts,
    monitor,
    ray_dashboard,
    pass_env,
    no_preflight,
    comments,
    output,
):
    """Render an sbatch script: #SBATCH resources, the plan's exports, the head node's address, and
    the launch (torchrun, or a Ray cluster plus the verl driver). ARGS after `--`: for verl, Hydra
    overrides replacing the workload's value in place; otherwise appended to its command.

    \b
    Example:
      ncclgen slurm --cluster h100-ib --tier 3 --workload verl-grpo-qwen2-7b -o grpo.sbatch
      sbatch grpo.sbatch
    """
    from ..load import sbatch
    from ..render import slurm as render_slurm

    p = make_plan(cluster, tier, workload, nodes, sets, debug, extra_args, unchecked_sets=unchecked_sets)
    flags: list[str] = []
    for flag, value in (
        ("--job-name", job_name),
        ("--time", time),
        ("--partition", partition),
        ("--account", account),
        ("--qos", qos),
        ("--constraint", constraint),
        ("--reservation", reservation),
        ("--dependency", dependency),
        ("--output", log_output),
        ("--error", log_error),
    ):
        if value is not None:
            flags += [flag, value]
    for item in sbatch_items:
        flags += ["--sbatch", item]
    flags += ["--requeue"] * requeue + (["--signal", signal] if signal is not None else [])
    for flag, value in (("--container-image", container_image), ("--container-workdir", container_workdir)):
        if value is not None:
            flags += [flag, value]
    for mount in container_mounts:
        flags += ["--container-mounts", mount]
    flags += ["--monitor"] * monitor + ["--ray-dashboard"] * ray_dashboard + ["--no-preflight"] * no_preflight
    for name in pass_env:
        flags += ["--pass-env", name]
    flags += ["--comments", comments] if comments != "short" else []
    to_file = output not in (None, "-")
    flags += ["-o", output] if to_file else []
    opts = render_slurm.Options(
        job_name=job_name,
        time=time,
        partition=partition,
        account=account,
        qos=qos,
        constraint=constraint,
        reservation=reservation,
        dependency=dependency,
        log_output=log_output,
        log_error=log_error,
        sbatch=tuple(sbatch.parse_cli(item) for item in sbatch_items),
        requeue=requeue,
        signal=signal,
        container_image=container_image,
        container_workdir=container_workdir,
        container_mounts=tuple(container_mounts),
        monitor=monitor,
        ray_dashboard=ray_dashboard,
        pass_env=tuple(pass_env),
        preflight=not no_preflight,
        comments=comments,
        flags=tuple(flags),
        output=output if to_file else None,
    )
    text, notes = render_slurm.render_plan_with_notes(p, opts)
    for note in notes:
        click.echo(f"ncclgen: note: {note}", err=True)
    emit(text, output, mode=0o755)
