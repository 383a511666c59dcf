"""Preflight: check on this node what the plan relies on, before anything expensive starts.

    python3 -c "$NCCLGEN_PREFLIGHT" SPEC       SPEC: the JSON object built at render time
    python3 preflight.py @FILE                 (ncclgen/plan/preflight.py), or @FILE holding it

Exit status: 0 every check passed; 6 at least one problem, one line each on stderr:
    ncclgen: preflight FAILED: node NODE: ITEM: expected EXPECTED, found FOUND
2 the SPEC is not one this program understands (a job rendered by another ncclgen version).

Why: NCCL falls back silently where a job would otherwise fail loudly (NCCL v2.30.7): an NCCL_IB_HCA
entry that matches no device is dropped (src/transport/net_ib/init.cc), a net plugin that is not on
the loader path is skipped (src/plugin/net.cc), a missing NCCL_TOPO_FILE is ignored (src/graph/xml.cc).
The job then runs over sockets at a fraction of the fabric's speed. Other gaps fail late and cryptically:
a bootstrap interface without an address, a small /dev/shm ("failed to extend /dev/shm/nccl-*"), a
locked-memory limit that stops RDMA memory registration (NCCL's troubleshooting guide asks for
`--shm-size=1g --ulimit memlock=-1`: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/
troubleshooting/runtime_and_mpi_issues.html). Each takes seconds to check here and minutes to find later.

What each check reads (Linux):
  hca       /sys/class/infiniband/DEV/ports/PORT/state is "4: ACTIVE" for every NCCL_IB_HCA entry
            (NCCL's list syntax: '=' exact names, '^' exclusions, else name prefixes; DEV:PORT)
  ifaces    /sys/class/net/NAME exists and the interface has an IPv4 address (SIOCGIFADDR ioctl),
            for NCCL_SOCKET_IFNAME (same list syntax) and GLOO_SOCKET_IFNAME (exact names)
  files     each plugin library and NCCL_TOPO_FILE opens for reading
  gpus      /dev/nvidiaN device nodes, limited to CUDA_VISIBLE_DEVICES where that is set (Slurm sets
            it for the step's GPUs; a Kubernetes pod sees only its own device nodes)
  shm       statvfs(/dev/shm) total size
  memlock   RLIMIT_MEMLOCK (RDMA fabrics: must be unlimited)
  commands  each command is on PATH (numactl, where the rank binding runs through it)
  gdr       where the descriptor declares GPUDirect RDMA on InfiniBand/RoCE: a peer-memory module is
            loaded, as NCCL tests it (v2.30.7 src/transport/net_ib/gdr.cc:14-20: /sys/module/
            nvidia_peermem/version, or the legacy /sys/kernel/mm/memory_peers/nv_mem{,_nc}/version), or
            DMA-BUF can work: NVIDIA's open GPU kernel module (/proc/driver/nvidia/version says "Open
            Kernel Module") on Linux 5.12 or later (NVIDIA GPUDirect RDMA guide, "Using DMA-BUF":
            https://docs.nvidia.com/cuda/gpudirect-rdma/). Without either NCCL runs every channel
            through host memory without a word (channels "via NET/IB/N" instead of ".../GDRDMA")

For tests only: NCCLGEN_PREFLIGHT_SYSFS, NCCLGEN_PREFLIGHT_DEV and NCCLGEN_PREFLIGHT_PROC replace /sys,
/dev and /proc, so tests can build fake nodes. Standard library only, imports nothing from ncclgen: the job script and the
Kubernetes ConfigMap embed this file's text, so ncclgen need not be installed where the job runs.
"""

import _socket  # socket.py's own import of enum costs more than the one ioctl it is needed for
import _thread  # threading.py's imports (functools, collections) cost more than the one timer
import errno
import fcntl
import os
import resource
import sys
import time

