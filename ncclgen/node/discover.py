"""`ncclgen discover`: write a cluster descriptor for the node it runs on, from NVML and sysfs.

What can be measured is written as fact (GPUs, PCI addresses, NUMA CPU lists, port rates). What is
inferred is written with a ``# guess:`` comment: which ports are compute rails and which are storage
or in-band (by PCIe distance to the GPUs, link layer and port state), the bootstrap interface, the
NVLink bandwidth and the software versions. The YAML is emitted as text so it can carry those
comments, then loaded back through the descriptor schema before anything is written.
"""

from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass

from ..errors import UserError
from ..load import cpuset
from ..load.descriptor import DNS1123, Descriptor, check
from ..load.schema import load_dataclass
from ..load.yamlio import load_text
from . import Unavailable, nvml, sysfs
from .sysfs import HcaPort, Level, Sysfs

SOURCE = "discover"
# Per-link NVLink bandwidth, Gbit/s per direction, for GPUs whose link generation is known from the
# model: H100/H200 SXM use NVLink4, 18 links x 25 GB/s = 450 GB/s per direction (NVIDIA H100 Tensor Core GPU
# datasheet, nvidia.com/en-us/data-center/h100; clusters/h100-ib.yaml). Other models: discover leaves node.nvlink_gbps for a person to fill in.
NVLINK_GBPS_PER_LINK = {"H100": 200, "H200": 200}
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"}


def q(value: str) -> str:
    """A YAML scalar for ``value``: plain when unambiguous, else a double-quoted (JSON) string."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", value) and value.lower() not in _YAML_WORDS:
        return value
    return json.dumps(value)


@dataclass
class Rail:
    port: HcaPort
    gpus: list[int]
    level: Level
    numa: int
    numa_guess: bool
    gbps: int  # the port's rate, rounded (classify keeps only ports that report one)


@dataclass
class Unused:
    port: HcaPort
    reason: str


def classify(
    ports: list[HcaPort], gpu_locs: dict[int, sysfs.PciLoc | None], numa_of_gpu: dict[int, int]
) -> tuple[str, list[Rail], list[Unused]]:
    """(fabric, compute rails, ports NCCL should not use) for a node.

    A port is a compute rail when it is ACTIVE, has the node's GPU-fabric link layer (InfiniBand if
    any active port has it, else Ethernet = RoCE) and is the nearest such port, by PCIe distance,
    to at least one GPU. Everything else is storage / in-band / unused, with the reason.
    """
    unused: list[Unused] = []
    active = _active(ports, unused)
    fabric, layer = _fabric_of({p.link_layer for p, _ in active})
    candidates = []
    for p, pci in active:
        if p.link_layer == layer:
            candidates.append((p, pci))
        elif fabric == "infiniband" and p.link_layer == "Ethernet":
            unused.append(Unused(p, "Ethernet link layer on an InfiniBand node (in-band / storage)"))
        else:
            unused.append(Unused(p, f"link layer {p.link_layer}, not used by discover"))
    nearest = _nearest(candidates, gpu_locs)
    rails = []
    for p, pci in candidates:
        served = nearest[(p.hca, p.port)]
        if not served:
            unused.append(Unused(p, "nearest to no GPU (storage / in-band)"))
            continue
        gpus = sorted(g for g, _ in served)
        numa = pci.numa
        rails.append(
            Rail(
                port=p,
                gpus=gpus,
                level=max(lvl for _, lvl in served),
                numa=numa if numa is not None else numa_of_gpu[gpus[0]],
                numa_guess=numa is None,
                gbps=round(p.rate_gbps or 0),
            )
        )
    compute_hcas = {r.port.hca for r in rails}
    unused = [u for u in unused if u.port.hca not in compute_hcas]
    return fabric, rails, sorted(unused, key=lambda u: (sysfs.natural_key(u.port.hca), u.port.port))


def _active(ports: list[HcaPort], unused: list[Unused]) -> list[tuple[HcaPort, sysfs.PciLoc]]:
    """The ports that could carry NCCL traffic, with their PCI place; the others go to ``unused``, with why."""
    active = []
    for p in ports:
        if p.state != "ACTIVE":
            unused.append(Unused(p, f"port {p.state or 'state unknown'}, {p.phys_state or 'no phys_state'}"))
        elif p.rate_gbps is None or p.rate_gbps < 1:
            unused.append(Unused(p, "no link rate reported"))
        elif p.pci is None:
            unused.append(Unused(p, "not a PCI device in sysfs"))
        else:
            active.append((p, p.pci))
    return active


def _fabric_of(layers: set[str]) -> tuple[str, str | None]:
    """(fabric, link layer of its rails): InfiniBand when any active port has it, else RoCE, else TCP."""
    if "InfiniBand" in layers:
        return "infiniband", "InfiniBand"
    if "Ethernet" in layers:
        return "roce", "Ethernet"
    return "tcp", None


def _nearest(
    candidates: list[tuple[HcaPort, sysfs.PciLoc]], gpu_locs: dict[int, sysfs.PciLoc | None]
) -> dict[tuple, list[tuple[int, Level]]]:
    """(hca, port) -> the GPUs it is nearest to (ties included), with the PCIe distance."""
    nearest: dict[tuple, list[tuple[int, Level]]] = {(p.hca, p.port): [] for p, _ in candidates}
    for gi, loc in gpu_locs.items():
        if loc is None or not candidates:
            continue
        levels = {(p.hca, p.port): sysfs.distance(loc, pci) for p, pci in candidates}
        best = min(levels.values())
        for key, lvl in levels.items():
            if lvl == best:
                nearest[key].append((gi, lvl))
    return nearest


def gpu_numa(gpu: nvml.GpuInfo, loc: sysfs.PciLoc | None, numa: dict[int, frozenset[int]]) -> tuple[int, str | None]:
    """(NUMA node, guess comment or None): sysfs numa_node, else the node NVML's affinity covers."""
    if loc is not None and loc.numa in numa:
        return loc.numa, None
    affinity = gpu.cpus
    if affinity:
        best = max(numa, key=lambda n: (len(numa[n] & affinity), -n))
        if numa[best] & affinity:
            return best, "guess: from NVML CPU affinity (sysfs numa_node unknown)"
    first = min(numa)
    return first, f"guess: NUMA unknown (no numa_node, no NVML affinity); {first} as PyTorch assumes"


