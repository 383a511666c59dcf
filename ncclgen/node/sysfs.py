"""Reading the node's PCIe, RDMA, network and NUMA layout from sysfs, under any root.

Everything takes a :class:`Sysfs` so `--sysfs-root` can point at a captured tree (or a test fixture)
instead of ``/``. Symlinks are followed inside that tree, also when a captured link is absolute.
Files and meanings: Linux Documentation/ABI/testing/sysfs-bus-pci and sysfs-class-infiniband; the
NUMA files as pytorch/pytorch torch/numa/binding.py reads them.
"""

from __future__ import annotations

import enum
import errno
import os
import re
import stat
from dataclasses import dataclass

from ..load import cpuset

BDF = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
HOST_BRIDGE = re.compile(r"pci[0-9a-f]{4,8}:[0-9a-f]{2}")
_RATE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*Gb/sec")
MAX_READ = 1 << 20  # bytes read from one file: sysfs attributes are at most a page, /proc/net/route a few KiB


class Sysfs:
    """A sysfs tree rooted at ``root`` ("/" on a live node)."""

    def __init__(self, root: str = "/"):
        self.root = os.path.abspath(root)

    def host_path(self, path: str) -> str:
        """Where the in-tree absolute ``path`` lies on this machine, its links followed in the tree."""
        return os.path.join(self.root, self.resolve(path).lstrip("/"))

    def read(self, path: str) -> str | None:
        """The stripped text of a sysfs file, or None when it is absent, unreadable or not a regular file.

        Only a regular file is read (sysfs and /proc attributes are): a FIFO, socket or device in a
        captured or hostile tree would block or never end, so it counts as unreadable. Opened with
        O_NONBLOCK so the open itself cannot wait, checked with fstat, read up to MAX_READ bytes.
        """
        try:
            fd = os.open(self.host_path(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        except (OSError, ValueError):
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            os.set_blocking(fd, True)
            chunks: list[bytes] = []
            left = MAX_READ
            while left > 0 and (chunk := os.read(fd, left)):  # /proc files may come a page per read
                chunks.append(chunk)
                left -= len(chunk)
        except OSError:
            return None
        finally:
            os.close(fd)
        return b"".join(chunks).decode("utf-8", errors="replace").strip()

    def listdir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(self.host_path(path)))
        except OSError:
            return []

    def exists(self, path: str) -> bool:
        try:
            return os.path.exists(self.host_path(path))
        except OSError:
            return False

    def resolve(self, path: str) -> str:
        """``path`` with every symlink followed, as an in-tree absolute path.

        Like os.path.realpath, except that the walk never leaves the tree: an absolute link target
        (as some capture tools store them) is read relative to the root.
        """
        todo = [p for p in path.split("/") if p]
        done: list[str] = []
        hops = 0
        while todo:
            part = todo.pop(0)
            if part == ".":
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            here = os.path.join(self.root, *done, part)
            if os.path.islink(here):
                hops += 1
                if hops > 40:
                    raise OSError(errno.ELOOP, "too many symbolic links", path)
                target = os.readlink(here)
                if target.startswith("/"):
                    done = []
                todo = [p for p in target.split("/") if p] + todo
            else:
                done.append(part)
        return "/" + "/".join(done)


# -- PCIe --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PciLoc:
    """Where a PCI function sits: its host bridge and the chain of bridges down to it."""

    bdf: str  # 0000:18:00.0
    host_bridge: str  # pci0000:15 (one root complex)
    chain: tuple[str, ...]  # BDFs from the root port down to the device itself (inclusive)
    numa: int | None  # device/numa_node; None when the kernel reports -1

    @property
    def ancestors(self) -> tuple[str, ...]:
        return self.chain[:-1]


class Level(enum.IntEnum):
    """PCIe distance classes of `nvidia-smi topo -m` (its legend: PIX, PXB, PHB, NODE, SYS), nearest first."""

    PIX = 0  # the same PCIe bridge is the parent of both
    PXB = 1  # several bridges, but below one root port (one PCIe switch tree)
    PHB = 2  # through a host bridge: same root complex
    NODE = 3  # different root complexes of one NUMA node
    SYS = 4  # across the socket interconnect (or NUMA unknown)


def distance(a: PciLoc, b: PciLoc) -> Level:
    """The `nvidia-smi topo -m` class between two PCI functions, from their sysfs paths."""
    if a.host_bridge == b.host_bridge:
        shared = 0
        for x, y in zip(a.ancestors, b.ancestors):
            if x != y:
                break
            shared += 1
        if shared:
            return Level.PIX if a.ancestors == b.ancestors else Level.PXB
        return Level.PHB
    if a.numa is not None and a.numa == b.numa:
        return Level.NODE
    return Level.SYS


def pci_loc(fs: Sysfs, device_link: str) -> PciLoc | None:
    """Resolve a ``.../device`` link (or /sys/bus/pci/devices/<bdf>) to a PciLoc; None if not PCI."""
    if not fs.exists(device_link):
        return None
    real = fs.resolve(device_link)
    parts = real.strip("/").split("/")
    # /sys/devices/pci0000:15/0000:15:01.0/.../0000:18:00.0
    if len(parts) < 4 or parts[:2] != ["sys", "devices"] or not HOST_BRIDGE.fullmatch(parts[2]):
        return None
    chain = tuple(p for p in parts[3:] if BDF.fullmatch(p))
    if not chain or chain[-1] != parts[-1]:
        return None
    return PciLoc(bdf=chain[-1], host_bridge=parts[2], chain=chain, numa=_numa(fs.read(real + "/numa_node")))


def pci_device(fs: Sysfs, bdf: str) -> PciLoc | None:
    return pci_loc(fs, f"/sys/bus/pci/devices/{bdf}")


def _numa(text: str | None) -> int | None:
    """numa_node contents: -1 (or absent) means the kernel does not know."""
    try:
        n = int(text) if text is not None else -1
    except ValueError:
        return None
    return n if n >= 0 else None


# -- NUMA --------------------------------------------------------------------------------------------


def numa_cpus(fs: Sysfs) -> dict[int, frozenset[int]]:
    """NUMA node id -> its CPUs, from /sys/devices/system/node/node*/cpulist (memory-only nodes: {})."""
    out: dict[int, frozenset[int]] = {}
    for entry in fs.listdir("/sys/devices/system/node"):
        m = re.fullmatch(r"node(\d+)", entry)
        if not m:
            continue
        text = fs.read(f"/sys/devices/system/node/{entry}/cpulist") or ""
        try:
            out[int(m.group(1))] = cpuset.parse(text) if text else frozenset()
        except ValueError:
            out[int(m.group(1))] = frozenset()
    return dict(sorted(out.items()))


# -- RDMA devices and network interfaces ---------------------------------------------------------------


@dataclass(frozen=True)
class HcaPort:
    """One port of an RDMA device, /sys/class/infiniband/<hca>/ports/<port>."""

    hca: str
    port: int
    state: str  # ACTIVE, DOWN, INIT, ... (text after "N: ")
    phys_state: str  # LinkUp, Disabled, Polling, ...
    rate_gbps: float | None
    link_layer: str  # InfiniBand or Ethernet
    pci: PciLoc | None
    driver: str | None  # mlx5_core, efa, ...
    netdev: str | None = None


@dataclass(frozen=True)
class NetDev:
    """A network interface, /sys/class/net/<name>."""

    name: str
    operstate: str
    pci: PciLoc | None  # None for virtual interfaces (bond0, lo)
    hca: str | None  # RDMA device of the same PCI function (device/infiniband_verbs)
    port: int  # dev_port + 1


def _after_colon(text: str | None) -> str:
    """'4: ACTIVE' -> 'ACTIVE'"""
    return (text or "").split(":", 1)[-1].strip()


def natural_key(name: str):
    """mlx5_2 before mlx5_10: natural order, as ibdev2netdev and humans list them."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def netdevs(fs: Sysfs) -> list[NetDev]:
    out = []
    for name in fs.listdir("/sys/class/net"):
        base = f"/sys/class/net/{name}"
        pci = pci_loc(fs, base + "/device")
        hca = None
        for uverbs in fs.listdir(base + "/device/infiniband_verbs"):
            hca = fs.read(f"{base}/device/infiniband_verbs/{uverbs}/ibdev") or hca
        try:
            port = int(fs.read(base + "/dev_port") or "0") + 1
        except ValueError:
            port = 1
        out.append(NetDev(name=name, operstate=fs.read(base + "/operstate") or "unknown", pci=pci, hca=hca, port=port))
    return out


def hca_ports(fs: Sysfs) -> list[HcaPort]:
    """Every RDMA port, in natural device order, with the netdev of the same PCI function and port."""
    by_port: dict[tuple[str, int], str] = {}
    for nd in netdevs(fs):
        if nd.hca is not None:
            by_port.setdefault((nd.hca, nd.port), nd.name)
    out = []
    for hca in sorted(fs.listdir("/sys/class/infiniband"), key=natural_key):
        base = f"/sys/class/infiniband/{hca}"
        pci = pci_loc(fs, base + "/device")
        driver_link = base + "/device/driver"
        driver = os.path.basename(fs.resolve(driver_link)) if fs.exists(driver_link) else None
        for p in sorted(fs.listdir(base + "/ports"), key=natural_key):
            if not p.isdigit():
                continue
            pb = f"{base}/ports/{p}"
            m = _RATE.match(fs.read(pb + "/rate") or "")
            out.append(
                HcaPort(
                    hca=hca,
                    port=int(p),
                    state=_after_colon(fs.read(pb + "/state")),
                    phys_state=_after_colon(fs.read(pb + "/phys_state")),
                    rate_gbps=float(m.group(1)) if m else None,
                    link_layer=fs.read(pb + "/link_layer") or "unknown",
                    pci=pci,
                    driver=driver,
                    netdev=by_port.get((hca, int(p))),
                )
            )
    return out


def default_route_interface(fs: Sysfs) -> str | None:
    """The interface of the IPv4 default route (lowest metric), from /proc/net/route."""
    text = fs.read("/proc/net/route")
    best = None
    for line in (text or "").splitlines()[1:]:
        cols = line.split()
        if len(cols) < 8 or cols[1] != "00000000" or cols[7] != "00000000":
            continue
        try:
            metric = int(cols[6])
        except ValueError:
            continue
        if best is None or metric < best[0]:
            best = (metric, cols[0])
    return best[1] if best else None
