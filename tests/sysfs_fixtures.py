"""Sysfs trees of real node layouts, built under tmp_path with relative symlinks like the kernel's.

Each builder returns a :class:`Layout`: the tree root plus the GPUs (PCI address, NUMA node) that a
fake NVML must report for that node. Layouts (sources: NVIDIA DGX H100 User Guide, docs.nvidia.com/dgx/dgxh100-user-guide,
"Network Connections, Cables, and Adaptors" Table 6; oracle-quickstart/oci-hpc samples/gpu/H100-topology.xml):

* :func:`dgx_h100` - sec. 1: DGX H100, 8 GPUs, 8 compute ConnectX-7 (mlx5_0,3,4,5,6,9,10,11 with the
  netdevs of the DGX User Guide Table 6), storage/in-band ports mlx5_1,2 (NUMA 0) and mlx5_7,8
  (NUMA 1) named as in the DGX H200 field report, NUMA CPUs 0-55,112-167 / 56-111,168-223. Compute
  HCA buses follow the netdev names (ibp24s0 = bus 0x18); GPU buses and bridges are illustrative.
  mlx5_7 is left DOWN (an uncabled storage port) to exercise that rule.
* :func:`oci_h100` - sec. 5: OCI BM.GPU.H100.8, RoCE, 8 dual-port CX-7 (one PCI function per port,
  mlx5_0..17 without 2 and 11) behind the Broadcom switches of Oracle's H100-topology.xml (bridge and
  device BDFs copied from it), front-end mlx5_2 (eth0) and mlx5_11.
* :func:`no_hca` - a PCIe GPU server with Ethernet only, no /sys/class/infiniband.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DGX_CPUS = {0: "0-55,112-167", 1: "56-111,168-223"}  # `nvidia-smi topo -m` on DGX H100 (vllm-project/vllm issue #13855)

# (GPU bus, compute HCA, HCA bus, netdev): DGX H100 User Guide Table 6
DGX_RAILS = [
    (0x1B, "mlx5_0", 0x18, "ibp24s0"),
    (0x43, "mlx5_3", 0x40, "ibp64s0"),
    (0x52, "mlx5_4", 0x4F, "ibp79s0"),
    (0x61, "mlx5_5", 0x5E, "ibp94s0"),
    (0x9D, "mlx5_6", 0x9A, "ibp154s0"),
    (0xC3, "mlx5_9", 0xC0, "ibp192s0"),
    (0xD1, "mlx5_10", 0xCE, "ibp206s0"),
    (0xDF, "mlx5_11", 0xDC, "ibp220s0"),
]

# OCI H100-topology.xml: (switch up, GPU downstream, GPU, NIC downstream, NIC, HCA per port)
OCI_SWITCHES = [
    (0x08, 0x0D, 0x0F, 0x0A, 0x0C, ("mlx5_0", "mlx5_1")),
    (0x26, 0x2B, 0x2D, 0x28, 0x2A, ("mlx5_3", "mlx5_4")),
    (0x3D, 0x42, 0x44, 0x3F, 0x41, ("mlx5_5", "mlx5_6")),
    (0x54, 0x59, 0x5B, 0x56, 0x58, ("mlx5_7", "mlx5_8")),
    (0x82, 0x87, 0x89, 0x84, 0x86, ("mlx5_9", "mlx5_10")),
    (0xA1, 0xA6, 0xA8, 0xA3, 0xA5, ("mlx5_12", "mlx5_13")),
    (0xB9, 0xBE, 0xC0, 0xBB, 0xBD, ("mlx5_14", "mlx5_15")),
    (0xD1, 0xD6, 0xD8, 0xD3, 0xD5, ("mlx5_16", "mlx5_17")),
]

IB_NDR = "400 Gb/sec (4X NDR)"
ETH_200 = "200 Gb/sec (4X HDR)"
ETH_100 = "100 Gb/sec (4X EDR)"


@dataclass
class Layout:
    root: Path
    numa: dict[int, str]  # NUMA id -> cpulist
    gpus: list[tuple[str, int]] = field(default_factory=list)  # (bus id, NUMA node) in NVML order


class Tree:
    """Writes sysfs-shaped files and relative symlinks under ``root``."""

    def __init__(self, root: Path):
        self.root = root

    def _p(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def file(self, path: str, text: str) -> None:
        p = self._p(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text + "\n")

    def link(self, path: str, target: str) -> None:
        """A relative symlink at ``path`` pointing to the in-tree absolute ``target``."""
        p = self._p(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.symlink_to(os.path.relpath(target, os.path.dirname(path)))

    def pci(self, host_bridge: str, chain: list[str], numa: int) -> str:
        """Create every device of ``chain`` below ``host_bridge``; return the last one's path."""
        path = f"/sys/devices/{host_bridge}"
        for bdf in chain:
            path += f"/{bdf}"
            if not self._p(path + "/numa_node").exists():
                self.file(path + "/numa_node", str(numa))
                self.link(f"/sys/bus/pci/devices/{bdf}", path)
        return path

    def hca(
        self,
        dev_path: str,
        hca: str,
        *,
        state: str = "4: ACTIVE",
        phys: str = "5: LinkUp",
        rate: str = IB_NDR,
        link_layer: str = "InfiniBand",
        netdev: str | None = None,
        operstate: str = "up",
        uverbs: int = 0,
    ) -> None:
        """An mlx5 RDMA device with one port on the PCI function at ``dev_path``, and its netdev."""
        base = f"{dev_path}/infiniband/{hca}"
        self.link(f"{base}/device", dev_path)
        for name, text in (("state", state), ("phys_state", phys), ("rate", rate), ("link_layer", link_layer)):
            self.file(f"{base}/ports/1/{name}", text)
        self.link(f"/sys/class/infiniband/{hca}", base)
        self._p("/sys/bus/pci/drivers/mlx5_core").mkdir(parents=True, exist_ok=True)
        self.link(f"{dev_path}/driver", "/sys/bus/pci/drivers/mlx5_core")
        self.file(f"{dev_path}/infiniband_verbs/uverbs{uverbs}/ibdev", hca)
        if netdev:
            self.netdev(netdev, dev_path, operstate)

    def netdev(self, name: str, dev_path: str | None, operstate: str = "up") -> None:
        base = f"{dev_path}/net/{name}" if dev_path else f"/sys/devices/virtual/net/{name}"
        self.file(f"{base}/operstate", operstate)
        if dev_path:
            self.file(f"{base}/dev_port", "0")
            self.link(f"{base}/device", dev_path)
        self.link(f"/sys/class/net/{name}", base)

    def numa(self, cpus: dict[int, str]) -> None:
        for n, text in cpus.items():
            self.file(f"/sys/devices/system/node/node{n}/cpulist", text)

    def default_route(self, iface: str) -> None:
        self.file(
            "/proc/net/route",
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
            f"{iface}\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
            f"{iface}\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0",
        )