SPEC_VERSION = 1
EXIT_PROBLEMS = 6
EXIT_USAGE = 2
DEADLINE_S = 10.0  # a check blocked this long (a hung file system) counts as a failure
SIOCGIFADDR = 0x8915  # linux/sockios.h
ACTIVE = "ACTIVE"  # ib_verbs port state text: "4: ACTIVE"


def _digits(text):
    return text.isascii() and text.isdigit()


def _numbers(text):
    """The runs of digits in ``text`` as integers: (5, 15, 0, 91) for '5.15.0-91-generic'."""
    words = "".join(c if "0" <= c <= "9" else " " for c in text).split()
    return tuple(int(w) for w in words)


# The spec's JSON, read without the json module: importing it (with re and enum) took 14 ms of a 50 ms preflight
# here, paid by every node of a job at once. What ncclgen/plan/preflight.py writes: objects, arrays, strings,
# integers, true, false, null (tests/test_preflight.py compares it with json.loads).
ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def loads(text):
    value, end = _value(text, _space(text, 0), 0)
    if _space(text, end) != len(text):
        raise ValueError(f"JSON: extra text at {end}")
    return value


def _space(s, i):
    while s[i : i + 1] in (" ", "\t", "\r", "\n"):
        i += 1
    return i


def _value(s, i, depth):
    if depth > 16:
        raise ValueError("JSON: nested too deep")
    c = s[i : i + 1]
    if c in ("{", "["):
        return _container(s, i, depth)
    if c == '"':
        return _string(s, i)
    for word, value in (("true", True), ("false", False), ("null", None)):
        if s.startswith(word, i):
            return value, i + len(word)
    j = i + (c == "-")
    while "0" <= s[j : j + 1] <= "9":
        j += 1
    if j == i + (c == "-") or s[j : j + 1] in (".", "e", "E"):
        raise ValueError(f"JSON: unexpected {s[i : i + 8]!r} at {i}")
    return int(s[i:j]), j


def _container(s, i, depth):
    obj = s[i] == "{"
    close = "}" if obj else "]"
    items: list = []  # values, or (key, value) pairs of an object
    i = _space(s, i + 1)
    while s[i : i + 1] != close:
        if items:
            if s[i : i + 1] != ",":
                raise ValueError(f"JSON: ',' or {close!r} expected at {i}")
            i = _space(s, i + 1)
        if obj:
            key, i = _string(s, i)
            i = _space(s, i)
            if s[i : i + 1] != ":":
                raise ValueError(f"JSON: ':' expected at {i}")
            value, i = _value(s, _space(s, i + 1), depth + 1)
            items.append((key, value))
        else:
            value, i = _value(s, i, depth + 1)
            items.append(value)
        i = _space(s, i)
    return (dict(items) if obj else items), i + 1


def _string(s, i):
    if s[i : i + 1] != '"':
        raise ValueError(f"JSON: a string expected at {i}")
    out, i = [], i + 1
    while (c := s[i : i + 1]) != '"':
        if not c or c < " ":
            raise ValueError(f"JSON: unterminated string at {i}")
        if c != "\\":
            out.append(c)
            i += 1
        elif (
            s[i + 1 : i + 2] == "u"
            and len(h := s[i + 2 : i + 6]) == 4
            and all(x in "0123456789abcdefABCDEF" for x in h)
        ):
            out.append(chr(int(h, 16)))
            i += 6
        elif s[i + 1 : i + 2] in ESCAPES:
            out.append(ESCAPES[s[i + 1]])
            i += 2
        else:
            raise ValueError(f"JSON: bad escape at {i}")
    # \uXXXX pairs of UTF-16 surrogates (json.dumps's escape of a character above U+FFFF) become one character
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16"), i + 1


def parse_list(value):
    """NCCL's list syntax (src/misc/utils.cc parseStringList/matchIfList): ('exact'|'prefix'|'exclude',
    [(name, port or None)]). '^' excludes, '=' asks for exact names, else each name is a prefix."""
    mode = "prefix"
    if value.startswith("^"):
        mode, value = "exclude", value[1:]
    elif value.startswith("="):
        mode, value = "exact", value[1:]
    items = []
    for part in value.split(","):
        name, sep, port = part.partition(":")
        if name:
            items.append((name, int(port) if sep and port.isdigit() else None))
    return mode, items


