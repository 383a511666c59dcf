"""Cluster descriptors: the typed, validated facts about one kind of node and its fabric.

Load with :func:`load`, which returns a frozen :class:`Descriptor` or raises one UserError naming the
file, line:column and key path. Every preset cites its facts in ``sources`` and per-section ``source``.
The kubernetes section's types are in kubesection.py, the cross-field checks in desccheck.py (host
facts) and kubecheck.py (the pod view and pod settings).
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Literal

from .. import datapaths
from ..errors import Location, UserError, did_you_mean, non_ascii, shown, warn
from ..record import dataclass
from . import cpuset
from .desccheck import check, env_name_problem, kb_newest_nccl  # noqa: F401 (descriptor.check is the public name)
from .kubesection import Kubernetes, Mount, PodNetwork, PodTopoFile, Sidecar, Toleration, Volume  # noqa: F401
from .patterns import (  # noqa: F401 (re-exported: descriptor.DNS1123 ...)
    DNS1123,
    ENV_NAME,
    HCA,
    IFNAME,
    IMAGE,
    IMAGE_DOC,
    QUANTITY,
    RESOURCE_NAME,
    SBATCH_WORD,
    SBATCH_WORD_DOC,
    TORCH_VERSION,
    VERSION,
)
from .schema import field, json_schema, load_dataclass
from .yamlio import Document, load_file


@dataclass(frozen=True, kw_only=True)
class NumaNode:
    """A NUMA node and its CPUs."""

    id: int = field(doc="NUMA node id, as in /sys/devices/system/node/nodeN", min=0, max=1023)
    cpus: str = field(
        doc="cpuset list, e.g. 0-55,112-167", pattern=cpuset.PATTERN, pattern_doc="a cpuset list like 0-55,112-167"
    )
    source: str | None = field(None, doc="id in `sources` that this fact comes from")

    def __post_init__(self):  # "48-95, 144-191" is accepted; numactl and Slurm get "48-95,144-191"
        object.__setattr__(self, "cpus", cpuset.normalise(self.cpus))


@dataclass(frozen=True, kw_only=True)
class Gpu:
    """One GPU: its index (CUDA_DEVICE_ORDER=PCI_BUS_ID) and NUMA node."""

    index: int = field(doc="GPU index 0..n-1", min=0, max=63)
    numa: int = field(doc="NUMA node id the GPU is attached to", min=0, max=1023)
    pci_bus_id: str | None = field(
        None,
        doc="PCI address DDDD:BB:DD.F",
        pattern=r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]",
        pattern_doc="a PCI address like 0000:1b:00.0",
    )


@dataclass(frozen=True, kw_only=True)
class Node:
    """What one node has: GPUs, NUMA layout, NVLink."""

    gpu_model: str = field(doc="GPU model, e.g. H100-SXM5-80GB")
    gpus_per_node: int = field(doc="number of GPUs per node", min=1, max=64)
    numa_nodes: tuple[NumaNode, ...] = field(doc="NUMA nodes with their CPU lists")
    gpus: tuple[Gpu, ...] = field(doc="every GPU, index 0..gpus_per_node-1 exactly once")
    nvlink_gbps: float | None = field(
        None, doc="NVLink bandwidth per GPU, one direction, Gbit/s (bench uses it as the intra-node bound)", min=0
    )
    bind_memory: bool = field(
        True,
        doc="bind memory to the GPU's NUMA node (numactl --membind) as well as CPUs, for torchrun ranks; "
        "Ray workers get CPU affinity only; false only where the declared NUMA nodes are not real ones",
    )
    source: str | None = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Rail:
    """A compute NIC port that carries GPU traffic, and the GPUs it serves."""

    hca: str | None = field(
        None,
        doc="RDMA device name, e.g. mlx5_0 (InfiniBand/RoCE)",
        pattern=HCA,
        pattern_doc="an RDMA device name like mlx5_0",
    )
    port: int = field(1, doc="HCA port number (1-based)", min=1, max=16)
    netdev: str | None = field(
        None,
        doc="network interface of this port, e.g. ibp24s0 or eth1",
        pattern=IFNAME,
        pattern_doc="an interface name (max 15 chars)",
    )
    gbps: int = field(doc="link speed, Gbit/s", min=1, max=100000)
    gpus: tuple[int, ...] = field(doc="GPU indexes this rail serves")
    numa: int = field(doc="NUMA node of the NIC", min=0, max=1023)
    source: str | None = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class StorageNic:
    """A storage / in-band / front-end NIC that NCCL must not use for GPU traffic."""

    name: str = field(
        doc="RDMA device (e.g. mlx5_1) or interface name", pattern=HCA, pattern_doc="a device or interface name"
    )
    kind: Literal["hca", "netdev"] = field("hca", doc="hca: an RDMA device; netdev: an interface")
    note: str = field("", doc="what it is used for")
    source: str | None = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Roce:
    """RoCE addressing: which GID to use and the traffic class of the lossless queue."""

    gid_index: int | Literal["auto"] = field(doc="NCCL_IB_GID_INDEX, or auto to let NCCL pick", min=0, max=255)
    traffic_class: int | None = field(None, doc="NCCL_IB_TC", min=0, max=255)
    source: str | None = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Efa:
    """AWS Elastic Fabric Adapter devices."""

    devices_per_node: int = field(doc="EFA interfaces per node (vpc.amazonaws.com/efa)", min=1, max=64)
    gbps_per_device: int = field(doc="line rate of one EFA interface, Gbit/s", min=1)
    source: str | None = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Network:
    """The fabric: compute rails, NICs to keep NCCL off, bootstrap interface, plugin."""

    fabric: Literal["infiniband", "roce", "efa", "tcp", "tcpx", "tcpxo"] = field(doc="GPU-to-GPU transport")
    bootstrap_interfaces: tuple[str, ...] = field(
        doc="exact interface names for NCCL/Gloo bootstrap sockets (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME)"
    )
    bootstrap_match: Literal["exact", "prefix", "exclude"] = field(
        "exact",
        doc="exact: bootstrap_interfaces are interface names (NCCL_SOCKET_IFNAME gets '='); "
        "prefix: they are name prefixes (e.g. AWS's 'en'); exclude: NCCL uses any interface but these "
        "('^' list); Gloo takes only exact names, so GLOO_SOCKET_IFNAME is set only for exact",
    )
    compute: tuple[Rail, ...] = field((), doc="compute rails, one entry per HCA port or NIC")
    storage: tuple[StorageNic, ...] = field((), doc="NICs NCCL must not use")
    roce: Roce | None = field(None, doc="required when fabric is roce")
    efa: Efa | None = field(None, doc="required when fabric is efa")
    net_plugin: Literal["none", "aws-ofi-nccl", "gib", "tcpx", "tcpxo", "rdma-sharp"] = field(
        "none", doc="NCCL net plugin the nodes load; its own settings are left to it"
    )
    topo_file: str | None = field(None, doc="vendor NCCL topology XML path on the node (NCCL_TOPO_FILE)")
    gpudirect_rdma: bool = field(
        False,
        doc="the vendor documents GPUDirect RDMA between these GPUs and the compute NICs: the preflight "
        "checks its driver support on InfiniBand/RoCE (nvidia_peermem loaded, or DMA-BUF) and the "
        "in-job transport check fails a node whose NET channels run without it (no /GDRDMA)",
    )
    sharp: bool = field(
        False,
        doc="the fabric offers SHARP in-network reduction (NCCL CollNet); it takes "
        "effect only where a CollNet plugin (rdma-sharp) is loaded",
    )
    plugin_dir: str | None = field(
        None,
        doc="folder of the net plugin's libraries on the host or VM "
        "(default: where the plugin's vendor installs it, ncclgen/data/plugins.yaml)",
        pattern=r"/[^\s:]*",
        pattern_doc="an absolute path without ':' or spaces",
    )
    unconfirmed: tuple[Literal["bootstrap_interfaces"], ...] = field(
        (),
        doc="facts here that are a site's choice no vendor source "
        "confirms (e.g. bootstrap_interfaces); the preflight checks them on "
        "every node",
    )
    source: str | None = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Software:
    """Versions the rules and the linter depend on."""

    nccl: str = field(doc="NCCL version, e.g. '2.21.5'", pattern=VERSION, pattern_doc="a version like 2.21.5")
    torch: str = field(
        doc="PyTorch version as torch.__version__ prints it, e.g. '2.6.0' or '2.6.0a0+ecf3bae40a'",
        pattern=TORCH_VERSION,
        pattern_doc="a version like 2.6.0 or 2.6.0a0+ecf3bae40a",
    )
    cuda: str = field(doc="CUDA version, e.g. '12.4'", pattern=VERSION, pattern_doc="a version like 12.4")
    source: str | None = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Slurm:
    """Slurm defaults for jobs on this cluster."""

    partition: str | None = field(None, doc="#SBATCH --partition", pattern=SBATCH_WORD, pattern_doc=SBATCH_WORD_DOC)
    account: str | None = field(None, doc="#SBATCH --account", pattern=SBATCH_WORD, pattern_doc=SBATCH_WORD_DOC)
    qos: str | None = field(None, doc="#SBATCH --qos", pattern=SBATCH_WORD, pattern_doc=SBATCH_WORD_DOC)
    constraint: str | None = field(None, doc="#SBATCH --constraint", pattern=SBATCH_WORD, pattern_doc=SBATCH_WORD_DOC)
    gres_type: str | None = field(
        None,
        doc="GPU GRES type, e.g. h100 -> --gpus-per-node=h100:8",
        pattern=r"[A-Za-z0-9_.-]+",
        pattern_doc="a GRES type name",
    )
    cpus_per_task: int | None = field(
        None, doc="CPUs per node task; default: all CPUs of the NUMA nodes", min=1, max=cpuset.MAX_CPU
    )
    mem: str | None = field(
        None,
        doc="#SBATCH --mem (e.g. 0 for all, or 1800G)",
        pattern=r"[0-9]{1,15}[KMGT]?",
        pattern_doc="a size like 0 or 1800G",
    )
    exclusive: bool = field(True, doc="#SBATCH --exclusive")
    container_image: str | None = field(
        None, doc="image every srun step runs in (pyxis --container-image)", pattern=IMAGE, pattern_doc=IMAGE_DOC
    )
    container_runtime: Literal["pyxis", "apptainer", "singularity"] = field(
        "pyxis",
        doc="how steps run in container_image: pyxis (srun --container-image) or apptainer/singularity "
        "(apptainer exec --nv IMAGE before each step's program)",
    )
    container_mounts: tuple[str, ...] = field(
        (), doc="container mounts SRC:DST[:FLAGS] (pyxis --container-mounts; Apptainer --bind, FLAGS ro or rw)"
    )
    dump_dir: str | None = field(
        None,
        doc="a folder on a filesystem every node mounts (Lustre, GPFS, NFS): each job's PyTorch flight-recorder "
        "dumps go to DUMP_DIR/<job id>/; default: /tmp/ncclgen-fr-<job id> on each node",
        pattern=r"/[A-Za-z0-9._/-]{0,200}",
        pattern_doc="an absolute path of letters, digits and . _ / -",
    )
    extra_sbatch: dict[str, bool | int | str] = field(
        factory=dict,
        doc="more #SBATCH options, name -> value (true for a "
        "flag such as requeue), checked against sbatch's option list",
        key_pattern=r"[a-z][a-z0-9-]*",
        key_pattern_doc="a long sbatch option name like gpu-bind",
        scalar=True,
    )


@dataclass(frozen=True, kw_only=True)
class EnvSetting:
    """One environment variable with its reason and source."""

    name: str = field(doc="variable name", pattern=ENV_NAME, pattern_doc="an environment variable name")
    value: str | None = field(None, doc="value (exactly as exported); required unless omit", scalar=True)
    omit: bool = field(
        False, doc="vendor_env only: the vendor advises against setting this variable, so no tier rule sets it either"
    )
    reason: str = field(doc="why this value")
    source: str | None = field(None, doc="id in `sources`, or a citation")
    tier: int = field(1, doc="lowest tier that emits it: 1 correctness, 2 performance, 3 expert", min=1, max=3)
    unchecked: bool = field(
        False,
        doc="opt in to a name ncclgen cannot check: one outside its knowledge base, "
        "or a search path or plugin library (PATH, LD_LIBRARY_PATH, PYTHONPATH, "
        "NCCL_NET_PLUGIN, ...); explain shows it. Names that run code (BASH_ENV, "
        "LD_PRELOAD, ...) are refused even so",
    )
    at: Location | None = dataclasses.field(default=None, compare=False, repr=False, metadata={"internal": True})
    # where the value was read (set by the loader): the lint step's error on it names file:line:col


def with_locations(doc: Document, group: str, settings: tuple[EnvSetting, ...]) -> tuple[EnvSetting, ...]:
    """``settings`` (the list at key ``group``) each knowing where its value is in ``doc``."""
    return tuple(dataclasses.replace(e, at=doc.location((group, i, "value"))) for i, e in enumerate(settings))


@dataclass(frozen=True, kw_only=True)
class Descriptor:
    """A cluster descriptor: one kind of node, its fabric, software and scheduler defaults."""

    name: str = field(
        doc="cluster name (DNS-1123 label)",
        pattern=DNS1123,
        pattern_doc="a DNS-1123 label (lower-case letters, digits, '-')",
    )
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


def check_env(doc: Document, group: str, settings: tuple[EnvSetting, ...]) -> None:
    """Each name once, and none that runs code or goes unchecked without the opt-in (a workload's env)."""
    names: set[str] = set()
    for i, e in enumerate(settings):
        if e.name in names:
            raise doc.error((group, i, "name"), f"{e.name} is set twice")
        names.add(e.name)
        problem = env_name_problem(e)
        if problem:
            raise doc.error((group, i, "name"), problem)


def load_checked(path: str) -> tuple[Descriptor, list[UserError]]:
    """Read, type-check and cross-check one descriptor file: the descriptor and its warnings."""
    doc = load_file(path)
    desc = load_dataclass(doc, doc.data, Descriptor)
    found = check(desc, doc)
    env, vendor = with_locations(doc, "env", desc.env), with_locations(doc, "vendor_env", desc.vendor_env)
    return dataclasses.replace(desc, env=env, vendor_env=vendor), found


def load(path: str, *, warnings: bool = True) -> Descriptor:
    """Read, type-check and cross-check one descriptor file; its warnings go to stderr, one line each."""
    desc, found = load_checked(path)
    if warnings:
        for w in found:
            warn(w)
    return desc


def schema() -> dict:
    return json_schema(Descriptor, "ncclgen cluster descriptor")


# -- finding descriptors -----------------------------------------------------------------------------


def search_dirs() -> list[str]:
    """$NCCLGEN_CLUSTERS (colon-separated), then ./clusters, then the bundled presets."""
    return datapaths.search_dirs("NCCLGEN_CLUSTERS", "clusters")


def available() -> dict[str, str]:
    """name -> path for every descriptor found (non-regular entries too: `clusters list` flags them)."""
    return datapaths.yaml_files(search_dirs())


def resolve(name_or_path: str, flag: str = "--cluster") -> str:
    """The file for ``--cluster`` (``flag`` names where the value came from; "" when the caller locates
    the error itself): an existing path, else a name in the search folders."""
    if os.sep in name_or_path or name_or_path.endswith((".yaml", ".yml")):
        if not os.path.exists(name_or_path):
            raise UserError("no such descriptor file", file=name_or_path)
        return name_or_path
    lead = f"{flag}: " if flag else ""
    if not re.fullmatch(DNS1123, name_or_path, re.ASCII):
        raise UserError(f"{lead}{shown(name_or_path)} is neither a file nor a cluster name{non_ascii(name_or_path)}")
    found = available()
    if name_or_path in found:
        from .. import trust

        return trust.found(found[name_or_path], "--cluster PATH or $NCCLGEN_CLUSTERS")
    raise UserError(
        f"{lead}unknown cluster {name_or_path!r}{did_you_mean(name_or_path, found)}; "
        f"available: {', '.join(sorted(found)) or 'none'}"
    )


def load_cluster(name_or_path: str) -> Descriptor:
    return load(resolve(name_or_path))


def schema_json() -> str:
    """The descriptor JSON Schema as `ncclgen schema` prints it (and docs/descriptor.schema.json holds)."""
    import json

    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"