def _bootstrap(fs: Sysfs, rail_netdevs: set[str]) -> tuple[str, str]:
    route = sysfs.default_route_interface(fs)
    if route and route != "lo":
        return route, "guess: interface of the default route"
    for nd in sysfs.netdevs(fs):
        if nd.name != "lo" and nd.operstate == "up" and nd.name not in rail_netdevs:
            return nd.name, "guess: first interface that is up (no default route found)"
    raise Unavailable("no network interface is up for NCCL/Gloo bootstrap (none but lo)")


def detect_software(session: nvml.Session | None) -> dict[str, tuple[str, str]]:
    """name -> (version, comment) for nccl, torch, cuda, from the PyTorch installed here.

    The descriptor's versions are those of the container the jobs run in; the comment says so.
    """
    import importlib.metadata

    out = {}
    try:
        torch_v = importlib.metadata.version("torch").split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        torch_v = None
    nccl_v = cuda_v = None
    if torch_v is not None:
        import torch  # only now: discover needs its NCCL/CUDA build versions

        cuda_v = torch.version.cuda
        try:
            nccl_v = ".".join(str(x) for x in torch.cuda.nccl.version())
        except (AttributeError, RuntimeError):  # CPU-only builds have no NCCL
            nccl_v = None
    here = "guess: the PyTorch installed where discover ran; set your container image's"
    unknown = "unknown: no {} where discover ran; set your container image's version"
    out["nccl"] = (nccl_v, here) if nccl_v else ("0.0", unknown.format("PyTorch with NCCL"))
    out["torch"] = (torch_v, here) if torch_v else ("0.0", unknown.format("PyTorch"))
    if cuda_v:
        out["cuda"] = (cuda_v, here)
    else:
        drv = session._opt(session.nv.nvmlSystemGetCudaDriverVersion) if session else None
        if drv:
            out["cuda"] = (f"{drv // 1000}.{drv % 1000 // 10}", "guess: the driver's CUDA version (NVML)")
        else:
            out["cuda"] = ("0.0", unknown.format("CUDA build of PyTorch and no NVML"))
    return out


def host_name_to_cluster(host: str) -> str:
    """A DNS-1123 label from a host name: 'GPU_Node-01.example' -> 'gpu-node-01'."""
    label = re.sub(r"[^a-z0-9-]+", "-", host.split(".")[0].lower()).strip("-")[:63].strip("-")
    return label or "node"


