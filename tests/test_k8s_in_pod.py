"""What runs inside the pods, run for real here: the Ray-on-PyTorchJob scripts bring Ray up and bind,
and every pod runs the preflight before its launch (split from tests/test_render_k8s.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from test_render_k8s import (
    PREFLIGHT,
    PREFLIGHT_KEYS,
    ROOT,
    config_of,
    containers,
    embedded,
    env_of,
    job_of,
    kubelet_expand,
    plan_for,
    preflight_files,
)

from ncclgen.pipeline import make_plan, request
from ncclgen.render import k8s as render_k8s

# -- the Ray-on-PyTorchJob scripts, run for real ------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_ray_pytorchjob_scripts_bring_up_ray_and_bind(tmp_path):
    """The master's ray-head.sh and a worker's ray-worker.sh from a rendered ConfigMap, run as the two
    pods would (container env, MASTER_ADDR from the operator, files where the ConfigMap is mounted):
    the head waits for both nodes, the driver's GPU tasks see the plan's env, and at tier 3 each is bound
    to its GPU's CPU by the hook (local-ci: GPU 0 -> CPU 0, GPU 1 -> CPU 1)."""
    import shutil

    if shutil.which("ray") is None or len(os.sched_getaffinity(0)) < 2:
        reason = "needs the `ray` CLI and 2 CPUs"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: a missing service is a failure, not a skip)", pytrace=False)
        pytest.skip(reason)
    out = tmp_path / "out"
    out.mkdir()
    wl = {
        "name": "ray-e2e",
        "description": "e2e",
        "launcher": "ray",
        "framework": "torch",
        "nodes": 2,
        "command": ["python3", str(ROOT / "tests" / "e2e" / "ray_driver.py"), str(out), "2", "4"],
    }
    (tmp_path / "wl.yaml").write_text(yaml.safe_dump(wl))
    p = make_plan(request("local-ci", 3, str(tmp_path / "wl.yaml"), None, (), False))
    # A free GCS port: other Ray clusters may run on this machine.
    p = dataclasses.replace(p, launch=dataclasses.replace(p.launch, ray_port=_free_port(), ray_ready_timeout_s=240))
    docs = render_k8s.documents(p, kind="pytorchjob")
    mount = tmp_path / "etc-ncclgen"  # stands in for the ConfigMap volume at /etc/ncclgen
    mount.mkdir()
    for key, text in config_of(docs)["data"].items():
        (mount / key).write_text(text.replace(render_k8s.CONFIG_DIR, str(mount)))
    specs = job_of(docs)["spec"]["pytorchReplicaSpecs"]
    short = Path("/tmp") / f"nk8s{os.getpid()}"  # Ray's socket paths must stay short
    fake_dev = tmp_path / "dev"  # the pods' preflight counts these as their 2 GPUs (test-only root)
    fake_dev.mkdir()
    for i in range(2):
        (fake_dev / f"nvidia{i}").touch()
    (fake_dev / "shm").symlink_to("/dev/shm")
    base = {
        **os.environ,
        "RAY_TMPDIR": str(short),
        "MASTER_ADDR": "127.0.0.1",
        "PYTHONUNBUFFERED": "1",
        "NCCLGEN_PREFLIGHT_DEV": str(fake_dev),
    }
    procs = []
    logs = {role: tmp_path / f"{role}.log" for role in ("Worker", "Master")}
    try:
        for role in ("Worker", "Master"):
            c = specs[role]["template"]["spec"]["containers"][0]
            env = {**base, **dict(env_of(c)), "NCCLGEN_E2E_POD": role}
            argv = [kubelet_expand(a).replace(render_k8s.CONFIG_DIR, str(mount)) for a in c["command"]]
            with open(logs[role], "w") as log:
                procs.append(
                    subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
                )
        rc = procs[1].wait(timeout=420)  # generous: Ray start-up is CPU-bound on 2 cores
        worker_alive = procs[0].poll() is None
    finally:
        _stop_ray(procs, short)
    report = "\n".join(f"--- {role}:\n{path.read_text()[-3000:]}" for role, path in logs.items())
    assert rc == 0, report
    assert worker_alive, "the worker's `ray start --block` ended early\n" + report
    assert "Ray cluster ready: 2 nodes, 4 GPUs" in logs["Master"].read_text()
    tasks = json.loads((out / "ray.json").read_text())["tasks"]
    seen = {(t["env"]["NCCLGEN_E2E_POD"], t["gpu_ids"][0]) for t in tasks}
    assert seen == {(pod, gpu) for pod in ("Master", "Worker") for gpu in ("0", "1")}
    for t in tasks:
        assert {n: t["env"].get(n) for n in p.env_dict()} == p.env_dict()
        assert "MASTER_ADDR" not in t["env"]  # the operator's torchrun variables stay out of Ray
        assert t["affinity"] == [int(t["gpu_ids"][0])], t


