"""The preflight's GPUDirect RDMA check (ncclgen/jobside/preflight.py check_gdr) on fake nodes built from
the sysfs fixtures (tests/sysfs_fixtures.py), and where the plan asks for it (network.gpudirect_rdma on
InfiniBand/RoCE). /proc/driver/nvidia/version and the kernel release are files and values the test
gives: a fake tree cannot load a module."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
import sysfs_fixtures as sf

from ncclgen import jobside, pipeline
from ncclgen.jobside import preflight as pf
from ncclgen.plan import preflight as spec_mod

PROPRIETARY = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024"
OPEN = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build"


class Node(pf.Node):
    def __init__(self, root: Path, kernel="6.8.0-45-generic"):
        super().__init__(
            sysfs=str(root / "sys"), dev=str(root / "dev"), environ={"NCCLGEN_PREFLIGHT_PROC": str(root / "proc")}
        )
        self._kernel = kernel

    def name(self):
        return "node7"

    def kernel(self):
        return self._kernel


def node(tmp_path, peermem=None, driver=None, kernel="6.8.0-45-generic"):
    sf.dgx_h100(tmp_path)
    t = sf.Tree(tmp_path)
    if peermem:
        t.file(f"/sys/{peermem}", "1.0")
    if driver:
        t.file("/proc/driver/nvidia/version", driver)
    return Node(tmp_path, kernel)


@pytest.mark.parametrize(
    "peermem, driver, kernel",
    [
        ("module/nvidia_peermem/version", PROPRIETARY, "5.4.0"),
        ("kernel/mm/memory_peers/nv_mem/version", PROPRIETARY, "5.4.0"),  # MLNX_OFED's nv_peer_mem
        (None, OPEN, "5.15.0-105-generic"),  # DMA-BUF
    ],
)
def test_gdr_support_passes(tmp_path, peermem, driver, kernel):
    assert list(pf.check(node(tmp_path, peermem, driver, kernel), {"gdr": True})) == []


@pytest.mark.parametrize(
    "driver, kernel, why",
    [
        (PROPRIETARY, "6.8.0", "the proprietary GPU kernel module (DMA-BUF needs the open one)"),
        (OPEN, "5.10.0-28-amd64", "Linux 5.10.0-28-amd64 (DMA-BUF needs 5.12 or later)"),
        (None, "6.8.0", "no NVIDIA driver (/proc/driver/nvidia/version)"),
    ],
)
def test_no_gdr_support_fails(tmp_path, driver, kernel, why):
    problems = list(pf.check(node(tmp_path, None, driver, kernel), {"gdr": True}))
    assert problems == [
        (
            "GPUDirect RDMA",
            "nvidia_peermem loaded, or DMA-BUF (open GPU kernel module, Linux >= 5.12)",
            f"no nvidia_peermem module (/sys/module/nvidia_peermem); {why}",
        )
    ]
    err = io.StringIO()
    assert pf.run({"gdr": True}, Node(tmp_path, kernel), out=io.StringIO(), err=err) == 6
    assert err.getvalue().startswith("ncclgen: preflight FAILED: node node7: GPUDirect RDMA: expected nvidia_peermem")


def test_not_asked_not_checked(tmp_path):
    assert list(pf.check(node(tmp_path), {})) == []


@pytest.mark.parametrize(
    "cluster, asked",
    [
        ("h100-ib", True),
        ("oci-bm-gpu-h100-8", True),
        ("azure-nd-h100-v5", True),
        ("aws-p5", False),
        ("local-ci", False),
    ],
)
def test_the_plan_asks_on_infiniband_and_roce_where_declared(cluster, asked):
    spec = spec_mod.spec(plan_for(cluster, 1, "verl-sft"), plugin_files=())
    assert spec.get("gdr", False) is asked
    assert ("GPUDirect RDMA: nvidia_peermem loaded or DMA-BUF supported" in spec_mod.describe(spec)) is asked


def test_the_embedded_program_reads_proc_from_the_variable(tmp_path):
    """As the job runs it: the program's text, a fresh interpreter, the fake tree through the variables."""
    sf.dgx_h100(tmp_path)
    sf.Tree(tmp_path).file("/proc/driver/nvidia/version", PROPRIETARY)
    env = {"NCCLGEN_PREFLIGHT_SYSFS": str(tmp_path / "sys"), "NCCLGEN_PREFLIGHT_PROC": str(tmp_path / "proc")}
    p = subprocess.run(
        [sys.executable, "-c", jobside.source("preflight", compact=True), '{"v":1,"gdr":true}'],
        env={**env, "SLURMD_NODENAME": "n1"},
        capture_output=True,
        text=True,
    )
    assert p.returncode == 6
    assert "node n1: GPUDirect RDMA:" in p.stderr


def plan_for(cluster, tier, workload, target="host", transport_check="on"):
    return pipeline.make_plan(pipeline.request(cluster, tier, workload, target=target, transport_check=transport_check))
