"""A real Slurm 22.05 cluster on this machine, for tests: munged + slurmctld + N slurmd with fake GPUs.

Why: ncclgen's sbatch scripts are only proven by the real scheduler (`sbatch --test-only` checks the
resource request, `srun` shows what reaches the tasks), so the tests run Debian's slurm-wlm packages
instead of a mock. The recipe (Debian 12, slurm-wlm 22.05.8, munge 0.5.15) follows slurm.conf(5),
gres.conf(5) and munged(8) of those releases; the measured behaviour below was seen on this kind of
machine.

Everything lives under one private folder: munge key and socket, slurm.conf/gres.conf, state, spool,
pid files, logs, fake GPU devices. No system service, nothing in /etc; ports are picked free at start,
so two clusters can run side by side. Every start is a fresh cluster (state wiped; job ids start at the
controller's port number, so two clusters on this machine do not run the same job id).

Each fake node declares the DGX H100 shape (2 sockets x 56 cores x 2 threads = 224 CPUs, gpu:h100:8),
so an sbatch script rendered for the h100-ib preset passes `sbatch --test-only`, while small jobs
(2 GPUs/node, 2 CPUs) really run on this 2-core machine.

Fake node names (node1, node2...) do NOT resolve, and every task's `hostname` is the real host.
Scripts must take addresses from NodeAddr (`scontrol show node NAME`, here 127.0.0.1) and node identity
from SLURMD_NODENAME / SLURM_NODEID.

By hand (as root):
    eval "$(python tests/slurm_harness.py start /tmp/slurm)"    # prints: export SLURM_CONF=...
    python tests/slurm_harness.py stop /tmp/slurm
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import re
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

from slurm_stop import MARKER, SlurmStopper, _proc_state  # noqa: F401  (_proc_state: tests use it)

SOCKETS, CORES_PER_SOCKET, THREADS_PER_CORE = 2, 56, 2  # DGX H100 (clusters/h100-ib.yaml: CPUs 0-223)
CPUS_PER_NODE = SOCKETS * CORES_PER_SOCKET * THREADS_PER_CORE
GPUS_PER_NODE = 8
GPU_TYPE = "h100"
PARTITION = "debug"
FEATURES = "h100,ib"  # node features, so a rendered --constraint passes `sbatch --test-only`
IDLE_TIMEOUT_S = 30.0  # measured start-to-idle is 1-1.5 s; 30 s only bounds a hang
DOWN_GRACE_S = 5.0  # a node may show "down" briefly while it registers; longer means it is broken
POLL_S = 0.25  # sbatch --wait took 42 s for a 9 s job here; polling scontrol is prompt
LOG_TAIL_LINES = 15

# MARKER (slurm_stop.py) goes into every daemon's (and, via `env`, every job's) environment: stop() finds
# and kills exactly this cluster's processes by it, never by a process name another cluster could share.

DAEMONS = ("munged", "mungekey", "munge", "unmunge", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "scontrol", "sinfo", "squeue", "scancel")
# Inherited from an outer Slurm job (if pytest itself runs under one) they would retarget our clients.
_FOREIGN_ENV = ("SLURM_", "SBATCH_", "SALLOC_", "SRUN_", "SQUEUE_", "SINFO_")
_TERMINAL = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "TIMEOUT",
    }
)
# Registration problems that never heal by themselves (a fresh state has no admin-set drain).
_BROKEN_NODE_STATES = frozenset({"inval", "drain", "drained", "draining", "fail", "failing"})
_UNIX_PATH_MAX = 107  # AF_UNIX sun_path limit; munge's socket lives under the workdir


class SlurmHarnessError(RuntimeError):
    """The local cluster could not start, or a Slurm client command failed."""


@dataclasses.dataclass(frozen=True)
class JobResult:
    state: str  # Slurm's final JobState, e.g. COMPLETED, FAILED
    exit_code: int  # first half of ExitCode=N:S (the batch script's exit status)
    elapsed_s: float  # wall time wait() spent until the job reached a final state
    raw: str  # the last `scontrol show job -o` line, for assertion messages


def _which(name: str) -> str | None:
    """Find a binary also in /usr/sbin, which a non-login root shell may lack on PATH."""
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))


def unavailable_reason() -> str | None:
    """Why this machine cannot run the cluster, or None when it can."""
    missing = [name for name in DAEMONS + CLIENTS if _which(name) is None]
    if missing:
        return (
            "Slurm/munge binaries not found: "
            + ", ".join(missing)
            + " (apt-get install slurmctld slurmd slurm-client munge)"
        )
    if os.geteuid() != 0:
        return "the local Slurm cluster needs root (SlurmUser=root; slurmd starts the jobs)"
    return None


def _free_ports(count: int) -> list[int]:
    """Ports nothing listens on now, distinct from each other (all held open until all are picked)."""
    held = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("", 0))
            held.append(s)
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


def _mem_total_mib() -> int:
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    raise SlurmHarnessError("MemTotal missing from /proc/meminfo")


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    text = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
    return f"--- {path} (last {len(text)} lines)\n" + "\n".join(text)


class LocalSlurm(SlurmStopper):
    """One private Slurm cluster in `workdir` with `nodes` fake nodes node1..nodeN on 127.0.0.1."""

    def __init__(self, workdir: str | os.PathLike, nodes: int = 2):
        if nodes < 1:
            raise ValueError(f"nodes must be >= 1, got {nodes}")
        self.workdir = Path(workdir).resolve()
        self.nodes = [f"node{i}" for i in range(1, nodes + 1)]
        self.conf = self.workdir / "etc" / "slurm.conf"
        self.start_to_idle_s: float | None = None
        self._children: dict[int, subprocess.Popen] = {}  # slurmctld/slurmd, reaped by stop()
        self._bin = {name: _which(name) or name for name in DAEMONS + CLIENTS}

    # --- paths -------------------------------------------------------------------------------------
    def _d(self, *parts: str) -> Path:
        return self.workdir.joinpath(*parts)

    @property
    def _munge_socket(self) -> Path:
        return self._d("munge", "munge.socket.2")

    @property
    def env(self) -> dict[str, str]:
        """Environment for Slurm clients and the jobs they submit (jobs inherit it: --export=ALL)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_ENV)}
        env["SLURM_CONF"] = str(self.conf)
        env[MARKER] = str(self.workdir)
        # The jobs' preflight (ncclgen/jobside/preflight.py) counts GPUs as /dev/nvidiaN device nodes
        # (limited to the CUDA_VISIBLE_DEVICES Slurm sets): point it at the fake ones, the test-only
        # override. $workdir/dev/shm is a link to the real /dev/shm, so that check stays real.
        env["NCCLGEN_PREFLIGHT_DEV"] = str(self._d("dev"))
        return env

    # --- start -------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start munged, slurmctld and one slurmd per node; return once every node is idle."""
        if self.running_pids():
            raise SlurmHarnessError(f"a cluster already runs in {self.workdir}; stop it first")
        t0 = time.monotonic()
        try:
            self._prepare()
            self._start_munged()
            self._spawn("slurmctld", [self._bin["slurmctld"], "-D", "-f", str(self.conf)])
            for node in self.nodes:
                self._spawn(f"slurmd-{node}", [self._bin["slurmd"], "-D", "-N", node, "-f", str(self.conf)])
            self._wait_idle()
        except BaseException:
            self.stop()
            raise
        self.start_to_idle_s = time.monotonic() - t0

    def _prepare(self) -> None:
        if len(str(self._munge_socket)) > _UNIX_PATH_MAX:
            raise SlurmHarnessError(f"workdir path too long for a unix socket: {self._munge_socket}")
        for sub in ("etc", "munge", "dev", "state", "spool", "run", "log"):
            shutil.rmtree(self._d(sub), ignore_errors=True)
            self._d(sub).mkdir(parents=True)
        for node in self.nodes:  # slurmd does not create its %n spool folder itself
            self._d("spool", f"slurmd-{node}").mkdir()
        self._make_fake_gpus()
        slurmctld_port, *node_ports = _free_ports(1 + len(self.nodes))
        self.conf.write_text(self._slurm_conf(slurmctld_port, node_ports), encoding="ascii")
        self._d("etc", "gres.conf").write_text(self._gres_conf(), encoding="ascii")

    def _make_fake_gpus(self) -> None:
        """Char devices 195:N like /dev/nvidiaN: slurmd only stat()s them. A GPU without File= is
        dropped and the node goes INVAL; a regular file works but logs an error per GPU."""
        for i in range(GPUS_PER_NODE):
            path = self._d("dev", f"nvidia{i}")
            try:
                os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(195, i))
            except OSError:  # no CAP_MKNOD (some containers): the noisy fallback still works
                path.touch()
            path.chmod(0o666)
        # The preflight reads the fake /dev (see env): its /dev/shm is the real one.
        self._d("dev", "shm").symlink_to("/dev/shm")

    def _slurm_conf(self, slurmctld_port: int, node_ports: list[int]) -> str:
        host = socket.gethostname().split(".")[0]
        d = self.workdir
        lines = [
            "# Generated by tests/slurm_harness.py (slurm 22.05.8, slurm.conf(5))",
            "ClusterName=ncclgen-test",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={slurmctld_port}",
            # Job ids from the controller's port, which no other live cluster on this machine holds: two
            # clusters (two test runs at once) then never both run a job 1, whose ports (ncclgen derives
            # them from the job id where nodes are shared) and processes would look alike.
            f"FirstJobId={slurmctld_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self._munge_socket}",
            f"StateSaveLocation={d}/state",
            f"SlurmdSpoolDir={d}/spool/slurmd-%n",
            f"SlurmctldPidFile={d}/run/slurmctld.pid",
            f"SlurmdPidFile={d}/run/slurmd-%n.pid",
            f"SlurmctldLogFile={d}/log/slurmctld.log",
            f"SlurmdLogFile={d}/log/slurmd-%n.log",
            "LogTimeFormat=rfc5424_ms",  # ms and the UTC offset: end_time() reads job ends from this log
            "MailProg=/bin/true",  # else "Configured MailProg is invalid"
            "ProctrackType=proctrack/linuxproc",  # no cgroups: nothing left behind in /sys/fs/cgroup
            "TaskPlugin=task/none",  # the declared 224 CPUs do not exist: never bind to them
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "ReturnToService=2",
            "MinJobAge=3600",  # job records stay for wait() to read
            "KillWait=5",
            "GresTypes=gpu",
            "SlurmdParameters=config_overrides",  # nodes claim the declared shape, not the real one
        ]
        shape = (
            f"CPUs={CPUS_PER_NODE} Boards=1 SocketsPerBoard={SOCKETS} "
            f"CoresPerSocket={CORES_PER_SOCKET} ThreadsPerCore={THREADS_PER_CORE} "
            f"RealMemory={_mem_total_mib()} Gres=gpu:{GPU_TYPE}:{GPUS_PER_NODE} Features={FEATURES}"
        )
        lines += [
            f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} {shape} State=UNKNOWN"
            for node, port in zip(self.nodes, node_ports)
        ]
        lines.append(f"PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
        return "\n".join(lines) + "\n"

    def _gres_conf(self) -> str:
        return (
            f"AutoDetect=off\nNodeName={','.join(self.nodes)} Name=gpu Type={GPU_TYPE} "
            f"File={self.workdir}/dev/nvidia[0-{GPUS_PER_NODE - 1}]\n"
        )

    def _start_munged(self) -> None:
        """munged forks into the background itself and writes its pid file. --force: munged insists
        that every folder above its socket be world-traversable, which pytest's 0700 tmp folders are
        not; all clients here are root, so the check protects nothing."""
        m = self._d("munge")
        self._run([self._bin["mungekey"], "-c", "-b", "1024", "-k", str(m / "munge.key")], check=True)
        (m / "munge.key").chmod(0o600)
        with open(self._d("log", "munged.out"), "wb") as out:
            rc = subprocess.run(
                [
                    self._bin["munged"],
                    "--force",
                    f"--key-file={m / 'munge.key'}",
                    f"--socket={self._munge_socket}",
                    f"--pid-file={m / 'munged.pid'}",
                    f"--seed-file={m / 'munged.seed'}",
                    f"--log-file={self._d('log', 'munged.log')}",
                ],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                check=False,
                timeout=30,
            ).returncode
        if rc != 0:
            self._fail(f"munged exited with status {rc}")
        cred = self._run([self._bin["munge"], "-n", "-S", str(self._munge_socket)])
        check = self._run([self._bin["unmunge"], "-S", str(self._munge_socket)], input=cred.stdout)
        if check.returncode != 0:
            self._fail(f"munge self-test failed: {(cred.stderr + check.stderr).strip()}")

    def _spawn(self, name: str, argv: list[str]) -> None:
        """Own session and stdio in a file, so `$(harness start)` and pytest are never held open."""
        with open(self._d("log", f"{name}.out"), "wb") as out:
            proc = subprocess.Popen(
                argv,
                env=self.env,
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._children[proc.pid] = proc

    def _wait_idle(self) -> None:
        deadline = time.monotonic() + IDLE_TIMEOUT_S
        down_since: float | None = None
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            for proc in self._children.values():
                if proc.poll() is not None:
                    self._fail(f"{Path(proc.args[0]).name} exited with status {proc.returncode}")
            r = self._run([self._bin["sinfo"], "-h", "-N", "-o", "%N %T"])
            if r.returncode == 0:  # non-zero while slurmctld is still coming up
                states = dict(line.split(None, 1) for line in r.stdout.splitlines() if line.strip())
                plain = {node: state.rstrip("*~#!%$@^-+") for node, state in states.items()}
                if sorted(plain) == sorted(self.nodes) and set(plain.values()) == {"idle"}:
                    return
                broken = {n: s for n, s in plain.items() if s in _BROKEN_NODE_STATES}
                if broken:
                    self._fail(f"node(s) unusable: {broken}")
                if "down" in plain.values():
                    down_since = down_since or time.monotonic()
                    if time.monotonic() - down_since > DOWN_GRACE_S:
                        self._fail(f"node(s) down for {DOWN_GRACE_S:.0f} s: {states}")
                else:
                    down_since = None
            time.sleep(0.2)
        self._fail(f"nodes not idle after {IDLE_TIMEOUT_S:.0f} s: {states or 'sinfo never answered'}")

    def _fail(self, what: str) -> None:
        """Raise with everything needed to fix it: sinfo's reasons and the daemon log tails."""
        if self._controller_up():  # else every client call waits ~9 s before "connect failure"
            r = self._run([self._bin["sinfo"], "-R"])
            reasons = (r.stdout + r.stderr).strip()
        else:
            reasons = "(slurmctld not running)"
        # With -D the Slurm daemons copy every log line to stderr (*.out), including fatal errors
        # raised before their log file opens: *.out is the complete record.
        logs = [
            self._d("log", name)
            for name in ("slurmctld.out", *(f"slurmd-{node}.out" for node in self.nodes), "munged.log", "munged.out")
        ]
        raise SlurmHarnessError(
            "\n".join(
                [f"local Slurm in {self.workdir}: {what}", "--- sinfo -R", reasons]
                + [_tail(p) for p in logs if p.exists() and p.stat().st_size]
            )
        )

    # --- jobs --------------------------------------------------------------------------------------
    def _run(
        self,
        argv: list[str],
        *,
        check: bool = False,
        input: str | None = None,
        cwd: str | os.PathLike | None = None,
        timeout: float = 30,
    ) -> subprocess.CompletedProcess:
        r = subprocess.run(
            argv,
            env=self.env,
            cwd=cwd,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
        if check and r.returncode != 0:
            raise SlurmHarnessError(f"{shlex.join(argv)} failed with status {r.returncode}: {r.stderr.strip()}")
        return r

    def sbatch(self, script_path: str | os.PathLike, *args: str, cwd: str | os.PathLike | None = None) -> str:
        """Submit; return the job id (as text, ready for scontrol/scancel). Raises if sbatch refuses."""
        r = self._run([self._bin["sbatch"], "--parsable", *args, str(script_path)], check=True, cwd=cwd)
        return r.stdout.strip().split(";")[0]

    def test_only(self, script_path: str | os.PathLike, *args: str) -> tuple[int, str]:
        """`sbatch --test-only`: (exit status, stderr); Slurm writes its verdict to stderr."""
        r = self._run([self._bin["sbatch"], "--test-only", *args, str(script_path)])
        return r.returncode, r.stderr

    def wait(self, job_id: str, timeout: float = 60) -> JobResult:
        """Poll `scontrol show job` until the job reaches a final state. On timeout the job is cancelled
        (it would block the next tests on this shared cluster) and SlurmHarnessError is raised."""
        t0 = time.monotonic()
        line = ""
        while time.monotonic() - t0 < timeout:
            line = self._run([self._bin["scontrol"], "show", "job", "-o", str(job_id)], check=True).stdout.strip()
            state = re.search(r"\bJobState=(\S+)", line)
            if state and state.group(1) in _TERMINAL:  # COMPLETING is not final: output may still flush
                code = re.search(r"\bExitCode=(\d+):\d+", line)
                if not code:
                    raise SlurmHarnessError(f"no ExitCode in: {line}")
                return JobResult(state.group(1), int(code.group(1)), time.monotonic() - t0, line)
            time.sleep(POLL_S)
        self.cancel(job_id)
        raise SlurmHarnessError(f"job {job_id} not finished after {timeout} s (cancelled): {line}")

    def end_time(self, job_id: str) -> float | None:
        """When slurmctld recorded the job's end (epoch seconds, ms precision), or None if it has not.

        From slurmctld's `_job_complete: JobId=N done` log line (job_mgr.c, slurm 22.05): the moment the
        batch script's exit reached the controller and the job became COMPLETED/FAILED. There is no
        accounting here (sacct), and scontrol's EndTime has whole seconds only. The last such line
        counts: a requeued job has one per run.
        """
        pattern = re.compile(r"^\[([^\]]+)\] .*_job_complete: JobId=" + re.escape(str(job_id)) + r"(?:\(\d+\))? done$")
        log = self._d("log", "slurmctld.log")
        stamps = [m.group(1) for m in map(pattern.match, log.read_text(errors="replace").splitlines()) if m]
        if not stamps:
            return None
        return datetime.datetime.fromisoformat(stamps[-1]).timestamp()

    def cancel(self, job_id: str) -> None:
        self._run([self._bin["scancel"], str(job_id)], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start or stop a private local Slurm cluster (root).")
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start it; prints the export SLURM_CONF=... line on stdout")
    start.add_argument("dir")
    start.add_argument("--nodes", type=int, default=2)
    sub.add_parser("stop", help="cancel its jobs and stop its daemons").add_argument("dir")
    args = parser.parse_args(argv)
    reason = unavailable_reason()
    if reason:
        print(f"slurm_harness: {reason}", file=sys.stderr)
        return 2
    cluster = LocalSlurm(args.dir, nodes=getattr(args, "nodes", 2))
    if args.command == "stop":
        cluster.stop()
        return 0
    try:
        cluster.start()
    except SlurmHarnessError as e:
        print(f"slurm_harness: {e}", file=sys.stderr)
        return 1
    print(f"export SLURM_CONF={shlex.quote(str(cluster.conf))}")
    print(f"slurm_harness: {len(cluster.nodes)} node(s) idle in {cluster.start_to_idle_s:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
