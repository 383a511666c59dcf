"""Transport check: what NCCL chose at init on this node, against the plan; the job ends on a mismatch.

    python3 transport.py SPEC -- COMMAND [ARG...]    run COMMAND (the node's launch) under the check
    python3 transport.py SPEC --pid PID SINCE        check the launch PID, started at SINCE (epoch s)
    python3 transport.py SPEC --for SECONDS           only watch (tests, or a launch started elsewhere)

--pid is how a Slurm node runs it (ncclgen/render/slurmtransport.py): the wrapper starts the launch in
its own process group, then this check beside it a second later (or when the launch ends), so the
ranks do not wait for Python to start (a rank imports its framework for seconds before NCCL writes a
line); the wrapper keeps the launch's status and exits 7 when this check does. With --pid the exit
status is 7 (a difference stopped the launch) or 0.

SPEC is the JSON object built at render time (ncclgen/plan/transport.py), or @FILE holding it. One
check runs per node. It reads the NCCL debug file of every process of this job on this node as it grows
(NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS with INIT, NCCL_DEBUG_ FILE=FOLDER/%h.%p.log: one file per process,
line-buffered by NCCL, see nccllines.py), copies every NCCL WARN line to stderr unchanged (NCCL's
output now goes to the file, so nothing it says is hidden), and once the node's ranks have initialised
prints one line:
    ncclgen: transport: node NODE: NCCL 2.30.7, net IB, plugin -, HCAs mlx5_0:1,... (8 of 8 planned),
    NET channels 16 GDRDMA / 0 without, P2P 8, SHM 0, 8 processes
Each difference from the plan prints one line on stderr, as soon as NCCL's line is read:
    ncclgen: transport FAILED: node NODE: ITEM: expected EXPECTED, found FOUND
ITEMs: NCCL version (against the descriptor's software.nccl: every node is held to the same version),
net (NCCL's "Using network"), plugin version (the plugin's own init line, against the minimum the
plan needs), HCAs (NCCL's "NET/IB : Using" list against the planned NCCL_IB_HCA ports), GPUDirect RDMA
(every NET channel line ends in /GDRDMA where the descriptor declares GPUDirect RDMA).

In a pod (the spec's "fr" folder), once COMMAND has ended, a line names the flight recorder's dumps there,
if a rank wrote any: no batch script outlives a pod's launch to say it.

Mode "on" then stops COMMAND (SIGTERM to its process group, SIGKILL 1 s later) and exits 7, so the
job ends within a second or two of NCCL's line (polled every 0.25 s); mode "warn" prints the lines and
lets the job run. Otherwise the exit status is COMMAND's (128+N when a signal N ended it); 2 the SPEC
is not one this program understands.

Whose files: NCCL names them by host and PID, so on a node shared by jobs (or several Slurm nodes on
one test machine) the folder can hold other processes' files, and old files under PIDs new ranks reuse.
A file counts when its PID, alive, is COMMAND or a descendant of it (the check then leaves FILE.claimed
beside it, touched at every poll); a file whose process has ended counts when written since the
launch started and no check claimed it since (or its claiming launch still runs). With --for (no
COMMAND), every file written since the check started counts.

Standard library only, imports nothing from ncclgen but nccllines.py: beside this file on the node
(a pod's ConfigMap), or its text before this one's in one program (`python3 -c "$NCCLGEN_TRANSPORT"`
in the sbatch script).
"""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time

try:
    from . import nccllines
except ImportError:
    try:  # run as a file on the node, nccllines.py beside it (Kubernetes: the ConfigMap's files)
        import nccllines  # type: ignore[no-redef]
    except ImportError:  # run as one program whose text starts with nccllines.py's (the sbatch script)
        nccllines = sys.modules[__name__]

