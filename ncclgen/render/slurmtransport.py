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
    "# NCCL writes its lines to this folder only if it exists when a rank starts NCCL (the name is read\n"
    "# indirectly: the plan's export stays the script's only line naming it)\n"
    "ncclgen_nccl=NCCL_DEBUG\n"
    "ncclgen_nccl+=_FILE\n"
    "ncclgen_nccl=${!ncclgen_nccl:-}\n"
    "[[ $ncclgen_nccl != */* || -d ${ncclgen_nccl%/*} ]] ||\n"
    '  { mkdir -p "${ncclgen_nccl%/*}" && chmod 1777 "${ncclgen_nccl%/*}"; } 2>/dev/null || true\n'
    "# The launch first, in its own process group (set -m), then the check beside it: the ranks do not wait\n"
    "# for Python to start. Not niced: a failed node's step must end as soon as its launch has. This shell\n"
    "# keeps the launch's status; the check exits 7 once it stopped the launch over a difference.\n"
    "# python3 -S: the check needs only the standard library, so the image's site-packages (.pth files)\n"
    "# are not read at every node's start.\n"
    "ncclgen_since=${EPOCHREALTIME/,/.}\n"
    "set -m\n"
    '"$@" &\n'
    "ncclgen_launch=$!\n"
    'python3 -S "$ncclgen_dir/transport.py" "@$ncclgen_dir/transport.json" \\\n'
    '  --pid "$ncclgen_launch" "$ncclgen_since" &\n'
    "ncclgen_check=$!\n"
    "ncclgen_signalled=0\n"
    "for ncclgen_sig in TERM INT HUP; do\n"
    '  trap \'ncclgen_signalled=1; kill -s \'"$ncclgen_sig"\' -- "-$ncclgen_launch" 2>/dev/null\' "$ncclgen_sig"\n'
    "done\n"
    "ncclgen_rc=0\n"
    'wait "$ncclgen_launch" 2>/dev/null || ncclgen_rc=$?\n'
    "# a signal this shell trapped ends the wait early: wait again until the launch is gone. 2>/dev/null:\n"
    "# bash's own job notices ('[1]+ Terminated ...'), not the launch's output\n"
    'while kill -0 "$ncclgen_launch" 2>/dev/null; do\n'
    '  wait "$ncclgen_launch" 2>/dev/null && ncclgen_rc=0 || ncclgen_rc=$?\n'
    "done\n"
    "ncclgen_problems=0\n"
    'wait "$ncclgen_check" 2>/dev/null || ncclgen_problems=$?\n'
    'while kill -0 "$ncclgen_check" 2>/dev/null; do\n'
    '  wait "$ncclgen_check" 2>/dev/null && ncclgen_problems=0 || ncclgen_problems=$?\n'
    "done\n"
    "if ((ncclgen_problems == 7)); then exit 7; fi\n"
    "ncclgen_node=${NCCLGEN_NODE:-${SLURMD_NODENAME:-$HOSTNAME}}\n"
    "# (a step cancelled or killed: the check may have ended with it, nothing to say)\n"
    "((ncclgen_problems == 0 || ncclgen_signalled)) ||\n"
    '  echo "ncclgen: transport: node $ncclgen_node: not checked: the check ended with status $ncclgen_problems" >&2\n'
    'exit "$ncclgen_rc"\n'
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