def _matches(name, want, mode):
    return name == want if mode == "exact" else name.startswith(want)


class Node:
    """What the checks read from the machine; tests replace the parts a fake tree cannot hold."""

    def __init__(self, sysfs=None, dev=None, environ=None):
        env = os.environ if environ is None else environ
        self.sysfs = sysfs or env.get("NCCLGEN_PREFLIGHT_SYSFS") or "/sys"
        self.dev = dev or env.get("NCCLGEN_PREFLIGHT_DEV") or "/dev"
        self.proc = env.get("NCCLGEN_PREFLIGHT_PROC") or "/proc"
        self.environ = env

    def name(self):
        return self.environ.get("SLURMD_NODENAME") or os.uname().nodename

    def listdir(self, *parts):
        try:
            return sorted(os.listdir(os.path.join(self.sysfs, *parts)))
        except OSError:
            return []

    def read(self, *parts):
        try:
            with open(os.path.join(self.sysfs, *parts), encoding="ascii", errors="replace") as fh:
                return fh.read().strip()
        except OSError:
            return None

    def ipv4(self, ifname):
        """The interface's IPv4 address, or None."""
        s = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
        try:
            req = ifname.encode()[:15].ljust(256, b"\0")  # struct ifreq: the name, then room for the address
            return _socket.inet_ntoa(fcntl.ioctl(s.fileno(), SIOCGIFADDR, req)[20:24])
        except OSError as exc:
            if exc.errno in (errno.EADDRNOTAVAIL, errno.ENODEV, errno.ENXIO):
                return None
            raise
        finally:
            s.close()

    def gpus(self):
        """(count, how it was counted)."""
        try:
            devs = [d for d in os.listdir(self.dev) if d.startswith("nvidia") and _digits(d[6:])]
        except OSError:
            devs = []
        found = f"{len(devs)} /dev/nvidiaN device(s)"
        visible = self.environ.get("CUDA_VISIBLE_DEVICES")
        if visible is not None and visible != "NoDevFiles":
            n = len([v for v in visible.split(",") if v.strip()])
            if n < len(devs):
                return n, f"{found}, CUDA_VISIBLE_DEVICES={visible!r}"
        return len(devs), found

    def shm_bytes(self):
        st = os.statvfs(os.path.join(self.dev, "shm"))
        return st.f_blocks * st.f_frsize

    def memlock(self):
        """RLIMIT_MEMLOCK soft limit in bytes, None when unlimited."""
        soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
        return None if soft == resource.RLIM_INFINITY else soft

    def exists(self, *parts):
        return os.path.exists(os.path.join(self.sysfs, *parts))

    def nvidia_version(self):
        """/proc/driver/nvidia/version's first line, or None (no NVIDIA driver)."""
        try:
            with open(os.path.join(self.proc, "driver", "nvidia", "version"), encoding="ascii", errors="replace") as fh:
                return fh.readline().strip()
        except OSError:
            return None

    def kernel(self):
        return os.uname().release

    def which(self, command):
        """The path PATH finds ``command`` at, or None (shutil.which's rule for a plain name on Linux)."""
        if "/" in command:
            return command if os.path.isfile(command) and os.access(command, os.X_OK) else None
        for folder in self.environ.get("PATH", os.defpath).split(os.pathsep):
            path = os.path.join(folder or ".", command)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
        return None

    def readable(self, path):
        """None when ``path`` opens for reading, else why not."""
        try:
            with open(path, "rb") as fh:
                fh.read(1)
            return None
        except IsADirectoryError:
            return "a directory"
        except FileNotFoundError:
            return "no such file"
        except OSError as exc:
            return exc.strerror or str(exc)


def _size(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} B"


