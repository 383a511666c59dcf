"""NCCL settings the logs show the job forced on NCCL's path choice, for a run that did not end well.

NCCL prints 'NCCL_X set by environment to V' for each variable it reads (src/graph/paths.cc ncclGetLevel for the
GPUDirect and P2P levels, src/misc/param.cc for the others). A few of them replace a choice NCCL makes from the
topology: the GPUDirect RDMA level, the P2P level, disabling a transport, crossing NICs, the algorithm and protocol.
A job that hangs or times out with one of them set is commonly fixed by leaving it to NCCL (argonne-lcf's
alcf-nccl-tests: NCCL_NET_GDR_LEVEL=PHB hung the first inter-node collective on Polaris), so the report names them
and the one rerun that tells; they are not a cause by themselves (many sites set them on purpose).
"""

from __future__ import annotations

from .nodes import Facts

# (NVIDIA/nccl v2.30.7-1: src/graph/paths.cc NCCL_NET_GDR_LEVEL, NCCL_NET_GDR_READ, NCCL_P2P_LEVEL,
# NCCL_P2P_DISABLE; src/transport/shm.cc NCCL_SHM_DISABLE; src/graph/search.cc NCCL_CROSS_NIC; src/enqueue.cc and
# src/graph/tuning.cc NCCL_ALGO, NCCL_PROTO; src/init.cc NCCL_COLLNET_ENABLE, NCCL_NVLS_ENABLE)
PATH_VARS = (
    "NCCL_NET_GDR_LEVEL",
    "NCCL_NET_GDR_READ",
    "NCCL_P2P_LEVEL",
    "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_CROSS_NIC",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_COLLNET_ENABLE",
    "NCCL_NVLS_ENABLE",
)
MAX_SHOWN = 6


def seen(facts: Facts, status: str) -> list[str]:
    """'VAR=VALUE' for each path setting some host's NCCL printed as set by the environment, in PATH_VARS order, in a
    run that did not end well (a status other than clean, and no end of run in the logs); else none."""
    if status == "clean" or facts.success:
        return []
    values: dict[str, set[str]] = {}
    for h in facts.hosts.values():
        for var in PATH_VARS:
            if var in h.env:
                values.setdefault(var, set()).add(h.env[var])
    return [f"{var}={'/'.join(sorted(values[var]))}" for var in PATH_VARS if var in values][:MAX_SHOWN]
