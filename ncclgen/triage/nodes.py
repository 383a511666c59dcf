"""What NCCL's INFO lines say about each node (compare.py compares the nodes, plancheck.py them with the plan).

NCCL prints, per process, the release (`NCCL version 2.18.1+cuda12.1`, src/init.cc), the bootstrap
interface (`Bootstrap : Using eth0:10.0.0.1<0>`, src/bootstrap.cc), the net (`Using network IB`,
src/init.cc), the HCAs with their link layer (`NET/IB : Using [0]mlx5_0:1/IB ...`, src/transport/net_ib),
each channel's transport (`Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA`, src/transport.cc)
and `Init COMPLETE` (src/init.cc). A difference between nodes (two NCCL releases, a bootstrap interface
that is a container bridge on one host, IB on one and Socket on another) or from the plan is a cause
that no single line states; the findings carry the line that shows it.

The knowledge base's releases' formats (2.28 to 2.30) are read by the transport check's parser (jobside/nccllines.py,
cited per release); the regexes below read the rest: older forms (no busId or commId in Init COMPLETE, no "+cuda"
suffix), the Bootstrap line and "Init START".
"""

from __future__ import annotations

import re
from dataclasses import field

from ..jobside import nccllines
from ..record import dataclass
from . import benchtable, stackdump, startline
from .events import NCCL_PREFIX
from .reader import Line

