"""`ncclgen slurm`: render an sbatch script from the plan."""

from __future__ import annotations

import click

from ..output import emit
from ..render.options import SlurmOptions
from .common import make_plan, plan_options, request_from
from .options import click_options, from_click


@click.command()
@plan_options
@click_options(SlurmOptions)
def slurm(**params):
    """Render an sbatch script: #SBATCH resources, the plan's exports, the head node's address, and
    the launch (torchrun, or a Ray cluster plus the verl driver). ARGS after `--`: for verl, Hydra
    overrides replacing the workload's value in place; otherwise appended to its command.

    \b
    Example:
      ncclgen slurm --cluster h100-ib --tier 3 --workload verl-grpo-qwen2-7b -o grpo.sbatch
      sbatch grpo.sbatch
    """
    from ..render import slurm as render_slurm

    opts = from_click(SlurmOptions, params)
    text, notes = render_slurm.render_plan_with_notes(make_plan(request_from(params)), opts)
    for note in notes:
        click.echo(f"ncclgen: note: {note}", err=True)
    emit(text, opts.output, mode=0o755)
