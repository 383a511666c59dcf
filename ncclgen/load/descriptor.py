"""Cluster descriptors: the typed, validated facts about one kind of node and its fabric.

Load with :func:`load`, which returns a frozen :class:`Descriptor` or raises one UserError naming the
file, line:column and key path. Every preset cites its facts in ``sources`` and per-section ``source``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal, Optional, Union

from . import cpuset
from .. import datapaths
from ..errors import UserError
from .schema import field, json_schema, load_dataclass
from .yamlio import Document, load_file

DNS1123 = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
# Kubernetes qualified resource name: optional DNS-subdomain prefix + "/" + name (k8s.io/apimachinery
# validation.IsQualifiedName), e.g. nvidia.com/gpu, rdma/ib, vpc.amazonaws.com/efa, hugepages-2Mi.
RESOURCE_NAME = r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
QUANTITY = r"[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?"
VERSION = r"\d+(\.\d+){1,3}"
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
IFNAME = r"[A-Za-z0-9_.:@-]{1,15}"        # Linux IFNAMSIZ is 16 with the NUL
HCA = r"[A-Za-z0-9_.-]{1,63}"


@dataclass(frozen=True, kw_only=True)
class NumaNode:
    """A NUMA node and its CPUs."""
    id: int = field(doc="NUMA node id, as in /sys/devices/system/node/nodeN", min=0, max=1023)
    cpus: str = field(doc="cpuset list, e.g. 0-55,112-167", pattern=cpuset.PATTERN,
                      pattern_doc="a cpuset list like 0-55,112-167")
    source: Optional[str] = field(None, doc="id in `sources` that this fact comes from")


@dataclass(frozen=True, kw_only=True)
class Gpu:
    """One GPU: its index (CUDA_DEVICE_ORDER=PCI_BUS_ID) and NUMA node."""
    index: int = field(doc="GPU index 0..n-1", min=0, max=63)
    numa: int = field(doc="NUMA node id the GPU is attached to", min=0, max=1023)
    pci_bus_id: Optional[str] = field(None, doc="PCI address DDDD:BB:DD.F",
                                      pattern=r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]",
                                      pattern_doc="a PCI address like 0000:1b:00.0")


@dataclass(frozen=True, kw_only=True)
class Node:
    """What one node has: GPUs, NUMA layout, NVLink."""
    gpu_model: str = field(doc="GPU model, e.g. H100-SXM5-80GB")
    gpus_per_node: int = field(doc="number of GPUs per node", min=1, max=64)
    numa_nodes: tuple[NumaNode, ...] = field(doc="NUMA nodes with their CPU lists")
    gpus: tuple[Gpu, ...] = field(doc="every GPU, index 0..gpus_per_node-1 exactly once")
    nvlink_gbps: Optional[float] = field(None, doc="NVLink bandwidth per GPU, one direction, Gbit/s "
                                         "(bench uses it as the intra-node bound)", min=0)
    bind_memory: bool = field(True, doc="bind memory to the GPU's NUMA node (numactl --membind) as well "
                              "as CPUs; false only where the declared NUMA nodes are not real ones")
    source: Optional[str] = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Rail:
    """A compute NIC port that carries GPU traffic, and the GPUs it serves."""
    hca: Optional[str] = field(None, doc="RDMA device name, e.g. mlx5_0 (InfiniBand/RoCE)", pattern=HCA,
                               pattern_doc="an RDMA device name like mlx5_0")
    port: int = field(1, doc="HCA port number (1-based)", min=1, max=16)
    netdev: Optional[str] = field(None, doc="network interface of this port, e.g. ibp24s0 or eth1",
                                  pattern=IFNAME, pattern_doc="an interface name (max 15 chars)")
    gbps: int = field(doc="link speed, Gbit/s", min=1, max=100000)
    gpus: tuple[int, ...] = field(doc="GPU indexes this rail serves")
    numa: int = field(doc="NUMA node of the NIC", min=0, max=1023)
    source: Optional[str] = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class StorageNic:
    """A storage / in-band / front-end NIC that NCCL must not use for GPU traffic."""
    name: str = field(doc="RDMA device (e.g. mlx5_1) or interface name", pattern=HCA,
                      pattern_doc="a device or interface name")
    kind: Literal["hca", "netdev"] = field("hca", doc="hca: an RDMA device; netdev: an interface")
    note: str = field("", doc="what it is used for")
    source: Optional[str] = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Roce:
    """RoCE addressing: which GID to use and the traffic class of the lossless queue."""
    gid_index: Union[int, Literal["auto"]] = field(doc="NCCL_IB_GID_INDEX, or auto to let NCCL pick", min=0,
                                                   max=255)
    traffic_class: Optional[int] = field(None, doc="NCCL_IB_TC", min=0, max=255)
    source: Optional[str] = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Efa:
    """AWS Elastic Fabric Adapter devices."""
    devices_per_node: int = field(doc="EFA interfaces per node (vpc.amazonaws.com/efa)", min=1, max=64)
    gbps_per_device: int = field(doc="line rate of one EFA interface, Gbit/s", min=1)
    source: Optional[str] = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Network:
    """The fabric: compute rails, NICs to keep NCCL off, bootstrap interface, plugin."""
    fabric: Literal["infiniband", "roce", "efa", "tcp", "tcpx", "tcpxo"] = field(doc="GPU-to-GPU transport")
    bootstrap_interfaces: tuple[str, ...] = field(doc="exact interface names for NCCL/Gloo bootstrap "
                                                  "sockets (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME)")
    bootstrap_match: Literal["exact", "prefix"] = field(
        "exact", doc="exact: bootstrap_interfaces are interface names (NCCL_SOCKET_IFNAME gets '='); "
        "prefix: they are name prefixes (e.g. AWS's 'en'); Gloo takes only exact names, so "
        "GLOO_SOCKET_IFNAME is not set then")
    compute: tuple[Rail, ...] = field((), doc="compute rails, one entry per HCA port or NIC")
    storage: tuple[StorageNic, ...] = field((), doc="NICs NCCL must not use")
    roce: Optional[Roce] = field(None, doc="required when fabric is roce")
    efa: Optional[Efa] = field(None, doc="required when fabric is efa")
    net_plugin: Literal["none", "aws-ofi-nccl", "gib", "tcpx", "tcpxo", "rdma-sharp"] = field(
        "none", doc="NCCL net plugin the nodes load; its own settings are left to it")
    topo_file: Optional[str] = field(None, doc="vendor NCCL topology XML path on the node (NCCL_TOPO_FILE)")
    sharp: bool = field(False, doc="the fabric offers SHARP in-network reduction (NCCL CollNet)")
    source: Optional[str] = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Software:
    """Versions the rules and the linter depend on."""
    nccl: str = field(doc="NCCL version, e.g. '2.21.5'", pattern=VERSION, pattern_doc="a version like 2.21.5")
    torch: str = field(doc="PyTorch version, e.g. '2.6.0'", pattern=VERSION, pattern_doc="a version like 2.6.0")
    cuda: str = field(doc="CUDA version, e.g. '12.4'", pattern=VERSION, pattern_doc="a version like 12.4")
    source: Optional[str] = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Slurm:
    """Slurm defaults for jobs on this cluster."""
    partition: Optional[str] = field(None, doc="#SBATCH --partition")
    account: Optional[str] = field(None, doc="#SBATCH --account")
    qos: Optional[str] = field(None, doc="#SBATCH --qos")
    constraint: Optional[str] = field(None, doc="#SBATCH --constraint")
    gres_type: Optional[str] = field(None, doc="GPU GRES type, e.g. h100 -> --gpus-per-node=h100:8",
                                     pattern=r"[A-Za-z0-9_.-]+", pattern_doc="a GRES type name")
    cpus_per_task: Optional[int] = field(None, doc="CPUs per node task; default: all CPUs of the NUMA nodes",
                                         min=1)
    mem: Optional[str] = field(None, doc="#SBATCH --mem (e.g. 0 for all, or 1800G)", pattern=r"\d+[KMGT]?",
                               pattern_doc="a size like 0 or 1800G")
    exclusive: bool = field(True, doc="#SBATCH --exclusive")
    container_image: Optional[str] = field(None, doc="pyxis/enroot image for srun --container-image")
    container_mounts: tuple[str, ...] = field((), doc="pyxis --container-mounts entries SRC:DST[:FLAGS]")
    extra_sbatch: dict[str, str] = field(factory=dict, doc="more #SBATCH options, name -> value",
                                         key_pattern=r"[a-z][a-z0-9-]*",
                                         key_pattern_doc="a long sbatch option name like gpu-bind",
                                         scalar=True)


@dataclass(frozen=True, kw_only=True)
class Toleration:
    """A pod toleration."""
    key: Optional[str] = field(None, doc="taint key")
    operator: Literal["Exists", "Equal"] = field("Exists", doc="Exists or Equal")
    value: Optional[str] = field(None, doc="taint value (with Equal)")
    effect: Optional[Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]] = field(None, doc="taint effect")


@dataclass(frozen=True, kw_only=True)
class Kubernetes:
    """Kubernetes defaults: image, device resources, network attachments, placement."""
    namespace: str = field("default", doc="namespace", pattern=DNS1123, pattern_doc="a DNS-1123 label")
    image: str = field("verlai/verl:latest", doc="container image")
    gpu_resource: str = field("nvidia.com/gpu", doc="GPU extended resource name", pattern=RESOURCE_NAME,
                              pattern_doc="a Kubernetes resource name")
    resources: dict[str, Union[int, str]] = field(factory=dict, doc="more resources per pod, requested "
                                                  "and limited alike: a count (rdma/ib: 8, vpc.amazonaws.com/efa: 32) "
                                                  "or a quantity (hugepages-2Mi: 5120Mi, memory: 32000Mi)",
                                                  key_pattern=RESOURCE_NAME,
                                      key_pattern_doc="a Kubernetes resource name like nvidia.com/gpu")
    annotations: dict[str, str] = field(factory=dict, doc="pod annotations, e.g. Multus "
                                        "k8s.v1.cni.cncf.io/networks")
    node_selector: dict[str, str] = field(factory=dict, doc="pod nodeSelector")
    tolerations: tuple[Toleration, ...] = field((), doc="pod tolerations")
    shm_size: str = field("64Gi", doc="size of the memory-backed /dev/shm", pattern=QUANTITY,
                          pattern_doc="a quantity like 64Gi")
    host_network: bool = field(False, doc="run pods in the host network namespace")
    privileged: bool = field(False, doc="run privileged (only where the vendor requires it)")
    capabilities: tuple[str, ...] = field(("IPC_LOCK",), doc="added Linux capabilities; RDMA needs IPC_LOCK")
    source: Optional[str] = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class EnvSetting:
    """One environment variable with its reason and source."""
    name: str = field(doc="variable name", pattern=ENV_NAME, pattern_doc="an environment variable name")
    value: str = field(doc="value (exactly as exported)", scalar=True)
    reason: str = field(doc="why this value")
    source: Optional[str] = field(None, doc="id in `sources`, or a citation")
    tier: int = field(1, doc="lowest tier that emits it: 1 correctness, 2 performance, 3 expert", min=1, max=3)


@dataclass(frozen=True, kw_only=True)
class Descriptor:
    """A cluster descriptor: one kind of node, its fabric, software and scheduler defaults."""
    name: str = field(doc="cluster name (DNS-1123 label)", pattern=DNS1123, pattern_doc="a DNS-1123 label "
                      "(lower-case letters, digits, '-')")
    description: str = field(doc="one line for `ncclgen clusters list`")
    sources: dict[str, str] = field(doc="where the facts come from: id -> URL or document")
    node: Node = field(doc="GPUs and NUMA layout")
    network: Network = field(doc="fabric, rails, NICs")
    software: Software = field(doc="NCCL, PyTorch and CUDA versions")
    slurm: Slurm = field(factory=Slurm, doc="Slurm defaults")
    kubernetes: Kubernetes = field(factory=Kubernetes, doc="Kubernetes defaults")
    vendor_env: tuple[EnvSetting, ...] = field((), doc="settings the vendor publishes for this system")
    env: tuple[EnvSetting, ...] = field((), doc="site overrides; they win over tier rules and are linted")

    # -- derived views used by rules, renderers and `clusters show` ---------------------------------
    def numa(self, node_id: int) -> NumaNode:
        return next(n for n in self.node.numa_nodes if n.id == node_id)

    def gpu(self, index: int) -> Gpu:
        return next(g for g in self.node.gpus if g.index == index)

    def rails_for_gpu(self, index: int) -> tuple[Rail, ...]:
        return tuple(r for r in self.network.compute if index in r.gpus)

    @property
    def cpus_per_node(self) -> int:
        return sum(len(cpuset.parse(n.cpus)) for n in self.node.numa_nodes)


def check(desc: Descriptor, doc: Document) -> None:
    """Cross-field checks: each raises a UserError at the offending key."""
    node, net = desc.node, desc.network
    known = set(desc.sources)

    def cite(path: tuple, source: Optional[str]) -> None:
        if source is not None and source not in known:
            raise doc.error(path + ("source",), f"source {source!r} is not an id in `sources` "
                                                f"(known: {', '.join(sorted(known)) or 'none'})")

    if not desc.sources:
        raise doc.error(("sources",), "cite at least one source for the facts in this file")
    cite(("node",), node.source)
    cite(("network",), net.source)
    cite(("software",), desc.software.source)
    cite(("kubernetes",), desc.kubernetes.source)

    seen_numa: dict[int, int] = {}
    owner: dict[int, int] = {}
    for i, n in enumerate(node.numa_nodes):
        path = ("node", "numa_nodes", i)
        if n.id in seen_numa:
            raise doc.error(path + ("id",), f"NUMA node {n.id} is declared twice")
        seen_numa[n.id] = i
        cite(path, n.source)
        try:
            cpus = cpuset.parse(n.cpus)
        except ValueError as exc:
            raise doc.error(path + ("cpus",), str(exc)) from None
        for c in cpus:
            if c in owner:
                raise doc.error(path + ("cpus",), f"CPU {c} is also in NUMA node {owner[c]}; "
                                                  "NUMA CPU lists must not overlap")
            owner[c] = n.id
    if not node.numa_nodes:
        raise doc.error(("node", "numa_nodes"), "declare at least one NUMA node")

    if len(node.gpus) != node.gpus_per_node:
        raise doc.error(("node", "gpus"), f"gpus_per_node is {node.gpus_per_node} but {len(node.gpus)} "
                                          "GPUs are listed")
    seen_gpu: set[int] = set()
    for i, g in enumerate(node.gpus):
        path = ("node", "gpus", i)
        if g.index in seen_gpu:
            raise doc.error(path + ("index",), f"GPU {g.index} is listed twice")
        if g.index >= node.gpus_per_node:
            raise doc.error(path + ("index",), f"GPU index {g.index} is out of range "
                                               f"0..{node.gpus_per_node - 1}")
        seen_gpu.add(g.index)
        if g.numa not in seen_numa:
            raise doc.error(path + ("numa",), f"NUMA node {g.numa} is not declared in node.numa_nodes")

    storage = {s.name for s in net.storage if s.kind == "hca"}
    seen_port: set[tuple] = set()
    for i, r in enumerate(net.compute):
        path = ("network", "compute", i)
        cite(path, r.source)
        if r.hca is None and r.netdev is None:
            raise doc.error(path, "a rail needs an hca or a netdev")
        key = (r.hca or r.netdev, r.port)
        if key in seen_port:
            raise doc.error(path, f"{key[0]} port {r.port} is listed twice")
        seen_port.add(key)
        if r.hca in storage:
            raise doc.error(path + ("hca",), f"{r.hca} is listed both as a compute rail and as storage")
        if not r.gpus:
            raise doc.error(path + ("gpus",), "a rail serves at least one GPU")
        for j, gi in enumerate(r.gpus):
            if gi not in seen_gpu:
                raise doc.error(path + ("gpus", j), f"GPU {gi} is not in node.gpus")
        if r.numa not in seen_numa:
            raise doc.error(path + ("numa",), f"NUMA node {r.numa} is not declared in node.numa_nodes")
    for i, s in enumerate(net.storage):
        cite(("network", "storage", i), s.source)

    fabric = net.fabric
    if fabric in ("infiniband", "roce"):
        if not net.compute or any(r.hca is None for r in net.compute):
            raise doc.error(("network", "compute"), f"{fabric} needs compute rails with an hca each")
    if fabric == "roce" and net.roce is None:
        raise doc.error(("network",), "fabric roce needs network.roce.gid_index (a number, or auto)")
    if fabric != "roce" and net.roce is not None:
        raise doc.error(("network", "roce"), f"a RoCE GID index has no meaning on fabric {fabric}")
    if fabric == "efa":
        if net.efa is None:
            raise doc.error(("network",), "fabric efa needs network.efa.devices_per_node")
        if any(r.hca for r in net.compute):
            raise doc.error(("network", "compute"), "EFA clusters declare no InfiniBand HCAs; EFA "
                                                    "devices are counted in network.efa")
    elif net.efa is not None:
        raise doc.error(("network", "efa"), f"network.efa is only for fabric efa, not {fabric}")
    if fabric in ("tcpx", "tcpxo") and any(r.hca for r in net.compute):
        raise doc.error(("network", "compute"), f"{fabric} rails are interfaces (netdev), not HCAs")
    if net.roce is not None:
        cite(("network", "roce"), net.roce.source)
    if net.efa is not None:
        cite(("network", "efa"), net.efa.source)

    for i, mount in enumerate(desc.slurm.container_mounts):
        if "," in mount:
            raise doc.error(("slurm", "container_mounts", i), "a mount must not contain ',': pyxis "
                            "--container-mounts separates mounts with it")

    kube = desc.kubernetes
    for key, qty in kube.resources.items():
        path = ("kubernetes", "resources", key)
        if isinstance(qty, int) and qty < 1:
            raise doc.error(path, f"expected a count >= 1, got {qty}")
        if isinstance(qty, str) and not re.fullmatch(QUANTITY, qty):
            raise doc.error(path, f"{qty!r} is not a Kubernetes quantity like 5120Mi")
    huge = [k for k in kube.resources if k.startswith("hugepages-")]
    if huge and not {"cpu", "memory"} & set(kube.resources):
        raise doc.error(("kubernetes", "resources", huge[0]), "hugepages need a cpu or memory request too; "
                        "the API server rejects the pod otherwise (add memory: <quantity>)")

    for group in ("vendor_env", "env"):
        names: set[str] = set()
        for i, e in enumerate(getattr(desc, group)):
            if e.name in names:
                raise doc.error((group, i, "name"), f"{e.name} is set twice in {group}")
            names.add(e.name)


def load(path: str) -> Descriptor:
    """Read, type-check and cross-check one descriptor file."""
    doc = load_file(path)
    desc = load_dataclass(doc, doc.data, Descriptor)
    check(desc, doc)
    return desc


def schema() -> dict:
    return json_schema(Descriptor, "ncclgen cluster descriptor")


# -- finding descriptors -----------------------------------------------------------------------------

def search_dirs() -> list[str]:
    """$NCCLGEN_CLUSTERS (colon-separated), then ./clusters, then the bundled presets."""
    dirs = [d for d in os.environ.get("NCCLGEN_CLUSTERS", "").split(":") if d]
    dirs.append(os.path.join(os.getcwd(), "clusters"))
    dirs.append(datapaths.bundled("clusters"))
    return dirs


def available() -> dict[str, str]:
    """name -> path for every descriptor found; the first folder in search order wins."""
    found: dict[str, str] = {}
    for d in search_dirs():
        if not os.path.isdir(d):
            continue
        for entry in sorted(os.listdir(d)):
            if entry.endswith((".yaml", ".yml")):
                found.setdefault(entry.rsplit(".", 1)[0], os.path.join(d, entry))
    return found


def resolve(name_or_path: str) -> str:
    """The file for ``--cluster``: an existing path, else a name in the search folders."""
    if os.sep in name_or_path or name_or_path.endswith((".yaml", ".yml")):
        if not os.path.exists(name_or_path):
            raise UserError("no such descriptor file", file=name_or_path)
        return name_or_path
    if not re.fullmatch(DNS1123, name_or_path):
        raise UserError(f"--cluster: {name_or_path!r} is neither a file nor a cluster name")
    found = available()
    if name_or_path in found:
        return found[name_or_path]
    from ..errors import did_you_mean
    raise UserError(f"--cluster: unknown cluster {name_or_path!r}{did_you_mean(name_or_path, found)}; "
                    f"available: {', '.join(sorted(found)) or 'none'}")


def load_cluster(name_or_path: str) -> Descriptor:
    return load(resolve(name_or_path))


def schema_json() -> str:
    """The descriptor JSON Schema as `ncclgen schema` prints it (and docs/descriptor.schema.json holds)."""
    import json

    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"
