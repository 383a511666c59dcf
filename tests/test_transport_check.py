"""The transport check (ncclgen/jobside/transport.py) against the NCCL stand-in (tests/nccl_standin.py):
what NCCL would print on a node that differs from the plan ends the command with status 7 and one line
per problem; a node as planned runs to the end with one summary line."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "ncclgen/jobside/transport.py"
STANDIN = ROOT / "tests/nccl_standin.py"
AFTER_S = 30  # the stand-in "trains" this long after init unless the check stops it


def spec(folder, mode="on", **over):
    s = {
        "v": 1,
        "debug_file": f"{folder}/%h.%p.log",
        "net": "IB",
        "hcas": ["mlx5_0:1", "mlx5_3:1"],
        "gdr": True,
        "nccl": "2.30.7",
        "plugin": {"package": "aws-ofi-nccl", "min": "1.13.0"},
        "mode": mode,
    }
    s.update(over)
    return json.dumps(s)


def ranks(local=2, nranks=4, first=0):
    """A node's launch: ``local`` stand-in ranks of ``nranks``, started together (as torchrun would)."""
    if local == 1:
        env = [f"RANK={first}", "LOCAL_RANK=0", f"WORLD_SIZE={nranks}", "LOCAL_WORLD_SIZE=1"]
        return ["env", *env, sys.executable, str(STANDIN)]
    parts = [
        f"RANK={first + i} LOCAL_RANK={i} WORLD_SIZE={nranks} LOCAL_WORLD_SIZE={local} {sys.executable} {STANDIN} &"
        for i in range(local)
    ]
    return ["bash", "-c", " ".join(parts) + " wait"]


def run(tmp_path, command, fault="", mode="on", env=None, **over):
    folder = tmp_path / "nccl"
    e = dict(os.environ)
    e.update(
        NCCL_DEBUG="INFO",
        NCCL_DEBUG_SUBSYS="INIT",
        NCCL_DEBUG_FILE=f"{folder}/%h.%p.log",
        NCCLGEN_NODE="node7",
        NCCLGEN_STANDIN_FAULT=fault,
        NCCLGEN_STANDIN_AFTER_S=str(AFTER_S),
    )
    e.pop("SLURMD_NODENAME", None)
    e.update(env or {})
    start = time.monotonic()
    p = subprocess.run(
        [sys.executable, str(CHECK), spec(folder, mode, **over), "--", *command],
        env=e,
        capture_output=True,
        text=True,
        timeout=AFTER_S * 2,
    )
    return p, time.monotonic() - start


