"""End to end on a real 2-node Slurm cluster: `ncclgen slurm` scripts run torchrun and Ray for real.

The rendered sbatch script is submitted unchanged to the local cluster (tests/slurm_harness.py), on the
`local-ci` descriptor at tier 3: torchrun/gloo and a Ray cluster on CPU, 2 fake nodes x 2 fake GPUs.
What each rank or Ray task really saw (environment, CPU affinity, world size) is written as JSON by the
programs in tests/e2e/ and compared with the plan built in-process, exactly as the CLI builds it.
The failure tests assert fail-fast from timestamps: the job's end as slurmctld recorded it
(LocalSlurm.end_time, ms precision) minus the failing process's own exit time, or the moment the test
killed a raylet. The bound is FAIL_FAST_S on this shared, loaded 2-core machine.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import slurm_harness
import yaml

from ncclgen.load import cpuset, descriptor
from ncclgen.pipeline import make_plan, request
from ncclgen.plan import flightrec

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

E2E = Path(__file__).resolve().parent / "e2e"
CLUSTER, TIER, NODES = "local-ci", 3, 2
GPUS_PER_NODE = descriptor.load_cluster(CLUSTER).node.gpus_per_node
# Commas are what `srun --export=A=x,B=y` would split, `^` and `=` are NCCL list syntax, and the quote,
# space and `$` would be mangled by any unquoted shell expansion on the way to the ranks. NCCL reads
# this variable (debug log path) but these CPU jobs never load NCCL, so nothing is written there.
SETS = ("NCCL_DEBUG_FILE=/tmp/ncclgen-e2e/it's a $HOME,y^z.%h.%p",)
# Generous for 2 cores (lab: 2-node torchrun job 9-11 s, Ray job 24-28 s), bounded so a hang fails.
JOB_TIMEOUT_S = 240
FAIL_BOUND_S = 60  # the failing-rank job must be over within this, counted from submission
RAY_FAULT_BOUND_S = 30  # how long wait() polls after a fault before giving up
FAIL_FAST_S = 3.0  # a failed rank, raylet or driver ends the job within this (issue 14)
READY = re.compile(r"Ray cluster ready.*?after ([0-9.]+) ?s")


def _workload(tmp_path: Path, name: str, launcher: str, command: list[str], **more) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                **more,
                "name": name,
                "description": f"ncclgen end-to-end test ({launcher})",
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


def _render(workload: Path, tmp_path: Path, *extra: str) -> Path:
    """Render with the real CLI in its own process, as a user would."""
    script = tmp_path / "job.sh"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ncclgen",
            "slurm",
            "--cluster",
            CLUSTER,
            "--tier",
            str(TIER),
            "--workload",
            str(workload),
            "--partition",
            "debug",
            "-o",
            str(script),
            *(arg for s in SETS for arg in ("--set", s)),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0 and script.is_file(), r.stderr
    return script


def _plan(workload: Path):
    return make_plan(request(CLUSTER, TIER, str(workload), None, SETS, False))


def _log(cwd: Path, job: str) -> str:
    path = cwd / f"ncclgen-{job}.out"
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else f"(no {path.name})"


def _run_job(cluster, script: Path, cwd: Path, timeout: float = JOB_TIMEOUT_S):
    t0 = time.monotonic()
    job = cluster.sbatch(script, cwd=cwd)
    result = cluster.wait(job, timeout=timeout)
    return job, result, time.monotonic() - t0


def _cpus(plan, gpu: int) -> list[int]:
    (b,) = [b for b in plan.binding if b.gpu == gpu]
    return sorted(cpuset.parse(b.cpus))


def _assert_env(seen: dict[str, str], plan, who: str) -> None:
    # the flight recorder's folder is the job's own (${SLURM_JOB_ID:-local} expanded by the batch script)
    want = {k: v.replace(flightrec.JOB, seen.get("SLURM_JOB_ID", "local")) for k, v in plan.env_dict().items()}
    got = {name: seen.get(name) for name in want}
    assert got == want, f"{who}: environment differs from the plan"


def _pgrep(pattern: str) -> list[str]:
    r = subprocess.run(["pgrep", "-a", "-f", pattern], capture_output=True, text=True, check=False)
    return r.stdout.splitlines()


def _wait_no_process(pattern: str, grace_s: float = 5.0) -> list[str]:
    """Processes still matching after a short grace (a killed process may take a moment to exit)."""
    deadline = time.monotonic() + grace_s
    while (left := _pgrep(pattern)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def test_torchrun_two_nodes_env_and_binding_reach_every_rank(slurm_cluster, tmp_path):
    out = tmp_path / "ranks"
    out.mkdir()
    wl = _workload(tmp_path, "e2e-torchrun", "torchrun", [sys.executable, str(E2E / "allreduce.py"), str(out)])
    plan = _plan(wl)
    job, result, wall = _run_job(slurm_cluster, _render(wl, tmp_path), tmp_path)
    print(f"torchrun job {job}: {result.state} exit {result.exit_code} after {wall:.1f} s")
    log = _log(tmp_path, job)
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log

    world = NODES * GPUS_PER_NODE
    reports = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(out.glob("rank-*.json"))]
    assert sorted(r["rank"] for r in reports) == list(range(world)), log
    assert {(r["node"], r["local_rank"]) for r in reports} == {
        (f"node{n}", lr) for n in range(1, NODES + 1) for lr in range(GPUS_PER_NODE)
    }
    for r in reports:
        who = f"rank {r['rank']} ({r['node']}, local rank {r['local_rank']})"
        assert r["world_size"] == world, who
        assert r["allreduce"] == world * (world + 1) / 2, who  # sum of rank+1
        _assert_env(r["env"], plan, who)
        assert r["affinity"] == _cpus(plan, r["local_rank"]), who


def test_setup_lines_run_on_every_node_in_the_step_before_the_program(slurm_cluster, tmp_path):
    """A workload's setup: lines reach each node byte for byte (quotes, $, backslash, backquote) and
    run in the same step as torchrun, so what they export is in every rank's environment."""
    out = tmp_path / "setup"
    out.mkdir()
    text = 'it\'s "quoted" $HOME \\ `x`'
    setup = [
        'export NCCLGEN_E2E_SETUP="ran on $SLURMD_NODENAME"',
        f'printf "%s\\n" {shlex.quote(text)} > {shlex.quote(str(out))}/"$SLURMD_NODENAME.txt"',
    ]
    probe = (
        "import os, sys; open(os.path.join(sys.argv[1], 'rank-' + os.environ['RANK']), 'w')"
        ".write(os.environ.get('NCCLGEN_E2E_SETUP', 'missing'))"
    )
    wl = _workload(tmp_path, "e2e-setup", "torchrun", [sys.executable, "-c", probe, str(out)], setup=setup)
    job, result, _wall = _run_job(slurm_cluster, _render(wl, tmp_path), tmp_path)
    log = _log(tmp_path, job)
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log
    ranks = {p.name: p.read_text() for p in out.glob("rank-*")}
    assert len(ranks) == NODES * GPUS_PER_NODE, log
    assert set(ranks.values()) == {f"ran on node{n}" for n in range(1, NODES + 1)}, ranks
    for n in range(1, NODES + 1):
        assert (out / f"node{n}.txt").read_text() == text + "\n"