def _numa_of_bus(bus: int) -> int:
    return 0 if bus < 0x80 else 1


def dgx_h100(root: Path) -> Layout:
    t = Tree(root)
    t.numa(DGX_CPUS)
    lay = Layout(root=root, numa=DGX_CPUS)
    uverbs = 0
    for gpu_bus, hca, hca_bus, netdev in DGX_RAILS:
        rb, numa = hca_bus - 3, _numa_of_bus(hca_bus)
        hb, rp, up = f"pci0000:{rb:02x}", f"0000:{rb:02x}:01.0", f"0000:{rb + 1:02x}:00.0"
        hca_dev = t.pci(hb, [rp, up, f"0000:{rb + 2:02x}:00.0", f"0000:{hca_bus:02x}:00.0"], numa)
        t.pci(hb, [rp, up, f"0000:{rb + 2:02x}:01.0", f"0000:{gpu_bus:02x}:00.0"], numa)
        t.hca(hca_dev, hca, netdev=netdev, uverbs=uverbs)
        uverbs += 1
        lay.gpus.append((f"0000:{gpu_bus:02x}:00.0", numa))
    # Two dual-port storage / in-band CX-7 cards (slot 1 NUMA 0 at bus 0x29, slot 2 NUMA 1 at 0xaa).
    for bus, (ib, eth), (ib_if, eth_if), ib_state in (
        (0x29, ("mlx5_1", "mlx5_2"), ("ibs2f0", "ens2f1np1"), "4: ACTIVE"),
        (0xAA, ("mlx5_7", "mlx5_8"), ("ibs8f0", "ens8f1np1"), "1: DOWN"),
    ):
        hb, rp, numa = f"pci0000:{bus - 2:02x}", f"0000:{bus - 2:02x}:01.0", _numa_of_bus(bus)
        f0 = t.pci(hb, [rp, f"0000:{bus:02x}:00.0"], numa)
        f1 = t.pci(hb, [rp, f"0000:{bus:02x}:00.1"], numa)
        down = ib_state.endswith("DOWN")
        t.hca(
            f0,
            ib,
            state=ib_state,
            phys="3: Polling" if down else "5: LinkUp",
            netdev=ib_if,
            operstate="down" if down else "up",
            uverbs=uverbs,
        )
        t.hca(f1, eth, rate=IB_NDR, link_layer="Ethernet", netdev=eth_if, uverbs=uverbs + 1)
        uverbs += 2
    t.netdev("bond0", None)  # BasePOD: slot 1/2 port 2 bonded for in-band management
    t.netdev("lo", None, "unknown")
    t.default_route("bond0")
    return lay


