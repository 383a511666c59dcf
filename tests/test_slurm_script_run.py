"""A rendered sbatch script run under the stand-ins of tests/slurm_shims.py: what each step receives,
the order of the steps, the fail-fast exit codes, clean-up on SIGTERM and requeue, and the node
programs (ncclgen/jobside/node.sh: the private folder, the setup once per node)."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import pytest
import yaml
from slurm_shims import Run, local_ci, render
from test_render_slurm import HOSTILE

from ncclgen import jobside
from ncclgen.jobside import raybind
from ncclgen.plan import flightrec, preflight
from ncclgen.render import slurm as render_slurm

HOSTILE_ARGV = [
    "python3",
    "-c",
    "pass",
    "$(touch PWNED)",
    "`touch PWNED2`",
    "a'b\"c",
    "; touch PWNED3",
    "*",
    "new\nline",
    "x,y=z",
    "",
    "${HOME}",
]


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
def test_hostile_values_arrive_byte_exact_and_execute_nothing(capsys, tmp_path, launcher):
    script, plan = local_ci(capsys, tmp_path, launcher, HOSTILE_ARGV, sets=[f"NCCL_DEBUG_FILE={HOSTILE}"], monitor=True)
    run = Run(tmp_path, script).finish()
    assert run.rc == 0, run.stderr
    assert not list(tmp_path.rglob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))
    if launcher == "torchrun":
        (args, env), _second_node = run.calls("torchrun")
        assert args[-len(HOSTILE_ARGV) :] == HOSTILE_ARGV
    else:  # the driver: python3 is the program the shim plays, the rest its arguments
        ((args, env),) = [c for c in run.calls("python3") if c[0][:2] == ["-c", "pass"]]
        assert args == HOSTILE_ARGV[1:]
    assert env["NCCL_DEBUG_FILE"] == HOSTILE
    for name, value in plan.env_dict().items():  # the whole plan reached the launched program
        assert env[name] == value.replace(flightrec.JOB, env["SLURM_JOB_ID"]), name  # the job's FR folder
    assert not [n for n in env if n.startswith("NCCLGEN_") and n in NODE_VARIABLES]  # node.sh's inputs stay out
    assert run.leftovers() == []


NODE_VARIABLES = {"NCCLGEN_NODE_SH", "NCCLGEN_FILES", "NCCLGEN_PREFLIGHT", "NCCLGEN_BIND", "NCCLGEN_RAY_WAIT"}


def _folder(path: str) -> Path:
    """The node's private folder from a path in it."""
    folder = Path(path).parent
    return folder.parent if folder.name in ("bin", "pythonpath") else folder


def test_torchrun_line_and_binding_program(capsys, tmp_path):
    script, plan = local_ci(capsys, tmp_path, "torchrun", ["python3", "train.py"], monitor=True)
    run = Run(tmp_path, script, SHIM_DRIVER="await:monitor:2").finish()  # the monitors started
    assert run.rc == 0, run.stderr
    calls = run.calls("torchrun")
    assert len(calls) == 2  # one agent per node, in one step
    port = 20000 + 4242 % 12000  # local-ci shares its nodes: the rendezvous port comes from the job id
    folders = set()
    for args, env in calls:
        assert args == [
            "--nnodes=2",
            *plan.launch.torchrun_options(),
            f"--rdzv-endpoint=127.0.0.1:{port}",
            "--rdzv-id=4242",
            "ncclgen-bind",
            "python3",
            "train.py",
        ]
        # ncclgen-bind is the binding wrapper, in the node's private folder, first on the step's PATH
        folder = Path(env["NCCLGEN_DIR"])
        folders.add(folder)
        assert env["PATH"].split(":")[0] == str(folder / "bin")
        bind = (folder / "bin" / "ncclgen-bind").read_text()
        assert bind == "#!/usr/bin/env bash\n" + render_slurm.launchmod.bind_wrapper(
            plan.binding, plan.launch.bind_memory
        )
        assert folder.stat().st_mode & 0o777 == 0o700 and env["PYTHONUNBUFFERED"] == "1"
    assert len(folders) == 2  # one per node
    sruns = [a for a, _ in run.calls("srun")]
    launch = [a for a in sruns if "torchrun" in a]
    node = ["bash", "-c", 'eval "$NCCLGEN_NODE_SH"', "ncclgen-node"]
    # each node runs its preflight, then the launch under the transport check's entry
    # (bin/ncclgen_transport in the node's folder), all in the one launch step
    front = ["preflight.py", "@preflight.json", "--", "ncclgen_transport"]
    assert all(a[a.index("ncclgen-node") + 1 :][:4] == front for a in launch), launch
    launch = [a[: a.index("ncclgen-node") + 1] + a[a.index("ncclgen-node") + 5 :] for a in launch]
    assert launch == [
        [
            "--export=ALL",
            "--nodes=2",
            "--ntasks=2",
            "--ntasks-per-node=1",
            "--kill-on-bad-exit=1",
            *node,
            "torchrun",
            *calls[0][0],
        ]
    ]
    monitors = run.calls("monitor")
    assert len(monitors) == 2  # one per node, in its own folder (--host: outside any container)
    for args, _ in monitors:
        assert Path(args[0]).read_text() == jobside.source("monitor", compact=True)
        assert args[1:] == [f"{run.work}/ncclgen-monitor-4242-{{node}}.jsonl", "5"]
        assert _folder(args[0]) not in folders
    assert run.leftovers() == []


