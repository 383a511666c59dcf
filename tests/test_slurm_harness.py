"""The local Slurm harness runs real jobs: multi-node srun with env values intact, exit codes,
`sbatch --test-only` against the declared H100 node shape, fail-fast start, and a clean stop."""

import shlex
import time

import pytest
import slurm_harness
from slurm_harness import LocalSlurm, SlurmHarnessError

pytestmark = pytest.mark.slurm

# NCCL_IB_HCA syntax: `^` excludes, `=` matches exactly, commas separate hca:port. Commas are what
# `srun --export=VAR=value` would split, so this value shows the path from script to task is intact.
HCA_VALUE = "^=mlx5_0:1,mlx5_3:1"


def _script(path, body: str):
    path.write_text("#!/bin/bash\n" + body, encoding="ascii")
    return path


def test_two_node_job_runs_srun_on_both_nodes_with_env_intact(slurm_cluster, tmp_path):
    out = tmp_path / "job.out"
    script = _script(
        tmp_path / "two.sbatch",
        (
            "set -euo pipefail\n"
            f"export NCCL_IB_HCA={shlex.quote(HCA_VALUE)}\n"
            """srun bash -c 'printf "%s|%s|%s\\n" "$SLURMD_NODENAME" "$SLURM_GPUS_ON_NODE" "$NCCL_IB_HCA"'\n"""
        ),
    )
    job = slurm_cluster.sbatch(
        script, "--nodes=2", "--ntasks-per-node=1", "--gpus-per-node=2", f"--output={out}", cwd=tmp_path
    )
    result = slurm_cluster.wait(job, timeout=30)
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + out.read_text()
    assert sorted(out.read_text().splitlines()) == [f"node1|2|{HCA_VALUE}", f"node2|2|{HCA_VALUE}"]


def test_failing_job_ends_failed_with_its_exit_code(slurm_cluster, tmp_path):
    job = slurm_cluster.sbatch(_script(tmp_path / "fail.sbatch", "exit 7\n"), "--output=/dev/null")
    result = slurm_cluster.wait(job, timeout=30)
    assert (result.state, result.exit_code) == ("FAILED", 7), result.raw


def test_test_only_accepts_two_full_h100_nodes(slurm_cluster, tmp_path):
    rc, err = slurm_cluster.test_only(
        _script(tmp_path / "t.sbatch", "true\n"),
        "--nodes=2",
        "--gpus-per-node=h100:8",
        "--cpus-per-task=224",
        "--exclusive",
    )
    assert rc == 0 and "on nodes node[1-2] in partition debug" in err, err


def test_wait_timeout_cancels_the_job(slurm_cluster, tmp_path):
    """A test that gives up must not leave its job holding nodes that later tests need."""
    job = slurm_cluster.sbatch(_script(tmp_path / "long.sbatch", "sleep 120\n"), "--output=/dev/null")
    with pytest.raises(SlurmHarnessError, match=f"job {job} not finished after 0.5 s"):
        slurm_cluster.wait(job, timeout=0.5)
    assert slurm_cluster.wait(job, timeout=15).state == "CANCELLED"


@pytest.mark.parametrize("too_much", ["--gpus-per-node=9", "--gpus-per-node=a100:8", "--cpus-per-task=225"])
def test_test_only_rejects_what_a_node_does_not_have(slurm_cluster, tmp_path, too_much):
    rc, err = slurm_cluster.test_only(_script(tmp_path / "t.sbatch", "true\n"), "--nodes=2", too_much)
    assert rc != 0 and "Requested node configuration is not available" in err, err


class _FilelessGpus(LocalSlurm):
    """gres.conf without File=: slurmd drops such GPUs, reports 0 < 8 and slurmctld marks it INVAL."""

    def _gres_conf(self) -> str:
        return f"AutoDetect=off\nNodeName={','.join(self.nodes)} Name=gpu Type=h100 Count=8\n"


def test_broken_node_fails_fast_with_log_tails_and_leaves_nothing(slurm_cluster, tmp_path):
    """Runs beside the session cluster: its own ports, its own processes."""
    cluster = _FilelessGpus(tmp_path / "c", nodes=1)
    t0 = time.monotonic()
    with pytest.raises(SlurmHarnessError) as err:
        cluster.start()
    assert time.monotonic() - t0 < 15
    assert "gres/gpu count reported lower than configured (0 < 8)" in str(err.value)
    assert cluster.running_pids() == []
    assert slurm_cluster.running_pids(), "the session cluster must be untouched"


def test_stop_cancels_running_jobs_and_ends_every_process(slurm_cluster, tmp_path):
    cluster = LocalSlurm(tmp_path / "c", nodes=1)
    cluster.start()
    try:
        started = tmp_path / "started"
        job = cluster.sbatch(
            _script(tmp_path / "sleep.sbatch", f"echo $$ > {started}\nexec sleep 300\n"), "--output=/dev/null"
        )
        deadline = time.monotonic() + 15
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        job_pid = int(started.read_text())
        assert job_pid in cluster.running_pids(), f"job {job} runs without the harness marker"
    finally:
        cluster.stop()
    assert cluster.running_pids() == []
    assert slurm_harness._proc_state(job_pid) in (None, "Z")
    assert slurm_cluster.running_pids(), "the session cluster must be untouched"