VERSION = re.compile(r"NCCL INFO NCCL version (?P<v>\d+\.\d+\.\d+)")
# The banner NCCL prints with printf on stdout, without the host:pid:tid prefix (v2.19.3-1 src/init.cc:478-487,
# showVersion: printf("%s\n", VERSION_STRING) once per process at NCCL_DEBUG=VERSION or above): it belongs to
# the process whose prefixed line came just before it in the same stream.
# A launcher's label may come first (srun -l "0: ", mpirun "[1,0]<stdout>:"); a sentence that ends in a version
# ("..., NCCL version 2.18.1" in PyTorch's errors) is not the banner.
BARE_VERSION = re.compile(r"^(?:\S*[:>\]]\s*)?NCCL version (?P<v>\d+\.\d+\.\d+)\S*\s*$")
NETWORK = re.compile(r"NCCL INFO Using network (?P<net>\S+)")
# "Bootstrap : Using [0]eth0:10.0.0.1<0>" (2.4 on; src/bootstrap.cc), "NET : Using interface eth0:...<0>" (before
# 2.4), or the Socket transport's list when no Bootstrap line was printed: the first interface listed.
BOOTSTRAP = re.compile(
    r"NCCL INFO (?:Bootstrap ?: Using|NET : Using interface|NET/Socket ?: Using) \[?\d*\]?"
    r"(?P<iface>[\w.:-]+?):(?P<addr>[\w.:%-]+?)<"
)
# The Socket net's interfaces (src/transport/net_socket.cc: "NET/Socket : Using [0]eth0:10.0.0.1<0>"): NCCL inits
# that net only when no plugin or IB net was taken before it (v2.4.8-1 src/init.cc initNet; v2.21.5-1 src/net.cc;
# v2.30.7-1 src/plugin/net.cc ncclNetInit), so with no IB line after it the node's traffic goes over TCP. (Releases
# before 2.4.8 printed the list for the bootstrap too, then the IB net's 'NET/IB : Using' line: Facts.settle.)
SOCKET_NET = re.compile(r"NCCL INFO NET/Socket ?: Using \[\d+\](?P<iface>[A-Za-z]\w*)")
HCAS = re.compile(r"NCCL INFO NET/IB ?: Using (?P<hcas>\[\d+\].*?)(?: ?; OOB |$)")
OOB = re.compile(r"; OOB (?P<iface>[\w.-]+):(?P<addr>[\w.:%-]+?)<")
HCA = re.compile(r"\[\d+\](?P<dev>[\w.-]+):(?P<port>\d+)/(?P<ll>IB|RoCE)")
# a channel inside the node, the peers by device ('0[0]') or, before 2.19 or so, by bus id ('7[ca000]')
CHANNEL_LOCAL = re.compile(r"Channel \d+(?:/\d+)? : \d+\[[0-9a-fA-F]+\] -> \d+\[[0-9a-fA-F]+\] via (?P<how>SHM|P2P)/")
CHANNEL_NET = re.compile(r"via NET/(?P<net>[\w-]+)/\d+(?P<gdr>/GDRDMA)?")
# One connection's end: 'src[busid] -> dst[busid] [send|receive] via NET/IB/0/GDRDMA' (src/transport/net.cc)
# a channel on the Socket net's device 1 or later: NCCL's Socket net makes every interface it finds a device (v2.12.12-1
# src/transport/net_socket.cc ncclFindInterfaces(..., MAX_IFS); src/misc/socket.cc: unset NCCL_SOCKET_IFNAME takes ib*,
# else all but docker* and lo, bridges and veth pairs among them)
SOCKET_DEV = re.compile(r"via NET/Socket/[1-9]")
CONN = re.compile(r"(?P<pair>\d+\[\w+\] -> \d+\[\w+\]) \[(?P<dir>send|receive)\] via NET/[\w-]+/\d+(?P<gdr>/GDRDMA)?")
MAX_CONNS = 4096
INIT_DONE = re.compile(r"comm (?P<comm>0x[0-9a-f]+) rank (?P<rank>\d+) nr?[Rr]anks (?P<n>\d+).*Init COMPLETE")
INIT_START = re.compile(r"comm (?P<comm>0x[0-9a-f]+) rank (?P<rank>\d+) nr?[Rr]anks (?P<n>\d+).*Init START")
GPU_OF_COMM = re.compile(r"busId (?P<bus>[0-9a-fA-F]+) commId (?P<cid>0x[0-9a-fA-F]+)")  # NCCL 2.19+ init lines
GDR_DISABLED = "GPU Direct RDMA Disabled"
NO_IB = "NET/IB : No device found"  # src/transport/net_ib.cc: the IB verbs net found no usable HCA
GDR_HCA = re.compile(r"Disabled for (?:GPU \S+ / )?HCA \d+ '([^']+)'")
# Each collective a rank enqueues, at NCCL_DEBUG_SUBSYS=COLL ("AllReduce: opCount 1a sendbuff ... comm 0x... [nranks=16]",
# src/enqueue.cc): with no error line, the last one per process says where a hang began and which ranks lag.
COLL = re.compile(
    r":(?P<pid>\d+):\d+ \[\d+\] NCCL INFO (?P<op>\w+): opCount (?P<count>[0-9a-f]+) .*\[nranks=(?P<n>\d+)\]"
)
MAX_PROCS = 256
# The net plugin a process loaded, in the forms nccllines.py does not read: "Plugin Path : PATH" (the library
# found, 2.2x src/plugin/plugin_open.cc) and "NET/Plugin : No plugin found (libnccl-net.so), using internal
# implementation" (before 2.19, src/net.cc): an external plugin on some nodes only is a setup that differs.
PLUGIN_PATH = re.compile(r"NCCL INFO (?:NET/Plugin: ?)?Plugin Path : (?P<path>\S+)")
NO_PLUGIN = re.compile(r"NCCL INFO NET/Plugin ?: (?:No plugin found|Could not find)")
INTERNAL = "none (NCCL's internal nets)"
# src/misc/param.cc; and the two a net prints itself: 'NCCL_IB_HCA set to %s' (net_ib.cc), 'NCCL_SOCKET_IFNAME set to
# %s' (socket.cc), NVIDIA/nccl v2.12.12-1 to v2.21.5-1
BARE_ENV = re.compile(r"^\W*(?P<var>NCCL_[A-Z0-9_]+) set by environment to (?P<value>\S.*)$")
ENV_SET = re.compile(
    r"NCCL INFO (?:(?P<var>NCCL_\w+) set by environment to|(?P<net_var>NCCL_IB_HCA|NCCL_SOCKET_IFNAME) set to) (?P<value>.*)$"
)
MAX_ENV = 64
NUMBER_END = re.compile(r"^(-?\d+)\.$")  # param.cc ends an integer value with a period ('to 1.')
# Lines only a run that got through its collectives prints: NCCL's communicator teardown (src/init.cc) and
# nccl-tests' summary (src/common.cu).
# and torchrun's agent once its workers ended well (torch/distributed/elastic/agent/server/api.py: 'Local worker group
# finished (%s)' with the group's state, the event torchelastic.worker.status.SUCCEEDED)
SUCCESS = (
    "Destroy COMPLETE",
    "Avg bus bandwidth",
    "Out of bounds values : 0 OK",
    "group finished (SUCCEEDED)",
    "group finished (WorkerState.SUCCEEDED)",
    "torchelastic.worker.status.SUCCEEDED",
)
SUCCESS_RE = re.compile("|".join(map(re.escape, SUCCESS)))
# NCCL 2.23+ prints 'Init timings - ncclCommInitRank: rank R nranks N total ...' just after Init COMPLETE (src/init.cc,
# ncclCommInitRankFunc): an excerpt holding it got past init even where its Init COMPLETE line was left out
INIT_TIMINGS = "Init timings - "
# Lines NCCL prints while a communicator is being set up, in any release: "Setting affinity for GPU" (src/init.cc),
# "Channel 00/02 :" and "Ring 00 : 0 -> 1 via P2P/IPC" (src/graph/connect.cc, src/transport.cc). With no Init
# COMPLETE anywhere they show that init began and the log ends before it finished: a hang there, or an excerpt
# cut short. (reader.CAPPED keeps the first lines of each.)
PROGRESS = re.compile(
    r"NCCL INFO (?:Setting affinity for GPU|Channel \d+(?:/\d+)? :|Ring \d+ :|NVLS (?:Bind mem|comm|multicast))"
)
# Interfaces whose address another host cannot reach: container bridges and virtual ethernet pairs
# (docker0, br-*, veth*, virbr*, cni0, flannel), loopback, and link-local addresses.
BRIDGE = re.compile(r"^(?:docker\d*|br-\w+|veth\w*|virbr\d*|cni\d*|flannel[\w.]*|lo)$")
LINK_LOCAL = re.compile(r"^(?:169\.254\.|fe80:)")
IPOIB = re.compile(r"^ib[\w.]*$")
# A peer address on an IPoIB interface in an NCCL line ("from peer fe80::...%ib0<33397>"): InfiniBand, since
# RoCE NICs carry Ethernet interfaces
IPOIB_PEER = re.compile(r"%ib\d[\w.]*<\d+>")
MAX_HOSTS = 1024
# Ray's prefix on a worker's lines names the node's address: '(RayWorkerWrapper pid=593, ip=10.5.6.103)'
RAY_IP = re.compile(r"\(\w[\w/.:-]* pid=\d+, ip=(?P<ip>[\d.]+)")
# PyTorch Lightning's line as each process joins the process group (2.x src/lightning/fabric/utilities/distributed.py
# _init_dist_connection: 'Initializing distributed: GLOBAL_RANK: {global_rank}, MEMBER: {global_rank + 1}/{world_size}';
# 1.5 pytorch_lightning/plugins/training_type/ddp.py: 'initializing ddp: GLOBAL_RANK: ...'): one rank twice in one
# job means two launchers each started the job's ranks (the scheduler's tasks and Lightning's num_nodes/devices differ)
LIGHTNING_RANK = re.compile(
    r"(?:[Ii]nitializing (?:ddp|distributed)): GLOBAL_RANK: (?P<rank>\d+), MEMBER: \d+/(?P<world>\d+)"
)
# ... and rank 0's once every rank joined ('All distributed processes registered. Starting with N processes')
LIGHTNING_ALL = "All distributed processes registered"
# GPUs without peer access: NCCL's "Could not enable P2P between dev %d(=%lx) and dev %d(=%lx)" (v2.30.7-1
# src/transport/p2p.cc p2pCanConnect, when cudaDeviceCanAccessPeer says no) and CUDA samples' p2pBandwidthLatencyTest
# "Device=%d CANNOT Access Peer Device=%d"
NO_PEER = re.compile(r"Could not enable P2P between dev \d|Device=\d+ CANNOT Access Peer Device=\d")
MAX_RANKS = 65536
# PyTorch's log prefix, and mpirun --tag-output's '[JOB,RANK]<stdout>:': the process's global rank
TORCH_RANK = re.compile(r"\[rank(\d{1,6})\]:|^\[\d+,(\d{1,6})\]<std(?:out|err)>:")
MAX_HCAS = 64
# NCCL's lines with the host:pid:tid prefix cut off (an excerpt, NCCL_DEBUG_FILE read through another tool): their
# facts still count against the plan, never as a host of their own compared with the named ones
UNPREFIXED = "?"
# an NCCL INFO line pasted from its level word on ('INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 ...')
BARE_INFO = re.compile(r"^\W*INFO (?:NET/|Bootstrap|Using network|NCCL version|Channel |Ring |comm 0x)")


