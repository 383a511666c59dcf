"""`ncclgen slurm --pass-env NAME` on the real 2-node Slurm cluster (tests/slurm_harness.py): the value
exported before sbatch reaches every rank, is in no file ncclgen wrote, and a job submitted without it
stops at start-up with one line (exit 2).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_slurm_e2e import E2E, GPUS_PER_NODE, NODES, _log, _run_job, _workload

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

NAME = "NCCLGEN_E2E_PASSED"
VALUE = "s3cr3t $(not run) `nor this` 'quoted', with commas"


def _render(workload, tmp_path):
    script = tmp_path / "job.sh"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ncclgen",
            "slurm",
            "--cluster",
            "local-ci",
            "--tier",
            "1",
            "--workload",
            str(workload),
            "--partition",
            "debug",
            "--pass-env",
            NAME,
            "-o",
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0 and script.is_file(), r.stderr
    return script


def test_passed_variable_reaches_every_rank_and_no_file(slurm_cluster, tmp_path, monkeypatch):
    out = tmp_path / "ranks"
    out.mkdir()
    wl = _workload(tmp_path, "e2e-pass-env", "torchrun", [sys.executable, str(E2E / "allreduce.py"), str(out)])
    script = _render(wl, tmp_path)
    assert VALUE not in script.read_text() and NAME in script.read_text()

    monkeypatch.setenv(NAME, VALUE)  # the submitter's environment (slurm_cluster.env copies it)
    job, result, _ = _run_job(slurm_cluster, script, tmp_path)
    log = _log(tmp_path, job)
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log
    reports = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(out.glob("rank-*.json"))]
    assert len(reports) == NODES * GPUS_PER_NODE
    assert all(r["env"].get(NAME) == VALUE for r in reports)

    monkeypatch.delenv(NAME)
    job, result, _wall = _run_job(slurm_cluster, script, tmp_path, timeout=60)
    log = _log(tmp_path, job)
    assert (result.state, result.exit_code) == ("FAILED", 2), result.raw + "\n" + log
    errors = [ln for ln in log.splitlines() if "ncclgen: ERROR" in ln]
    assert errors == [
        f"ncclgen: ERROR: --pass-env {NAME}: {NAME} is empty or not set in the job environment "
        "(export it before sbatch, which passes the submission environment unless --export says "
        "otherwise)"
    ], log
