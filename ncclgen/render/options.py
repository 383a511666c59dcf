"""The scheduler options of `ncclgen slurm` and `ncclgen k8s`, declared once.

Each field carries its command-line flag, type (its default's: str or None, bool, tuple for a repeatable
flag) and help. The click options (cli/options.py), the `Regenerate:` argv and the check before rendering
all come from these declarations, as TorchX's runopts: typed options resolved and checked first, then the
dry run renders. A new option is one field here: its flag, help and Regenerate argv follow.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import UserError
from ..load import sbatch as sbatchmod
from ..optionspec import flags, option
from ..record import dataclass


def argv(opts) -> list[str]:
    """The flags that repeat ``opts`` on a command line (what differs from the defaults, in field order)."""
    out: list[str] = []
    for f, flag in flags(opts):
        value = getattr(opts, f.name)
        if value == f.default:
            continue
        if isinstance(value, bool):
            out.append(flag.names[0])
        elif isinstance(value, tuple):
            for item in value:
                out += [flag.names[0], item]
        else:
            out += [flag.names[0], value]
    return out


def check(opts) -> None:
    """Every field's own check, then its choices: one UserError naming the flag."""
    for f, flag in flags(opts):
        value = getattr(opts, f.name)
        if flag.choices and value is not None and value not in flag.choices:
            raise UserError(f"{flag.names[0]} {value!r}: expected one of {', '.join(flag.choices)}")
        if flag.check is not None and value != f.default:
            flag.check(value)


@dataclass(frozen=True)
class SlurmOptions:
    """`ncclgen slurm`'s scheduler choices; None means the descriptor's or the workload's default."""

    job_name: str | None = option(None, "--job-name", "-J", help="#SBATCH --job-name (default: the workload's name).")
    time: str | None = option(None, "--time", metavar="[D-]HH:MM:SS", help="#SBATCH --time (default: the workload's).")
    partition: str | None = option(None, "--partition", "-p", help="#SBATCH --partition (default: the descriptor's).")
    account: str | None = option(None, "--account", "-A", help="#SBATCH --account (default: the descriptor's).")
    qos: str | None = option(None, "--qos", help="#SBATCH --qos (default: the descriptor's).")
    constraint: str | None = option(
        None, "--constraint", "-C", metavar="LIST", help="#SBATCH --constraint (default: the descriptor's)."
    )
    reservation: str | None = option(None, "--reservation", metavar="NAME", help="#SBATCH --reservation.")
    dependency: str | None = option(
        None, "--dependency", "-d", metavar="TYPE:JOBID[:...]", help="#SBATCH --dependency, e.g. afterok:1234."
    )
    log_output: str | None = option(
        None,
        "--output",
        metavar="PATTERN",
        help="#SBATCH --output: the job's log (default ncclgen-%j.out; ncclgen-%A_%a.out for an array).",
    )
    log_error: str | None = option(
        None, "--error", metavar="PATTERN", help="#SBATCH --error (default: into the --output log)."
    )
    sbatch: tuple[str, ...] = option(
        (),
        "--sbatch",
        metavar="KEY[=VALUE]",
        help="Any other #SBATCH option (repeatable), e.g. --sbatch mail-type=END --sbatch array=0-3%1; "
        "checked against sbatch's option list, like the descriptor's slurm.extra_sbatch.",
    )
    requeue: bool = option(
        False,
        "--requeue",
        help="Before the time limit (--signal), stop the steps with SIGTERM so they can save, then requeue "
        "the job; verl jobs need trainer.save_freq and an absolute trainer.default_local_dir and get "
        "trainer.resume_mode=auto.",
    )
    signal: str | None = option(
        None,
        "--signal",
        metavar="B:USR1@SECONDS",
        help="With --requeue: #SBATCH --signal, when Slurm warns the batch shell (default B:USR1@300).",
    )
    container_image: str | None = option(
        None,
        "--container-image",
        metavar="IMAGE",
        help="Image every srun step runs in (default: the descriptor's, if any); for pyxis REGISTRY/IMAGE "
        "is written as pyxis's REGISTRY#IMAGE, for Apptainer a registry reference as docker://REF.",
    )
    container_runtime: str | None = option(
        None,
        "--container-runtime",
        choices=("pyxis", "apptainer", "singularity"),
        help="How steps run in the image: pyxis (srun --container-image, one named container per node) or "
        "apptainer/singularity (apptainer exec --nv IMAGE, a fresh container per step) (default: the "
        "descriptor's slurm.container_runtime, pyxis).",
    )
    container_workdir: str | None = option(
        None, "--container-workdir", metavar="PATH", help="Working folder inside the container."
    )
    container_mounts: tuple[str, ...] = option(
        (),
        "--container-mounts",
        metavar="SRC[:DST[:FLAGS]]",
        help="Mount (repeatable), added to the descriptor's slurm.container_mounts: pyxis FLAGS, or ro/rw "
        "for Apptainer's --bind.",
    )
    monitor: bool = option(
        False,
        "--monitor",
        help="Sample every GPU through NVML on every node for the whole job (a standalone program: "
        "python3 on the node, nothing from the image), into ncclgen-monitor-JOB-NODE.jsonl "
        "beside the job's log.",
    )
    ray_dashboard: bool = option(
        False,
        "--ray-dashboard",
        help="Start the Ray head's web dashboard (off by default: it delays bring-up by seconds).",
    )
    preflight: bool = option(
        True,
        "--no-preflight",
        negates=True,
        help="Leave out the preflight (on by default: in the launch step, before its launcher, every node checks "
        "the HCA ports, bootstrap interfaces, plugin and topology files, GPUs, /dev/shm, locked memory and "
        "numactl the plan relies on; a problem ends the job with exit 6, one line each).",
    )
    pass_env: tuple[str, ...] = option(
        (),
        "--pass-env",
        metavar="NAME",
        help="Variable the job takes from its environment at run time (repeatable), e.g. a secret "
        "such as WANDB_API_KEY: only its name is written; the job stops at start-up if it is unset.",
    )
    comments: str = option(
        "short",
        "--comments",
        choices=("short", "full"),
        help="short: `# tier, rule` beside each export; full: each value's reason and source above it.",
    )
    output: str | None = option(
        None,
        "-o",
        "--script",
        path=True,
        help="Write the script here (mode 0755) instead of stdout, atomically: one complete file (the last "
        "writer's), never a partial or mixed one.",
    )

    def __post_init__(self) -> None:
        check(self)

    @property
    def sbatch_pairs(self) -> tuple[tuple[str, str | bool], ...]:
        """--sbatch KEY[=VALUE] items as (KEY, VALUE or True for a flag), in order."""
        return tuple(sbatchmod.parse_cli(item) for item in self.sbatch)