@dataclass
class Host:
    name: str
    version: str | None = None
    net: str | None = None
    socket_if: str | None = None  # the first interface of NCCL's Socket net, when it was inited
    iface: str | None = None
    addr: str | None = None
    hcas: tuple[str, ...] = ()
    link: str | None = None  # IB or RoCE, from the HCA list
    links: set[str] = field(default_factory=set)  # every link layer in its HCA lists
    plugin: str | None = None  # the net plugin loaded, or INTERNAL
    net_channels: int = 0
    gdr_channels: int = 0
    ib_channels: bool = False  # a network channel via NET/IB (InfiniBand or RoCE verbs), where GDRDMA applies
    gdr_disabled: bool = False
    started: set[str] = field(default_factory=set)  # "comm/rank" that printed Init START or a channel line
    progress: bool = False  # a line NCCL prints during init (PROGRESS)
    complete: set[str] = field(default_factory=set)
    env: dict[str, str] = field(default_factory=dict)  # NCCL_* the process read from its environment
    colls: dict[str, tuple[int, str, int]] = field(default_factory=dict)  # pid -> (opCount, op, nranks), the last
    lines: dict[str, Line] = field(default_factory=dict)  # fact -> the first line that showed it
    max_dev: int = -1  # the highest CUDA device in NCCL's "[dev]" prefix on this host
    shm_channels: int = 0  # channels 'via SHM/' (through host memory) and 'via P2P/' (GPU to GPU) on this host
    p2p_channels: int = 0
    gpus: dict[tuple[str, str], str] = field(default_factory=dict)  # (commId, busId) -> the rank NCCL put there
    twice: tuple[Line, str] | None = None  # the init line of a second rank of one communicator on one GPU, and why

    @property
    def shown(self) -> str:
        """The host as a finding names it ('?' reads as a typo there)."""
        return "an unnamed host (lines without NCCL's host prefix)" if self.name == UNPREFIXED else self.name


