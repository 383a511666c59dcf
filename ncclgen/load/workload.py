"""Workloads: what runs (launcher, command, nodes) and what the tier rules need to know about it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal, Optional

from .. import datapaths
from .descriptor import DNS1123, EnvSetting
from ..errors import UserError, did_you_mean
from .schema import field, json_schema, load_dataclass
from .yamlio import load_file

DEFAULT = "verl-grpo-qwen2-7b"


@dataclass(frozen=True, kw_only=True)
class Workload:
    """What runs: the launcher, the command and the facts tier rules depend on."""
    name: str = field(doc="workload name (DNS-1123 label)", pattern=DNS1123, pattern_doc="a DNS-1123 label")
    description: str = field(doc="one line")
    launcher: Literal["torchrun", "ray"] = field(doc="torchrun: the command runs once per GPU; ray: the "
                                                 "command is the driver, run once on the head node")
    framework: Literal["verl", "torch"] = field("torch", doc="verl: ncclgen appends trainer.nnodes, "
                                                "trainer.n_gpus_per_node and the NCCL timeout overrides")
    backend: Literal["fsdp", "megatron", "ddp", "none"] = field("none", doc="training backend")
    model_params_b: Optional[float] = field(None, doc="model size, billions of parameters", min=0)
    nodes: int = field(1, doc="default node count (override with --nodes)", min=1, max=4096)
    timeout_s: int = field(1800, doc="collective timeout in seconds, passed through the framework's own "
                           "knob (verl: actor_rollout_ref.nccl_timeout); NCCL has no NCCL_TIMEOUT", min=60)
    time: str = field("04:00:00", doc="default wall-clock limit", pattern=r"(\d+-)?\d{1,3}:\d{2}:\d{2}",
                      pattern_doc="[D-]HH:MM:SS")
    nccl_memory_saving: bool = field(False, doc="opt into NCCL buffers smaller than the 4 MiB default")
    command: tuple[str, ...] = field(doc="argv: the per-rank program (torchrun) or the driver (ray)")
    env: tuple[EnvSetting, ...] = field((), doc="workload env, each with a reason; wins over tier rules")
    sources: dict[str, str] = field(factory=dict, doc="where the command and settings come from")


def load(path: str) -> Workload:
    doc = load_file(path)
    wl = load_dataclass(doc, doc.data, Workload)
    if not wl.command:
        raise doc.error(("command",), "command is empty")
    for i, arg in enumerate(wl.command):
        if "\0" in arg:
            raise doc.error(("command", i), "NUL byte in argument")
        if wl.framework == "verl" and wl.launcher == "ray" and re.match(
                r"\+?(trainer\.nnodes|trainer\.n_gpus_per_node|actor_rollout_ref\.nccl_timeout)=", arg):
            raise doc.error(("command", i), f"{arg.split('=')[0]} is derived by ncclgen from the plan "
                                            "(--nodes, the descriptor, timeout_s); remove it")
    names = set()
    for i, e in enumerate(wl.env):
        if e.name in names:
            raise doc.error(("env", i, "name"), f"{e.name} is set twice")
        names.add(e.name)
    return wl


def bundled() -> dict[str, str]:
    d = datapaths.bundled("workloads")
    return {f[:-5]: os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".yaml")}


def resolve(name_or_path: str) -> str:
    if os.sep in name_or_path or name_or_path.endswith((".yaml", ".yml")):
        if not os.path.exists(name_or_path):
            raise UserError("no such workload file", file=name_or_path)
        return name_or_path
    found = bundled()
    if name_or_path in found:
        return found[name_or_path]
    raise UserError(f"--workload: unknown workload {name_or_path!r}{did_you_mean(name_or_path, found)}; "
                    f"bundled: {', '.join(found)}")


def load_workload(name_or_path: str) -> Workload:
    return load(resolve(name_or_path))


def schema() -> dict:
    return json_schema(Workload, "ncclgen workload")
