"""The transport check's files in each Slurm node's private folder (ncclgen/jobside/node.sh writes them):
the parser, the program, its spec from the plan, and bin/ncclgen_transport, which the launch step runs
its command under (`ncclgen_step ... -- ncclgen_transport torchrun ...`)."""

from __future__ import annotations

from .. import jobside
from ..plan import Plan
from ..plan import transport as transportmod

TRANSPORT_BIN = "ncclgen_transport"
TRANSPORT_WRAPPER = (
    "#!/usr/bin/env bash\n"
    "# The launch under the transport check (exit 7 on a difference from the plan); the folder is bin/..\n"
    'ncclgen_dir=${NCCLGEN_DIR:-$(cd "$(dirname "$0")/.." && pwd)}\n'
    'if [[ $1 == *.sh && -f $ncclgen_dir/$1 ]]; then set -- bash "$ncclgen_dir/$1" "${@:2}"; fi\n'
    "# python3 -S: the check needs only the standard library, so the image's site-packages (.pth files) are\n"
    "# not read at every node's start\n"
    'exec python3 -S "$ncclgen_dir/transport.py" "@$ncclgen_dir/transport.json" -- "$@"\n'
)


def node_files(plan: Plan, jobside_prefix: str) -> list[tuple[str, str, str, str]]:
    """(source line, name in the folder, variable, text) of each file."""
    return [
        (jobside_prefix + "nccllines.py", "nccllines.py", "NCCLGEN_NCCLLINES", jobside.source("nccllines")),
        (jobside_prefix + "transport.py", "transport.py", "NCCLGEN_TRANSPORT", jobside.source("transport")),
        (
            "ncclgen/plan/transport.py: what the check compares, from the plan",
            "transport.json",
            "NCCLGEN_TRANSPORT_SPEC",
            transportmod.encode(transportmod.spec(plan)),
        ),
        (
            "ncclgen/render/slurmtransport.py: the launch's entry into the transport check",
            f"bin/{TRANSPORT_BIN}",
            "NCCLGEN_TRANSPORT_BIN",
            TRANSPORT_WRAPPER,
        ),
    ]
