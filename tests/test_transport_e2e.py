"""The transport check in real jobs on the local 2-node Slurm cluster (tests/slurm_harness.py), with the NCCL
stand-in (tests/nccl_standin.py) as every rank: no GPU here, so nothing real can print NCCL's lines.

The cluster is local-ci turned into an InfiniBand cluster with two rails (mlx5_0, mlx5_1) and GPUDirect RDMA,
rendered with --no-preflight (this machine has no HCA). On node2 only, the stand-in reports no GDRDMA, one
rail missing, or the Socket net: the job ends FAILED within 3 s of that node's line, with the line naming the
node and the item. All nodes as planned: the job completes. --transport-check warn: it completes with the
line printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ncclgen.load import descriptor

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
STANDIN = ROOT / "tests" / "nccl_standin.py"
ENDS_WITHIN_S = 3.0
JOB_TIMEOUT_S = 180


def _descriptor(tmp_path: Path, pin_net: bool = True) -> Path:
    data = yaml.safe_load(Path(descriptor.resolve("local-ci")).read_text(encoding="utf-8"))
    data["name"] = "ib-standin"
    data["description"] = "local-ci as an InfiniBand cluster with GPUDirect RDMA (transport check test)"
    data["network"]["fabric"] = "infiniband"
    data["network"]["gpudirect_rdma"] = True
    data["network"]["compute"] = [
        {"hca": "mlx5_0", "port": 1, "gbps": 400, "gpus": [0], "numa": 0},
        {"hca": "mlx5_1", "port": 1, "gbps": 400, "gpus": [1], "numa": 1},
    ]
    if not pin_net:  # the plan does not pin NCCL_NET=IB, so NCCL can fall back to Socket
        data["vendor_env"] = [{"name": "NCCL_NET", "omit": True, "reason": "test: no pin", "source": "harness"}]
    path = tmp_path / "ib-standin.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _workload(tmp_path: Path) -> Path:
    path = tmp_path / "standin.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "standin",
                "description": "NCCL stand-in ranks (transport check e2e)",
                "launcher": "torchrun",
                "framework": "torch",
                "nodes": 2,
                "time": "00:10:00",
                "command": [sys.executable, str(STANDIN)],
            }
        ),
        encoding="utf-8",
    )
    return path


def _render(tmp_path: Path, *extra: str, pin_net: bool = True) -> Path:
    out = tmp_path / "job.sh"
    cluster = str(_descriptor(tmp_path, pin_net))
    cmd = [sys.executable, "-m", "ncclgen", "slurm", "--cluster", cluster, "--tier", "1"]
    cmd += ["--workload", str(_workload(tmp_path)), "--partition", "debug", "--no-preflight", "-o", str(out), *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0 and out.is_file(), r.stderr
    return out


def _run(cluster, tmp_path, monkeypatch, fault="", after_s=30, extra=(), pin_net=None):
    stamp = tmp_path / "stamp.txt"
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    monkeypatch.setenv("NCCLGEN_STANDIN_HCAS", "mlx5_0:1,mlx5_1:1")
    monkeypatch.setenv("NCCLGEN_STANDIN_FAULT", fault)
    monkeypatch.setenv("NCCLGEN_STANDIN_FAULT_NODE", "node2")
    monkeypatch.setenv("NCCLGEN_STANDIN_AFTER_S", str(after_s))
    monkeypatch.setenv("NCCLGEN_STANDIN_STAMP", str(stamp))
    script = _render(tmp_path, *extra, pin_net=fault != "socket" if pin_net is None else pin_net)
    job = cluster.sbatch(script, cwd=tmp_path)
    result = cluster.wait(job, timeout=JOB_TIMEOUT_S)
    log_path = tmp_path / f"ncclgen-{job}.out"
    log = log_path.read_text(encoding="utf-8", errors="replace") if log_path.exists() else "(no log)"
    stamps = [float(line.split()[1]) for line in stamp.read_text().splitlines()] if stamp.exists() else []
    return result, cluster.end_time(job), stamps, log


@pytest.mark.parametrize(
    "fault, line",
    [
        (
            "nogdr",
            "ncclgen: transport FAILED: node node2: GPUDirect RDMA: expected every NET channel via .../GDRDMA, found ",
        ),
        (
            "rail",
            "ncclgen: transport FAILED: node node2: HCAs: expected mlx5_0:1,mlx5_1:1, found mlx5_0:1 (not opened: mlx5_1:1)",
        ),
        ("socket", "ncclgen: transport FAILED: node node2: net: expected IB, found Socket"),
    ],
)
def test_a_node_that_differs_fails_the_job_within_3_s(slurm_cluster, tmp_path, monkeypatch, fault, line):
    result, ended, stamps, log = _run(slurm_cluster, tmp_path, monkeypatch, fault)
    assert result.state == "FAILED", result.raw + "\n" + log
    assert line in log, log
    assert "ncclgen: transport FAILED: node node1" not in log, log
    assert stamps and ended is not None, log
    print(f"{fault}: the job ended {ended - min(stamps):.2f} s after node2's line (exit {result.exit_code})")
    assert ended - min(stamps) <= ENDS_WITHIN_S, log


def test_a_pinned_net_fails_nccl_init_and_its_warn_reaches_the_log(slurm_cluster, tmp_path, monkeypatch):
    """With NCCL_NET=IB pinned (tier 1), a node without IB fails NCCL's own init (no silent Socket); the
    rank's WARN line, written to its debug file, reaches the job's log through the check."""
    result, _, _, log = _run(slurm_cluster, tmp_path, monkeypatch, "socket", pin_net=True)
    assert result.state == "FAILED", result.raw + "\n" + log
    assert "NCCL WARN Failed to initialize any NET plugin" in log, log


def test_all_as_planned_completes(slurm_cluster, tmp_path, monkeypatch):
    result, _, _, log = _run(slurm_cluster, tmp_path, monkeypatch, after_s=2)
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log
    assert "transport FAILED" not in log, log
    for node in ("node1", "node2"):
        assert (
            f"ncclgen: transport: node {node}: NCCL 2.30.7, net IB, plugin -, HCAs mlx5_0:1,mlx5_1:1 (2 of 2 planned)"
            in log
        ), log


def test_warn_completes_with_the_line_printed(slurm_cluster, tmp_path, monkeypatch):
    result, _, _, log = _run(
        slurm_cluster, tmp_path, monkeypatch, "nogdr", after_s=2, extra=("--transport-check", "warn")
    )
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log
    assert "ncclgen: transport FAILED: node node2: GPUDirect RDMA:" in log, log