class Facts:
    """Per-host facts, bounded: at most MAX_HOSTS hosts, a few fields each."""

    def __init__(self) -> None:
        self.hosts: dict[str, Host] = {}
        self.seqs: dict[Line, int] = {}  # reading order of the lines a fact keeps
        self.success = False  # a line that only a finished run prints
        self.last: tuple[str, str] | None = None  # (file, host) of the last prefixed NCCL line read
        self.ipoib_peer = False  # an NCCL line named a peer on an IPoIB interface
        self.ran = False  # the run got past NCCL init: nccl-tests printed a result row, or NCCL its Init timings
        self.conns: dict[tuple[str, str], tuple[bool, Line]] = {}  # (connection, send|receive) -> (GDRDMA, line)
        self.bench = benchtable.Bench()  # nccl-tests' start lines, result rows, summaries and device list
        self.max_rank = -1  # the highest global rank in PyTorch's "[rankN]:" prefix
        self.joined: set[tuple[str, str]] = set()  # (rank, world size) of Lightning's join lines
        self.twice: Line | None = None  # the first Lightning join line of a rank already joined
        self.registered = False  # Lightning's rank 0 saw every rank join (LIGHTNING_ALL)
        self.nccl_used = False  # a line says NCCL ran: its version banner, or vLLM's/SGLang's 'is using nccl=='
        # the last line read of a file that starts a framework's distributed setup (startline.started), with what began
        self.start_last: tuple[Line, str] | None = None
        self.ray_ips: set[str] = set()  # the node addresses of Ray workers' lines
        self.no_peer: Line | None = None  # the first line that shows two GPUs without peer access (NO_PEER)
        self.dumps = stackdump.Dumps()  # a Python stack dump: where a process waited

    def add(self, line: Line, seq: int = 0) -> None:
        text = line.text
        self._run_facts(line)
        self._job_facts(line, seq)
        if "NCCL INFO" not in text and not ("INFO " in text and BARE_INFO.match(text)):
            self._bare_version(line, seq)
            self._bare_env(line, seq)
            return
        m = NCCL_PREFIX.search(text)
        name = m.group("host") if m else UNPREFIXED
        self.last = (line.file, name)
        host = self._host(name)
        if host is None:
            return
        if m:
            host.max_dev = max(host.max_dev, int(m.group("dev")))
        parsed = nccllines.split(text)
        found = nccllines.message(parsed[3]) if parsed and parsed[0] == "INFO" else None
        if found is None or not _apply(host, found[0], found[1], line):
            _read(host, text, line)
        if line in host.lines.values():  # (a tuple's comparison, in C: this runs for every NCCL line)
            self.seqs[line] = seq

    def _job_facts(self, line: Line, seq: int) -> None:
        """What a line says of the job as a whole: NCCL ran, Ray workers' nodes, ranks and Lightning's joins."""
        text = line.text
        self.nccl_used = self.nccl_used or "NCCL version" in text or "sing nccl==" in text
        self._ends(line)
        if "ip=" in text and len(self.ray_ips) < MAX_HOSTS and (r := RAY_IP.search(text)):
            self.ray_ips.add(r.group("ip"))
        if self.bench.twin is line:
            self.seqs[line] = seq
        if ("P2P between" in text or "Access Peer" in text) and self.no_peer is None and NO_PEER.search(text):
            self.no_peer = line
            self.seqs[line] = seq
        if "GLOBAL_RANK: " in text and (m := LIGHTNING_RANK.search(text)):
            self._joined((m.group("rank"), m.group("world")), line, seq)
        self.registered = self.registered or LIGHTNING_ALL in text
        if ("[rank" in text or "]<std" in text) and (m := TORCH_RANK.search(text)):
            self.max_rank = max(self.max_rank, int(m.group(1) or m.group(2)))

    def _ends(self, line: Line) -> None:
        """The last line read of a file, when it starts a framework's distributed setup (startline.started)."""
        if (what := startline.started(line.text)) is not None:
            self.start_last = (line, what)
        elif self.start_last is not None and self.start_last[0].file == line.file:
            self.start_last = None  # a line after it

    def _joined(self, key: tuple[str, str], line: Line, seq: int) -> None:
        if key in self.joined and self.twice is None:
            self.twice = line
            self.seqs[line] = seq
        elif len(self.joined) < MAX_RANKS:
            self.joined.add(key)

    def settle(self) -> None:
        """After the last line: a host whose Socket net listed its interfaces, with no 'Using network' line and no
        IB net's HCA list, runs its net over Socket."""
        for h in self.hosts.values():
            if h.net is None and h.socket_if and not h.hcas:
                h.net = "Socket"
                h.lines["net"] = h.lines["socket"]

    def _run_facts(self, line: Line) -> None:
        """What a line says of the run as a whole, whatever its prefix: it ended well, got past init, began
        nccl-tests' table, a peer on IPoIB, one end of a network connection."""
        text = line.text
        if SUCCESS_RE.search(text):
            self.success = True
        if "%ib" in text and IPOIB_PEER.search(text):
            self.ipoib_peer = True
        if self.bench.add(line) or INIT_TIMINGS in text:
            self.ran = True
        if "via NET/" in text and (c := CONN.search(text)) and len(self.conns) < MAX_CONNS:
            self.conns.setdefault((c.group("pair"), c.group("dir")), (bool(c.group("gdr")), line))
        self.dumps.add(line)

    def _bare_env(self, line: Line, seq: int) -> None:
        """'NCCL_X set by environment to V' pasted without NCCL's prefix: to the host of the NCCL line before it in
        that file, else to the unnamed host (it still counts against the plan)."""
        m = BARE_ENV.match(line.text) if "set by environment to" in line.text else None
        if m is None:
            return
        same = self.last is not None and self.last[0] == line.file
        host = self._host(self.last[1] if same and self.last is not None else UNPREFIXED)
        if host is not None and _set_env(host, m.group("var"), m.group("value"), line):
            self.seqs[line] = seq

    def _host(self, name: str) -> Host | None:
        """The host of that name, made on first sight while fewer than MAX_HOSTS are known."""
        host = self.hosts.get(name)
        if host is None and len(self.hosts) < MAX_HOSTS:
            host = self.hosts[name] = Host(name)
        return host

    def _bare_version(self, line: Line, seq: int) -> None:
        """The unprefixed `NCCL version X` banner, to the host whose NCCL line came just before in that file."""
        m = BARE_VERSION.match(line.text) if "NCCL version" in line.text else None
        if m is None or self.last is None or self.last[0] != line.file:
            return
        host = self.hosts.get(self.last[1])
        if host is not None and host.version is None:
            host.version = m.group("v")
            host.lines["version"] = line
            self.seqs[line] = seq


