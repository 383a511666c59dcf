"""The Ray programs that run on the nodes: the worker hook (ncclgen/jobside/raybind.py) and the
readiness check and watchdog (ncclgen/jobside/raywait.py), as units and against a real Ray cluster."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import skip_or_fail

from ncclgen.jobside import raybind, raywait
from ncclgen.load import cpuset, descriptor
from ncclgen.pipeline import make_plan, request
from ncclgen.render import slurm as render_slurm

CLUSTERS = sorted(descriptor.available())


# --- the Ray hook (ncclgen/raybind.py) -----------------------------------------------------------


def test_hook_map_parses_like_ncclgen_cpuset():
    for cluster in CLUSTERS:
        p = make_plan(request(cluster, 3, "verl-sft", None, (), False))
        parsed = raybind.parse_map(render_slurm.launchmod.gpu_cpu_map(p.binding))
        assert parsed == {str(b.gpu): cpuset.parse(b.cpus) for b in p.binding}, cluster
    for bad in ("", "0", "x=1", "0=a", "0=3-1", "0=1-"):
        with pytest.raises(ValueError):
            raybind.parse_map(bad)


def test_hook_wrapper_binds_to_the_first_assigned_gpu(capsys):
    seen, bound = [], []

    class Manager:  # a stand-in with the shape of Ray's NvidiaGPUAcceleratorManager
        @staticmethod
        def set_current_process_visible_accelerator_ids(ids):
            seen.append(list(ids))

    wrapped = raybind.wrap(
        Manager.set_current_process_visible_accelerator_ids,
        {"0": {0}, "1": {1, 2}},
        setaffinity=lambda pid, cpus: bound.append((pid, cpus)),
    )
    wrapped(["1", "0"])
    wrapped([])
    wrapped(["7"])
    assert seen == [["1", "0"], [], ["7"]]  # Ray's own work always runs
    assert bound == [(0, {1, 2})]
    assert "GPU 7 is not in NCCLGEN_GPU_CPUS" in capsys.readouterr().err


def test_hook_fails_soft_when_ray_internals_changed(capsys):
    class Changed:
        pass

    assert raybind.install(Changed, {"0": {0}}) is False
    assert "has no set_current_process_visible_accelerator_ids" in capsys.readouterr().err


def test_hook_binds_through_the_real_ray_method():
    """Ray 2.60's own class, in a child process (affinity is per process)."""
    prog = textwrap.dedent("""
        import os, ncclgen.jobside.raybind as h
        h.hook()
        import ray._private.accelerators as acc
        manager = acc.get_accelerator_manager_for_resource("GPU")
        for gpu in ("1", "0"):
            manager.set_current_process_visible_accelerator_ids([gpu])
            print(gpu, sorted(os.sched_getaffinity(0)), os.environ["CUDA_VISIBLE_DEVICES"])
        h.hook()  # a second call must not wrap twice
        print(manager.set_current_process_visible_accelerator_ids.ncclgen_wrapped.__name__)
        """)
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    cpus = sorted(os.sched_getaffinity(0))[:2]
    env = {**os.environ, "NCCLGEN_GPU_CPUS": f"0={cpus[0]};1={cpus[1]}"}
    r = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"1 [{cpus[1]}] 1",
        f"0 [{cpus[0]}] 0",
        "set_current_process_visible_accelerator_ids",
    ]


def test_hook_without_map_warns_and_returns(monkeypatch, capsys):
    monkeypatch.delenv("NCCLGEN_GPU_CPUS", raising=False)
    raybind.hook()
    assert "NCCLGEN_GPU_CPUS is not set" in capsys.readouterr().err


# --- the readiness check / watchdog (ncclgen/raywait.py) -----------------------------------------


def test_census_counts_alive_nodes_and_their_gpus():
    nodes = [
        {"Alive": True, "Resources": {"GPU": 8.0, "CPU": 1.0}},
        {"Alive": False, "Resources": {"GPU": 8.0}},
        {"Alive": True, "Resources": {"CPU": 4.0}},
    ]
    assert raywait.census(nodes) == (2, 8)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_wait_times_out_with_one_clear_line_and_exit_3():
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, raywait.__file__, "wait", f"127.0.0.1:{free_port()}", "2", "16", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 3 and time.monotonic() - t0 < 30
    assert r.stderr == ("ncclgen: ERROR: Ray cluster not ready after 1 s (want 2 nodes/16 GPUs, have 0 nodes/0 GPUs)\n")


def test_bad_usage_exits_2():
    r = subprocess.run(
        [sys.executable, raywait.__file__, "wait", "x:1", "2"], capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 2 and r.stderr.startswith("usage:")


@pytest.mark.slow
def test_wait_and_watch_against_a_real_two_node_ray_cluster(tmp_path):
    """Real Ray 2.60 (no Slurm): a head and a worker on this host, as the fake Slurm nodes run them.
    ready -> exit 0; asking for more -> exit 3 with what is there; a SIGTERMed worker raylet (which
    leaves `ray start --block` running, see the module docstring) -> the watchdog exits 5."""
    ray_bin = Path(sys.executable).with_name("ray")
    if not ray_bin.exists():
        skip_or_fail("the ray CLI is not installed next to this Python (pip install 'ray[default]')")
    port = free_port()
    temp = Path(f"/tmp/ncg-{os.getpid()}")  # short: Ray's AF_UNIX socket paths are limited to ~107 bytes
    common = ["--num-gpus=2", "--num-cpus=1", "--disable-usage-stats", "--block"]
    head = subprocess.Popen(
        [
            str(ray_bin),
            "start",
            "--head",
            f"--port={port}",
            "--include-dashboard=false",
            f"--temp-dir={temp}",
            f"--ray-client-server-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}",
            *common,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    worker = subprocess.Popen(
        [str(ray_bin), "start", f"--address=127.0.0.1:{port}", f"--dashboard-agent-listen-port={free_port()}", *common],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )

    def waiter(*args, timeout=240):
        return subprocess.run(
            [sys.executable, raywait.__file__, *args], capture_output=True, text=True, timeout=timeout, check=False
        )

    try:
        r = waiter("wait", f"127.0.0.1:{port}", "2", "4", "180")
        assert r.returncode == 0, r.stderr
        assert re.fullmatch(r"ncclgen: Ray cluster ready: 2 nodes, 4 GPUs after \d+\.\d s\n", r.stdout)
        r = waiter("wait", f"127.0.0.1:{port}", "3", "6", "5")
        assert r.returncode == 3 and "(want 3 nodes/6 GPUs, have 2 nodes/4 GPUs)" in r.stderr
        watch = subprocess.Popen(
            [sys.executable, raywait.__file__, "watch", f"127.0.0.1:{port}", "2", "0.5"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(5)  # connected and watching
        assert watch.poll() is None, watch.communicate()
        raylets = subprocess.run(
            ["pgrep", "-s", str(worker.pid), "-x", "raylet"], capture_output=True, text=True, check=False
        ).stdout.split()
        assert len(raylets) == 1, raylets
        os.kill(int(raylets[0]), signal.SIGTERM)
        _, err = watch.communicate(timeout=90)
        assert watch.returncode == 5, err
        assert "Ray watchdog: only 1/2 Ray nodes alive" in err
    finally:
        for proc in (worker, head):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in (worker, head):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)