@dataclass(frozen=True)
class K8sOptions:
    """`ncclgen k8s`'s choices; None means the descriptor's or the workload's default."""

    kind: str | None = option(
        None,
        "--kind",
        choices=("pytorchjob", "rayjob", "trainjob"),
        help="Custom resource to render (default: rayjob for Ray workloads, pytorchjob for torchrun "
        "ones; a Ray workload may also run as a PyTorchJob; trainjob: a Kubeflow Trainer v2 "
        "TrainJob and its TrainingRuntime, for torchrun workloads).",
    )
    name: str | None = option(
        None, "--name", metavar="NAME", help="Job name, a DNS-1035 label (default: the workload's name)."
    )
    namespace: str | None = option(
        None,
        "--namespace",
        metavar="NS",
        help="Namespace written into every object (default: the descriptor's kubernetes.namespace; without "
        "either, none, so `kubectl apply -n NS` chooses).",
    )
    image: str | None = option(
        None, "--image", metavar="IMAGE", help="Container image (default: the descriptor's kubernetes.image)."
    )
    volumes: tuple[str, ...] = option(
        (),
        "--volume",
        metavar="SPEC",
        help="Mount a volume in every container (repeatable): pvc:CLAIM:/mount/path, "
        "hostpath:/host/path:/mount/path or configmap:NAME:/mount/path, optionally ending :ro. "
        "Added to the descriptor's kubernetes.volumes.",
    )
    service_account: str | None = option(None, "--service-account", metavar="NAME", help="Pod serviceAccountName.")
    priority_class: str | None = option(None, "--priority-class", metavar="NAME", help="Pod priorityClassName.")
    pull_secrets: tuple[str, ...] = option(
        (), "--image-pull-secret", metavar="NAME", help="Secret to pull the image with (repeatable)."
    )
    scheduler_name: str | None = option(
        None, "--scheduler-name", metavar="NAME", help="Pod schedulerName, e.g. volcano."
    )
    labels: tuple[str, ...] = option(
        (),
        "--label",
        metavar="KEY=VALUE",
        help="Label on every object and pod (repeatable), e.g. kueue.x-k8s.io/queue-name=QUEUE.",
    )
    annotations: tuple[str, ...] = option((), "--annotation", metavar="KEY=VALUE", help="Pod annotation (repeatable).")
    secret_env: tuple[str, ...] = option(
        (),
        "--secret-env",
        metavar="NAME=SECRET:KEY",
        help="Variable NAME from key KEY of Secret SECRET (repeatable): a secretKeyRef, so the value "
        "never appears in the manifests.",
    )
    preflight: bool = option(
        True,
        "--no-preflight",
        negates=True,
        help="Leave out the preflight (on by default: each pod first checks the HCA ports, bootstrap "
        "interfaces, plugin and topology files, GPUs, /dev/shm, locked memory and numactl the plan "
        "relies on; a problem ends the container with exit 6, one line each, before the launch).",
    )
    ttl: str | None = option(
        None,
        "--ttl-after-finished",
        metavar="SECONDS",
        check=lambda v: _seconds_check("--ttl-after-finished", v),
        help="How long a finished job's pods and their logs stay before the operator deletes them "
        "(default 3600; RayJob and PyTorchJob ttlSecondsAfterFinished; a TrainJob has no such field).",
    )
    output: str | None = option(
        None,
        "-o",
        "--output",
        path=True,
        help="Write here instead of stdout, atomically: one complete file (the last writer's), never a "
        "partial or mixed one.",
    )

    def __post_init__(self) -> None:
        check(self)

    @property
    def ttl_seconds(self) -> int | None:
        return None if self.ttl is None else int(self.ttl)

    def pod_settings(self, plan, reserved_labels: Iterable[str]):
        """The descriptor's pod settings with this command line's added (podspec.merge checks them)."""
        from ..load import podspec

        return podspec.merge(
            plan.cluster.kubernetes.pod_settings(),
            volumes=self.volumes,
            service_account=self.service_account,
            priority_class=self.priority_class,
            image_pull_secrets=self.pull_secrets,
            scheduler_name=self.scheduler_name,
            labels=self.labels,
            annotations=self.annotations,
            secret_env=self.secret_env,
            reserved_labels=reserved_labels,
            env_names=[e.name for e in plan.env],
        )


def _seconds_check(flag: str, value: str) -> None:
    """A whole number of seconds an int32 holds (the CRDs' ttlSecondsAfterFinished is int32)."""
    if not value.isascii() or not value.isdigit() or int(value) > 2**31 - 1:
        raise UserError(f"{flag} {value!r}: expected a whole number of seconds from 0 to {2**31 - 1}")