def test_ray_two_nodes_tasks_spread_with_env_and_binding(slurm_cluster, tmp_path, record_property):
    out = tmp_path / "ray"
    out.mkdir()
    gpus = NODES * GPUS_PER_NODE
    wl = _workload(
        tmp_path, "e2e-ray", "ray", [sys.executable, str(E2E / "ray_driver.py"), str(out), str(NODES), str(gpus)]
    )
    plan = _plan(wl)
    job, result, wall = _run_job(slurm_cluster, _render(wl, tmp_path), tmp_path)
    log = _log(tmp_path, job)
    ready = READY.search(log)
    print(
        f"ray job {job}: {result.state} exit {result.exit_code} after {wall:.1f} s; "
        f"{ready.group(0) if ready else 'no ready line'}"
    )
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log
    assert ready, "the script must report when the Ray cluster is ready:\n" + log
    record_property("ray_ready_s", float(ready.group(1)))  # lands in --junitxml reports

    report = json.loads((out / "ray.json").read_text(encoding="utf-8"))
    assert (report["nodes_alive"], report["gpus"]) == (NODES, gpus)
    tasks = report["tasks"]
    assert all(len(t["gpu_ids"]) == 1 for t in tasks), tasks
    pairs = {(t["node"], int(t["gpu_ids"][0])) for t in tasks}
    assert pairs == {(f"node{n}", g) for n in range(1, NODES + 1) for g in range(GPUS_PER_NODE)}
    for t in tasks:
        gpu = int(t["gpu_ids"][0])
        who = f"Ray task on {t['node']} GPU {gpu}"
        _assert_env(t["env"], plan, who)
        assert t["affinity"] == _cpus(plan, gpu), who