def discover(
    sysfs_root: str = "/",
    *,
    name: str | None = None,
    backend=None,
    hostname: str | None = None,
    software: dict[str, tuple[str, str]] | None = None,
) -> str:
    """The descriptor YAML for this node (validated). ``backend``: a pynvml-like module (tests)."""
    if name is not None and not re.fullmatch(DNS1123, name):
        raise UserError(f"--name: {name!r} is not a DNS-1123 label (lower-case letters, digits, '-')")
    fs = Sysfs(sysfs_root)
    ports = sysfs.hca_ports(fs)
    numa = {n: c for n, c in sysfs.numa_cpus(fs).items() if c}
    if not numa:
        online = fs.read("/sys/devices/system/cpu/online")
        if online:
            numa = {0: cpuset.parse(online)}
    words = (max((max(c) for c in numa.values()), default=63) // 64) + 1
    gpus: list[nvml.GpuInfo] = []
    why = "no NVIDIA GPU (NVML reports none)"
    try:
        with nvml.session(backend) as nv:
            gpus = nv.gpus(cpu_words=words)
            sw = software if software is not None else detect_software(nv)
    except Unavailable as exc:
        why = str(exc)
    if not gpus:
        hcas = "RDMA devices present" if ports else f"no RDMA device in {fs.host_path('/sys/class/infiniband')}"
        raise Unavailable(f"{why} and {hcas}; run it on a GPU node")
    if not numa:
        raise Unavailable(f"no CPU list under {fs.host_path('/sys/devices/system')}")
    host = hostname if hostname is not None else socket.gethostname()
    return render(fs, gpus, ports, numa, sw, name or host_name_to_cluster(host), host)


def render(
    fs: Sysfs,
    gpus: list[nvml.GpuInfo],
    ports: list[HcaPort],
    numa: dict[int, frozenset[int]],
    software: dict[str, tuple[str, str]],
    name: str,
    host: str,
) -> str:
    locs = {g.index: sysfs.pci_device(fs, g.bus_id) for g in gpus}
    placed = {g.index: gpu_numa(g, locs[g.index], numa) for g in gpus}
    fabric, rails, unused = classify(ports, locs, {i: n for i, (n, _) in placed.items()})
    where = "" if fs.root == "/" else f" (sysfs under {fs.root})"
    out = _head_lines(gpus, rails, fabric, name, host, where)
    out += _node_lines(gpus, numa, placed)
    out += _network_lines(fs, fabric, rails)
    out += _rail_lines(rails)
    out += _storage_lines(unused, fabric)
    out.append("software:")
    for key in ("nccl", "torch", "cuda"):
        value, why = software[key]
        out.append(f"  {key}: {q(value)}  # {why}")
    out.append(f"  source: {SOURCE}")
    text = "\n".join(out) + "\n"
    validate(text)
    return text


def _head_lines(
    gpus: list[nvml.GpuInfo], rails: list[Rail], fabric: str, name: str, host: str, where: str
) -> list[str]:
    """The comment that says what is a guess, name, description and sources."""
    label = {"infiniband": "InfiniBand", "roce": "RoCE"}.get(fabric)
    desc = (
        f"{len(gpus)}x {gpus[0].name}"
        + (f", {len(rails)} {label} rails" if label else ", no RDMA rails")
        + f" (discovered on {host})"
    )
    return [
        f"# Cluster descriptor written by `ncclgen discover` on {host}{where}.",
        "# Lines marked 'guess:' are inferences (PCIe distance, link layer, port state, default route):",
        "# check them, then `ncclgen validate` this file and `ncclgen doctor --cluster` it on every node.",
        f"name: {q(name)}",
        f"description: {q(desc)}",
        "sources:",
        f"  {SOURCE}: "
        + q(
            f"ncclgen discover on {host}{where}: NVML (GPU name, PCI bus id, CPU affinity, "
            "NVLink state) and sysfs (/sys/class/infiniband, /sys/class/net, "
            "/sys/devices/system/node)"
        ),
    ]


def _node_lines(
    gpus: list[nvml.GpuInfo], numa: dict[int, frozenset[int]], placed: dict[int, tuple[int, str | None]]
) -> list[str]:
    """node: model, count, NVLink bandwidth (or why not), NUMA CPU lists and each GPU's place."""
    model = gpus[0].name
    names = sorted({g.name for g in gpus})
    out = [
        "node:",
        f"  gpu_model: {q(model)}"
        + ("  # guess: GPUs report different names: " + ", ".join(names) if len(names) > 1 else ""),
        f"  gpus_per_node: {len(gpus)}",
    ]
    links = min(len(g.nvlinks) for g in gpus)
    per_link = next((v for k, v in NVLINK_GBPS_PER_LINK.items() if k in model.upper()), None)
    if links and per_link:
        out.append(
            f"  nvlink_gbps: {links * per_link}  # guess: {links} active NVLink links x {per_link} "
            "Gb/s per direction (NVLink4)"
        )
    elif links:
        out.append(
            f"  # node.nvlink_gbps unknown: {links} NVLink links are up on each GPU; set it "
            "(Gbit/s per GPU, one direction) so `ncclgen bench --cluster` has an intra-node bound"
        )
    out.append(f"  source: {SOURCE}")
    out.append("  numa_nodes:")
    for n, cpus in numa.items():
        out.append(f"    - {{id: {n}, cpus: {q(cpuset.format(cpus))}, source: {SOURCE}}}")
    out.append("  gpus:")
    for g in gpus:
        n, why = placed[g.index]
        out.append(f"    - {{index: {g.index}, numa: {n}, pci_bus_id: {q(g.bus_id)}}}" + (f"  # {why}" if why else ""))
    return out


def _network_lines(fs: Sysfs, fabric: str, rails: list[Rail]) -> list[str]:
    boot, boot_why = _bootstrap(fs, {r.port.netdev for r in rails if r.port.netdev})
    out = [
        "network:",
        f"  fabric: {fabric}" + ("  # guess: no active RDMA port was found" if fabric == "tcp" else ""),
        f"  bootstrap_interfaces: [{q(boot)}]  # {boot_why}",
        f"  source: {SOURCE}",
    ]
    if fabric == "roce":
        out.append(
            f"  roce: {{gid_index: auto, source: {SOURCE}}}  # guess: let NCCL pick the RoCE v2 GID; "
            "set the index your fabric uses (OCI: 3)"
        )
    return out


def _rail_lines(rails: list[Rail]) -> list[str]:
    out = ["  compute:"] if rails else []
    for r in rails:
        p = r.port
        fields = [
            f"hca: {q(p.hca)}",
            f"port: {p.port}",
            *([f"netdev: {q(p.netdev)}"] if p.netdev else []),
            f"gbps: {r.gbps}",
            f"gpus: [{', '.join(map(str, r.gpus))}]",
            f"numa: {r.numa}",
            f"source: {SOURCE}",
        ]
        why = f"guess: compute rail, {r.level.name} to GPU {', '.join(map(str, r.gpus))}"
        if r.numa_guess:
            why += "; NUMA of its GPU (numa_node unknown)"
        out.append(f"    - {{{', '.join(fields)}}}  # {why}")
    return out


def _storage_lines(unused: list[Unused], fabric: str) -> list[str]:
    storage: dict[str, list[Unused]] = {}
    for u in unused:
        storage.setdefault(u.port.hca, []).append(u)
    if storage:
        out = ["  storage:"]
    elif fabric in ("infiniband", "roce"):  # said, not left out: validate warns about a missing list
        out = ["  storage: []  # no RDMA port here other than the compute rails"]
    else:
        out = []
    for hca, us in storage.items():
        p = us[0].port
        numa_txt = f"NUMA {p.pci.numa}" if p.pci and p.pci.numa is not None else "NUMA unknown"
        note = ", ".join(x for x in (p.netdev, p.link_layer, numa_txt) if x)
        why = "; ".join(f"port {u.port.port}: {u.reason}" if len(us) > 1 else u.reason for u in us)
        out.append(f"    - {{name: {q(hca)}, note: {q(note)}, source: {SOURCE}}}  # guess: {why}")
    return out


def validate(text: str) -> Descriptor:
    """Load ``text`` through the descriptor schema and cross-checks, as `ncclgen validate` would."""
    doc = load_text(text, "<discovered descriptor>")
    desc = load_dataclass(doc, doc.data, Descriptor)
    check(desc, doc)
    return desc