def check_hca(node, var, value):
    mode, items = parse_list(value)
    devices = node.listdir("class", "infiniband")
    if mode == "exclude":
        kept = [d for d in devices if not any(_matches(d, n, "prefix") for n, _ in items)]
        if not any(_active_ports(node, d, None) for d in kept):
            yield (
                f"{var}={value}",
                "an ACTIVE port on a device not excluded",
                f"devices {', '.join(devices) or 'none'} in /sys/class/infiniband",
            )
        return
    for name, port in items:
        item = f"{var} {name}" + (f" port {port}" if port is not None else "")
        matched = [d for d in devices if _matches(d, name, mode)]
        if not matched:
            yield (
                item,
                "an RDMA device" + (" named " if mode == "exact" else " whose name starts with ") + name,
                f"no such device (have: {', '.join(devices) or 'none'})",
            )
        elif mode == "prefix":
            yield from _check_prefix(node, item, name, port, matched)
        else:
            yield from _check_exact(node, item, matched[0], port)


def _port_state(node, dev, port):
    return node.read("class", "infiniband", dev, "ports", str(port), "state")


def _active_ports(node, dev, port):
    ports = [str(port)] if port is not None else node.listdir("class", "infiniband", dev, "ports")
    return [p for p in ports if ACTIVE in (_port_state(node, dev, p) or "")]


def _check_prefix(node, item, name, port, matched):
    """A prefix stands for whatever matches: NCCL skips a matching port that is not ACTIVE (an uncabled
    storage port), so only "nothing usable matches" is a problem."""
    if not any(_active_ports(node, d, port) for d in matched):
        yield (
            item,
            "an ACTIVE port on a device whose name starts with " + name,
            "; ".join(f"{d}: {_states(node, d, port)}" for d in matched),
        )


def _check_exact(node, item, dev, port):
    if port is not None and _port_state(node, dev, port) is None:
        yield (
            item,
            "the port to exist",
            f"ports {', '.join(node.listdir('class', 'infiniband', dev, 'ports')) or 'none'}",
        )
    elif not _active_ports(node, dev, port):
        yield (item, "state ACTIVE", _states(node, dev, port))


def _states(node, dev, port):
    """'port 1 DOWN' or 'port 1 DOWN, port 2 ACTIVE', from the ports' state files."""
    ports = [str(port)] if port is not None else node.listdir("class", "infiniband", dev, "ports")
    states = []
    for p in ports:
        text = node.read("class", "infiniband", dev, "ports", p, "state") or "no state"
        states.append(f"port {p} {text.partition(': ')[2] or text}")
    return ", ".join(states) or "no ports"


def check_ifaces(node, var, value):
    mode, items = parse_list(value)
    names = node.listdir("class", "net")
    if mode == "exclude":
        kept = [n for n in names if n != "lo" and not any(_matches(n, x, "prefix") for x, _ in items)]
        if not any(node.ipv4(n) for n in kept):
            yield (
                f"{var}={value}",
                "an interface not excluded with an IPv4 address",
                f"interfaces {', '.join(names) or 'none'}",
            )
        return
    for want, _ in items:
        matched = [n for n in names if _matches(n, want, mode)]
        item = f"{var} {want}"
        if not matched:
            yield (
                item,
                "an interface" + (" named " if mode == "exact" else " whose name starts with ") + want,
                f"no such interface (have: {', '.join(names) or 'none'})",
            )
        elif not any(node.ipv4(n) for n in matched):
            yield (item, "an IPv4 address", f"none on {', '.join(matched)}")


PEERMEM = (
    ("module", "nvidia_peermem", "version"),
    ("kernel", "mm", "memory_peers", "nv_mem", "version"),
    ("kernel", "mm", "memory_peers", "nv_mem_nc", "version"),
)
DMABUF_KERNEL = (5, 12)