def _apply(h: Host, kind: str, f: dict, line: Line) -> bool:
    """A line nccllines parsed, into the host's facts; False for a kind this module does not keep."""
    if kind == "channel_net":
        _channel(h, bool(f["gdr"]), line, f["name"])
    elif kind in ("channel_shm", "channel_p2p"):
        if kind == "channel_shm":
            h.shm_channels += 1
            h.lines.setdefault("shm", line)
        else:
            h.p2p_channels += 1
    elif kind == "complete":
        h.complete.add(f"{f['comm']}/{f['rank']}")
        if f.get("commid"):
            _gpu(h, f["commid"], f["busid"], f["rank"], line)
    elif kind == "comm":
        h.started.add(f"{f['comm']}/{f['rank']}")
    elif kind == "version":
        h.version = h.version or f["version"]
        h.lines.setdefault("version", line)
    elif kind == "net":
        h.net = h.net or f["name"]
        h.lines.setdefault("net", line)
    elif kind in ("plugin", "nofile"):
        _plugin(h, f["name"] if kind == "plugin" else None, line)
    elif kind == "ib" and (devs := nccllines.ib_devices(f["devices"])):
        _hcas(h, [f"{name}:{port}" for name, port, _link in devs], [d[2] for d in devs], line)
        _oob(h, line)
    else:
        return False
    return True


