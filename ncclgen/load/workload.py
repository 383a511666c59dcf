"""Workloads: what runs (launcher, command, nodes) and what the tier rules need to know about it."""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Literal

from .. import datapaths
from ..errors import UserError, did_you_mean, shown
from ..record import dataclass
from . import verl as verlkb
from .descriptor import DNS1123, IMAGE, IMAGE_DOC, EnvSetting, check_env, with_locations
from .patterns import PLAN_PREFIXES
from .schema import field, json_schema, load_dataclass
from .yamlio import load_file

DEFAULT = "verl-grpo-qwen2-7b"


@dataclass(frozen=True, kw_only=True)
class Workload:
    """What runs: the launcher, the command and the facts tier rules depend on."""

    name: str = field(
        "",
        doc="workload name (DNS-1123 label); default: the file name without .yaml",
        pattern=f"(?:{DNS1123})?",
        pattern_doc="a DNS-1123 label",
    )
    description: str = field("", doc="one line, shown by `ncclgen workloads list`")
    launcher: Literal["torchrun", "ray"] = field(
        doc="torchrun: the command runs once per GPU; ray: the command is the driver, run once on the head node"
    )
    framework: Literal["verl", "torch"] = field(
        "torch",
        doc="verl: the command is checked against the verl "
        "release(s) named by `verl`, and for Ray drivers ncclgen "
        "appends trainer.nnodes and trainer.n_gpus_per_node",
    )
    verl: str | None = field(
        None,
        doc="framework verl: the verl release the command targets (0.9.1) or a "
        "range (>=0.8.0,<=0.9.1); every override is checked against each release "
        "in it, and the default image is the one verl's CI used for the newest",
        examples=["0.9.1"],
    )
    backend: Literal["fsdp", "megatron", "ddp", "none"] = field("none", doc="training backend")
    model_params_b: float | None = field(None, doc="model size, billions of parameters", min=0)
    nodes: int = field(1, doc="default node count (override with --nodes)", min=1, max=4096)
    timeout_s: int | None = field(
        None,
        doc="refused: no supported launch reads a timeout from ncclgen "
        "(verl >= 0.8 ignores actor_rollout_ref.nccl_timeout; NCCL has no "
        "NCCL_TIMEOUT); `ncclgen explain` shows the timeout that applies",
    )
    time: str = field(
        "04:00:00",
        doc="default wall-clock limit",
        pattern=r"([0-9]{1,3}-)?[0-9]{1,3}:[0-9]{2}:[0-9]{2}",
        pattern_doc="[D-]HH:MM:SS",
    )
    image: str | None = field(
        None,
        doc="container image (Kubernetes; --image wins); default for "
        "framework verl: the image verl's CI ran for the targeted release",
        pattern=IMAGE,
        pattern_doc=IMAGE_DOC,
    )
    setup: tuple[str, ...] = field(
        (),
        doc="shell lines run once on every node before the launch, in order "
        "(module load, activating a venv, pip install --no-deps verl==X); they may not set, change "
        "or unset a name the plan owns (NCCL_*, TORCH_NCCL_*, TORCH_DIST*, TORCH_FR_*, GLOO_*, UCX_*, "
        "FI_*): use --set or the descriptor's env: (a sourced file that does stops the job)",
    )
    ray_ready_timeout_s: int = field(
        300,
        doc="ray: seconds for every node to join the Ray cluster before "
        "the job stops (first-time image pulls happen inside it)",
        min=10,
        max=86400,
    )
    nccl_memory_saving: bool = field(False, doc="opt into NCCL buffers smaller than the 4 MiB default")
    command: tuple[str, ...] = field(doc="argv: the per-rank program (torchrun) or the driver (ray)")
    env: tuple[EnvSetting, ...] = field((), doc="workload env, each with a reason; wins over tier rules")
    sources: dict[str, str] = field(factory=dict, doc="where the command and settings come from")


def derived_keys(wl: Workload) -> tuple[str, ...]:
    """Hydra keys ncclgen appends to this workload's command (never set by hand)."""
    return verlkb.DERIVED if wl.framework == "verl" and wl.launcher == "ray" else ()


def check_overrides(wl: Workload, extra=()) -> list[tuple[int | None, str]]:
    """Problems of the verl command (+ per-run overrides ``extra``) against the targeted release(s)."""
    if wl.framework != "verl":
        return []
    return verlkb.check_command(wl.command, wl.verl or "", derived=derived_keys(wl), extra=extra)