SPEC_VERSION = 1
EXIT_PROBLEMS = 7
EXIT_USAGE = 2
POLL_S = 0.25
KILL_GRACE_S = 1.0
READ_MAX = 1 << 20  # bytes read from one file per poll
CLAIM = ".claimed"  # beside a debug file: "PID STARTTIME" of the COMMAND its check saw it under
OLDER_RECHECK_S = 1.0  # a folder that outlives jobs holds many old files: each is stat'ed at most once a second
MAX_DEPTH = 100  # parent links followed from a PID (a process tree is never this deep)
# The variable's name, spelled in two parts: the sbatch script embeds this program, and its only line
# naming the variable in full stays the plan's export (tests/test_redteam.py reads the script so).
DEBUG_FILE = "NCCL_DEBUG" + "_FILE"


def release(version):
    """'1.13.2-aws' -> (1, 13, 2); () when it does not start with a number ('git-6e504db')."""
    parts = []
    for p in version.split("-", 1)[0].split("."):
        if not p.isdigit():
            break
        parts.append(int(p))
    return tuple(parts)


class Proc:
    """What one NCCL process (one debug file) said."""

    def __init__(self, path, pid):
        self.path, self.pid, self.offset, self.rest = path, pid, 0, b""
        self.version = self.net = self.plugin = self.plugin_version = None
        self.hcas = None
        self.local_ranks = 0
        self.complete = self.connected = False
        self.multi_node = False
        self.channels = {"gdr": 0, "nogdr": 0, "p2p": 0, "shm": 0}


