"""The preflight as a real step of real jobs on the local 2-node Slurm cluster (tests/slurm_harness.py).

- a local-ci job passes it on both nodes and then launches;
- a job rendered from a descriptor whose HCAs this machine lacks (local-ci turned into an InfiniBand
  cluster with mlx5_0/mlx5_1 rails) ends FAILED with the preflight's exit status within 15 s of
  submission, with a line naming the missing device, and starts no torchrun or Ray process;
- the same job rendered with --no-preflight launches.

"No torchrun or Ray process" is observed, not assumed: `torchrun` and `ray` on the jobs' PATH are
shims that append to a marker file and exec the real program, so a launch leaves a trace even if it
dies at once. The passing jobs show that the shims are the programs the jobs run.
The harness points the preflight's GPU count at its fake /dev/nvidiaN (NCCLGEN_PREFLIGHT_DEV); the
interfaces, HCAs, /dev/shm and limits it checks are this machine's own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ncclgen.load import descriptor
from ncclgen.plan import preflight

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

NODES = 2
FAILED_WITHIN_S = 15  # issue 11: a job whose HCAs are missing ends FAILED within 15 s of submission
JOB_TIMEOUT_S = 240


def _descriptor_without_hcas(tmp_path: Path) -> Path:
    """local-ci with two InfiniBand rails, mlx5_0 and mlx5_1, which this machine does not have."""
    data = yaml.safe_load(Path(descriptor.resolve("local-ci")).read_text(encoding="utf-8"))
    data["name"] = "ib-missing"
    data["description"] = "local-ci with InfiniBand rails this machine lacks (preflight test)"
    data["network"]["fabric"] = "infiniband"
    data["network"]["compute"] = [
        {"hca": "mlx5_0", "port": 1, "gbps": 400, "gpus": [0], "numa": 0},
        {"hca": "mlx5_1", "port": 1, "gbps": 400, "gpus": [1], "numa": 1},
    ]
    path = tmp_path / "ib-missing.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _workload(tmp_path: Path, launcher: str, marker: Path) -> Path:
    # The rank / driver program also leaves a trace: it is what the launch would run.
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'a').write('ran\\n')"]
    path = tmp_path / f"pf-{launcher}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": f"pf-{launcher}",
                "description": "preflight end-to-end test",
                "launcher": launcher,
                "framework": "torch",
                "nodes": NODES,
                "time": "00:10:00",
                "command": command,
            }
        ),
        encoding="utf-8",
    )
    return path


def _render(cluster: str | Path, workload: Path, out: Path, *extra: str) -> Path:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ncclgen",
            "slurm",
            "--cluster",
            str(cluster),
            "--tier",
            "3",
            "--workload",
            str(workload),
            "--partition",
            "debug",
            "-o",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0 and out.is_file(), r.stderr
    return out


@pytest.fixture
def shims(tmp_path, monkeypatch) -> Path:
    """`torchrun` and `ray` first on the jobs' PATH, appending their name to the returned file."""
    trace = tmp_path / "launched.txt"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("torchrun", "ray"):
        real = shutil.which(name)
        assert real, f"{name} is not installed"
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\necho {name} >> {trace}\nexec {real} "$@"\n', encoding="utf-8")
        shim.chmod(0o755)
    # LocalSlurm.env copies os.environ at each call; sbatch hands it to the job (--export=ALL).
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}")
    return trace


def _submit(cluster, script: Path, cwd: Path, timeout: float = JOB_TIMEOUT_S):
    t0 = time.monotonic()
    job = cluster.sbatch(script, cwd=cwd)
    result = cluster.wait(job, timeout=timeout)
    elapsed = time.monotonic() - t0
    log = cwd / f"ncclgen-{job}.out"
    return result, elapsed, log.read_text(encoding="utf-8", errors="replace") if log.exists() else "(no log)"


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
def test_missing_hca_fails_the_job_before_any_launch(slurm_cluster, tmp_path, shims, launcher):
    ran = tmp_path / "ran.txt"
    script = _render(_descriptor_without_hcas(tmp_path), _workload(tmp_path, launcher, ran), tmp_path / "job.sh")
    result, elapsed, log = _submit(slurm_cluster, script, tmp_path, timeout=60)
    print(f"{launcher} job with missing HCAs: {result.state} exit {result.exit_code} {elapsed:.1f} s after submission")
    assert (result.state, result.exit_code) == ("FAILED", preflight.EXIT_PROBLEMS), result.raw + "\n" + log
    assert elapsed <= FAILED_WITHIN_S, log
    for node in ("node1", "node2"):
        assert (
            f"ncclgen: preflight FAILED: node {node}: NCCL_IB_HCA mlx5_0 port 1: expected an RDMA device "
            f"named mlx5_0, found no such device"
        ) in log, log
    assert not shims.exists(), f"launched: {shims.read_text()}\n{log}"
    assert not ran.exists(), log


def test_local_ci_passes_the_preflight_then_launches(slurm_cluster, tmp_path, shims):
    ran = tmp_path / "ran.txt"
    script = _render("local-ci", _workload(tmp_path, "torchrun", ran), tmp_path / "job.sh")
    result, elapsed, log = _submit(slurm_cluster, script, tmp_path)
    print(f"local-ci torchrun job: {result.state} exit {result.exit_code} after {elapsed:.1f} s")
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log
    for node in ("node1", "node2"):
        assert f"ncclgen: preflight passed on node {node} in " in log, log
    assert shims.read_text().split() == ["torchrun", "torchrun"], log  # one agent per node
    assert ran.read_text().split() == ["ran"] * 4, log  # 2 nodes x 2 ranks


def test_no_preflight_launches_even_without_the_hcas(slurm_cluster, tmp_path, shims):
    ran = tmp_path / "ran.txt"
    script = _render(
        _descriptor_without_hcas(tmp_path), _workload(tmp_path, "torchrun", ran), tmp_path / "job.sh", "--no-preflight"
    )
    assert "NCCLGEN_PREFLIGHT" not in script.read_text(encoding="utf-8")
    result, _, log = _submit(slurm_cluster, script, tmp_path)
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log
    assert "preflight" not in log and shims.read_text().split() == ["torchrun", "torchrun"], log
