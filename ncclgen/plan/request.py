"""What the user asked for, exactly as typed: the input of the pipeline and of every `Regenerate:`
line and `ncclgen.io/explain` annotation (a cluster given as a file stays a file, not its name)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Target = Literal["host", "pod"]
TARGETS: tuple[str, ...] = ("host", "pod")
TransportCheck = Literal["on", "warn", "off"]
TRANSPORT_CHECKS: tuple[str, ...] = ("on", "warn", "off")


@dataclass(frozen=True)
class Request:
    cluster: str  # descriptor name or file, as typed (defaults resolved)
    tier: int
    workload: str  # workload name or file, as typed (defaults resolved)
    nodes: int | None = None  # None: the workload's default
    sets: tuple[str, ...] = ()  # --set NAME=VALUE, as typed
    debug: bool = False
    target: Target = "host"  # host: Slurm job on the node or VM; pod: a Kubernetes pod
    extra_args: tuple[str, ...] = ()  # `-- ARGS`: per-run arguments (plan/overrides.py)
    unchecked_sets: tuple[str, ...] = ()  # --set-unchecked NAME=VALUE: names outside the knowledge base
    transport_check: TransportCheck = "on"  # --transport-check: on, warn or off (ncclgen/plan/transport.py)

    def argv(self, command: str, nodes: int | None = None) -> list[str]:
        """The `ncclgen <command>` argv that repeats this request (``nodes``: the resolved count)."""
        out = ["ncclgen", command, "--cluster", self.cluster, "--tier", str(self.tier), "--workload", self.workload]
        n = self.nodes if nodes is None else nodes
        if n is not None:
            out += ["--nodes", str(n)]
        if self.target != "host" and command in ("env", "explain"):
            out += ["--target", self.target]
        for item in self.sets:
            out += ["--set", item]
        for item in self.unchecked_sets:
            out += ["--set-unchecked", item]
        out += ["--debug"] * self.debug
        if self.transport_check != "on":
            out += ["--transport-check", self.transport_check]
        return out

    def tail(self) -> list[str]:
        """What follows a command's own options: `-- ARGS` when there are extra arguments."""
        return ["--", *self.extra_args] if self.extra_args else []