def oci_h100(root: Path) -> Layout:
    t = Tree(root)
    t.numa(DGX_CPUS)  # oci-hpc samples/gpu/H100-topology.xml: same CPU split
    lay = Layout(root=root, numa=DGX_CPUS)
    port = 0
    for up, gdown, gpu, ndown, nic, hcas in OCI_SWITCHES:
        numa = _numa_of_bus(up)
        hb, rp = f"pci0000:{up - 1:02x}", f"0000:{up - 1:02x}:01.0"  # host bridge / root port: invented
        t.pci(hb, [rp, f"0000:{up:02x}:00.0", f"0000:{gdown:02x}:00.0", f"0000:{gpu:02x}:00.0"], numa)
        for fn, hca in enumerate(hcas):
            dev = t.pci(hb, [rp, f"0000:{up:02x}:00.0", f"0000:{ndown:02x}:00.0", f"0000:{nic:02x}:00.{fn}"], numa)
            t.hca(dev, hca, rate=ETH_200, link_layer="Ethernet", netdev=f"rdma{port}", uverbs=port)
            port += 1
        lay.gpus.append((f"0000:{gpu:02x}:00.0", numa))
    for bus, hca, netdev in ((0x1F, "mlx5_2", "eth0"), (0x9A, "mlx5_11", "eth1")):
        numa = _numa_of_bus(bus)
        dev = t.pci(f"pci0000:{bus - 1:02x}", [f"0000:{bus - 1:02x}:01.0", f"0000:{bus:02x}:00.0"], numa)
        t.hca(dev, hca, rate=ETH_100, link_layer="Ethernet", netdev=netdev, uverbs=port)
        port += 1
    t.netdev("lo", None, "unknown")
    t.default_route("eth0")
    return lay


NO_HCA_CPUS = {0: "0-31,64-95", 1: "32-63,96-127"}


def no_hca(root: Path) -> Layout:
    """4 PCIe GPUs on their own root ports, one Intel Ethernet NIC, no RDMA device at all."""
    t = Tree(root)
    t.numa(NO_HCA_CPUS)
    lay = Layout(root=root, numa=NO_HCA_CPUS)
    for bus in (0x4A, 0x61, 0xCA, 0xE1):
        numa = _numa_of_bus(bus)
        t.pci(f"pci0000:{bus - 1:02x}", [f"0000:{bus - 1:02x}:01.0", f"0000:{bus:02x}:00.0"], numa)
        lay.gpus.append((f"0000:{bus:02x}:00.0", numa))
    eth = t.pci("pci0000:16", ["0000:16:02.0", "0000:17:00.0"], 0)
    t.netdev("eth0", eth)
    t.netdev("docker0", None, "down")
    t.netdev("lo", None, "unknown")
    t.default_route("eth0")
    return lay
