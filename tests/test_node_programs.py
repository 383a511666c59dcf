"""The node side of an ncclgen sbatch script (ncclgen/jobside/node.sh), run under the stand-ins of
tests/slurm_shims.py: a private folder per node, the workload's setup once per node and unable to leave
its wrapper, the node programs run from the folder, srun clients that do not grow with the node count,
a job resized at submission, and the monitor's log folder read whole. Issue 28 items 3-7."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from slurm_shims import Run, render

from ncclgen.render.slurm import NodeFile


def _script(capsys, tmp_path, launcher="ray", setup=(), command=("python3", "work.py"), cluster="local-ci", *more):
    wl = tmp_path / "w.yaml"
    doc = {"name": "w", "description": "d", "launcher": launcher, "nodes": 2, "command": list(command)}
    if setup:
        doc["setup"] = list(setup)
    wl.write_text(yaml.safe_dump(doc))
    return render(capsys, "--cluster", cluster, "--tier", "3", "--workload", str(wl), *more)


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
def test_setup_runs_once_per_node_before_every_step_and_its_exports_reach_them(capsys, tmp_path, launcher):
    ran = tmp_path / "setup-ran"
    setup = [f'echo "$SLURMD_NODENAME" >> {ran}', 'export FROM_SETUP="set on $SLURMD_NODENAME"']
    script = _script(capsys, tmp_path, launcher, setup)
    run = Run(tmp_path, script, SHIM_DRIVER="exit:0").finish()
    assert run.rc == 0, run.stderr
    # head, workers and driver (Ray; head and driver start together on node1), or torchrun: one setup per node
    assert sorted(ran.read_text().split()) == ["node1", "node2"]
    assert sorted(re.findall(r"ncclgen: setup on node (\S+)", run.stdout)) == ["node1", "node2"]
    launched = run.calls("torchrun") if launcher == "torchrun" else run.calls("ray") + run.calls("python3")
    assert len(launched) >= 2
    for _args, env in launched:
        assert env["FROM_SETUP"] == f"set on {env['SLURMD_NODENAME']}"
    assert run.leftovers() == []


def test_a_setup_line_cannot_leave_its_wrapper(capsys, tmp_path):
    """On 0ddb3a1 the line `NCCLGEN_SETUP_EOF)` ended the script's heredoc and its $(...) (bash 5.2),
    and the next line redefined srun in the batch shell for every later step."""
    lines = ["NCCLGEN_SETUP_EOF)", "srun() { touch PWNED; }", "true $(cat <<'NCCLGEN_SETUP_EOF'"]  # PWNED, rc 0 there
    script = _script(capsys, tmp_path, "torchrun", lines, ("python3", "work.py"))
    run = Run(tmp_path, script).finish()
    assert not list(tmp_path.rglob("PWNED")) and not list(Path.cwd().glob("PWNED"))
    assert run.calls("srun"), run.stderr  # the step reached the srun stand-in, not a function
    # the lines are a file run by a child bash: a syntax error there is the setup failing, on each node
    # (the first node to fail ends the launch step, --kill-on-bad-exit=1, so the other may not say it)
    named = re.findall(r"node (node\d): the workload's setup failed", run.stderr)
    assert named and set(named) <= {"node1", "node2"}, run.stderr
    assert run.rc != 0 and run.calls("torchrun") == []


def test_setup_that_exits_early_stops_only_itself(capsys, tmp_path):
    script = _script(capsys, tmp_path, "torchrun", ["exit 0", "touch PWNED_NEVER"], ("python3", "work.py"))
    run = Run(tmp_path, script).finish()
    assert run.rc == 0, run.stderr
    assert not list(tmp_path.rglob("PWNED_NEVER")) and len(run.calls("torchrun")) == 2


def test_a_failed_setup_ends_the_job_with_one_line_naming_the_node(capsys, tmp_path):
    script = _script(capsys, tmp_path, "ray", ["[[ $SLURMD_NODENAME != node2 ]] || exit 3"])
    run = Run(tmp_path, script, SHIM_WAIT="block").finish()
    assert run.rc != 0
    errors = [ln for ln in run.stderr.splitlines() if "setup failed" in ln]
    assert errors == [
        "ncclgen: ERROR: node node2: the workload's setup failed (status 3; its output is above); the job stops"
    ], run.stderr
    assert run.calls("python3") == []  # no driver
    assert run.leftovers() == []


def test_a_planted_sitecustomize_in_the_old_predictable_folder_does_not_run(capsys, tmp_path):
    """0ddb3a1 put $TMPDIR/ncclgen-$SLURM_JOB_ID first on PYTHONPATH: another user could plant code there."""
    old = tmp_path / "tmp" / "ncclgen-4242"
    old.mkdir(parents=True)
    marker = tmp_path / "PLANTED-RAN"
    (old / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    script = _script(capsys, tmp_path, "ray", (), (sys.executable, "-c", "pass"))  # a real Python driver
    run = Run(tmp_path, script).finish()
    assert run.rc == 0, run.stderr
    assert not marker.exists()
    for _args, env in run.calls("ray"):
        path = env["PYTHONPATH"].split(":")
        assert str(old) not in path
        folder = Path(path[0]).parent
        assert folder.stat().st_mode & 0o777 == 0o700 and "4242" not in folder.name


def test_node_programs_are_files_not_argv_text(capsys, tmp_path):
    script = _script(capsys, tmp_path, "ray", ["true"], ("python3", "work.py"), "local-ci", "--monitor")
    run = Run(tmp_path, script).finish()
    assert run.rc == 0, run.stderr
    for args, _ in run.calls("srun"):
        assert max(len(a) for a in args) < 200, args  # no program text in any srun command line
    waits = run.calls("raywait")
    assert waits and all(a[0].endswith("/raywait.py") for a, _ in waits)


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
def test_srun_clients_on_the_batch_host_do_not_grow_with_the_nodes(capsys, tmp_path, launcher):
    counts = []
    for nodes in (2, 6):
        work = tmp_path / str(nodes)
        work.mkdir()
        script = _script(capsys, work, launcher, (), ("python3", "work.py"), "local-ci", "--monitor")
        run = Run(work, script, SHIM_NODES=str(nodes), SHIM_WAIT=f"await:ray:{nodes}").finish()
        assert run.rc == 0, run.stderr
        counts.append(len(run.calls("srun")))
        started = run.calls("torchrun" if launcher == "torchrun" else "ray")
        assert sorted(env["SLURMD_NODENAME"] for _, env in started) == [f"node{i}" for i in range(1, nodes + 1)]
    assert counts[0] == counts[1] <= 8, counts


def test_a_job_resized_at_submission_runs_with_the_nodes_it_got(capsys, tmp_path):
    script = _script(capsys, tmp_path, "torchrun")  # local-ci: nothing in the plan depends on the count
    run = Run(tmp_path, script, SHIM_NODES="3").finish()
    assert run.rc == 0, run.stderr
    calls = run.calls("torchrun")
    assert len(calls) == 3 and all("--nnodes=3" in a for a, _ in calls)


def test_a_resize_the_plan_depends_on_is_refused_naming_the_setting(capsys, tmp_path):
    script = _script(capsys, tmp_path, "torchrun", (), ("python3", "work.py"), "h100-ib")
    run = Run(tmp_path, script, SHIM_NODES="1").finish()
    assert run.rc == 2
    assert (
        "ncclgen: ERROR: this script is for 2 or more node(s) x 8 GPUs; the job has 1 x 8 "
        "(NCCL_IB_QPS_PER_CONNECTION (rule ib-qps) is planned from 2 nodes;"
    ) in run.stderr, run.stderr
    assert run.calls("srun") == []


def test_the_monitor_folder_is_read_whole_from_a_log_path_with_spaces(capsys, tmp_path):
    script = _script(capsys, tmp_path, "torchrun", (), ("python3", "work.py"), "local-ci", "--monitor")
    log = "/logs/my runs/x StdOut=/evil/y 4242.out"
    run = Run(tmp_path, script, SHIM_STDOUT=log, SHIM_DRIVER="await:monitor:2").finish()
    assert run.rc == 0, run.stderr
    outs = {a[1] for a, _ in run.calls("monitor")}
    assert outs == {"/logs/my runs/x StdOut=/evil/ncclgen-monitor-4242-{node}.jsonl"}


def test_a_program_line_that_starts_with_the_delimiter_gets_another_delimiter():
    f = NodeFile("src", "setup.sh", "NCCLGEN_SETUP", "NCCLGEN_SETUP_EOF)\nNCCLGEN_SETUP_EOF_1\n")
    assert f.delimiter == "NCCLGEN_SETUP_EOF_2"


def test_a_later_jobs_first_step_removes_the_folders_of_finished_jobs(capsys, tmp_path):
    """Private folders were never removed (issue 28): a job's first step on a node removes this user's folders
    from earlier jobs there once no step of theirs runs (their `alive` lock is free) and their setup ended
    NCCLGEN_TIDY_AFTER_S (default an hour) ago; the running job's own folders, on any node, stay."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    script = _script(capsys, tmp_path, "torchrun", ["true"])

    def job(name: str, **env: str) -> set[str]:
        (tmp_path / name).mkdir()
        run = Run(tmp_path / name, script, TMPDIR=str(shared), **env).finish()
        assert run.rc == 0, run.stderr
        assert "ncclgen-node" not in run.stderr, run.stderr  # no noise from folders it looked at
        return {p.name for p in shared.glob("ncclgen-*")}

    first = job("a")
    assert len(first) == 2  # node1 and node2 share this host's TMPDIR here
    legacy = shared / "ncclgen.LegacyAbCd"  # an older ncclgen's folder: no key file, setup two hours ago
    legacy.mkdir(mode=0o700)
    (legacy / "ready").touch()
    os.utime(legacy / "ready", (time.time() - 7200, time.time() - 7200))
    lock = shared / f".ncclgen.tidy.{os.geteuid()}"  # when the last tidy-up started: at most one a minute
    assert _soon(lambda: lock.is_file() and lock.read_text().strip().isdigit())
    second = job("b")
    assert first < second and legacy.exists()  # a tidy-up ran on this host less than a minute ago
    lock.write_text("0\n")
    second = job("b2")
    assert _soon(lambda: not legacy.exists())  # two hours old: removed (in the background)
    assert first < {p.name for p in shared.glob("ncclgen-*")}  # within the hour: kept
    lock.write_text("0\n")
    job("c", NCCLGEN_TIDY_AFTER_S="0")
    # only the last job's two folders are left
    assert _soon(lambda: len(list(shared.glob("ncclgen-*"))) == 2)
    third = {p.name for p in shared.glob("ncclgen-*")}
    assert not third & second
    assert not list(shared.glob(".ncclgen-*")) and not list(shared.glob("ncclgen.*"))  # no links, no legacy folder


