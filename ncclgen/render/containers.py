"""The container runtime of a Slurm job's steps: pyxis (srun options, render/pyxis.py) or Apptainer /
Singularity (a wrapper argv before the program, render/apptainer.py). A further runtime slots in here."""

from __future__ import annotations

from ..errors import UserError
from ..plan import Plan
from . import apptainer, pyxis, shell
from .options import SlurmOptions as Options
from .shell import Raw

RUNTIMES = ("apptainer", "singularity")


def wrapper_start(srun: list) -> int:
    """Where the runtime's wrapper argv starts in container_options' list (its end when there is none)."""
    return next((i for i, a in enumerate(srun) if a in RUNTIMES), len(srun))


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


def apptainer_env(plan: Plan, opts: Options) -> list[tuple[str, str, str]]:
    """What an Apptainer step would otherwise lose: LD_LIBRARY_PATH (a net plugin's folder) reaches the
    program only as APPTAINERENV_LD_LIBRARY_PATH (ncclgen/render/apptainer.py)."""
    runtime = opts.container_runtime or plan.cluster.slurm.container_runtime
    image = opts.container_image or plan.cluster.slurm.container_image
    if runtime == "pyxis" or not image or "LD_LIBRARY_PATH" not in plan.env_dict():
        return []
    name = apptainer.env_prefix(runtime) + "LD_LIBRARY_PATH"
    return [(name, Raw('"$LD_LIBRARY_PATH"'), f"{runtime} passes the planned LD_LIBRARY_PATH only as {name}")]