def p2p_off(h: Host) -> str | None:
    """The variable that turned NCCL's GPU peer-to-peer transport off on this host, as NCCL printed it, or None
    (src/graph/paths.cc ncclGetLevel: NCCL_P2P_DISABLE=1 is level LOC, as NCCL_P2P_LEVEL=LOC or its old 0)."""
    if h.env.get("NCCL_P2P_DISABLE") == "1":
        return "NCCL_P2P_DISABLE"
    if h.env.get("NCCL_P2P_LEVEL") in ("LOC", "0"):
        return "NCCL_P2P_LEVEL"
    return None


def _set_env(h: Host, var: str, value: str, line: Line) -> bool:
    """A setting NCCL printed ('set by environment to V', param.cc's integers end in '.'): the first one kept."""
    if len(h.env) >= MAX_ENV or var in h.env:
        return False
    h.env[var] = NUMBER_END.sub(r"\1", value.strip())
    h.lines[f"env:{var}"] = line
    return True


def _gpu(h: Host, cid: str, bus: str, rank: str, line: Line) -> None:
    """Two ranks of one communicator (commId) on one GPU (busId) of one host: the check NCCL makes before it
    refuses the communicator (src/init.cc, 'Duplicate GPU detected'), made from the INFO lines it prints first."""
    key = (cid.lower().removeprefix("0x"), bus.lower())
    other = h.gpus.get(key)
    if other is None and len(h.gpus) < MAX_ENV:
        h.gpus[key] = rank
    elif other is not None and other != rank and h.twice is None:
        h.twice = (line, f"ranks {other} and {rank} of communicator 0x{key[0]} on {h.name}, both on GPU busId {bus}")
        h.lines["gpu_twice"] = line


