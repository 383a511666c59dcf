"""What the in-job transport check (ncclgen/jobside/transport.py) compares NCCL's init lines with, as
pure data from the Plan. The renderers embed :func:`encode` of :func:`spec` next to the program.

- ``net``: the name NCCL prints in "Using network NAME": the plan's NCCL_NET (IB on InfiniBand/RoCE,
  Socket on TCP, the plugin's registered name), or, where the plan pins none (a vendor_env `omit`),
  the one the fabric or plugin means; not checked for a plugin without a fixed name (rdma-sharp's
  IBext_v<N> changes with the plugin release);
- ``plugin``: the plugin's package and the minimum version the plan needs (ncclgen/data/plugins.yaml
  min_version), compared with the plugin's own init line;
- ``hcas``: the planned NCCL_IB_HCA ports, each of which NCCL's "NET/IB : Using" list must hold (NCCL
  drops an entry that matches no device without a word, and NCCL_IGNORE_NET_MISMATCH defaults to 1);
- ``gdr``: the descriptor's network.gpudirect_rdma: every NET channel line must end in /GDRDMA;
- ``nccl``: the descriptor's software.nccl: each node is held to it, so all nodes run the same NCCL
  (NCCL itself stops on a version mismatch between ranks, src/init.cc:1041-1047, but not on a node
  whose NCCL differs from the one the plan's rules were chosen for).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..load import views
from ..load.workload import Workload
from . import flightrec

if TYPE_CHECKING:
    from . import Plan

SPEC_VERSION = 1  # ncclgen/jobside/transport.py SPEC_VERSION
EXIT_PROBLEMS = 7  # ncclgen/jobside/transport.py EXIT_PROBLEMS: the job's exit status too
MODULE = "ncclgen_transport.py"  # the program's file name on the node; nccllines.py beside it
PARSER = "nccllines.py"
# Where a renderer runs the check: Kubernetes pods (the launch under it, after preflight and setup) and
# Slurm jobs (each node's torchrun agent or `ray start --block` step under it).
TARGETS = ("pod", "host")
# The net NCCL uses on a fabric without a plugin (NCCL v2.30.7 net_ib/common.cc:194 "IB", net_socket.cc:804
# "Socket"): what "Using network" must say even where the plan does not pin NCCL_NET.
FABRIC_NET = {"infiniband": "IB", "roce": "IB", "tcp": "Socket"}


def enabled(plan: Plan) -> bool:
    return wanted(plan.request, plan.target, plan.workload)


def wanted(request, target: str, workload: Workload) -> bool:
    """The check runs (and the rules that feed it apply): asked for, where a renderer runs it, and NCCL's
    INFO lines can come."""
    mode = request.transport_check if request is not None else "on"
    return mode != "off" and target in TARGETS and program_debug(workload) is None


def _mode(plan: Plan) -> str:
    return plan.request.transport_check if plan.request is not None else "on"


def program_debug(workload: Workload) -> dict[str, str] | None:
    """{value, where} when the workload's verl entry module sets NCCL_DEBUG itself at import (verl's SFT
    trainer: WARN), so NCCL's INFO lines never come and the check cannot run; else None."""
    if workload.framework != "verl" or not workload.verl:
        return None
    from ..load import verl

    return verl.env_set_by(list(workload.command), workload.verl).get("NCCL_DEBUG")


def spec(plan: Plan) -> dict[str, Any]:
    """The check's input for every node of ``plan`` (its view: host or pod)."""
    env = plan.env_dict()
    out: dict[str, Any] = {"v": SPEC_VERSION, "mode": _mode(plan), "debug_file": env.get("NCCL_DEBUG_FILE", "")}
    plugin = views.plugin_of(plan.cluster)
    net = env.get("NCCL_NET") or (plugin.net_name if plugin else FABRIC_NET.get(plan.cluster.network.fabric))
    if net:
        out["net"] = net
    if plugin is not None and plugin.min_version:
        out["plugin"] = {"package": plugin.package, "min": plugin.min_version}
    hca = env.get("NCCL_IB_HCA", "")
    if net == "IB" and hca.startswith("="):
        out["hcas"] = [h for h in hca[1:].split(",") if h]
    if plan.cluster.network.gpudirect_rdma:
        out["gdr"] = True
    out["nccl"] = plan.cluster.software.nccl
    if plan.target == "pod" and flightrec.folder(plan):  # Slurm: the batch script's exit line says it
        out["fr"] = flightrec.folder(plan)
    return out


def encode(checks: dict[str, Any]) -> str:
    """One line of JSON in the spec's own (deterministic) order; one shell word once quoted."""
    return json.dumps(checks, separators=(",", ":"))


def describe(checks: dict[str, Any]) -> list[str]:
    """One line per comparison, for `ncclgen explain`."""
    lines = [f"NCCL version {checks['nccl']} (software.nccl) on every node"]
    lines.append(f"net {checks['net']} ('Using network')" if "net" in checks else "net: not checked (no fixed name)")
    if "plugin" in checks:
        lines.append(f"{checks['plugin']['package']} >= {checks['plugin']['min']}")
    if "hcas" in checks:
        lines.append(f"HCAs {','.join(checks['hcas'])} all opened ('NET/IB : Using')")
    lines.append(
        "every NET channel via GDRDMA (network.gpudirect_rdma)"
        if checks.get("gdr")
        else "GPUDirect RDMA: not checked (the descriptor does not declare network.gpudirect_rdma)"
    )
    return lines


def explain_line(plan: Plan) -> str:
    """The transport check's line in `ncclgen explain`."""
    forced = program_debug(plan.workload)
    if forced is not None and _mode(plan) != "off":
        return (
            f"  transport check: off: the program sets NCCL_DEBUG={forced['value']} at import ({forced['where']}), "
            "so NCCL's init lines cannot be read; nothing compares what NCCL chose with this plan"
        )
    if not enabled(plan):
        return (
            "  transport check: off (--transport-check off): nothing compares what NCCL chose at init with "
            "this plan; NCCL_DEBUG=WARN"
        )
    checks = spec(plan)
    action = (
        f"a difference ends the job (exit {EXIT_PROBLEMS})"
        if checks["mode"] == "on"
        else "a difference is printed and the job runs on (--transport-check warn)"
    )
    return (
        f"  transport check (every node, beside the launch; NCCL's lines in {checks['debug_file']}, WARN lines "
        f"copied to the log; {action}; --transport-check off to leave out): " + "; ".join(describe(checks))
    )