def test_ray_bring_up_order_hook_file_and_driver(capsys, tmp_path):
    script, _plan = local_ci(capsys, tmp_path, "ray", ["python3", "driver.py"])
    run = Run(tmp_path, script, SHIM_DRIVER="await:raywait:2").finish()  # check and watchdog started
    assert run.rc == 0, run.stderr
    gcs = 20000 + 4242 % 120 * 100  # local-ci shares its nodes: a block of ports from the job id
    starts = {tuple(a[:2]): (a, env) for a, env in run.calls("ray")}
    head, head_env = starts["start", "--head"]
    assert head == [
        "start",
        "--head",
        f"--port={gcs}",
        "--num-gpus=2",
        "--num-cpus=2",
        "--disable-usage-stats",
        "--node-ip-address=127.0.0.1",
        f"--ray-client-server-port={gcs + 1}",
        f"--dashboard-agent-listen-port={gcs + 2}",
        "--include-dashboard=false",
        "--block",
    ]
    ((worker, worker_env),) = [c for c in starts.values() if c[0] is not head]
    assert worker == [
        "start",
        f"--address=127.0.0.1:{gcs}",
        f"--dashboard-agent-listen-port={gcs + 3}",
        "--num-gpus=2",
        "--num-cpus=2",
        "--disable-usage-stats",
        "--block",
    ]
    sruns = [a for a, _ in run.calls("srun")]
    assert len(sruns) == 3  # head, every worker (each first runs the preflight), the driver (readiness, watchdog)
    (workers,) = [a for a in sruns if "ray-worker.sh" in a]
    assert workers[:6] == [
        "--export=ALL",
        "--nodes=1",
        "--ntasks=1",
        "--ntasks-per-node=1",
        "--exclude=node1",
        "--kill-on-bad-exit=1",
    ]
    waits = {a[1]: a for a, _ in run.calls("raywait")}
    assert waits["wait"][2:] == [f"127.0.0.1:{gcs}", "2", "4", "300"]
    assert Path(waits["wait"][0]).read_text() == jobside.source("raywait", compact=True)
    assert waits["watch"][2:] == [f"127.0.0.1:{gcs}", "2", "2"]
    ((_driver_args, driver_env),) = [c for c in run.calls("python3") if c[0] == ["driver.py"]]
    assert driver_env["RAY_ADDRESS"] == f"127.0.0.1:{gcs}"
    assert float(driver_env["NCCLGEN_T0"]) > 0
    # tier 3: the hook module is the only file on PYTHONPATH from the node's folder, for each raylet
    for env in (head_env, worker_env):
        hook_dir = Path(env["PYTHONPATH"].split(":")[0])
        assert hook_dir.name == "pythonpath" and [p.name for p in hook_dir.iterdir()] == ["ncclgen_raybind.py"]
        assert (hook_dir / "ncclgen_raybind.py").read_text() == jobside.source("raybind", compact=True)
        assert env["__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR"] == "ncclgen_raybind.hook"
        assert raybind.parse_map(env["NCCLGEN_GPU_CPUS"]) == {"0": {0}, "1": {1}}
    assert run.leftovers() == []


