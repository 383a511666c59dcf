"""Triage offers no advice that ncclgen's own lint calls wrong for the run's fabric.

A fix that names an NCCL variable is offered on a fabric only if lint's scope rule (ncclgen/lint/rules.py
_scope_findings: RoCE-only knobs are wrong on InfiniBand, IB verbs knobs off IB/RoCE, Socket knobs where GPU
traffic never uses sockets) accepts that variable there. IBV_WC_RETRY_EXC_ERR(12) on InfiniBand gets the
link/subnet-manager fix, never the RoCE GID index.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ncclgen.lint import knowledge as kb
from ncclgen.lint.rules import SOCKET_IRRELEVANT, VERBS_FABRICS
from ncclgen.triage import catalogue, plancheck, run

DATA = Path(__file__).parent / "data" / "triage"
FABRICS = ("infiniband", "roce", "tcp", "efa")


def lint_allows(name: str, fabric: str) -> bool:
    info = kb.lookup(name)
    scope = info.scope if info else "any"
    if scope == "socket":
        return fabric not in SOCKET_IRRELEVANT
    if scope in ("ib", "roce", "infiniband") and fabric not in VERBS_FABRICS:
        return False
    if scope == "roce":
        return fabric != "infiniband"
    if scope == "infiniband":
        return fabric != "roce"
    return True


def every_entry():
    return list(catalogue.signatures()) + list(catalogue.classes().values())


@pytest.mark.parametrize("fabric", FABRICS)
def test_no_fix_names_a_variable_lint_calls_wrong_on_the_fabric(fabric):
    bad = []
    for sig in every_entry():
        if not plancheck.holds_on(sig, fabric):
            continue
        fix = plancheck.fix_for(sig, fabric, {})
        for name in re.findall(r"\b(NCCL_[A-Z0-9_]+)\b", fix):
            if not lint_allows(name, fabric):
                bad.append((sig.id, name))
    assert bad == []


def test_retry_exceeded_on_infiniband_gets_no_gid_fix():
    text, code = run.triage([str(DATA / "nccl-426-roce-gid.log")], "h100-ib", fmt="json")
    data = json.loads(text)
    assert code == 0 and data["fabric"] == {"name": "infiniband", "from": "the plan"}
    assert "GID_INDEX" not in data["fix"] and "gid_index" not in data["fix"]
    assert "subnet manager" in data["fix"]


def test_retry_exceeded_on_roce_gets_the_gid_fix():
    text, _ = run.triage([str(DATA / "nccl-426-roce-gid.log")], "oci-bm-gpu-h100-8", fmt="json")
    data = json.loads(text)
    assert data["fabric"]["name"] == "roce" and "gid_index" in data["fix"]


def test_fabric_unknown_names_each_fix_with_its_fabric():
    text, _ = run.triage([str(DATA / "nccl-426-roce-gid.log")], fmt="json")
    data = json.loads(text)
    assert data["fabric"]["name"] is None
    assert "on RoCE: " in data["fix"] and "on InfiniBand: " in data["fix"]


def test_fabric_from_the_hcas_link_layer_in_the_logs(tmp_path):
    log = tmp_path / "ib.log"
    log.write_text(
        "gpu1:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>\n"
        + (DATA / "nccl-426-roce-gid.log").read_text()
    )
    data = json.loads(run.triage([str(log)], fmt="json")[0])
    assert data["fabric"] == {"name": "infiniband", "from": "the logs' HCA link layer or IPoIB interfaces"}
    assert "gid_index" not in data["fix"]


def test_omni_path_nics_without_gdrdma_are_no_missing_peer_memory_module(tmp_path):
    """NCCL tests GPUDirect RDMA by NVIDIA's peer-memory module only; Omni-Path HFIs (hfi1_N) through its IB verbs
    net are not that path, so channels without GDRDMA there are no slow-run finding (a 16-node all_reduce run)."""
    from triage_json import triage

    lines = "".join(
        f"{h}:1:1 [0] NCCL INFO NET/IB : Using [0]hfi1_2:1/IB [1]hfi1_0:1/IB ; OOB ib0:10.148.0.{i}<0>\n"
        f"{h}:1:1 [0] NCCL INFO Channel 00 : {i} -> {1 - i} [send] via NET/IB/0\n"
        for i, h in enumerate(("r7i4n1", "r8i5n2"))
    )
    assert triage(tmp_path, lines)["status"] != "slow"
    mlx = lines.replace("hfi1_2", "mlx5_2").replace("hfi1_0", "mlx5_0")
    assert triage(tmp_path, mlx)["status"] == "slow"  # NVIDIA NICs: the module is what is missing