class Check:
    """The check's state on one node; ``emit`` writes a line of output (stderr by default)."""

    def __init__(self, spec, node, host, root_pid=None, emit=None, start=None):
        self.spec, self.node, self.root_pid = spec, node, root_pid
        self.emit = emit or (lambda line: print(line, file=sys.stderr, flush=True))
        self.start_ns = time.time_ns() if start is None else int(start * 1e9)
        pattern = os.environ.get(DEBUG_FILE) or spec["debug_file"]
        self.folder = os.path.dirname(pattern) or "."
        self.names = nccllines.file_pattern(os.path.basename(pattern), host)
        self.procs, self.ignored, self.older = {}, set(), {}
        self.recheck_at = 0.0  # when the files found older than the launch are next looked at
        self.claims = []  # the claims this check wrote, touched at every poll
        self.problems, self.summarised = [], False

    # files
    def poll(self):
        """Read what NCCL wrote since the last poll; True when there is a new problem."""
        before = len(self.problems)
        self.touch_claims()
        self.scan()
        for proc in list(self.procs.values()):
            self._read(proc)
        if not self.summarised and self._initialised():
            self.summary()
        return len(self.problems) > before

    def touch_claims(self):
        """A claim's time says its check still ran then (_claimed): at every poll, and once the launch
        it stopped has ended, so its ranks were gone before any later claim-less reading."""
        for claim in self.claims:
            with contextlib.suppress(OSError):
                os.utime(claim)

    def scan(self):
        """Find (and claim) this launch's rank files: at every poll, and while stop() ends the ranks."""
        try:
            entries = os.listdir(self.folder)
        except OSError:
            return
        now = time.monotonic()
        recheck = now >= self.recheck_at
        if recheck:
            self.recheck_at = now + OLDER_RECHECK_S
        for name in entries:
            if name in self.procs or name in self.ignored or (name in self.older and not recheck):
                continue
            m = self.names.match(name)
            path = os.path.join(self.folder, name)
            try:
                mtime = None if m is None else os.stat(path).st_mtime_ns
            except OSError:
                continue
            if mtime is not None and self.older.get(name) == mtime:
                continue  # unchanged since it was found older than this launch
            pid = int(m.group("pid")) if m and "pid" in m.groupdict() else None
            ours = m is not None and self._ours(path, pid, mtime)
            if ours:
                self.procs[name] = Proc(path, pid)
            elif ours is None:
                self.older[name] = mtime  # a new rank may reuse its PID (and name): looked at again once written
            else:
                self.ignored.add(name)

    def _ours(self, path, pid, mtime):
        """True: this launch's process; False: never (another COMMAND's); None: not yet (its process is gone
        and it was last written before this launch started)."""
        if pid is not None and self.root_pid is not None:
            chain = ancestry(pid)
            if chain is not None:  # alive: ours when COMMAND is an ancestor; say so to other checks
                if self.root_pid not in chain:
                    return False
                with contextlib.suppress(OSError):
                    fd = os.open(path + CLAIM, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
                    os.write(fd, f"{self.root_pid} {born(self.root_pid)}".encode())
                    os.close(fd)
                    self.claims.append(path + CLAIM)
                return True
            if self._claimed(path + CLAIM):
                return False  # gone, and another check saw it alive as its own
        return True if mtime >= self.start_ns else None

    def _claimed(self, claim):
        """A claim stands while its COMMAND runs or when its check touched it since this launch started;
        an older one whose COMMAND is gone was left by an earlier job on this node (PIDs are reused)."""
        try:
            with open(claim, "rb") as fh:
                fields = fh.read(64).split()
            made = os.stat(claim).st_mtime_ns
        except OSError:
            return False
        if made >= self.start_ns:
            return True
        return len(fields) == 2 and fields[0].isdigit() and born(int(fields[0])) == fields[1].decode()

    def _read(self, proc):
        try:
            with open(proc.path, "rb") as fh:
                if proc.offset == 0 and os.fstat(fh.fileno()).st_mtime_ns < self.start_ns:
                    return  # an earlier process's file under a reused PID: NCCL truncates it when it opens it
                fh.seek(proc.offset)
                data = fh.read(READ_MAX)
        except OSError:
            return
        if not data:
            return
        proc.offset += len(data)
        lines = (proc.rest + data).split(b"\n")
        proc.rest = lines.pop()
        for raw in lines:
            self.line(proc, raw.decode("utf-8", "replace"))

    # lines
    def line(self, proc, text):
        parts = nccllines.split(text)
        if parts is None:
            return
        if parts[0] == "WARN":
            self.emit(text)
            return
        parsed = nccllines.message(parts[3])
        if parsed is not None:
            handler = getattr(self, "_on_" + parsed[0], None)
            if handler is not None:
                handler(proc, parsed[1], parts[3])

    def _on_version(self, proc, f, _text):
        proc.version = f["version"] + f["suffix"]
        want = self.spec.get("nccl")
        if want and f["version"] != want:
            self.problem("NCCL version", f"{want} (the descriptor's software.nccl)", proc.version)

    def _on_net(self, proc, f, _text):
        proc.net = f["name"]
        want = self.spec.get("net")
        if want and f["name"].lower() != want.lower():
            self.problem("net", want, f"{f['name']} (NCCL's 'Using network {f['name']}')")

    def _on_plugin(self, proc, f, _text):
        proc.plugin = f["name"]

    def _on_plugin_version(self, proc, f, _text):
        proc.plugin_version = f"{f['package']} {f['version']}"
        want = self.spec.get("plugin") or {}
        need = release(want.get("min", ""))
        have = release(f["version"])
        if want.get("package") == f["package"] and need and have and have < need:
            self.problem("plugin version", f"{f['package']} >= {want['min']}", f["version"])

    def _on_ib(self, proc, f, _text):
        opened = [f"{name}:{port}" for name, port, _link in nccllines.ib_devices(f["devices"])]
        proc.hcas = opened
        missing = [h for h in self.spec.get("hcas", []) if h not in opened]
        if missing:
            self.problem(
                "HCAs",
                ",".join(self.spec["hcas"]),
                f"{','.join(opened) or 'none'} (not opened: {','.join(missing)})",
            )

    def _on_channel_net(self, proc, f, text):
        proc.channels["gdr" if f["gdr"] else "nogdr"] += 1
        if not f["gdr"] and self.spec.get("gdr"):
            self.problem("GPUDirect RDMA", "every NET channel via .../GDRDMA", f"'{text}'")

    def _on_channel_p2p(self, proc, _f, _text):
        proc.channels["p2p"] += 1

    def _on_channel_shm(self, proc, _f, _text):
        proc.channels["shm"] += 1

    def _on_comm(self, proc, f, _text):
        proc.local_ranks = max(proc.local_ranks, int(f["localranks"]))
        proc.multi_node = proc.multi_node or int(f["nnodes"]) > 1

    def _on_complete(self, proc, _f, _text):
        proc.complete = True

    def _on_rings(self, proc, _f, _text):
        proc.connected = True

    # verdicts
    def problem(self, item, expected, found):
        if any(p[0] == item for p in self.problems):
            return  # one line per item and node: the first instance says it
        self.problems.append((item, expected, found))
        self.emit(f"ncclgen: transport FAILED: node {self.node}: {item}: expected {expected}, found {found}")

    def _initialised(self):
        procs = list(self.procs.values())
        want = max((p.local_ranks for p in procs), default=0)
        done = [p for p in procs if p.complete and (p.connected or not p.multi_node)]
        return want > 0 and len(done) >= want

    def summary(self, partial=False):
        self.summarised = True
        procs = list(self.procs.values())
        if not procs:
            self.emit(f"ncclgen: transport: node {self.node}: no NCCL process wrote {self.folder} (nothing checked)")
            return

        def seen(attr):
            values = sorted({getattr(p, attr) for p in procs if getattr(p, attr)})
            return ",".join(values) if values else "-"

        hcas = sorted({h for p in procs for h in (p.hcas or [])})
        plugin = seen("plugin") + (f" ({seen('plugin_version')})" if seen("plugin_version") != "-" else "")
        planned = self.spec.get("hcas", [])
        ch = {k: sum(p.channels[k] for p in procs) for k in ("gdr", "nogdr", "p2p", "shm")}
        hca_text = ",".join(hcas) or "-"
        if planned:
            hca_text += f" ({sum(1 for h in planned if h in hcas)} of {len(planned)} planned)"
        self.emit(
            f"ncclgen: transport: node {self.node}{' (before init finished)' if partial else ''}: "
            f"NCCL {seen('version')}, net {seen('net')}, plugin {plugin}, "
            f"HCAs {hca_text}, NET channels {ch['gdr']} GDRDMA / {ch['nogdr']} without, "
            f"P2P {ch['p2p']}, SHM {ch['shm']}, {len(procs)} processes"
        )


def ancestry(pid):
    """The PIDs from ``pid`` up to init (/proc/PID/stat's ppid field), or None once ``pid`` is gone."""
    chain: list[int] = []
    while pid > 1 and len(chain) < MAX_DEPTH:
        chain.append(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            return None if len(chain) == 1 else chain
        pid = int(stat.rsplit(b")", 1)[1].split()[1])
    return chain


def born(pid):
    """PID's start time (/proc/PID/stat field 22, clock ticks since boot) as text; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def node_name():
    return os.environ.get("SLURMD_NODENAME") or os.environ.get("NCCLGEN_NODE") or socket.gethostname()


def load_spec(arg):
    if arg.startswith("@"):
        with open(arg[1:], encoding="utf-8") as fh:
            arg = fh.read()
    spec = json.loads(arg)
    if not isinstance(spec, dict) or spec.get("v") != SPEC_VERSION:
        raise ValueError(f"a transport spec of version {SPEC_VERSION}")
    return spec


def prepare(spec):
    """Create the debug file folder (sticky and world-writable like /tmp, so jobs of several users
    can share a node) and say when NCCL's settings hide the lines the check reads."""
    pattern = os.environ.get(DEBUG_FILE) or spec["debug_file"]
    folder = os.path.dirname(pattern)
    if folder and not os.path.isdir(folder):
        try:
            os.makedirs(folder, exist_ok=True)
            os.chmod(folder, 0o1777)
        except OSError:
            pass
    level = nccllines.debug_level(os.environ.get("NCCL_DEBUG"))
    mask = nccllines.debug_mask(os.environ.get("NCCL_DEBUG_SUBSYS"))
    if level < nccllines.LEVELS["INFO"] or not nccllines.shows("complete", mask):
        return "NCCL_DEBUG/NCCL_DEBUG_SUBSYS hide NCCL's INIT lines (INFO and INIT needed)"
    if not os.environ.get(DEBUG_FILE):
        return f"{DEBUG_FILE} is not set, so NCCL's lines go to stdout"
    return None


def _forward(child, sig):
    with contextlib.suppress(OSError):
        os.killpg(child.pid, sig)


def stop(child, claim=None):
    """SIGTERM to the command's process group, SIGKILL after KILL_GRACE_S; ``claim`` runs before each signal and
    while the ranks end, so a rank's file that appeared since the last poll is claimed while the rank lives."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if claim:
            claim()
        try:
            os.killpg(child.pid, sig)
        except OSError:
            return
        deadline = time.monotonic() + KILL_GRACE_S
        while child.poll() is None and time.monotonic() < deadline:
            if claim:
                claim()
            time.sleep(0.05)
        if child.poll() is not None:
            return


class Started:
    """A launch started beside this process (--pid; its wrapper is the parent and keeps its status): what
    watch() and stop() use of subprocess.Popen (poll). Ended when the PID is gone or is another process (its
    start time in /proc differs), so a reused PID never holds the check."""

    def __init__(self, pid):
        self.pid, self.returncode = pid, None
        self.born = born(pid)
        self.poll()

    def poll(self):
        if self.returncode is None and (self.born is None or born(self.pid) != self.born):
            self.returncode = 0  # its status is the wrapper's to report
        return self.returncode


def run(spec, command, watch_s=None, pid=None, since=None):
    """Run ``command`` under the check (or check the launch ``pid`` started beside it, or only watch for
    ``watch_s`` seconds); the exit status."""
    node, warn_only = node_name(), spec.get("mode") == "warn"
    hidden = prepare(spec)
    if hidden:
        print(f"ncclgen: transport: node {node}: not checked: {hidden}", file=sys.stderr, flush=True)
    child: Started | subprocess.Popen[bytes] | None
    if pid is not None:
        child = Started(pid)
    else:
        child = subprocess.Popen(command, start_new_session=True) if command else None
    if child is not None:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda s, _f: _forward(child, s))
    root = child.pid if child else None
    check = None if hidden else Check(spec, node, socket.gethostname(), root_pid=root, start=since)
    failed = watch(check, child, time.monotonic() + (watch_s or 0.0), stop_on_problem=not warn_only)
    if failed:
        return EXIT_PROBLEMS
    if child is None or pid is not None:
        return EXIT_PROBLEMS if check and check.problems and not warn_only else 0
    report_dumps(spec.get("fr"), node)
    rc = child.returncode or 0  # watch() returned: the command has ended
    return 128 - rc if rc < 0 else rc


def report_dumps(folder, node):
    """In a pod, where no batch script outlives the launch: say where the flight recorder's dumps are
    (a rank whose collective timed out or failed wrote one; the folder is the pod's emptyDir)."""
    try:
        names = sorted(os.listdir(folder)) if folder else []
    except OSError:
        return
    if names:
        print(
            f"ncclgen: flight recorder: node {node}: {len(names)} dump(s) in {folder} ({names[0]}...); copy them "
            f"out (kubectl cp POD:{folder} .) and read them with python3 -m torch.distributed.flight_recorder.fr_trace -j",
            file=sys.stderr,
            flush=True,
        )


def watch(check, child, deadline, stop_on_problem):
    """Poll until ``child`` ends (or ``deadline`` without one); True when a problem stopped it."""
    while True:
        done = child.poll() is not None if child else time.monotonic() >= deadline
        if check is not None and check.poll() and stop_on_problem:
            if not check.summarised:
                check.summary(partial=True)
            if child is not None:
                stop(child, check.scan)
                check.touch_claims()
            return True
        if done:
            break
        time.sleep(POLL_S)
    if check is not None and not check.summarised:
        check.summary(partial=True)
    return False


def main(argv):
    try:
        spec = load_spec(argv[0])
        rest = argv[1:]
        if rest[:1] == ["--"] and len(rest) > 1:
            return run(spec, rest[1:])
        if rest[:1] == ["--pid"] and len(rest) == 3:
            return run(spec, None, pid=int(rest[1]), since=float(rest[2]))
        if rest[:1] == ["--for"] and len(rest) == 2:
            return run(spec, None, float(rest[1]))
        raise ValueError("'-- COMMAND...', '--pid PID SINCE' or '--for SECONDS' after the spec")
    except (IndexError, ValueError, OSError, KeyError) as e:
        print(f"ncclgen: transport: usage: transport.py SPEC|@FILE -- COMMAND...: {e}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