# A setup line that assigns, exports with a value, or unsets a name the plan owns (load/patterns.py):
# `NCCL_ALGO=Tree`, `export NCCL_ALGO=Tree`, `declare -x NCCL_ALGO=Tree`, `unset NCCL_DEBUG`. A name set
# by a sourced file is caught on the node (ncclgen/jobside/node.sh, the pods' setup program).
_PLAN_NAME = "(?:" + "|".join(re.escape(p) for p in PLAN_PREFIXES) + r")[A-Za-z0-9_]*"
_SETS_PLAN_NAME = re.compile(
    rf"(?:^|[\s;&|(){{}}`])(?:(?P<set>{_PLAN_NAME})\+?=|(?:unset|export\s+-n)(?:\s+-[fvn])*\s+(?:\w+\s+)*?(?P<unset>{_PLAN_NAME})\b)"
)


def plan_name_set(line: str) -> str | None:
    """The first plan-owned name a setup line sets or unsets, if any."""
    m = _SETS_PLAN_NAME.search(line)
    return (m.group("set") or m.group("unset")) if m else None


def load(path: str) -> Workload:
    doc = load_file(path)
    wl = load_dataclass(doc, doc.data, Workload)
    if not wl.name:
        stem = os.path.splitext(os.path.basename(path))[0]
        if not re.fullmatch(DNS1123, stem):
            raise doc.error(("name",), f"the file name {stem!r} is not a DNS-1123 label: set name:")
        wl = dataclasses.replace(wl, name=stem)
    if not wl.command:
        raise doc.error(("command",), "command is empty")
    for i, arg in enumerate(wl.command):
        if "\0" in arg:
            raise doc.error(("command", i), "NUL byte in argument")
    for i, line in enumerate(wl.setup):
        if re.search(r"[\x00-\x08\x0a-\x1f\x7f]", line):
            raise doc.error(("setup", i), "one shell line per entry, without newline or other control characters")
        if re.fullmatch(r"NCCLGEN_\w*_EOF", line.strip()):
            raise doc.error(("setup", i), f"{line.strip()!r} would end the job script's quoted heredoc")
        owned = plan_name_set(line)
        if owned:
            raise doc.error(
                ("setup", i),
                f"sets {owned}, a name the plan owns (the job would run with a value nothing checks or "
                f"explains): set it with --set {owned}=VALUE or in the descriptor's env:",
            )
    if wl.timeout_s is not None:
        raise doc.error(
            ("timeout_s",),
            "nothing reads it: verl >= 0.8 creates its process groups with its "
            "own timeout (ncclgen explain shows it) and NCCL has no "
            "NCCL_TIMEOUT; remove timeout_s",
        )
    if wl.framework == "verl":
        if not wl.verl:
            raise doc.error(
                ("verl",),
                "a verl workload names the verl release it targets, e.g. verl: "
                f'"{list(verlkb.releases())[-1]}" (known: '
                f"{', '.join(verlkb.releases())})",
            )
        try:
            verlkb.versions_in(wl.verl)
        except ValueError as e:
            raise doc.error(("verl",), str(e)) from None
        for index, message in check_overrides(wl):
            raise doc.error(("command",) if index is None else ("command", index), message)
    elif wl.verl is not None:
        raise doc.error(("verl",), "verl: applies to framework: verl only")
    check_env(doc, "env", wl.env)
    return dataclasses.replace(wl, env=with_locations(doc, "env", wl.env))


def image(wl: Workload) -> str | None:
    """The workload's image: its own, else for verl the image verl's CI ran for the targeted release."""
    if wl.image:
        return wl.image
    if wl.framework == "verl" and wl.verl:
        return verlkb.default_image(wl.verl)["image"]
    return None


def bundled() -> dict[str, str]:
    d = datapaths.bundled("workloads")
    return {f[:-5]: os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".yaml")}


def search_dirs() -> list[str]:
    """$NCCLGEN_WORKLOADS (colon-separated), then ./workloads, then the bundled workloads."""
    return datapaths.search_dirs("NCCLGEN_WORKLOADS", "workloads")


def available() -> dict[str, str]:
    """name -> path for every workload found; the first folder in search order wins."""
    return datapaths.yaml_files(search_dirs(), regular_only=True)


def resolve(name_or_path: str, flag: str = "--workload") -> str:
    """The file for ``--workload``: an existing path, else a name in the search folders."""
    if os.sep in name_or_path or name_or_path.endswith((".yaml", ".yml")):
        if not os.path.exists(name_or_path):
            raise UserError("no such workload file", file=name_or_path)
        return name_or_path
    found = available()
    if name_or_path in found:
        from .. import trust

        return trust.found(found[name_or_path], f"{flag or '--workload'} PATH or $NCCLGEN_WORKLOADS")
    lead = f"{flag}: " if flag else ""
    raise UserError(
        f"{lead}unknown workload {shown(name_or_path)}{did_you_mean(name_or_path, found)}; "
        f"found: {', '.join(found)} (searched $NCCLGEN_WORKLOADS, ./workloads, bundled)"
    )


def load_workload(name_or_path: str) -> Workload:
    return load(resolve(name_or_path))


def schema() -> dict:
    return json_schema(Workload, "ncclgen workload")