def nccl_env(folder, **more):
    """The environment of a rank (and of its check) that writes NCCL's INIT lines to FOLDER/%h.%p.log."""
    return dict(os.environ, NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT", NCCL_DEBUG_FILE=f"{folder}/%h.%p.log", **more)


def failed(stderr):
    return [line for line in stderr.splitlines() if line.startswith("ncclgen: transport FAILED:")]


def test_as_planned_runs_to_the_end(tmp_path):
    p, _ = run(tmp_path, ranks(), env={"NCCLGEN_STANDIN_AFTER_S": "1"})
    assert p.returncode == 0, p.stderr
    assert failed(p.stderr) == []
    summary = [line for line in p.stderr.splitlines() if line.startswith("ncclgen: transport: node node7: NCCL")]
    assert summary == [
        "ncclgen: transport: node node7: NCCL 2.30.7, net IB, plugin -, HCAs mlx5_0:1,mlx5_3:1 (2 of 2 planned), "
        "NET channels 4 GDRDMA / 0 without, P2P 2, SHM 0, 2 processes"
    ]


@pytest.mark.parametrize(
    "fault, line",
    [
        (
            "nogdr",
            "GPUDirect RDMA: expected every NET channel via .../GDRDMA, found 'Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0'",
        ),
        ("rail", "HCAs: expected mlx5_0:1,mlx5_3:1, found mlx5_0:1 (not opened: mlx5_3:1)"),
        ("socket", "net: expected IB, found Socket (NCCL's 'Using network Socket')"),
        ("version=2.29.7", "NCCL version: expected 2.30.7 (the descriptor's software.nccl), found 2.29.7"),
    ],
)
def test_a_difference_stops_the_node(tmp_path, fault, line):
    p, took = run(tmp_path, ranks(local=1, nranks=2, first=1), fault=fault)
    assert p.returncode == 7, p.stderr
    assert failed(p.stderr)[0] == f"ncclgen: transport FAILED: node node7: {line}"
    assert took < AFTER_S / 2  # the command was stopped, not waited for


def test_old_plugin(tmp_path):
    plugin = {"NCCLGEN_STANDIN_PLUGIN": "Libfabric:aws-ofi-nccl:1.12.1-aws"}
    p, _ = run(tmp_path, ranks(local=1), env=plugin, net="Libfabric", hcas=[])
    assert p.returncode == 7
    assert failed(p.stderr) == [
        "ncclgen: transport FAILED: node node7: plugin version: expected aws-ofi-nccl >= 1.13.0, found 1.12.1-aws"
    ]


def test_warn_mode_reports_and_continues(tmp_path):
    p, took = run(tmp_path, ranks(), fault="nogdr", mode="warn", env={"NCCLGEN_STANDIN_AFTER_S": "1"})
    assert p.returncode == 0
    assert len(failed(p.stderr)) == 1 and "GPUDirect RDMA" in p.stderr
    assert took >= 1


def test_warn_lines_are_forwarded_unchanged(tmp_path):
    p, _ = run(tmp_path, ranks(local=1, nranks=1), fault="warn", env={"NCCLGEN_STANDIN_AFTER_S": "0"})
    warns = [line for line in p.stderr.splitlines() if " NCCL WARN " in line]
    assert len(warns) == 1 and warns[0].endswith("[0] misc/standin.cc:1 (standin) NCCL WARN NET/IB : stand-in warning")


def test_the_commands_status_is_kept(tmp_path):
    # NCCL_NET names a net nothing registers: NCCL (and the stand-in) fail init with status 1
    p, _ = run(tmp_path, ranks(local=1, nranks=1), env={"NCCL_NET": "Nope"})
    assert p.returncode == 1
    assert "NCCL WARN Failed to initialize any NET plugin" in p.stderr


def test_hidden_lines_are_said_not_checked(tmp_path):
    p, _ = run(
        tmp_path, ranks(local=1, nranks=2), fault="nogdr", env={"NCCL_DEBUG": "WARN", "NCCLGEN_STANDIN_AFTER_S": "0"}
    )
    assert p.returncode == 0
    assert "ncclgen: transport: node node7: not checked: NCCL_DEBUG/NCCL_DEBUG_SUBSYS hide" in p.stderr
    p, _ = run(tmp_path, ranks(local=1, nranks=2), env={"NCCL_DEBUG_SUBSYS": "NET", "NCCLGEN_STANDIN_AFTER_S": "0"})
    assert "not checked" in p.stderr


def test_other_processes_files_are_not_read(tmp_path):
    """A process of another job on the node (alive, not under this check) writes a bad file there."""
    folder = tmp_path / "nccl"
    folder.mkdir()
    env = dict(os.environ, NCCL_DEBUG="INFO", NCCL_DEBUG_FILE=f"{folder}/%h.%p.log", NCCLGEN_STANDIN_FAULT="nogdr")
    env.update(RANK="0", WORLD_SIZE="2", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1", NCCLGEN_STANDIN_AFTER_S="20")
    other = subprocess.Popen([sys.executable, str(STANDIN)], env=env)
    try:
        p, _ = run(tmp_path, ranks(local=1, nranks=2, first=1), env={"NCCLGEN_STANDIN_AFTER_S": "1"})
    finally:
        other.kill()
        other.wait()
    assert p.returncode == 0, p.stderr
    assert "1 processes" in p.stderr


def test_bad_spec_is_a_usage_error(tmp_path):
    p = subprocess.run([sys.executable, str(CHECK), '{"v": 99}', "--", "true"], capture_output=True, text=True)
    assert p.returncode == 2 and "usage" in p.stderr


# -- the Slurm node's entry (bin/ncclgen_transport): the launch first, then the check in its place -----


def wrapped(tmp_path, command, fault="", env=None):
    """The node's private folder as ncclgen/jobside/node.sh writes it, and the launch run through
    bin/ncclgen_transport (ncclgen/jobside/transport_entry.sh)."""
    d = tmp_path / "node-folder"
    (d / "bin").mkdir(parents=True, exist_ok=True)
    for name in ("transport.py", "nccllines.py"):
        (d / name).write_text((CHECK.parent / name).read_text())
    nccl = tmp_path / "nccl" / "sub"  # made by the wrapper before the launch: NCCL does not make it
    (d / "transport.json").write_text(spec(nccl))
    (d / "bin/ncclgen_transport").write_text((CHECK.parent / "transport_entry.sh").read_text())
    e = nccl_env(nccl)
    e.update(NCCLGEN_DIR=str(d), NCCLGEN_NODE="node7", NCCLGEN_STANDIN_FAULT=fault, NCCLGEN_STANDIN_AFTER_S="1")
    e.pop("SLURMD_NODENAME", None)
    e.update(env or {})
    start = time.monotonic()
    p = subprocess.run(
        ["bash", str(d / "bin/ncclgen_transport"), *command], env=e, capture_output=True, text=True, timeout=60
    )
    return p, time.monotonic() - start


def test_the_node_entry_starts_the_launch_before_the_check(tmp_path):
    """The launch does not wait for the check's Python to start: a python3 that takes 3 s to start (first
    on PATH) delays the check, not the launch; the launch is the check's child, in its own process group."""
    slow = tmp_path / "slow-bin"
    slow.mkdir()
    (slow / "python3").write_text(
        f'#!/bin/bash\ndate +%s.%N > {tmp_path}/check-called\nsleep 3\nexec {sys.executable} "$@"\n'
    )
    (slow / "python3").chmod(0o755)
    probe = f"date +%s.%N > {tmp_path}/launched; ps -o pgid= -p $$ > {tmp_path}/pgid; echo $PPID > {tmp_path}/ppid"
    p, _ = wrapped(tmp_path, ["bash", "-c", probe], env={"PATH": f"{slow}:{os.environ['PATH']}"})
    assert p.returncode == 0, p.stderr
    launched, called = (float((tmp_path / n).read_text()) for n in ("launched", "check-called"))
    assert launched < called + 2  # not after the check's 3 s start
    pgid = int((tmp_path / "pgid").read_text())
    assert pgid != os.getpgrp()  # its own process group: the check stops it as a whole


def test_the_node_entry_starts_the_check_after_a_delay_or_when_the_launch_ends(tmp_path):
    """The check's Python waits NCCLGEN_CHECK_AFTER_S (default 1 s) so the node's CPUs go to the launch
    first, but a launch that ends sooner is checked at once (the entry does not sit out the delay)."""
    marker = tmp_path / "slow-bin"
    marker.mkdir()
    (marker / "python3").write_text(f'#!/bin/bash\ndate +%s.%N > {tmp_path}/check-called\nexec {sys.executable} "$@"\n')
    (marker / "python3").chmod(0o755)
    path = {"PATH": f"{marker}:{os.environ['PATH']}"}
    probe = ["bash", "-c", f"date +%s.%N > {tmp_path}/launched; sleep 3"]
    p, _ = wrapped(tmp_path, probe, env={**path, "NCCLGEN_CHECK_AFTER_S": "1.5"})
    assert p.returncode == 0, p.stderr
    launched, called = (float((tmp_path / n).read_text()) for n in ("launched", "check-called"))
    assert called - launched >= 1.4  # the delay, not at once
    p, took = wrapped(tmp_path, ["bash", "-c", "exit 5"], env={**path, "NCCLGEN_CHECK_AFTER_S": "60"})
    assert p.returncode == 5 and (tmp_path / "check-called").stat().st_mtime > launched, p.stderr
    assert took < 30  # the launch ended: checked then, not after the 60 s
    assert "Terminated" not in p.stderr and "sleep" not in p.stderr  # no job notice for the stopped timer


def test_the_node_entry_keeps_the_launchs_status_and_stops_it_on_a_difference(tmp_path):
    p, _ = wrapped(tmp_path, ["bash", "-c", "exit 3"])
    assert p.returncode == 3, p.stderr
    p, _ = wrapped(tmp_path, ["bash", "-c", "kill -TERM $$"])
    assert p.returncode == 128 + 15, p.stderr
    p, _ = wrapped(tmp_path, ranks(local=1, nranks=2, first=1))
    assert p.returncode == 0, p.stderr  # as planned: runs to the end
    p, took = wrapped(tmp_path, ranks(local=1, nranks=2, first=1), fault="rail", env={"NCCLGEN_STANDIN_AFTER_S": "30"})
    assert p.returncode == 7, p.stderr
    assert failed(p.stderr)[0].endswith("HCAs: expected mlx5_0:1,mlx5_3:1, found mlx5_0:1 (not opened: mlx5_3:1)")
    assert took < AFTER_S / 2  # stopped, not waited for
    assert (tmp_path / "nccl/sub").is_dir() and os.stat(tmp_path / "nccl/sub").st_mode & 0o1777 == 0o1777


def test_a_launch_already_gone_is_checked_from_its_files_at_once(tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()
    p = subprocess.run(
        [sys.executable, str(CHECK), spec(tmp_path), "--pid", str(gone.pid), "0"],
        capture_output=True,
        text=True,
        timeout=30,
        env=nccl_env(tmp_path),
    )
    assert p.returncode == 0 and "no NCCL process wrote" in p.stderr, p.stderr


def test_a_check_that_cannot_start_is_said_and_the_launch_status_kept(tmp_path):
    nopy = tmp_path / "no-python"  # a PATH where python3 is not found: the check cannot run
    nopy.mkdir()
    for tool in ("bash", "mkdir", "chmod", "dirname"):
        (nopy / tool).symlink_to(subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip())
    p, _ = wrapped(tmp_path, ["bash", "-c", "exit 4"], env={"PATH": str(nopy)})
    assert p.returncode == 4
    assert "ncclgen: transport: node node7: not checked: the check ended with status 127" in p.stderr


def test_a_cancelled_step_ends_the_launch_without_a_not_checked_line(tmp_path):
    """scancel: the step's processes get SIGTERM. The entry forwards it to the launch's group and waits for
    the check, whose own wait a trapped signal interrupts: that is no failure of the check to report."""
    wrapped(tmp_path, ["true"])  # writes the folder
    d = tmp_path / "node-folder"
    e = dict(os.environ, NCCLGEN_DIR=str(d), NCCLGEN_NODE="node7", NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT")
    e["NCCL_DEBUG_FILE"] = f"{tmp_path}/nccl/sub/%h.%p.log"
    p = subprocess.Popen(
        ["bash", str(d / "bin/ncclgen_transport"), "sleep", "30"],
        env=e,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    time.sleep(3)  # the check has started (a second after the launch, NCCLGEN_CHECK_AFTER_S)
    # the check ends with the step (here killed first, as a second signal of a cancel may do), then every
    # process of the step gets SIGTERM, as Slurm sends it
    subprocess.run(["pkill", "-KILL", "-s", str(p.pid), "-f", "transport.py"], check=True)
    subprocess.run(["pkill", "-TERM", "-s", str(p.pid)], check=True)
    _, err = p.communicate(timeout=20)
    assert p.returncode == 128 + 15, err
    assert "not checked" not in err, err


def _finished_rank(folder):
    """A stand-in rank that ran and ended outside any check: its debug file's path (named by its PID)."""
    env = nccl_env(folder)
    env.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1", NCCLGEN_STANDIN_AFTER_S="0")
    env.update(NCCLGEN_STANDIN_START_S="0")
    subprocess.run([sys.executable, str(STANDIN)], env=env, check=True, timeout=30)
    (path,) = [p for p in folder.iterdir() if p.suffix == ".log"]
    return path


def _check_pid(folder, pid, since):
    env = nccl_env(folder)
    return subprocess.run(
        [sys.executable, str(CHECK), spec(folder, hcas=[], plugin=None), "--pid", str(pid), str(since)],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )


def test_a_claim_left_by_an_earlier_job_under_a_reused_pid_is_stale(tmp_path):
    """PIDs are reused (pid_max is 32768 on many nodes) and the debug folder outlives jobs: a claim an
    earlier job's check left beside the name a new rank reuses, its launch long gone, does not hide the
    rank from its own check (CI once saw a node report 1 of its 2 processes)."""
    since = time.time()
    path = _finished_rank(tmp_path)
    claim = Path(str(path) + ".claimed")
    claim.write_text("999999999 1")  # a launch that no longer runs
    os.utime(claim, (since - 3600, since - 3600))
    gone = subprocess.Popen(["true"])
    gone.wait()
    p = _check_pid(tmp_path, gone.pid, since)
    assert p.returncode == 0 and "1 processes" in p.stderr, p.stderr


def test_an_old_file_is_read_once_a_new_rank_rewrites_it(tmp_path):
    """A file an earlier job's rank left (older than this launch, its PID gone) is not this launch's; once
    a new rank under the same PID opens it again (NCCL truncates it), the check reads it."""
    since = time.time() - 0.5
    path = _finished_rank(tmp_path)
    fresh = path.read_bytes()
    path.write_bytes(b"stale: an earlier job's lines\n")
    os.utime(path, (since - 3600, since - 3600))
    launch = subprocess.Popen(["sleep", "2"])
    try:
        check = subprocess.Popen(
            [sys.executable, str(CHECK), spec(tmp_path, hcas=[], plugin=None), "--pid", str(launch.pid), str(since)],
            stderr=subprocess.PIPE,
            text=True,
            env=nccl_env(tmp_path),
        )
        time.sleep(0.8)  # the check has seen the old file by now
        path.write_bytes(fresh)
    finally:
        launch.wait()  # reaped: the check sees the launch gone
    _, err = check.communicate(timeout=30)
    assert check.returncode == 0 and "1 processes" in err, err


def test_a_rank_another_check_claimed_stays_its_after_that_launch_was_stopped(tmp_path):
    """Two checks on one host (the local cluster's fake nodes; two jobs on a node): check A claims its
    live rank, then A's launch is stopped; check B, whose launch started after the claim was made but
    while A still ran, must not take that dead rank as its own (CI once saw node1 report node2's rank
    and node2's problem after node2's check had stopped node2's launch)."""
    env = nccl_env(tmp_path)
    env.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1", NCCLGEN_STANDIN_AFTER_S="30")
    env.update(NCCLGEN_STANDIN_START_S="0")
    launch_a = subprocess.Popen([sys.executable, str(STANDIN)], env=env, start_new_session=True)
    check_a = subprocess.Popen(
        [sys.executable, str(CHECK), spec(tmp_path, hcas=[], plugin=None), "--pid", str(launch_a.pid), "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    claim = Path(f"{tmp_path}/{socket.gethostname()}.{launch_a.pid}.log.claimed")
    deadline = time.monotonic() + 20
    while not claim.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert claim.exists()
    time.sleep(0.3)
    since_b = time.time()  # B's launch starts after the claim, while A still runs
    time.sleep(0.6)
    with open(str(claim)[: -len(".claimed")], "a") as log:  # the rank still writes after B started
        log.write(
            f"{socket.gethostname()}:{launch_a.pid}:{launch_a.pid} [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n"
        )
    launch_a.kill()
    launch_a.wait()
    check_a.communicate(timeout=30)
    gone = subprocess.Popen(["true"])
    gone.wait()
    p = _check_pid(tmp_path, gone.pid, since_b)
    assert p.returncode == 0 and "no NCCL process wrote" in p.stderr, p.stderr


def test_a_stopped_launch_claims_the_rank_files_that_appeared_since_the_last_poll(tmp_path):
    """Stopping its launch, a check claims every live rank's file first (and while the ranks end): a rank that
    opened its file after the check's last poll, then died from the stop, would otherwise read as another
    check's rank that ended unclaimed (CI saw node1 report node2's rank once the check started a second late)."""
    from ncclgen.jobside import transport

    host = socket.gethostname()
    rank = f"import os,time; open(f'{tmp_path}/{host}.{{os.getpid()}}.log','w').write('x\\n'); time.sleep(30)"
    for claim in (True, False):
        for f in tmp_path.glob("*.log*"):
            f.unlink()
        launch = subprocess.Popen(
            ["bash", "-c", f"sleep 0.2; {sys.executable} -c {json.dumps(rank)} & wait"], start_new_session=True
        )
        check = transport.Check(json.loads(spec(tmp_path)), "node7", host, root_pid=launch.pid, emit=lambda _l: None)
        check.poll()  # before the rank's file exists
        deadline = time.monotonic() + 20
        while not list(tmp_path.glob("*.log")) and time.monotonic() < deadline:
            time.sleep(0.02)
        transport.stop(launch, check.scan if claim else None)
        launch.wait()
        assert bool(list(tmp_path.glob("*.log.claimed"))) is claim