@pytest.mark.parametrize(
    "behaviour, rc, message",
    [
        ({"SHIM_DRIVER": "exit:7"}, 7, None),
        ({"SHIM_WAIT": "exit:3"}, 3, "the Ray cluster is not ready"),
        (
            {"SHIM_WAIT": "block", "SHIM_RAY_WORKER": "exit:1"},
            4,
            "the Ray worker step (every node but node1) ended (status 1) before the driver",
        ),
        ({"SHIM_DRIVER": "block", "SHIM_WATCH": "after:0.2:5"}, 5, "the Ray watchdog ended"),
        (
            {"SHIM_DRIVER": "block", "SHIM_RAY_HEAD": "after:1:1"},
            4,
            "the Ray head step on node1 ended (status 1) before the driver",
        ),
        ({"SLURM_GPUS_ON_NODE": "1"}, 2, "the job has 2 x 1"),
        ({"SHIM_NODE_ADDR": "no-such-host.invalid"}, 2, "no IPv4 address for the head node node1"),
    ],
    ids=[
        "driver-status",
        "not-ready",
        "worker-dies-in-bring-up",
        "watchdog",
        "head-dies-later",
        "fewer-gpus",
        "unresolvable-head",
    ],
)
def test_ray_fail_fast_exit_codes(capsys, tmp_path, behaviour, rc, message):
    script, _ = local_ci(capsys, tmp_path, "ray", ["python3", "driver.py"])
    run = Run(tmp_path, script, **behaviour).finish()
    assert run.rc == rc, run.stderr
    if message:
        assert message in run.stderr
    assert run.leftovers() == []  # the EXIT trap ended every step


def test_head_node_name_is_resolved_to_ipv4(capsys, tmp_path):
    script, _ = local_ci(capsys, tmp_path, "torchrun", ["python3", "train.py"])
    run = Run(tmp_path, script, SHIM_NODE_ADDR="localhost").finish()
    assert run.rc == 0, run.stderr
    for args, _ in run.calls("torchrun"):
        assert f"--rdzv-endpoint=127.0.0.1:{20000 + 4242 % 12000}" in args


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
def test_sigterm_to_the_batch_script_ends_every_step(capsys, tmp_path, launcher):
    script, _ = local_ci(capsys, tmp_path, launcher, ["python3", "work.py"], monitor=True)
    run = Run(tmp_path, script, SHIM_DRIVER="block")
    deadline = time.monotonic() + 20
    while not run.started("work.py"):
        assert time.monotonic() < deadline and run.proc.poll() is None, "the launch never started"
        time.sleep(0.05)
    run.proc.send_signal(signal.SIGTERM)
    run.finish()
    assert run.rc == 143
    assert run.leftovers() == []


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
@pytest.mark.parametrize("requeue_rc", [0, 1])
def test_requeue_signal_stops_the_steps_then_requeues(capsys, tmp_path, launcher, requeue_rc):
    wl = tmp_path / f"{launcher}.yaml"
    wl.write_text(
        yaml.safe_dump(
            {
                "name": "shim-requeue",
                "description": "shim test",
                "launcher": launcher,
                "nodes": 2,
                "command": ["python3", "work.py"],
            }
        )
    )
    script = render(
        capsys,
        "--cluster",
        "local-ci",
        "--tier",
        "3",
        "--workload",
        str(wl),
        "--requeue",
        "--signal",
        "B:USR1@60",
        "--monitor",
    )
    run = Run(tmp_path, script, SHIM_DRIVER="block", SHIM_REQUEUE_RC=str(requeue_rc))
    deadline = time.monotonic() + 20
    while not run.started("work.py"):
        assert time.monotonic() < deadline and run.proc.poll() is None, "the launch never started"
        time.sleep(0.05)
    time.sleep(1)  # every stand-in has exec'd its `sleep` (a later one would miss the scancel stand-in's TERM)
    t0 = time.monotonic()
    run.proc.send_signal(signal.SIGUSR1)
    run.finish()
    assert time.monotonic() - t0 < 10  # the steps ended at TERM: no wait for the 50 s grace
    assert "ncclgen: SIGUSR1: time limit in 60 s; stopping the steps (SIGTERM), then requeueing job 4242" in run.stderr
    assert [a for a, _ in run.calls("scancel")] == [["--signal=TERM", "4242"]]
    assert (tmp_path / "log" / "scontrol-requeue").read_text() == "requeued\n"
    if requeue_rc:
        assert run.rc == 1 and "scontrol requeue 4242 failed" in run.stderr
    else:
        assert run.rc == 0, run.stderr
    assert run.leftovers() == []


