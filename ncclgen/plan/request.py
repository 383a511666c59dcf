"""What the user asked for, exactly as typed: the input of the pipeline and of every `Regenerate:`
line and `ncclgen.io/explain` annotation (a cluster given as a file stays a file, not its name)."""

from __future__ import annotations

from dataclasses import MISSING
from typing import Literal

from ..optionspec import flags, option
from ..record import dataclass

Target = Literal["host", "pod"]
TARGETS: tuple[str, ...] = ("host", "pod")
TransportCheck = Literal["on", "warn", "off"]
TRANSPORT_CHECKS: tuple[str, ...] = ("on", "warn", "off")


@dataclass(frozen=True)
class Request:
    """The plan options, each field with its flag (cli/common.py makes the click options from them), in the
    order a `Regenerate:` line writes them."""

    cluster: str = option(  # descriptor name or file, as typed (defaults resolved)
        MISSING,
        "--cluster",
        "-c",
        metavar="NAME|PATH",
        complete="cluster",
        help="Descriptor name or file (default: h100-ib).",
    )
    tier: int = option(
        MISSING,
        "--tier",
        "-t",
        metavar="1|2|3",
        bounds=(1, 3),
        help="1 stable, 2 performance, 3 expert (cumulative; default 1).",
    )
    workload: str = option(  # workload name or file, as typed (defaults resolved)
        MISSING,
        "--workload",
        "-w",
        metavar="NAME|PATH",
        complete="workload",
        help="Bundled workload name or YAML file (default: verl-grpo-qwen2-7b).",
    )
    nodes: int | None = option(  # None: the workload's default
        None, "--nodes", bounds=(1, 4096), help="Node count (default: the workload's)."
    )
    target: Target = option(  # host: Slurm job on the node or VM; pod: a Kubernetes pod (env, explain only)
        "host",
        "--target",
        choices=TARGETS,
        help="host: the view from a Slurm job on the node; pod: from a Kubernetes pod.",
    )
    sets: tuple[str, ...] = option(  # --set NAME=VALUE, as typed
        (),
        "--set",
        metavar="NAME=VALUE",
        help="Override or add a variable (repeatable); linted like everything else: an error stops, a warning "
        "or info prints on stderr.",
    )
    unchecked_sets: tuple[str, ...] = option(  # names outside the knowledge base
        (),
        "--set-unchecked",
        metavar="NAME=VALUE",
        help="As --set, for a name ncclgen's knowledge base does not know (your application's) or a search "
        "path (PYTHONPATH): passed unchecked and labelled 'unchecked' in the script and explain, as "
        "`unchecked: true` in a file. Names that make a shell, the loader or Python run code stay refused.",
    )
    debug: bool = option(False, "--debug", help="NCCL_DEBUG=INFO with NET subsystem logging.")
    transport_check: TransportCheck = option(  # ncclgen/plan/transport.py
        "on",
        "--transport-check",
        choices=TRANSPORT_CHECKS,
        help="Check on every node (Slurm step or pod) what NCCL chose at init (net, plugin, HCAs, GPUDirect "
        "RDMA, version) against the plan: on ends the job (the check exits 7) on a difference, warn prints "
        "it and runs on, off leaves the check and its NCCL_DEBUG settings out.",
    )
    extra_args: tuple[str, ...] = ()  # `-- ARGS`: per-run arguments (plan/overrides.py)

    def argv(self, command: str, nodes: int | None = None) -> list[str]:
        """The `ncclgen <command>` argv that repeats this request (``nodes``: the resolved count): the
        fields' flags in order, each when it differs from its default; --target only for env and explain."""
        out = ["ncclgen", command]
        for f, flag in flags(self):
            value = nodes if f.name == "nodes" and nodes is not None else getattr(self, f.name)
            if value == f.default or (f.name == "target" and command not in ("env", "explain")):
                continue
            if isinstance(value, bool):
                out.append(flag.names[0])
            elif isinstance(value, tuple):
                out += [a for item in value for a in (flag.names[0], item)]
            else:
                out += [flag.names[0], str(value)]
        return out

    def tail(self) -> list[str]:
        """What follows a command's own options: `-- ARGS` when there are extra arguments."""
        return ["--", *self.extra_args] if self.extra_args else []