def test_torchrun_failed_rank_ends_the_job_and_every_process(slurm_cluster, tmp_path):
    out = tmp_path / "fail"
    out.mkdir()
    marker = f"ncclgen-e2e-fail-{uuid.uuid4().hex}"
    wl = _workload(tmp_path, "e2e-fail", "torchrun", [sys.executable, str(E2E / "fail_rank.py"), str(out), marker])
    job, result, wall = _run_job(slurm_cluster, _render(wl, tmp_path), tmp_path, timeout=FAIL_BOUND_S + 60)
    log = _log(tmp_path, job)
    print(f"failing torchrun job {job}: {result.state} exit {result.exit_code} after {wall:.1f} s")
    assert sorted(p.name for p in out.iterdir()) == [
        "failed-at",
        "started-node1-0",
        "started-node1-1",
        "started-node2-0",
        "started-node2-1",
    ], log
    assert result.state == "FAILED" and result.exit_code != 0, result.raw + "\n" + log
    assert wall <= FAIL_BOUND_S, f"the job held its nodes {wall:.1f} s after submission\n{log}"
    _assert_fail_fast(slurm_cluster, job, float((out / "failed-at").read_text()), "the failing rank's exit", log)
    assert _wait_no_process(marker) == []


def _assert_fail_fast(cluster, job: str, t_fault: float, what: str, log: str) -> float:
    """The job ended within FAIL_FAST_S of t_fault (epoch s), by slurmctld's own record of its end."""
    end = cluster.end_time(job)
    assert end is not None, f"no end of job {job} in slurmctld.log\n{log}"
    delay = end - t_fault
    print(f"job {job}: ended {delay:.2f} s after {what}")
    assert -0.5 < delay <= FAIL_FAST_S, f"job {job} ended {delay:.2f} s after {what}\n{log}"
    return delay


def _raylet_of(job: str, node: str, cluster=None) -> int | None:
    """The raylet the job started for `node`: fake nodes share one host, so match the Slurm env, and the
    cluster's marker (another local cluster on this machine, another test run's, has its own job 5)."""
    want = {f"SLURM_JOB_ID={job}".encode(), f"SLURMD_NODENAME={node}".encode()}
    if cluster is not None:
        want.add(f"{slurm_harness.MARKER}={cluster.workdir}".encode())
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm", encoding="ascii") as f:
                if f.read().strip() != "raylet":
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if want <= set(f.read().split(b"\0")):
                    return int(pid)
        except OSError:  # gone meanwhile
            continue
    return None


def _hold_ray_job(cluster, tmp_path, name: str, mode: str):
    """Submit a Ray job whose driver holds every GPU task; return (job, out, marker) once they all run."""
    out = tmp_path / name
    out.mkdir()
    marker = f"ncclgen-e2e-{name}-{uuid.uuid4().hex}"
    wl = _workload(
        tmp_path,
        f"e2e-{name}",
        "ray",
        [sys.executable, str(E2E / "ray_driver.py"), str(out), str(NODES), str(NODES * GPUS_PER_NODE), mode, marker],
    )
    script = _render(wl, tmp_path)
    job = cluster.sbatch(script, cwd=tmp_path)
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while not (out / "holding.json").exists():
        if time.monotonic() > deadline:
            cluster.cancel(job)
            pytest.fail("the Ray driver never got its tasks running:\n" + _log(tmp_path, job))
        time.sleep(0.2)
    return job, out, marker