def test_torchrun_step_status_is_the_job_status(capsys, tmp_path):
    script, _ = local_ci(capsys, tmp_path, "torchrun", ["python3", "train.py"])
    assert Run(tmp_path, script, SHIM_DRIVER="exit:9").finish().rc == 9


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
def test_preflight_step_runs_on_every_node_with_the_plans_checks(capsys, tmp_path, launcher):
    script, plan = local_ci(capsys, tmp_path, launcher, ["python3", "work.py"])
    run = Run(tmp_path, script, SHIM_DRIVER="await:preflight:1" if launcher == "torchrun" else "exit:0").finish()
    assert run.rc == 0, run.stderr
    calls = run.calls("preflight")
    assert len(calls) == 2  # one per node, each from its own folder
    for args, _ in calls:
        program, spec = Path(args[0]), Path(args[1].removeprefix("@"))
        assert program.name == "preflight.py" and program.read_text() == jobside.source("preflight", compact=True)
        assert args[1].startswith("@") and spec.parent == program.parent
        assert spec.read_text() == preflight.encode(preflight.spec(plan)) + "\n"
    # no step of its own: each node's launch runs it first (torchrun: the one step; Ray: head and workers)
    steps = [a for a, _ in run.calls("srun") if "preflight.py" in a]
    assert len(steps) == (1 if launcher == "torchrun" else 2), steps
    for step in steps:
        front = step[step.index("ncclgen-node") + 1 :][:4]
        assert front == ["preflight.py", "@preflight.json", "--", "ncclgen_transport"]
        assert "--kill-on-bad-exit=1" in step or "--ntasks=1" in step  # a failed node ends its step


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
def test_failed_preflight_ends_the_job_before_the_launch(capsys, tmp_path, launcher):
    script, _ = local_ci(capsys, tmp_path, launcher, ["python3", "work.py"], monitor=True)
    run = Run(tmp_path, script, SHIM_PREFLIGHT="exit:6").finish()
    assert run.rc == preflight.EXIT_PROBLEMS == 6
    assert "ncclgen: ERROR: the preflight failed (lines above); the workload was not started" in run.stderr
    # the monitor (its own step, outside the container) may have started; the job's clean-up ends it
    assert run.calls("torchrun") == run.calls("ray") == run.calls("python3") == []
    assert run.leftovers() == []


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
def test_a_failed_run_without_a_failed_preflight_keeps_its_own_status(capsys, tmp_path, launcher):
    """The batch script asks the nodes whether a preflight failed only to name it: a rank's or Ray step's
    failure keeps its status and message."""
    script, _ = local_ci(capsys, tmp_path, launcher, ["python3", "work.py"])
    behaviour = (
        {"SHIM_DRIVER": "exit:9"} if launcher == "torchrun" else {"SHIM_RAY_WORKER": "exit:1", "SHIM_WAIT": "block"}
    )
    run = Run(tmp_path, script, **behaviour).finish()
    assert run.rc == (9 if launcher == "torchrun" else 4), run.stderr
    assert "preflight failed" not in run.stderr
    assert run.calls("preflight")  # (the first failed task may end the step before the other node's preflight)
    assert run.leftovers() == []


def test_no_preflight_leaves_the_step_out(capsys, tmp_path):
    wl = tmp_path / "w.yaml"
    wl.write_text(
        yaml.safe_dump(
            {"name": "w", "description": "d", "launcher": "torchrun", "nodes": 2, "command": ["python3", "work.py"]}
        )
    )
    script = render(capsys, "--cluster", "local-ci", "--tier", "3", "--workload", str(wl), "--no-preflight")
    assert "NCCLGEN_PREFLIGHT" not in script and "exit 6" not in script and "ncclgen_preflight_status" not in script
    assert re.search(r"# Regenerate: ncclgen slurm .* --no-preflight$", script, re.M)
    run = Run(tmp_path, script).finish()
    assert run.rc == 0 and run.calls("preflight") == [] and len(run.calls("torchrun")) == 2, run.stderr  # one per node
