"""End to end on the real 2-node local Slurm cluster: triage of a job where one rank was killed.

A torchrun job (rendered by `ncclgen slurm`, submitted unchanged, as tests/test_slurm_e2e.py does) runs
tests/e2e/kill_rank.py: the rank on node2 with LOCAL_RANK 0 is killed with SIGKILL while the other ranks
wait in a gloo all_reduce. The job's own output file, and the job script beside it, go to `ncclgen triage`:
it must name the kill on node2 as the first failure, not the gloo errors or timeouts of the ranks that waited,
and read the script for its plan only.
"""

from __future__ import annotations

import json
import sys
import uuid

import pytest
from test_slurm_e2e import E2E, FAIL_BOUND_S, _log, _render, _run_job, _wait_no_process, _workload

from ncclgen.triage import run

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def test_triage_names_the_killed_rank_not_the_waiting_ones(slurm_cluster, tmp_path):
    out = tmp_path / "kill"
    out.mkdir()
    marker = f"ncclgen-e2e-kill-{uuid.uuid4().hex}"
    wl = _workload(tmp_path, "e2e-kill", "torchrun", [sys.executable, str(E2E / "kill_rank.py"), str(out), marker])
    script = _render(wl, tmp_path)
    job, result, _wall = _run_job(slurm_cluster, script, tmp_path, timeout=FAIL_BOUND_S + 120)
    log = _log(tmp_path, job)
    assert (out / "killed-node2").exists(), log
    assert "ncclgen: torchrun on node node2 is pid " in log, log  # what ties torchrun's lines to their node
    assert result.state == "FAILED", result.raw + "\n" + log
    logfile = tmp_path / f"ncclgen-{job}.out"
    text, code = run.triage([str(logfile), str(script)], fmt="json")
    data = json.loads(text)
    assert code == 0 and data["status"] == "cause", text + log
    assert data["first"]["signature"] == "sigkill", text + log
    assert data["first"]["node"] == "node2", text + log
    assert data["plan"]["from"].startswith("the job script's Regenerate: line"), text
    assert str(script) not in {t["first"]["where"].rsplit(":", 1)[0] for t in data["then"] if t["first"]}
    assert _wait_no_process(marker) == []
