"""What the node-side preflight (ncclgen/jobside/preflight.py) checks, as pure data from the Plan.

The renderers embed :func:`encode` of :func:`spec` next to the program; nothing here touches the node.
Every entry is something the plan relies on and NCCL would not report loudly when it is missing:

- ``hca``: the plan's NCCL_IB_HCA (an entry that matches no device is dropped silently,
  NCCL v2.30.7 src/transport/net_ib/init.cc; every listed port must be ACTIVE);
- ``ifaces``: NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME (the bootstrap sockets need an IPv4 address;
  a user-set NCCL_SOCKET_IFNAME that matches nothing is a hard error at init, src/misc/socket.cc);
- ``files``: NCCL_TOPO_FILE (a missing file is ignored, src/graph/xml.cc) and the net plugin's
  library files (a plugin not found is skipped, src/plugin/net.cc);
- ``gpus``: the plan's GPUs per node;
- ``shm_bytes`` and ``memlock_unlimited``: NCCL's troubleshooting guide asks containers for
  `--shm-size=1g --ulimit memlock=-1` (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/
  troubleshooting/runtime_and_mpi_issues.html); the locked-memory limit matters where NCCL registers
  memory with an RDMA device (InfiniBand, RoCE, EFA), so it is checked only on those fabrics;
- ``gdr``: GPUDirect RDMA's driver support (nvidia_peermem or DMA-BUF), where the descriptor declares
  network.gpudirect_rdma on InfiniBand or RoCE (NCCL's IB transport; EFA registers GPU memory through
  its own driver);
- ``commands``: numactl where the torchrun rank wrapper runs each rank through it (tier 3). The Ray
  worker hook binds with sched_setaffinity and needs no command.
"""

from __future__ import annotations

import json
from typing import Any

from ..load import views
from . import Plan

SPEC_VERSION = 1  # ncclgen/jobside/preflight.py SPEC_VERSION
EXIT_PROBLEMS = 6  # ncclgen/jobside/preflight.py EXIT_PROBLEMS: the job's exit status too
SHM_MIN_BYTES = 1 << 30  # --shm-size=1g (NCCL troubleshooting guide, above)
RDMA_FABRICS = ("infiniband", "roce", "efa")
GDR_FABRICS = ("infiniband", "roce")  # NCCL's IB transport checks a peer-memory module or DMA-BUF
HCA_VARS = ("NCCL_IB_HCA",)
IFACE_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")


def spec(plan: Plan, plugin_files: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The checks for one node of ``plan``. ``plugin_files``: library paths that must exist there;
    default: the files of the net plugin the plan's view loads, in its folder on that platform
    (ncclgen/data/plugins.yaml)."""
    if plugin_files is None:
        plugin_files = views.plugin_files(plan.cluster)
    env = plan.env_dict()
    out: dict[str, Any] = {"v": SPEC_VERSION}
    hca = {v: env[v] for v in HCA_VARS if env.get(v)}
    if hca and env.get("NCCL_IB_DISABLE") != "1":
        out["hca"] = hca
    ifaces = {}
    for var in IFACE_VARS:
        value = env.get(var)
        if value:
            # Gloo takes exact, comma-separated names (no NCCL prefix or '^' syntax).
            ifaces[var] = "=" + value if var.startswith("GLOO_") else value
    if ifaces:
        out["ifaces"] = ifaces
    files = [["net plugin", p] for p in plugin_files]
    if env.get("NCCL_TOPO_FILE"):
        files.append(["NCCL_TOPO_FILE", env["NCCL_TOPO_FILE"]])
    if files:
        out["files"] = files
    out["gpus"] = plan.launch.gpus_per_node
    out["shm_bytes"] = SHM_MIN_BYTES
    if plan.cluster.network.fabric in RDMA_FABRICS:
        out["memlock_unlimited"] = True
    if plan.launch.bind and plan.launch.launcher == "torchrun":
        out["commands"] = ["numactl"]
    if plan.cluster.network.gpudirect_rdma and plan.cluster.network.fabric in GDR_FABRICS:
        out["gdr"] = True
    return out


def encode(checks: dict[str, Any]) -> str:
    """One line of JSON in the spec's own (deterministic) order; one shell word once quoted."""
    return json.dumps(checks, separators=(",", ":"))


def describe(checks: dict[str, Any]) -> list[str]:
    """One line per check, for `ncclgen explain`."""
    lines = []
    for var, value in checks.get("hca", {}).items():
        lines.append(f"{var}={value}: every device and port exists and is ACTIVE")
    for var, value in checks.get("ifaces", {}).items():
        lines.append(f"{var}={value}: the interface exists and has an IPv4 address")
    for item, path in checks.get("files", []):
        lines.append(f"{item} {path}: readable")
    if checks.get("gpus"):
        lines.append(f"{checks['gpus']} GPUs visible")
    if checks.get("shm_bytes"):
        lines.append(f"/dev/shm at least {checks['shm_bytes'] >> 20} MiB")
    if checks.get("memlock_unlimited"):
        lines.append("locked-memory limit unlimited (RDMA)")
    for command in checks.get("commands", []):
        lines.append(f"{command} on PATH")
    if checks.get("gdr"):
        lines.append("GPUDirect RDMA: nvidia_peermem loaded or DMA-BUF supported")
    return lines
