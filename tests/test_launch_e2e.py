"""The launch at scale on the real 2-node Slurm cluster (tests/slurm_harness.py), issue 28.

- a torchrun job submitted from a shell with NCCL_ALGO=Tree (a ~/.bashrc habit the plan does not set):
  every rank runs without it, and the log names its removal;
- the torchrun launch is one srun step for all nodes.
"""

from __future__ import annotations

import json
import sys

import pytest
from test_slurm_e2e import E2E, GPUS_PER_NODE, NODES, _log, _render, _run_job, _workload

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def test_torchrun_job_from_a_shell_with_nccl_algo_runs_without_it(slurm_cluster, tmp_path, monkeypatch):
    out = tmp_path / "ranks"
    out.mkdir()
    wl = _workload(tmp_path, "e2e-scrub", "torchrun", [sys.executable, str(E2E / "allreduce.py"), str(out)])
    script = _render(wl, tmp_path)
    monkeypatch.setenv("NCCL_ALGO", "Tree")  # the submitting shell (slurm_cluster.env copies os.environ)
    job, result, _ = _run_job(slurm_cluster, script, tmp_path)
    log = _log(tmp_path, job)
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log
    line = "ncclgen: removed NCCL_ALGO from the submitting environment (not in the plan; --pass-env NAME keeps it)"
    assert log.count(line) == 1, log
    reports = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(out.glob("rank-*.json"))]
    assert len(reports) == NODES * GPUS_PER_NODE, log
    assert all("NCCL_ALGO" not in r["env"] for r in reports)
    # One step for all nodes: every rank reports the same step id (SLURM_STEP_ID), both nodes present.
    assert {r["env"]["SLURM_STEP_ID"] for r in reports} == {reports[0]["env"]["SLURM_STEP_ID"]}
    assert {r["node"] for r in reports} == {f"node{n}" for n in range(1, NODES + 1)}


def test_ray_job_runs_its_setup_exactly_once_per_node(slurm_cluster, tmp_path):
    """Head, workers and driver steps: the setup line ran once on each node (0ddb3a1: 4 times on the head,
    twice at the same moment), and what it exported reached the Ray tasks."""
    out = tmp_path / "ray"
    out.mkdir()
    ran = tmp_path / "setup-ran.txt"
    setup = [f'echo "$SLURMD_NODENAME" >> {ran}', "export NCCLGEN_E2E_SETUP=once"]
    gpus = NODES * GPUS_PER_NODE
    wl = _workload(
        tmp_path,
        "e2e-ray-setup",
        "ray",
        [sys.executable, str(E2E / "ray_driver.py"), str(out), str(NODES), str(gpus)],
        setup=setup,
    )
    job, result, _ = _run_job(slurm_cluster, _render(wl, tmp_path), tmp_path)
    log = _log(tmp_path, job)
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log
    assert sorted(ran.read_text().split()) == [f"node{n}" for n in range(1, NODES + 1)], log
    report = json.loads((out / "ray.json").read_text(encoding="utf-8"))
    assert {t["env"].get("NCCLGEN_E2E_SETUP") for t in report["tasks"]} == {"once"}
