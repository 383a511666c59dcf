"""The transport check's files in each Slurm node's private folder (ncclgen/jobside/node.sh writes them):
the parser, the program, its spec from the plan, and bin/ncclgen_transport, which the launch step runs
its command under (`ncclgen_step ... -- ncclgen_transport torchrun ...`)."""

from __future__ import annotations

from .. import jobside
from ..plan import Plan
from ..plan import transport as transportmod

TRANSPORT_BIN = "ncclgen_transport"


def node_files(plan: Plan, jobside_prefix: str) -> list[tuple[str, str, str, str]]:
    """(source line, name in the folder, variable, text) of each file."""
    return [
        (
            jobside_prefix + "nccllines.py",
            "nccllines.py",
            "NCCLGEN_NCCLLINES",
            jobside.source("nccllines", compact=True),
        ),
        (
            jobside_prefix + "transport.py",
            "transport.py",
            "NCCLGEN_TRANSPORT",
            jobside.source("transport", compact=True),
        ),
        (
            "ncclgen/plan/transport.py: what the check compares, from the plan",
            "transport.json",
            "NCCLGEN_TRANSPORT_SPEC",
            transportmod.encode(transportmod.spec(plan)),
        ),
        (
            jobside_prefix + "transport_entry.sh",
            f"bin/{TRANSPORT_BIN}",
            "NCCLGEN_TRANSPORT_BIN",
            jobside.source("transport_entry.sh", compact=True),
        ),
    ]