def _stop_ray(procs, tmpdir: Path) -> None:
    """End what the two 'pods' started: our process groups, then the Ray daemons `ray start` detached,
    found by this test's own RAY_TMPDIR in their command line or environment and killed by PID (never
    `ray stop`, which kills every Ray process on the host)."""
    import shutil
    import signal
    import time

    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    marker = str(tmpdir).encode()
    for _ in range(5):  # a dying raylet may still start a worker: sweep until none is left
        mine = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if marker in (entry / "cmdline").read_bytes() or marker in (entry / "environ").read_bytes():
                    mine.append(int(entry.name))
            except OSError:
                continue
        for pid in mine:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if not mine:
            break
        time.sleep(0.5)
    shutil.rmtree(tmpdir, ignore_errors=True)


# -- the preflight in every pod (issue 11) -------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind, workload", [("pytorchjob", "verl-sft"), ("rayjob", "verl-grpo-qwen2-7b"), ("trainjob", "verl-sft")]
)
def test_every_pod_runs_the_preflight_before_its_launch(kind, workload):
    p = plan_for("h100-ib", 3, workload)
    docs = render_k8s.documents(p, kind=kind)
    assert {k: config_of(docs)["data"][k] for k in PREFLIGHT_KEYS} == preflight_files(p)
    job = job_of(docs)
    if kind == "trainjob":
        commands = [job["spec"]["trainer"]["command"]]
    elif kind == "rayjob":
        commands = [shlex.split(kubelet_expand(c["args"][0]).split("; exec ", 1)[1]) for c in containers(job)]
    else:
        commands = [c["command"] for c in containers(job)]
    assert commands and all(cmd[:2] == PREFLIGHT for cmd in commands)
    bare = render_k8s.documents(p, kind=kind, preflight=False)
    assert not any(k in config_of(bare)["data"] for k in PREFLIGHT_KEYS)
    assert "preflight" not in yaml.safe_dump_all(bare[1:])


def test_pod_preflight_script_stops_with_6_and_execs_only_on_success(tmp_path):
    """The ConfigMap's preflight.sh, run as a pod would: a failing check ends it with status 6 before the
    command it wraps; a passing one execs that command."""
    mount = tmp_path / "etc"
    mount.mkdir()
    marker = tmp_path / "launched"
    for spec, rc, launched in (
        ({"v": 1, "ifaces": {"NCCL_SOCKET_IFNAME": "=ncclgen-x0"}}, 6, False),
        ({"v": 1, "ifaces": {"NCCL_SOCKET_IFNAME": "=lo"}}, 0, True),
    ):
        files = {
            render_k8s.PREFLIGHT_MODULE: embedded("preflight"),
            render_k8s.PREFLIGHT_SPEC: json.dumps(spec),
            render_k8s.PREFLIGHT_SCRIPT: render_k8s._Job.preflight_script(),
        }
        for key, text in files.items():
            (mount / key).write_text(text.replace(render_k8s.CONFIG_DIR, str(mount)))
        r = subprocess.run(
            ["bash", str(mount / render_k8s.PREFLIGHT_SCRIPT), "touch", str(marker)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert (r.returncode, marker.exists()) == (rc, launched), r.stderr
        if rc:
            assert "NCCL_SOCKET_IFNAME ncclgen-x0: expected an interface named ncclgen-x0" in r.stderr
