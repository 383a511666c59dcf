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
@click.option("--container-image", metavar="IMAGE",
              help="pyxis/enroot image for every srun step (default: the descriptor's, if any).")
@click.option("--monitor", is_flag=True, help="Run `ncclgen monitor` on every node for the whole job.")
@click.option("--ray-dashboard", is_flag=True,
              help="Start the Ray head's web dashboard (off by default: it delays bring-up by seconds).")
@click.option("--pass-env", "pass_env", multiple=True, metavar="NAME",
              help="Variable the job takes from its environment at run time (repeatable), e.g. a secret "
                   "such as WANDB_API_KEY: only its name is written; the job stops at start-up if it is unset.")
@click.option("--no-preflight", is_flag=True,
              help="Leave out the preflight step (on by default: before the launch, every node checks the HCA "
                   "ports, bootstrap interfaces, plugin and topology files, GPUs, /dev/shm, locked memory and "
                   "numactl the plan relies on; a problem ends the job with exit 6, one line each).")
@click.option("--comments", type=click.Choice(["short", "full"]), default="short", show_default=True,
              help="short: `# tier, rule` beside each export; full: each value's reason and source above it.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the script here (atomically, mode 0755) instead of stdout.")
def slurm(cluster, tier, workload, nodes, sets, debug, extra_args, time, partition, account, qos, job_name,
          container_image, monitor, ray_dashboard, pass_env, no_preflight, comments, output):
    """Render an sbatch script: #SBATCH resources, the plan's exports, the head node's address, and
    the launch (torchrun, or a Ray cluster plus the verl driver). ARGS after `--` are appended to the
    workload's command.

    \b
    Example:
      ncclgen slurm --cluster h100-ib --tier 3 --workload verl-grpo-qwen2-7b -o grpo.sbatch
      sbatch grpo.sbatch
    """
    from ..render import slurm as render_slurm

    p = make_plan(cluster, tier, workload, nodes, sets, debug, extra_args)
    flags: list[str] = []
    for flag, value in (("--job-name", job_name), ("--time", time), ("--partition", partition),
                        ("--account", account), ("--qos", qos), ("--container-image", container_image)):
        if value is not None:
            flags += [flag, value]
    flags += ["--monitor"] * monitor + ["--ray-dashboard"] * ray_dashboard + ["--no-preflight"] * no_preflight
    for name in pass_env:
        flags += ["--pass-env", name]
    flags += ["--comments", comments] if comments != "short" else []
    to_file = output not in (None, "-")
    flags += ["-o", output] if to_file else []
    opts = render_slurm.Options(job_name=job_name, time=time, partition=partition, account=account, qos=qos,
                                container_image=container_image, monitor=monitor, ray_dashboard=ray_dashboard,
                                comments=comments, pass_env=tuple(pass_env), preflight=not no_preflight,
                                flags=tuple(flags), output=output if to_file else None)
    emit(render_slurm.render_plan(p, opts), output, mode=0o755)
