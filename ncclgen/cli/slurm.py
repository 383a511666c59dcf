"""`ncclgen slurm`: render an sbatch script from the plan."""

from __future__ import annotations

import click

from ..load import defaults
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
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the script here (atomically, mode 0755) instead of stdout.")
def slurm(cluster, tier, workload, nodes, sets, debug, time, partition, account, qos, job_name,
          container_image, monitor, ray_dashboard, output):
    """Render an sbatch script: #SBATCH resources, the plan's exports with their reasons, the head
    node's address, and the launch (torchrun, or a Ray cluster plus the verl driver).

    \b
    Example:
      ncclgen slurm --cluster h100-ib --tier 3 --workload verl-grpo-qwen2-7b -o grpo.sbatch
      sbatch grpo.sbatch
    """
    from ..render import slurm as render_slurm

    p = make_plan(cluster, tier, workload, nodes, sets, debug)
    regenerate = ["ncclgen", "slurm", "--cluster", cluster or defaults.default("cluster"), "--tier", str(p.tier),
                  "--workload", workload or defaults.default("workload"), "--nodes", str(p.launch.nodes)]
    for flag, value in (("--job-name", job_name), ("--time", time), ("--partition", partition),
                        ("--account", account), ("--qos", qos), ("--container-image", container_image)):
        if value is not None:
            regenerate += [flag, value]
    for item in sets:
        regenerate += ["--set", item]
    regenerate += ["--debug"] * debug + ["--monitor"] * monitor + ["--ray-dashboard"] * ray_dashboard
    if output not in (None, "-"):
        regenerate += ["-o", output]
    opts = render_slurm.Options(job_name=job_name, time=time, partition=partition, account=account, qos=qos,
                                container_image=container_image, monitor=monitor, ray_dashboard=ray_dashboard,
                                regenerate=tuple(regenerate))
    emit(render_slurm.render_plan(p, opts), output, mode=0o755)
