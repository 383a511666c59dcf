"""Where PyTorch's flight recorder dumps: one folder per job, named by the plan, so that a hang leaves
every rank's last collectives where `fr_trace` can read them.

PyTorch keeps a ring of each process group's last collectives (TORCH_FR_BUFFER_SIZE entries) and, when
one times out or fails (TORCH_NCCL_DUMP_ON_TIMEOUT), writes it to TORCH_FR_DUMP_TEMP_FILE + rank
(torch 2.13.0 wheel FlightRecorder.hpp:80-84 and 110-111). Unset, the file is
$HOME/.cache/torch/comm_lib_trace_rank_<rank> (seen on torch 2.11, tests/data/device/fr-timeout-h200.log):
shared by every job of the user and lost with a pod. The Slurm value holds ${SLURM_JOB_ID:-local}, expanded
by the batch script (export "..."); node.sh makes the folder on every node before the first program runs.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # lint/shellenv.py imports this module: keep it free of the descriptor's import cost
    from ..load.descriptor import Descriptor
    from .build import Plan

VAR = "TORCH_FR_DUMP_TEMP_FILE"
NAMES = frozenset({VAR, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"})  # the dump prefix and its older alias
JOB = "${SLURM_JOB_ID:-local}"  # outside a Slurm job (`ncclgen env` sourced by hand): /tmp/ncclgen-fr-local
PREFIX = "nccl_trace_rank_"  # the dumps' names: fr_trace strips it to find each rank
POD_DIR = "/tmp/ncclgen-fr"  # inside the container: one pod, one job
READ = "python3 -m torch.distributed.flight_recorder.fr_trace -j"


def dump_file(cluster: Descriptor, target: str) -> str:
    """TORCH_FR_DUMP_TEMP_FILE for ``target``: the job's folder, then the file prefix."""
    if target == "pod":
        return f"{POD_DIR}/{PREFIX}"
    shared = cluster.slurm.dump_dir
    folder = f"{shared.rstrip('/')}/{JOB}" if shared else f"/tmp/ncclgen-fr-{JOB}"
    return f"{folder}/{PREFIX}"


def folder(plan: Plan) -> str | None:
    """The plan's dump folder (its TORCH_FR_DUMP_TEMP_FILE without the file prefix), or None."""
    value = plan.env_dict().get(VAR)
    return value.rsplit("/", 1)[0] if value and "/" in value else None


def shell_word(value: str) -> str:
    """The value as one double-quoted shell word in which only ${SLURM_JOB_ID:-local} expands (the descriptor's
    dump_dir holds letters, digits and . _ / - only); '' for any other value (the caller quotes it as data)."""
    return f'"{value}"' if JOB in value and all(c.isalnum() or c in "._/-${}:" for c in value) else ""


def script_folder(plan: Plan) -> tuple[str, str]:
    """For the batch script's exit message: the folder as a shell word, and where it is ('' when shared)."""
    where = folder(plan)
    if not where:
        return ("", "")
    word = shell_word(where) or shlex.quote(where)  # a --set value holds no ${SLURM_JOB_ID}: quoted as data
    return (word, "" if shared(plan) or JOB not in where else " on $(hostname), one folder per node")


def pod_volume(plan: Plan) -> bool:
    """Whether pods get the emptyDir at POD_DIR: the plan's folder is that one (not where a --set moved it)."""
    return folder(plan) == POD_DIR


def shared(plan: Plan) -> bool:
    return plan.target == "host" and bool(plan.cluster.slurm.dump_dir)


def explain_line(plan: Plan) -> str:
    """The flight recorder's line in `ncclgen explain`."""
    where = folder(plan)
    if where is None:
        return "  flight recorder: not set by this plan (PyTorch's default: $HOME/.cache/torch, shared by every job)"
    if plan.target == "pod":
        place = f"{where} in each pod (lost with the pod: kubectl cp POD:{where} .)"
    elif shared(plan):
        place = f"{where}, on slurm.dump_dir (every node)"
    else:
        place = f"{where} on each node (declare slurm.dump_dir for one shared folder)"
    return (
        f"  flight recorder: on a collective's timeout or failure each rank writes its last collectives to "
        f"FOLDER/{PREFIX}<rank> (TORCH_FR_DUMP_TEMP_FILE), FOLDER: {place}; read them with {READ} FOLDER"
    )