def check_gdr(node):
    """GPUDirect RDMA's driver support (see the module docstring): a peer-memory module or DMA-BUF."""
    if any(node.exists(*path) for path in PEERMEM):
        return
    driver = node.nvidia_version()
    release = _numbers(node.kernel())[:2]
    if driver and "Open Kernel Module" in driver and release >= DMABUF_KERNEL:
        return
    why = "no nvidia_peermem module (/sys/module/nvidia_peermem)"
    if driver is None:
        why += "; no NVIDIA driver (/proc/driver/nvidia/version)"
    elif "Open Kernel Module" not in driver:
        why += "; the proprietary GPU kernel module (DMA-BUF needs the open one)"
    else:
        why += f"; Linux {node.kernel()} (DMA-BUF needs 5.12 or later)"
    yield ("GPUDirect RDMA", "nvidia_peermem loaded, or DMA-BUF (open GPU kernel module, Linux >= 5.12)", why)


def check(node, spec):
    """Every problem as (item, expected, found)."""
    if spec.get("gdr"):
        yield from check_gdr(node)
    for var, value in spec.get("hca", {}).items():
        yield from check_hca(node, var, value)
    for var, value in spec.get("ifaces", {}).items():
        yield from check_ifaces(node, var, value)
    for item, path in spec.get("files", []):
        why = node.readable(path)
        if why:
            yield (f"{item} {path}", "a readable file", why)
    want = spec.get("gpus")
    if want:
        have, how = node.gpus()
        if have < want:
            yield ("GPUs", f"{want} visible", how)
    shm = spec.get("shm_bytes")
    if shm:
        try:
            have = node.shm_bytes()
            if have < shm:
                yield ("/dev/shm", f"at least {_size(shm)}", _size(have))
        except OSError as exc:
            yield ("/dev/shm", f"at least {_size(shm)}", exc.strerror or str(exc))
    if spec.get("memlock_unlimited"):
        have = node.memlock()
        if have is not None:
            yield ("locked-memory limit (ulimit -l)", "unlimited", _size(have))
    for command in spec.get("commands", []):
        if not node.which(command):
            yield (f"command {command}", "on PATH", "not found")


def run(spec, node=None, out=sys.stdout, err=sys.stderr):
    node = node or Node()
    t0 = time.monotonic()
    name = node.name()
    problems = list(check(node, spec))
    for item, expected, found in problems:
        print(
            f"ncclgen: preflight FAILED: node {name}: {item}: expected {expected}, found {found}", file=err, flush=True
        )
    if problems:
        print(
            f"ncclgen: preflight FAILED on node {name}: {len(problems)} problem(s); the job stops before "
            f"the launch (exit {EXIT_PROBLEMS})",
            file=err,
            flush=True,
        )
        return EXIT_PROBLEMS
    print(f"ncclgen: preflight passed on node {name} in {time.monotonic() - t0:.3f} s", file=out, flush=True)
    return 0


def _deadline(name):
    def fire():
        time.sleep(DEADLINE_S)
        print(
            f"ncclgen: preflight FAILED: node {name}: preflight: expected to finish within {DEADLINE_S:.0f} s, "
            "found it blocked (a hung file system?)",
            file=sys.stderr,
            flush=True,
        )
        os._exit(EXIT_PROBLEMS)

    _thread.start_new_thread(fire, ())  # a thread: a read blocked in the kernel never lets a signal handler run


def main(argv):
    try:
        (text,) = argv
        if text.startswith("@"):
            with open(text[1:], encoding="utf-8") as fh:
                text = fh.read()
        spec = loads(text)
        if not isinstance(spec, dict) or spec.get("v") != SPEC_VERSION:
            raise ValueError(
                f"spec version {spec.get('v') if isinstance(spec, dict) else None!r}, this program reads {SPEC_VERSION}"
            )
    except (OSError, ValueError) as exc:
        print(
            f"ncclgen: preflight: usage: preflight SPEC_JSON|@FILE ({exc}); regenerate the job with this ncclgen",
            file=sys.stderr,
        )
        return EXIT_USAGE
    node = Node()
    _deadline(node.name())
    return run(spec, node)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