def _plugin(h: Host, name: str | None, line: Line) -> None:
    """A plugin loaded wins over a name NCCL looked for first and did not find (it tries several)."""
    if name is not None and h.plugin in (None, INTERNAL):
        h.plugin = name
        h.lines["plugin"] = line
    elif name is None and h.plugin is None:
        h.plugin = INTERNAL
        h.lines["plugin"] = line


def _hcas(h: Host, names: list[str], links: list[str], line: Line) -> None:
    """The HCAs a node's processes use, all of them: each process lists its own (a launcher may give each local
    rank its NIC), so one process's list is not the node's; and their link layers (IB, RoCE)."""
    if not h.hcas:
        h.link = links[0]
        h.lines["hcas"] = line
    h.links |= set(links)
    h.hcas = tuple(dict.fromkeys(h.hcas + tuple(names)))[:MAX_HCAS]


def _oob(h: Host, line: Line) -> None:
    """The IB net's out-of-band socket interface ('NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>', v2.21.5-1
    src/transport/net_ib.cc:538): chosen as the bootstrap's is (NCCL_SOCKET_IFNAME), so it stands for it when the
    Bootstrap line is not in the log."""
    if h.iface is None and (m := OOB.search(line.text)):
        h.iface, h.addr = m.group("iface"), m.group("addr")
        h.lines["iface"] = line


def _channel(h: Host, gdr: bool, line: Line, net: str) -> None:
    h.net_channels += 1
    h.ib_channels = h.ib_channels or net.startswith("IB")
    h.gdr_channels += 1 if gdr else 0
    h.lines.setdefault("gdr" if gdr else "nogdr", line)
    if net.startswith("Socket") and "socket_dev" not in h.lines and SOCKET_DEV.search(line.text):
        h.lines["socket_dev"] = line  # a channel on the Socket net's second interface or later