def test_the_tidy_up_removes_this_users_nccl_debug_files_after_a_week(capsys, tmp_path):
    """The transport check's debug files (/tmp/ncclgen-nccl, kept for `ncclgen triage`) were never removed,
    so the folder every check scans only grew: the tidy-up removes this user's NCCL debug files (and their
    claims) NCCLGEN_NCCL_KEEP_S (default 7 days) after their last line; newer ones stay."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    script = _script(capsys, tmp_path, "torchrun", ["true"], ("python3", "work.py"), "h100-ib")
    assert "NCCL_DEBUG_FILE='/tmp/ncclgen-nccl/" in script  # the transport check's folder (on by default)
    folder = Path("/tmp/ncclgen-nccl")
    folder.mkdir(exist_ok=True)
    tag = f"tidy-test-{os.getpid()}-{time.monotonic_ns()}"
    old, old_claim, fresh = folder / f"{tag}.1.log", folder / f"{tag}.1.log.claimed", folder / f"{tag}.2.log"
    other = folder / f"{tag}.notes.txt"  # not a debug file: never touched
    for f in (old, old_claim, fresh, other):
        f.write_text("x\n")
    week = time.time() - 8 * 86400
    for f in (old, old_claim, other):
        os.utime(f, (week, week))
    os.utime(fresh, (time.time() - 120, time.time() - 120))  # two minutes ago
    try:
        run = Run(tmp_path, script, TMPDIR=str(shared)).finish()
        assert run.rc == 0, run.stderr
        assert _soon(lambda: not old.exists() and not old_claim.exists())
        assert fresh.exists() and other.exists()
        (shared / f".ncclgen.tidy.{os.geteuid()}").write_text("0\n")
        (tmp_path / "b").mkdir()
        run = Run(tmp_path / "b", script, TMPDIR=str(shared), NCCLGEN_NCCL_KEEP_S="60").finish()
        assert run.rc == 0, run.stderr
        assert _soon(lambda: not fresh.exists()) and other.exists()
    finally:
        for f in (old, old_claim, fresh, other):
            f.unlink(missing_ok=True)


def _soon(done, within_s: float = 10.0) -> bool:
    """The tidy-up runs in the background of a job's first step: wait for its effect, not a fixed time."""
    deadline = time.monotonic() + within_s
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_folder_whose_step_still_runs_is_kept(tmp_path):
    """The tidy-up's test of 'in use': a shared lock on `alive`, held by a live step, refuses the exclusive one."""
    folder = tmp_path / "ncclgen.AbCdEfGhIj"
    folder.mkdir(mode=0o700)
    (folder / "ready").touch()
    holder = subprocess.Popen(["flock", "-s", str(folder / "alive"), "sleep", "30"], start_new_session=True)
    try:
        time.sleep(0.3)
        r = subprocess.run(["flock", "-n", "-x", str(folder / "alive"), "rm", "-rf", "--", str(folder)], check=False)
        assert r.returncode != 0 and folder.is_dir()
    finally:
        os.killpg(holder.pid, signal.SIGKILL)  # flock and the sleep that holds its descriptor
        holder.wait()
    # the killed sleep releases its lock when the kernel has reaped it: wait for that, not for a fixed time
    r = subprocess.run(["flock", "-w", "10", "-x", str(folder / "alive"), "rm", "-rf", "--", str(folder)], check=False)
    assert r.returncode == 0 and not folder.exists()


def test_a_tidy_lock_that_is_a_link_stops_the_tidy_up(capsys, tmp_path):
    """The lock beside the folders is this user's plain file; a link planted in its place (another user's
    trap in a shared TMPDIR) is neither written through nor trusted: no tidy-up runs."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    target = tmp_path / "elsewhere"
    target.write_text("0\n")
    (shared / f".ncclgen.tidy.{os.geteuid()}").symlink_to(target)
    legacy = shared / "ncclgen.LegacyAbCd"
    legacy.mkdir(mode=0o700)
    (legacy / "ready").touch()
    os.utime(legacy / "ready", (time.time() - 7200, time.time() - 7200))
    script = _script(capsys, tmp_path, "torchrun", ["true"])
    run = Run(tmp_path, script, TMPDIR=str(shared)).finish()
    assert run.rc == 0, run.stderr
    time.sleep(1)  # a tidy-up would run in the background: give it the time it takes
    assert legacy.is_dir() and target.read_text() == "0\n"
