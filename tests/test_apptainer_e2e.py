"""Apptainer as the Slurm steps' container runtime, end to end on the local 2-node Slurm cluster.

No container runtime runs here, so `apptainer` on the job's PATH is tests/apptainer_standin.py: it checks
its argv as Apptainer's CLI defines it, applies Apptainer's environment rules, records the call and runs
the command on the host (its docstring says what it does not do). The rendered script is submitted
unchanged; the jobs are the torchrun and Ray jobs of tests/test_slurm_e2e.py, and must pass the same
checks (every rank's or Ray task's environment equals the plan, CPU binding per GPU), with every step
that runs the job's programs going through `apptainer exec --nv --bind ... IMAGE`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_slurm_e2e import E2E, GPUS_PER_NODE, NODES, _assert_env, _cpus, _log, _plan, _render, _run_job, _workload

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

STANDIN = Path(__file__).resolve().parent / "apptainer_standin.py"
IMAGE = "docker://registry.example.org/team/verl:1"


@pytest.fixture
def apptainer(tmp_path, monkeypatch) -> Path:
    """`apptainer` on PATH for the jobs submitted from here; the log of its calls."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "apptainer"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} {STANDIN} "$@"\n')
    exe.chmod(0o755)
    log = tmp_path / "apptainer.jsonl"
    monkeypatch.setenv("PATH", f"{bindir}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("APPTAINER_STANDIN_LOG", str(log))
    return log


def _render_apptainer(wl: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    return _render(
        wl,
        tmp_path,
        "--container-runtime",
        "apptainer",
        "--container-image",
        IMAGE,
        "--container-mounts",
        f"{data}:/data:ro",
    )


def _calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _assert_every_call_is_the_planned_exec(calls: list[dict], tmp_path: Path) -> None:
    assert calls
    for c in calls:
        assert c["argv"][:5] == ["exec", "--nv", "--bind", f"{tmp_path / 'data'}:/data:ro", IMAGE], c
    assert {c["node"] for c in calls} == {f"node{n}" for n in range(1, NODES + 1)}


def test_apptainer_torchrun_job_env_and_binding_reach_every_rank(slurm_cluster, tmp_path, apptainer):
    out = tmp_path / "ranks"
    out.mkdir()
    wl = _workload(tmp_path, "e2e-apptainer", "torchrun", [sys.executable, str(E2E / "allreduce.py"), str(out)])
    plan = _plan(wl)
    script = _render_apptainer(wl, tmp_path)
    assert "apptainer exec --nv" in script.read_text()
    job, result, _wall = _run_job(slurm_cluster, script, tmp_path)
    log = _log(tmp_path, job)
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log

    world = NODES * GPUS_PER_NODE
    reports = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(out.glob("rank-*.json"))]
    assert sorted(r["rank"] for r in reports) == list(range(world)), log
    for r in reports:
        who = f"rank {r['rank']} ({r['node']}, local rank {r['local_rank']})"
        assert r["world_size"] == world and r["allreduce"] == world * (world + 1) / 2, who
        _assert_env(r["env"], plan, who)
        assert r["affinity"] == _cpus(plan, r["local_rank"]), who
    calls = _calls(apptainer)
    _assert_every_call_is_the_planned_exec(calls, tmp_path)
    programs = [c["argv"][5:] for c in calls]
    # every step runs ncclgen/jobside/node.sh in the container, then its program (issue 28)
    assert sum("preflight.py" in p for p in programs) == NODES  # the preflight, in the container
    assert sum("torchrun" in p for p in programs) == NODES  # one torchrun agent per node


def test_apptainer_ray_job_tasks_spread_with_env_and_binding(slurm_cluster, tmp_path, apptainer):
    out = tmp_path / "ray"
    out.mkdir()
    gpus = NODES * GPUS_PER_NODE
    wl = _workload(
        tmp_path,
        "e2e-apptainer-ray",
        "ray",
        [sys.executable, str(E2E / "ray_driver.py"), str(out), str(NODES), str(gpus)],
    )
    plan = _plan(wl)
    job, result, _wall = _run_job(slurm_cluster, _render_apptainer(wl, tmp_path), tmp_path)
    log = _log(tmp_path, job)
    assert (result.state, result.exit_code) == ("COMPLETED", 0), result.raw + "\n" + log
    report = json.loads((out / "ray.json").read_text(encoding="utf-8"))
    assert (report["nodes_alive"], report["gpus"]) == (NODES, gpus)
    for t in report["tasks"]:
        gpu = int(t["gpu_ids"][0])
        who = f"Ray task on {t['node']} GPU {gpu}"
        _assert_env(t["env"], plan, who)
        assert t["affinity"] == _cpus(plan, gpu), who
    calls = _calls(apptainer)
    _assert_every_call_is_the_planned_exec(calls, tmp_path)
    programs = [" ".join(c["argv"][5:]) for c in calls]
    assert sum(" start --head" in p or "ray-worker.sh" in p for p in programs) >= NODES, programs  # head + workers
    assert any(str(E2E / "ray_driver.py") in p for p in programs)  # the driver too