def _read(h: Host, text: str, line: Line) -> None:
    """The older forms (and the lines nccllines does not read): collectives, channels, init, version, net, then
    the rest."""
    if "opCount" in text and (m := COLL.search(text)):
        if m.group("pid") in h.colls or len(h.colls) < MAX_PROCS:
            h.colls[m.group("pid")] = (int(m.group("count"), 16), m.group("op"), int(m.group("n")))
    elif " via " in text and _read_channel(h, text, line):
        return
    elif "Init COMPLETE" in text and (m := INIT_DONE.search(text)):
        h.complete.add(f"{m.group('comm')}/{m.group('rank')}")
    elif "Init START" in text and (m := INIT_START.search(text)):
        h.started.add(f"{m.group('comm')}/{m.group('rank')}")
        if b := GPU_OF_COMM.search(text):
            _gpu(h, b.group("cid"), b.group("bus"), m.group("rank"), line)
    elif PROGRESS.search(text):
        h.progress = True
    elif m := VERSION.search(text):
        h.version = h.version or m.group("v")
        h.lines.setdefault("version", line)
    elif m := NETWORK.search(text):
        h.net = h.net or m.group("net")
        h.lines.setdefault("net", line)
    else:
        _read_setup(h, text, line)


def _read_channel(h: Host, text: str, line: Line) -> bool:
    """A channel line in the older forms: over the network, or inside the node through SHM or P2P."""
    if "via NET/" in text and (m := CHANNEL_NET.search(text)):
        _channel(h, bool(m.group("gdr")), line, m.group("net"))
    elif ("via SHM/" in text or "via P2P/" in text) and (m := CHANNEL_LOCAL.search(text)):
        _apply(h, "channel_shm" if m.group("how") == "SHM" else "channel_p2p", {}, line)
    else:
        return False
    return True


def _read_setup(h: Host, text: str, line: Line) -> None:
    """Bootstrap interface, HCAs, settings from the environment, GPUDirect disabled."""
    if "NET/Socket" in text and h.socket_if is None and (m := SOCKET_NET.search(text)):
        h.socket_if = m.group("iface")
        h.lines["socket"] = line
    if m := BOOTSTRAP.search(text):
        if h.iface is None:
            h.iface, h.addr = m.group("iface"), m.group("addr")
            h.lines["iface"] = line
    elif m := HCAS.search(text):
        if found := HCA.findall(m.group("hcas")):
            _hcas(h, [f"{d}:{p}" for d, p, _ in found], [ll for _d, _p, ll in found], line)
        _oob(h, line)
    elif " set " in text and (m := ENV_SET.search(text)):
        _set_env(h, m.group("var") or m.group("net_var"), m.group("value"), line)
    elif "Plugin" in text and (m := PLUGIN_PATH.search(text) or NO_PLUGIN.search(text)):
        _plugin(h, m.groupdict().get("path"), line)
    elif NO_IB in text:
        h.lines.setdefault("no_ib", line)
    elif GDR_DISABLED in text and "NET/Socket" not in text:  # a socket NIC never has GPUDirect: not news
        h.gdr_disabled = True
        h.lines.setdefault("gdr_disabled", line)


def one_host(facts: Facts) -> bool:
    """Every rank of the job on one host, as far as the logs show: one named host (in NCCL's lines or nccl-tests'
    device list), no network channel, no collective of a communicator with more ranks than that host's processes
    in the logs, and no global rank above the host's highest device (a single host's ranks are its devices)."""
    named = set(facts.hosts) | facts.bench.hosts
    if len(named) != 1 or UNPREFIXED in named:
        return False
    h = facts.hosts.get(next(iter(named)))
    if h is not None and p2p_off(h):
        return False  # P2P is already off: the test the advice suggests was run
    if h is not None and facts.max_rank > h.max_dev >= 0:
        return False  # a global rank above every device here ([rank15] beside device [7]): other hosts ran the rest
    return h is None or (not h.net_channels and all(n <= len(h.colls) for _c, _op, n in h.colls.values()))


def net_unseen(facts: Facts) -> bool:
    """NCCL ran, across nodes or Ray workers, and no line says which network it used (NCCL_DEBUG unset or below
    INFO): a run over TCP sockets on an RDMA fabric reads the same as one over the fabric."""
    shown = any(h.net or h.socket_if or h.hcas or h.net_channels for h in facts.hosts.values())
    several = len(set(facts.hosts) - {UNPREFIXED}) > 1 or bool(facts.ray_ips)
    return facts.nccl_used and several and not shown