def _assert_ray_job_gone(job: str, marker: str, cluster) -> None:
    assert _wait_no_process(marker) == []
    deadline = time.monotonic() + 5  # same grace as _wait_no_process
    while (left := [n for n in ("node1", "node2") if _raylet_of(job, n, cluster)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == [], f"raylets of job {job} still running for {left}"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_ray_dead_worker_node_ends_the_job(slurm_cluster, tmp_path, sig):
    """A raylet killed outright is seen by its `ray start --block` step; one stopped by SIGTERM leaves
    that step running and only the watchdog (ray.nodes()) sees the node go."""
    job, _out, marker = _hold_ray_job(slurm_cluster, tmp_path, f"raylet-{sig.name.lower()}", "hold")
    raylet = _raylet_of(job, "node2", slurm_cluster)
    assert raylet, "no raylet of this job for node2:\n" + _log(tmp_path, job)
    t_fault = time.time()
    os.kill(raylet, sig)
    result = slurm_cluster.wait(job, timeout=RAY_FAULT_BOUND_S + 60)
    log = _log(tmp_path, job)
    print(f"ray job {job} with node2's raylet sent {sig.name}: {result.state} exit {result.exit_code}")
    assert result.state == "FAILED" and result.exit_code != 0, result.raw + "\n" + log
    _assert_fail_fast(slurm_cluster, job, t_fault, f"node2's raylet got {sig.name}", log)
    _assert_ray_job_gone(job, marker, slurm_cluster)


def test_ray_failed_driver_ends_the_job(slurm_cluster, tmp_path):
    job, out, marker = _hold_ray_job(slurm_cluster, tmp_path, "driverfail", "fail")
    result = slurm_cluster.wait(job, timeout=RAY_FAULT_BOUND_S + 60)
    log = _log(tmp_path, job)
    print(f"ray job {job} whose driver exited 1: {result.state} exit {result.exit_code}")
    assert (result.state, result.exit_code) == ("FAILED", 1), result.raw + "\n" + log
    _assert_fail_fast(slurm_cluster, job, float((out / "failed-at").read_text()), "the driver's exit", log)
    _assert_ray_job_gone(job, marker, slurm_cluster)


def _job_field(cluster, job: str, name: str) -> str:
    line = subprocess.run(
        ["scontrol", "show", "job", "-o", job], env=cluster.env, capture_output=True, text=True, timeout=30, check=True
    ).stdout
    m = re.search(rf"\b{name}=(\S*)", line)
    return m.group(1) if m else ""


def _await(what: str, predicate, timeout: float, log) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}:\n{log()}")
        time.sleep(0.25)


def test_requeue_round_trip_saves_then_runs_again(slurm_cluster, tmp_path):
    """Slurm's warning (--signal=B:USR1@60, sent here at once with `scancel --batch --signal=USR1`, as
    slurmctld does SECONDS before the limit): every rank gets SIGTERM and saves, the job is requeued,
    and it runs again with SLURM_RESTART_COUNT=1, its log appended."""
    out = tmp_path / "requeue"
    out.mkdir()
    wl = _workload(tmp_path, "e2e-requeue", "torchrun", [sys.executable, str(E2E / "requeue_rank.py"), str(out)])
    script = _render(wl, tmp_path, "--requeue", "--signal", "B:USR1@60")
    job = slurm_cluster.sbatch(script, cwd=tmp_path)
    log = lambda: _log(tmp_path, job) + "\n" + "\n".join(sorted(p.name for p in out.iterdir()))  # noqa: E731
    ranks = [f"{n}-{lr}" for n in ("node1", "node2") for lr in range(GPUS_PER_NODE)]
    try:
        _await("every rank of run 0", lambda: all((out / f"started-0-{r}").exists() for r in ranks), JOB_TIMEOUT_S, log)
        subprocess.run(["scancel", "--batch", "--signal=USR1", job], env=slurm_cluster.env, check=True, timeout=30)
        _await("every rank's save", lambda: all((out / f"saved-0-{r}").exists() for r in ranks), 60, log)
        _await(
            "the requeue",
            lambda: (
                _job_field(slurm_cluster, job, "Restarts") == "1"
                and _job_field(slurm_cluster, job, "JobState") == "PENDING"
            ),
            60,
            log,
        )
        # slurmctld holds a requeued batch job for the credential lifetime + 1 s (job_mgr.c, 22.05:
        # begin_time = now + cred_expire + 1; AuthInfo cred_expire defaults to 120 s): shorten that wait
        # to 3 s. A launch in the same second as the requeue is refused ("Job credential revoked").
        subprocess.run(
            ["scontrol", "update", f"JobId={job}", "StartTime=now+3"], env=slurm_cluster.env, check=True, timeout=30
        )
        _await("every rank of run 1", lambda: all((out / f"started-1-{r}").exists() for r in ranks), JOB_TIMEOUT_S, log)
        assert _job_field(slurm_cluster, job, "JobState") == "RUNNING"
        text = _log(tmp_path, job)
        assert f"ncclgen: SIGUSR1: time limit in 60 s; stopping the steps (SIGTERM), then requeueing job {job}" in text
        assert f"ncclgen: restart 1 of job {job}" in text  # appended after run 0's lines (--open-mode=append)
        assert text.index("time limit in 60 s") < text.index("restart 1 of job")
    finally:
        slurm_cluster.cancel(job)
    slurm_cluster.wait(job, timeout=60)


def test_monitor_samples_a_fake_nvml_beside_the_log_and_says_when_it_cannot(slurm_cluster, tmp_path, monkeypatch):
    """--monitor runs ncclgen/jobside/monitor.py on each node's host; NVML is tests/fake_pynvml (this
    machine has no GPU), put on PYTHONPATH for the job. Without it (the real pynvml, no driver) the
    monitor prints one line and the job still succeeds."""
    tests = Path(__file__).resolve().parent
    logs = tmp_path / "logs"
    logs.mkdir()
    wl = _workload(tmp_path, "e2e-monitor", "torchrun", [sys.executable, str(E2E / "sleep_rank.py"), "8"])
    script = _render(wl, tmp_path, "--monitor", "--output", "logs/%x-%j.out")
    monkeypatch.setenv("PYTHONPATH", f"{tests / 'fake_pynvml'}:{tests}:{tests.parent}")
    monkeypatch.setenv("FAKE_NVML_GPUS", "2")
    job = slurm_cluster.sbatch(script, cwd=tmp_path)
    result = slurm_cluster.wait(job, timeout=JOB_TIMEOUT_S)
    log = (logs / f"e2e-monitor-{job}.out").read_text(errors="replace")
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log
    for node in ("node1", "node2"):
        path = logs / f"ncclgen-monitor-{job}-{node}.jsonl"
        assert f"ncclgen-monitor: {node}: 2 GPU(s) every 5 s -> {path}" in log
        records = [json.loads(line) for line in path.read_text().splitlines()]
        assert len(records) >= 2 and {(r["hostname"], r["gpu"]) for r in records} == {(node, 0), (node, 1)}
        assert {r["util_gpu_pct"] for r in records} <= {40, 90}

    monkeypatch.delenv("PYTHONPATH")
    job = slurm_cluster.sbatch(script, cwd=tmp_path)
    result = slurm_cluster.wait(job, timeout=JOB_TIMEOUT_S)
    log = (logs / f"e2e-monitor-{job}.out").read_text(errors="replace")
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log
    lines = [ln for ln in log.splitlines() if ln.startswith("ncclgen-monitor:")]
    assert sorted(ln.split(":")[1].strip() for ln in lines) == ["node1", "node2"], log
    assert all("cannot sample GPUs, no monitor file written" in ln for ln in lines), lines
    assert not list(logs.glob(f"ncclgen-monitor-{job}-*"))
