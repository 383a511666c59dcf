"""Stopping a tests/slurm_harness.py cluster: cancel its jobs, then its daemons by pid file, then any
process still carrying the cluster's marker. A mixin of LocalSlurm, kept apart so each file stays short."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

MARKER = "NCCLGEN_LOCAL_SLURM"  # slurm_harness.MARKER: in every daemon's and job's environment
STOP_GRACE_S = 10.0  # SIGTERM -> SIGKILL
QUEUE_DRAIN_S = 20.0  # KillWait=5 plus the ~2 s COMPLETING phase, with margin
POLL_S = 0.25


def _proc_state(pid: int) -> str | None:
    """One-letter state from /proc/PID/stat, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def _ancestors() -> set[int]:
    """This process and its parents: never swept, even if someone copied `env` into os.environ."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                pid = int(f.read().rpartition(")")[2].split()[1])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            break
    return pids


def _signal(pid: int, sig: int) -> None:
    """Signal a process that may have exited since we looked."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


class SlurmStopper:
    """stop() and what it needs; LocalSlurm provides workdir, _d, _bin, _run and _children."""

    workdir: Path

    # --- stop --------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Cancel all jobs and wait for an empty queue (slurmstepd outlives slurmd), then SIGTERM
        slurmd, slurmctld and munged by pid file, SIGKILL after 10 s. Idempotent; safe at atexit."""
        if self._controller_up():
            self._drain_queue()
        for group in (
            sorted(self._d("run").glob("slurmd-*.pid")),
            [self._d("run", "slurmctld.pid")],
            [self._d("munge", "munged.pid")],
        ):
            self._terminate([pid for pid in map(self._pidfile_pid, group) if pid is not None])
            for pidfile in group:
                pidfile.unlink(missing_ok=True)
        strays = self.running_pids()  # e.g. a slurmstepd or job task that outlived its daemon
        for pid in strays:
            _signal(pid, signal.SIGKILL)
        self._wait_gone(strays, STOP_GRACE_S)
        for proc in self._children.values():  # already dead unless it never carried MARKER
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        self._children.clear()

    def _drain_queue(self) -> None:
        r = self._run([self._bin["squeue"], "-h", "-o", "%i"], timeout=10)
        if r.returncode != 0:
            return  # slurmctld not answering: the marker sweep in stop() handles the jobs
        if r.stdout.split():
            self._run([self._bin["scancel"], *r.stdout.split()], timeout=10)
        deadline = time.monotonic() + QUEUE_DRAIN_S
        while time.monotonic() < deadline:
            r = self._run([self._bin["squeue"], "-h", "-o", "%i"], timeout=10)
            if r.returncode != 0 or not r.stdout.strip():
                return
            time.sleep(POLL_S)

    def _controller_up(self) -> bool:
        return self._alive(self._pidfile_pid(self._d("run", "slurmctld.pid")))

    def _pidfile_pid(self, path: Path) -> int | None:
        """The pid in `path` if that process is one of ours (carries MARKER), else None: a stale pid
        file must never make us signal a recycled pid."""
        try:
            pid = int(path.read_text(encoding="ascii").split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            return None
        return pid if self._is_ours(pid) else None

    def _is_ours(self, pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            return False
        return f"{MARKER}={self.workdir}".encode() in environ.split(b"\0")

    def running_pids(self) -> list[int]:
        """Live processes of this cluster: daemons, slurmstepd, and jobs submitted with `env`."""
        skip = _ancestors()
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in skip]
        return [pid for pid in pids if self._is_ours(pid) and self._alive(pid)]

    def _alive(self, pid: int | None) -> bool:
        """Running and not a zombie; reaps our own children on the way."""
        if pid is None:
            return False
        if pid in self._children:
            self._children[pid].poll()
        state = _proc_state(pid)
        return state is not None and state != "Z"

    def _wait_gone(self, pids: list[int], timeout: float) -> list[int]:
        deadline = time.monotonic() + timeout
        while True:
            left = [pid for pid in pids if self._alive(pid)]
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(0.1)

    def _terminate(self, pids: list[int]) -> None:
        for pid in pids:
            _signal(pid, signal.SIGTERM)
        for pid in self._wait_gone(pids, STOP_GRACE_S):
            _signal(pid, signal.SIGKILL)
        self._wait_gone(pids, STOP_GRACE_S)
