"""Ray bring-up check and node watchdog for the sbatch script (run as `python3 -c "$PROGRAM" ...`).

    wait  ADDRESS NODES GPUS TIMEOUT_S   exit 0 once NODES nodes are alive with GPUS GPUs in total,
                                         exit 3 with a one-line reason after TIMEOUT_S seconds
    watch ADDRESS NODES INTERVAL_S       exit 5 as soon as fewer than NODES nodes are alive

Why a program and not sleeps: verl's example (volcengine/verl examples/slurm/ray_on_slurm.slurm)
sleeps 10 s + 5 s and never checks; on the local Slurm cluster a worker took 5.7-6.4 s to register, longer than its sleep, and `ray status` lags behind the GCS. Polling
ray.nodes() every 0.5 s was ready in 9.6-10.8 s and catches a worker that never joins. The watchdog
exists because a raylet stopped by SIGTERM leaves `ray start --block` (and so its srun) running, so
nothing else would notice the lost node (tests/test_slurm_e2e.py kills a raylet both ways).

Standalone (standard library + Ray, no ncclgen import): the sbatch script embeds this file's text, so
ncclgen need not be installed where the job runs.
"""

import os
import socket
import sys
import threading
import time

POLL_S = 0.5  # readiness: how often ray.nodes() is asked
CONNECT_POLL_S = 0.5  # how often the GCS port is tried before ray.init
WATCH_STALL_S = 60.0  # a watchdog check that blocks this long counts as a lost cluster
EXIT_NOT_READY = 3
EXIT_NODE_LOST = 5


def census(nodes):
    """(alive nodes, GPUs on alive nodes) from ray.nodes()."""
    alive = [n for n in nodes if n.get("Alive")]
    return len(alive), int(sum(n.get("Resources", {}).get("GPU", 0) for n in alive))


def since_job_start():
    """Seconds since the batch script began (NCCLGEN_T0 from `date +%s.%N`), else since this process."""
    try:
        return time.time() - float(os.environ["NCCLGEN_T0"])
    except (KeyError, ValueError):
        return time.time() - _STARTED


class Deadline(threading.Thread):
    """Print ``message()`` and exit with ``code`` once the deadline passes, whatever the main thread
    is doing: ray.init and ray.nodes can block for minutes while the GCS is unreachable (measured:
    over 2 minutes of "Failed to connect to GCS" retries)."""

    def __init__(self, seconds, code, message):
        super().__init__(daemon=True)
        self.at = time.monotonic() + seconds
        self.code = code
        self.message = message

    def extend(self, seconds):
        self.at = time.monotonic() + seconds

    def run(self):
        while time.monotonic() < self.at:
            time.sleep(0.1)
        print(self.message(), file=sys.stderr, flush=True)
        os._exit(self.code)


def wait_for_port(address):
    """Until the GCS port accepts TCP connections: ray.init against a closed port blocks for minutes."""
    host, _, port = address.rpartition(":")
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=2).close()
            return
        except OSError:
            time.sleep(CONNECT_POLL_S)


def connect(address):
    import logging

    import ray

    wait_for_port(address)
    ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    return ray


def wait(address, want_nodes, want_gpus, timeout_s):
    have = [0, 0]
    Deadline(
        timeout_s,
        EXIT_NOT_READY,
        lambda: (
            f"ncclgen: ERROR: Ray cluster not ready after {timeout_s} s (want {want_nodes} nodes/{want_gpus} "
            f"GPUs, have {have[0]} nodes/{have[1]} GPUs)"
        ),
    ).start()
    ray = connect(address)
    while True:
        have[:] = census(ray.nodes())
        if have[0] >= want_nodes and have[1] >= want_gpus:
            print(
                f"ncclgen: Ray cluster ready: {have[0]} nodes, {have[1]} GPUs after {since_job_start():.1f} s",
                flush=True,
            )
            return 0
        time.sleep(POLL_S)


def watch(address, want_nodes, interval_s):
    deadline = Deadline(
        WATCH_STALL_S,
        EXIT_NODE_LOST,
        lambda: f"ncclgen: ERROR: Ray watchdog: the cluster did not answer for {WATCH_STALL_S:.0f} s",
    )
    deadline.start()
    try:
        ray = connect(address)
    except Exception as exc:  # the cluster was ready a moment ago: its GCS is gone
        print(f"ncclgen: ERROR: Ray watchdog: cannot connect: {exc}", file=sys.stderr, flush=True)
        return EXIT_NODE_LOST
    while True:
        try:
            alive, _ = census(ray.nodes())
        except Exception as exc:  # any failure to read the node table means the GCS is gone
            print(f"ncclgen: ERROR: Ray watchdog: cannot read the node table: {exc}", file=sys.stderr, flush=True)
            return EXIT_NODE_LOST
        if alive < want_nodes:
            print(
                f"ncclgen: ERROR: Ray watchdog: only {alive}/{want_nodes} Ray nodes alive after "
                f"{since_job_start():.1f} s",
                file=sys.stderr,
                flush=True,
            )
            return EXIT_NODE_LOST
        deadline.extend(WATCH_STALL_S)
        time.sleep(interval_s)


def main(argv):
    try:
        mode, address, nodes, *rest = argv
        if mode == "wait":
            gpus, timeout_s = (int(x) for x in rest)
            return wait(address, int(nodes), gpus, timeout_s)
        if mode == "watch":
            (interval_s,) = (float(x) for x in rest)
            return watch(address, int(nodes), interval_s)
    except ValueError:
        pass
    print(f"usage: wait ADDRESS NODES GPUS TIMEOUT_S | watch ADDRESS NODES INTERVAL_S (got {argv})", file=sys.stderr)
    return 2


_STARTED = time.time()

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
