"""Cluster descriptors: the typed, validated facts about one kind of node and its fabric.

Load with :func:`load`, which returns a frozen :class:`Descriptor` or raises one UserError naming the
file, line:column and key path. Every preset cites its facts in ``sources`` and per-section ``source``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal

from .. import datapaths
from ..errors import UserError, collect, warn
from . import cpuset, podspec, sbatch
from .schema import field, json_schema, load_dataclass
from .yamlio import Document, load_file

DNS1123 = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
# Kubernetes qualified resource name: optional DNS-subdomain prefix + "/" + name (k8s.io/apimachinery
# validation.IsQualifiedName), e.g. nvidia.com/gpu, rdma/ib, vpc.amazonaws.com/efa, hugepages-2Mi.
RESOURCE_NAME = (
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
)
QUANTITY = r"[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?"
VERSION = r"[0-9]{1,6}(\.[0-9]{1,6}){1,3}"
# What `python -c "import torch; print(torch.__version__)"` prints: 2.13.0, 2.6.0+cu124, and NGC's
# 2.6.0a0+ecf3bae40a (PEP 440 pre/dev release and local version).
TORCH_VERSION = (
    VERSION + r"((a|b|rc)[0-9]{1,6})?(\.post[0-9]{1,6})?(\.dev[0-9]{1,9})?(\+[A-Za-z0-9]+([._][A-Za-z0-9]+)*)?"
)
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
IFNAME = r"[A-Za-z0-9_.:@-]{1,15}"  # Linux IFNAMSIZ is 16 with the NUL
HCA = r"[A-Za-z0-9_.-]{1,63}"


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

    partition: str | None = field(None, doc="#SBATCH --partition")
    account: str | None = field(None, doc="#SBATCH --account")
    qos: str | None = field(None, doc="#SBATCH --qos")
    constraint: str | None = field(None, doc="#SBATCH --constraint")
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
    container_image: str | None = field(None, doc="pyxis/enroot image for srun --container-image")
    container_mounts: tuple[str, ...] = field((), doc="pyxis --container-mounts entries SRC:DST[:FLAGS]")
    extra_sbatch: dict[str, bool | int | str] = field(
        factory=dict,
        doc="more #SBATCH options, name -> value (true for a "
        "flag such as requeue), checked against sbatch's option list",
        key_pattern=r"[a-z][a-z0-9-]*",
        key_pattern_doc="a long sbatch option name like gpu-bind",
        scalar=True,
    )


@dataclass(frozen=True, kw_only=True)
class Toleration:
    """A pod toleration."""

    key: str | None = field(None, doc="taint key")
    operator: Literal["Exists", "Equal"] = field("Exists", doc="Exists or Equal")
    value: str | None = field(None, doc="taint value (with Equal)")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = field(None, doc="taint effect")


@dataclass(frozen=True, kw_only=True)
class Mount:
    """A volume mounted into a container."""

    volume: str = field(
        doc="name of a volume in kubernetes.volumes (or one the net plugin adds)",
        pattern=DNS1123,
        pattern_doc="a DNS-1123 label",
    )
    path: str = field(doc="mount path in the container", pattern=r"/.*", pattern_doc="an absolute path")
    read_only: bool = field(False, doc="mount read-only")


@dataclass(frozen=True, kw_only=True)
class Volume:
    """A pod volume from the node (hostPath), a ConfigMap or a PersistentVolumeClaim, optionally mounted
    into the main container (`ncclgen k8s --volume` adds more)."""

    name: str = field(doc="volume name", pattern=DNS1123, pattern_doc="a DNS-1123 label")
    host_path: str | None = field(
        None, doc="path on the node (a hostPath volume)", pattern=r"/.*", pattern_doc="an absolute path"
    )
    host_path_type: Literal["Directory", "File", "CharDevice", "DirectoryOrCreate"] | None = field(
        None, doc="hostPath type the kubelet checks before starting the pod"
    )
    config_map: str | None = field(
        None,
        doc="name of a ConfigMap the site creates (a configMap volume)",
        pattern=DNS1123 + r"(\." + DNS1123 + r")*",
        pattern_doc="a DNS-1123 subdomain",
    )
    pvc: str | None = field(
        None,
        doc="name of a PersistentVolumeClaim (a persistentVolumeClaim volume), "
        "e.g. shared storage for data and checkpoints",
    )
    mount_path: str | None = field(
        None,
        doc="where the main container mounts it (none: only sidecars mount it)",
        pattern=r"/.*",
        pattern_doc="an absolute path",
    )
    sub_path: str | None = field(None, doc="mount only this entry of the volume (e.g. one ConfigMap key)")
    read_only: bool = field(False, doc="mount read-only in the main container")
    source: str | None = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Sidecar:
    """An extra container the platform needs next to the job's container (e.g. GKE's tcpxo-daemon)."""

    name: str = field(doc="container name", pattern=DNS1123, pattern_doc="a DNS-1123 label")
    image: str = field(doc="container image")
    command: tuple[str, ...] = field((), doc="entrypoint argv")
    args: tuple[str, ...] = field((), doc="arguments")
    env: dict[str, str] = field(
        factory=dict,
        doc="environment of this container",
        key_pattern=ENV_NAME,
        key_pattern_doc="an environment variable name",
        scalar=True,
    )
    capabilities: tuple[str, ...] = field((), doc="added Linux capabilities")
    privileged: bool = field(False, doc="run privileged")
    mounts: tuple[Mount, ...] = field((), doc="volumes it mounts")
    native: bool = field(
        True,
        doc="a native sidecar (an initContainer with restartPolicy Always, Kubernetes "
        ">= 1.29): it starts before the job's container and ends with it",
    )
    startup_file: str | None = field(None, doc="a startup probe waits until this file exists (`cat FILE`)")
    source: str | None = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class PodNetwork:
    """A secondary pod interface and the network attachment behind it (GKE multi-networking or Multus)."""

    interface: str = field(
        doc="interface name inside the pod", pattern=IFNAME, pattern_doc="an interface name (max 15 chars)"
    )
    network: str = field(
        doc="GKE Network object or Multus NetworkAttachmentDefinition name ([NAMESPACE/]NAME)",
        # Multus reads k8s.v1.cni.cncf.io/networks as a comma-separated list of [namespace/]name[@interface]
        # (k8snetworkplumbingwg/multus-cni pkg/k8sclient parsePodNetworkAnnotation): a ',' or '@' in one
        # name would become a second attachment or another interface, so names are object names only.
        pattern=rf"({DNS1123}/)?{DNS1123}(\.{DNS1123})*",
        pattern_doc="a Kubernetes object name, optionally NAMESPACE/NAME",
    )


@dataclass(frozen=True, kw_only=True)
class PodTopoFile:
    """How the NCCL topology file reaches the pod: from the node (hostPath), a ConfigMap, or the image."""

    path: str = field(doc="path inside the pod (NCCL_TOPO_FILE)", pattern=r"/.*", pattern_doc="an absolute path")
    host_path: str | None = field(
        None, doc="mount this node file at `path`", pattern=r"/.*", pattern_doc="an absolute path"
    )
    config_map: str | None = field(
        None,
        doc="mount key `key` of this ConfigMap at `path` (the site creates "
        "it: kubectl create configmap NAME --from-file=KEY=FILE)",
        pattern=DNS1123 + r"(\." + DNS1123 + r")*",
        pattern_doc="a DNS-1123 subdomain",
    )
    key: str | None = field(None, doc="ConfigMap key (default: the file name of `path`)")
    source: str | None = field(None, doc="id in `sources`")


@dataclass(frozen=True, kw_only=True)
class Kubernetes:
    """Kubernetes defaults and the pod view: how the node's hardware looks from a pod on this platform."""

    flavour: Literal["gke", "eks", "aks", "oke", "generic"] = field(
        "generic",
        doc="the Kubernetes service: selects the net plugin's pod elements (volumes, sidecars, "
        "annotations) and how `networks` are attached (GKE multi-networking, else Multus)",
    )
    namespace: str = field("default", doc="namespace", pattern=DNS1123, pattern_doc="a DNS-1123 label")
    image: str = field(
        "verlai/verl:latest",
        doc="container image; left at this floating default, a verl "
        "workload gets the image verl's CI ran for its release (see docs/workload.md)",
    )
    gpu_resource: str = field(
        "nvidia.com/gpu",
        doc="GPU extended resource name",
        pattern=RESOURCE_NAME,
        pattern_doc="a Kubernetes resource name",
    )
    resources: dict[str, int | str] = field(
        factory=dict,
        doc="more resources per pod, requested "
        "and limited alike: a count (rdma/ib: 8, vpc.amazonaws.com/efa: 32) "
        "or a quantity (hugepages-2Mi: 5120Mi, memory: 32000Mi)",
        key_pattern=RESOURCE_NAME,
        key_pattern_doc="a Kubernetes resource name like nvidia.com/gpu",
    )
    annotations: dict[str, str] = field(factory=dict, doc="pod annotations, e.g. Multus k8s.v1.cni.cncf.io/networks")
    node_selector: dict[str, str] = field(factory=dict, doc="pod nodeSelector")
    tolerations: tuple[Toleration, ...] = field((), doc="pod tolerations")
    shm_size: str = field(
        "64Gi", doc="size of the memory-backed /dev/shm", pattern=QUANTITY, pattern_doc="a quantity like 64Gi"
    )
    host_network: bool = field(False, doc="run pods in the host network namespace")
    privileged: bool = field(False, doc="run privileged (only where the vendor requires it)")
    capabilities: tuple[str, ...] = field(("IPC_LOCK",), doc="added Linux capabilities; RDMA needs IPC_LOCK")
    bootstrap_interfaces: tuple[str, ...] | None = field(
        None,
        doc="bootstrap interfaces inside the pod (default: network.bootstrap_interfaces, right only with host_network)",
    )
    bootstrap_match: Literal["exact", "prefix", "exclude"] | None = field(
        None,
        doc="as network.bootstrap_match; exclude: the names are excluded ('^' list, e.g. AWS's "
        "^docker,lo,veth), for pods whose interface names the CNI picks",
    )
    netdevs: dict[str, str] = field(
        factory=dict,
        doc="host interface -> its name inside the pod (e.g. enp6s0: eth1); rails not listed keep their name",
        key_pattern=IFNAME,
        key_pattern_doc="an interface name",
    )
    hcas: dict[str, str] = field(
        factory=dict,
        doc="host RDMA device -> its name inside the pod (e.g. mlx5_ib0: mlx5_0)",
        key_pattern=HCA,
        key_pattern_doc="an RDMA device name",
    )
    topo_file: PodTopoFile | None = field(
        None,
        doc="where NCCL_TOPO_FILE is inside the pod and how it gets "
        "there; required when network.topo_file is set (unless host_network)",
    )
    net_plugin: Literal["same", "none"] | None = field(
        None,
        doc="same (default): the pod image or the plugin's volumes carry network.net_plugin; none: the "
        "pod has no net plugin (its plugin-only settings are then not emitted)",
    )
    plugin_dir: str | None = field(
        None,
        doc="folder of the net plugin's libraries inside the pod (default: the plugin's usual place on this flavour)",
        pattern=r"/[^\s:]*",
        pattern_doc="an absolute path without ':' or spaces",
    )
    networks: tuple[PodNetwork, ...] = field(
        (), doc="secondary interfaces and their networks (GKE: networking.gke.io/interfaces; otherwise Multus)"
    )
    volumes: tuple[Volume, ...] = field((), doc="extra volumes (hostPath or ConfigMap)")
    sidecars: tuple[Sidecar, ...] = field((), doc="extra containers next to the job's container")
    service_account: str | None = field(
        None, doc="pod serviceAccountName", pattern=podspec.DNS1123_SUBDOMAIN, pattern_doc="a DNS-1123 subdomain"
    )
    priority_class: str | None = field(
        None, doc="pod priorityClassName", pattern=podspec.DNS1123_SUBDOMAIN, pattern_doc="a DNS-1123 subdomain"
    )
    scheduler_name: str | None = field(
        None, doc="pod schedulerName", pattern=podspec.DNS1123_SUBDOMAIN, pattern_doc="a DNS-1123 subdomain"
    )
    image_pull_secrets: tuple[str, ...] = field((), doc="names of Secrets used to pull the image")
    labels: dict[str, str] = field(
        factory=dict, doc="labels on every object and pod, e.g. Kueue's kueue.x-k8s.io/queue-name"
    )
    secret_env: tuple[str, ...] = field(
        (), doc="variables taken from Secrets, NAME=SECRET:KEY (a secretKeyRef: the value never appears in a manifest)"
    )
    affinity: podspec.Affinity | None = field(
        None,
        doc="pod affinity and anti-affinity, with the keys "
        "of the Kubernetes API (nodeAffinity, podAffinity, "
        "podAntiAffinity)",
    )
    source: str | None = field(None, doc="id in `sources`")

    def pod_settings(self) -> podspec.PodSettings:
        """The pod settings of this section (already checked by check())."""
        return podspec.PodSettings(
            volumes=tuple(podspec.from_descriptor(v) for v in self.volumes),
            service_account=self.service_account,
            priority_class=self.priority_class,
            image_pull_secrets=self.image_pull_secrets,
            scheduler_name=self.scheduler_name,
            labels=dict(self.labels),
            annotations=dict(self.annotations),
            secret_env=tuple(podspec.parse_secret_env(s) for s in self.secret_env),
            affinity=podspec.as_manifest(self.affinity) if self.affinity else None,
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


def check(desc: Descriptor, doc: Document) -> list[UserError]:
    """Cross-field checks. Raises every error at once (errors.UserErrors, in file order); returns the
    warnings: mistakes that can be meant but almost always are typos, for the caller to print."""
    node, net = desc.node, desc.network
    known = set(desc.sources)
    errors: list[UserError] = []
    warnings: list[UserError] = []

    def fail(path: tuple, message: str) -> None:
        errors.append(doc.error(path, message))

    def warn(path: tuple, message: str) -> None:
        warnings.append(doc.error(path, message))

    # An empty list would render NCCL_SOCKET_IFNAME='=' (no interface); a ',' or '^' inside a name would
    # change the list NCCL parses.
    for where, names in (
        (("network",), net.bootstrap_interfaces),
        (("kubernetes",), desc.kubernetes.bootstrap_interfaces),
    ):
        if names is not None and not names:
            fail(
                (*where, "bootstrap_interfaces"),
                "name at least one interface (an empty list would render NCCL_SOCKET_IFNAME='=')",
            )
        for i, ifname in enumerate(names or ()):
            if not re.fullmatch(IFNAME, ifname, re.ASCII):
                fail(
                    (*where, "bootstrap_interfaces", i),
                    f"{ifname!r} is not an interface name (at most 15 of A-Z a-z 0-9 _ . : @ -)",
                )

    def cite(path: tuple, source: str | None) -> None:
        if source is not None and source not in known:
            fail(
                (*path, "source"),
                f"source {source!r} is not an id in `sources` (known: {', '.join(sorted(known)) or 'none'})",
            )

    if not desc.sources:
        fail(("sources",), "cite at least one source for the facts in this file")
    cite(("node",), node.source)
    cite(("network",), net.source)
    cite(("software",), desc.software.source)
    cite(("kubernetes",), desc.kubernetes.source)

    seen_numa: dict[int, int] = {}
    owner: dict[int, int] = {}
    numa_cpus: dict[int, frozenset[int]] = {}
    for i, n in enumerate(node.numa_nodes):
        path = ("node", "numa_nodes", i)
        if n.id in seen_numa:
            fail((*path, "id"), f"NUMA node {n.id} is declared twice")
        seen_numa.setdefault(n.id, i)
        cite(path, n.source)
        try:
            cpus = cpuset.parse(n.cpus)
        except ValueError as exc:
            fail((*path, "cpus"), str(exc))
            continue
        numa_cpus.setdefault(n.id, cpus)
        overlap = sorted(c for c in cpus if c in owner)
        if overlap:
            fail(
                (*path, "cpus"),
                f"CPU {overlap[0]} is also in NUMA node {owner[overlap[0]]}; NUMA CPU lists must not overlap",
            )
        for c in cpus:
            owner.setdefault(c, n.id)
    if not node.numa_nodes:
        fail(("node", "numa_nodes"), "declare at least one NUMA node")
    elif not errors and len(numa_cpus) == len(node.numa_nodes):
        _check_cpu_holes(node, numa_cpus, warn)

    if len(node.gpus) != node.gpus_per_node:
        fail(("node", "gpus"), f"gpus_per_node is {node.gpus_per_node} but {len(node.gpus)} GPUs are listed")
    seen_gpu: dict[int, int] = {}
    seen_bus: dict[str, int] = {}
    for i, g in enumerate(node.gpus):
        path = ("node", "gpus", i)
        if g.index in seen_gpu:
            fail((*path, "index"), f"GPU {g.index} is listed twice")
        elif g.index >= node.gpus_per_node:
            fail((*path, "index"), f"GPU index {g.index} is out of range 0..{node.gpus_per_node - 1}")
        seen_gpu.setdefault(g.index, i)
        if g.numa not in seen_numa:
            fail((*path, "numa"), f"NUMA node {g.numa} is not declared in node.numa_nodes")
        if g.pci_bus_id is not None:
            bus = g.pci_bus_id.lower()
            if bus in seen_bus:
                fail(
                    (*path, "pci_bus_id"), f"PCI address {g.pci_bus_id} is also GPU {node.gpus[seen_bus[bus]].index}'s"
                )
            seen_bus.setdefault(bus, i)

    storage = {s.name for s in net.storage if s.kind == "hca"}
    storage_netdevs = {s.name for s in net.storage if s.kind == "netdev"}
    seen_port: set[tuple] = set()
    netdev_owner: dict[str, str] = {}
    rails_of: dict[int, list[int]] = {}  # GPU index -> rail positions serving it
    for i, r in enumerate(net.compute):
        path = ("network", "compute", i)
        cite(path, r.source)
        if r.hca is None and r.netdev is None:
            fail(path, "a rail needs an hca or a netdev")
            continue
        key = (r.hca or r.netdev, r.port)
        if key in seen_port:
            fail(path, f"{key[0]} port {r.port} is listed twice")
        seen_port.add(key)
        if r.hca in storage:
            fail((*path, "hca"), f"{r.hca} is listed both as a compute rail and as storage")
        if r.netdev is not None:
            if r.netdev in storage_netdevs:
                fail((*path, "netdev"), f"{r.netdev} is listed both as a compute rail and as storage")
            port = f"{r.hca}:{r.port}" if r.hca else r.netdev
            if r.netdev in netdev_owner and netdev_owner[r.netdev] != port:
                fail(
                    (*path, "netdev"),
                    f"interface {r.netdev} is also the netdev of {netdev_owner[r.netdev]}; one port has one interface",
                )
            netdev_owner.setdefault(r.netdev, port)
        if not r.gpus:
            fail((*path, "gpus"), "a rail serves at least one GPU")
        for j, gi in enumerate(r.gpus):
            if gi not in seen_gpu:
                fail((*path, "gpus", j), f"GPU {gi} is not in node.gpus")
            elif gi in r.gpus[:j]:
                fail((*path, "gpus", j), f"GPU {gi} is listed twice in this rail")
            elif i not in rails_of.setdefault(gi, []):
                rails_of[gi].append(i)
        if r.numa not in seen_numa:
            fail((*path, "numa"), f"NUMA node {r.numa} is not declared in node.numa_nodes")
    for i, s in enumerate(net.storage):
        cite(("network", "storage", i), s.source)
    if not errors:
        _check_rail_layout(desc, rails_of, warn)

    newest = kb_newest_nccl()
    if newest and _newer(desc.software.nccl, newest):
        warn(
            ("software", "nccl"),
            f"NCCL {desc.software.nccl} is newer than ncclgen's knowledge base (NCCL "
            f"{newest}): lint and the rules do not know the variables it added or "
            "dropped; check its release notes, or upgrade ncclgen",
        )

    fabric = net.fabric
    if fabric in ("infiniband", "roce"):
        # a rail with neither an hca nor a netdev is already reported above
        if not net.compute or any(r.hca is None and r.netdev is not None for r in net.compute):
            fail(("network", "compute"), f"{fabric} needs compute rails with an hca each")
        if "storage" not in (doc.data.get("network") or {}):
            warn(
                ("network",),
                f"fabric {fabric} and no network.storage list: a storage or in-band HCA "
                "the node has is not kept away from NCCL; list it, or write `storage: []` "
                "if the node has none",
            )
    if fabric == "roce" and net.roce is None:
        fail(("network",), "fabric roce needs network.roce.gid_index (a number, or auto)")
    if fabric != "roce" and net.roce is not None:
        fail(("network", "roce"), f"a RoCE GID index has no meaning on fabric {fabric}")
    if fabric == "efa":
        if net.efa is None:
            fail(("network",), "fabric efa needs network.efa.devices_per_node")
        if any(r.hca for r in net.compute):
            fail(
                ("network", "compute"),
                "EFA clusters declare no InfiniBand HCAs; EFA devices are counted in network.efa",
            )
    elif net.efa is not None:
        fail(("network", "efa"), f"network.efa is only for fabric efa, not {fabric}")
    if fabric in ("tcpx", "tcpxo") and any(r.hca for r in net.compute):
        fail(("network", "compute"), f"{fabric} rails are interfaces (netdev), not HCAs")
    if net.roce is not None:
        cite(("network", "roce"), net.roce.source)
    if net.efa is not None:
        cite(("network", "efa"), net.efa.source)

    gpu_request = (f"{desc.slurm.gres_type}:" if desc.slurm.gres_type else "") + str(desc.node.gpus_per_node)
    for key, value in desc.slurm.extra_sbatch.items():
        try:
            sbatch.check(key, value, gpu_request=gpu_request)
        except sbatch.SbatchOptionError as e:
            fail(("slurm", "extra_sbatch", key), str(e))

    for i, mount in enumerate(desc.slurm.container_mounts):
        if "," in mount:
            fail(
                ("slurm", "container_mounts", i),
                "a mount must not contain ',': pyxis --container-mounts separates mounts with it",
            )

    kube = desc.kubernetes
    for key, qty in kube.resources.items():
        path = ("kubernetes", "resources", key)
        if isinstance(qty, int) and qty < 1:
            fail(path, f"expected a count >= 1, got {qty}")
        if isinstance(qty, str) and not re.fullmatch(QUANTITY, qty):
            fail(path, f"{qty!r} is not a Kubernetes quantity like 5120Mi")
    huge = [k for k in kube.resources if k.startswith("hugepages-")]
    if huge and not {"cpu", "memory"} & set(kube.resources):
        fail(
            ("kubernetes", "resources", huge[0]),
            "hugepages need a cpu or memory request too; "
            "the API server rejects the pod otherwise (add memory: <quantity>)",
        )

    _check_pod_view(desc, fail, cite)

    check_pod_settings(kube, fail)

    for group in ("vendor_env", "env"):
        names: set[str] = set()
        for i, e in enumerate(getattr(desc, group)):
            if e.omit and group != "vendor_env":
                fail((group, i, "omit"), "omit is for vendor_env: leave the variable out of env instead")
            if e.omit and e.value is not None:
                fail((group, i, "value"), "an omitted variable has no value")
            if not e.omit and e.value is None:
                fail((group, i), "missing required key 'value' (a string)")
            if e.name in names:
                fail((group, i, "name"), f"{e.name} is set twice in {group}")
            names.add(e.name)
            problem = None if e.omit else env_name_problem(e)
            if problem:
                fail((group, i, "name"), problem)

    collect(errors)
    warnings.sort(key=lambda w: (w.line or 0, w.col or 0))
    return warnings


def kb_newest_nccl() -> str | None:
    """The newest NCCL release the knowledge base covers: the last column of data/kb/nccl-releases.tsv
    (generated from the PyPI wheels by tools/nccl_wheel_names.py). Read here, not from ncclgen.lint,
    because the load layer may not import the lint layer; tests/test_knowledge.py checks they agree."""
    try:
        with open(datapaths.data(os.path.join("kb", "nccl-releases.tsv")), encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("name\t"):
                    return line.rstrip("\n").split("\t")[-1]
    except OSError:
        return None
    return None


def _newer(version: str, than: str) -> bool:
    """'2.33.1' > '2.32.3'; compared on the common prefix, so '2.32' is not newer than '2.32.3'."""
    a, b = (tuple(int(p) for p in re.findall(r"\d+", v)) for v in (version, than))
    n = min(len(a), len(b))
    return a[:n] > b[:n]


def _check_cpu_holes(node: Node, numa_cpus: dict[int, frozenset[int]], warn) -> None:
    """Warn when CPUs 0..max are not all in some NUMA node, or NUMA nodes differ in size.

    Both are what a cut-short list looks like: `0-47` where `0-47,96-143` was meant (the second
    hardware thread of each core is numbered after all the first ones on most x86 servers).
    """
    every = frozenset().union(*numa_cpus.values())
    missing = sorted(set(range(max(every) + 1)) - every)
    sizes = {i: len(c) for i, c in numa_cpus.items()}
    small = [i for i, n in enumerate(node.numa_nodes) if sizes[n.id] < max(sizes.values())]
    at = ("node", "numa_nodes", small[0] if small else 0, "cpus")
    if missing:
        warn(
            at,
            f"CPUs {cpuset.format(missing)} are in no NUMA node's list (a CPU list cut short, "
            "e.g. 0-47 where 0-47,96-143 was meant?)",
        )
    elif small:
        n = node.numa_nodes[small[0]]
        warn(
            at,
            f"NUMA node {n.id} has {sizes[n.id]} CPUs, another has {max(sizes.values())}: "
            "check this CPU list against /sys/devices/system/node/node*/cpulist",
        )


def _check_rail_layout(desc: Descriptor, rails_of: dict[int, list[int]], warn) -> None:
    """Warn about rail layouts that run but are almost always a typo in network.compute."""
    net = desc.network
    if not net.compute:
        return
    gpus = sorted(desc.node.gpus, key=lambda g: g.index)
    numa_of = {g.index: g.numa for g in gpus}
    for i, r in enumerate(net.compute):
        other = [g for g in r.gpus if numa_of.get(g, r.numa) != r.numa]
        if other:
            g = other[0]
            warn(
                ("network", "compute", i, "numa"),
                f"rail {r.hca or r.netdev} is on NUMA node {r.numa} but serves GPU {g} on NUMA node "
                f"{numa_of[g]}: traffic crosses the CPU interconnect; check this numa and the GPU's",
            )
    without = [g.index for g in gpus if g.index not in rails_of]
    doubled = [gi for gi, rails in sorted(rails_of.items()) if len(rails) > 1]
    for g in without:
        pos = next(i for i, x in enumerate(desc.node.gpus) if x.index == g)
        if doubled:
            gd = doubled[0]
            warn(
                ("node", "gpus", pos),
                f"GPU {g} has no compute rail while GPU {gd} has "
                f"{len(rails_of[gd])} (network.compute[{rails_of[gd][1]}]): a typo in a rail's gpus?",
            )
        else:
            warn(
                ("node", "gpus", pos),
                f"GPU {g} has no compute rail (no network.compute entry lists "
                "it): its traffic goes through another GPU's NIC",
            )


def _check_pod_view(desc: Descriptor, fail, cite) -> None:
    """kubernetes' pod view names only the host's own interfaces and devices, and its volumes exist."""
    kube, net = desc.kubernetes, desc.network
    netdevs = (
        {r.netdev for r in net.compute if r.netdev}
        | set(net.bootstrap_interfaces)
        | {s.name for s in net.storage if s.kind == "netdev"}
    )
    hcas = {r.hca for r in net.compute if r.hca} | {s.name for s in net.storage if s.kind == "hca"}
    for key, known, what in (("netdevs", netdevs, "interface"), ("hcas", hcas, "RDMA device")):
        mapping = getattr(kube, key)
        for name, pod_name in mapping.items():
            if name not in known:
                fail(
                    ("kubernetes", key, name),
                    f"{name} is not a host {what} of this descriptor (known: {', '.join(sorted(known)) or 'none'})",
                )
            if pod_name in mapping and mapping[pod_name] != pod_name:
                fail(
                    ("kubernetes", key, name), f"{pod_name} is itself renamed; a pod name must not be another host name"
                )
    if kube.bootstrap_match and kube.bootstrap_interfaces is None:
        fail(("kubernetes", "bootstrap_match"), "set kubernetes.bootstrap_interfaces with it")
    if kube.topo_file is not None:
        cite(("kubernetes", "topo_file"), kube.topo_file.source)
        if kube.topo_file.host_path and kube.topo_file.config_map:
            fail(("kubernetes", "topo_file"), "give host_path or config_map, not both")
        if net.topo_file is None:
            fail(
                ("kubernetes", "topo_file"),
                "network.topo_file is not set: there is no topology file to bring into the pod",
            )
    names: set[str] = set()
    for i, v in enumerate(kube.volumes):
        path = ("kubernetes", "volumes", i)
        cite(path, v.source)
        if sum(x is not None for x in (v.host_path, v.config_map, v.pvc)) != 1:
            fail(path, "a volume needs exactly one of host_path, config_map or pvc")
        if v.name in names:
            fail((*path, "name"), f"volume {v.name} is declared twice")
        names.add(v.name)
    for i, c in enumerate(kube.sidecars):
        cite(("kubernetes", "sidecars", i), c.source)


def check_pod_settings(kube: Kubernetes, fail) -> None:
    """The kubernetes section's pod settings, checked as the API server would (ncclgen/load/podspec.py)."""

    def at(path: tuple, fn, *args) -> None:
        try:
            fn(*args)
        except podspec.Invalid as exc:
            fail(("kubernetes", *path), str(exc))

    for i, v in enumerate(kube.volumes):
        if v.pvc is not None:
            at(("volumes", i, "pvc"), podspec.subdomain, v.pvc, "PersistentVolumeClaim name")
        if v.mount_path is not None:
            at(("volumes", i, "mount_path"), podspec.abs_path, v.mount_path, "mount path")
            at(("volumes", i, "mount_path"), podspec.check_mount, v.mount_path, "mount path")
    vols = [podspec.from_descriptor(v) for v in kube.volumes]
    for i in range(1, len(vols)):  # the error names the later of two clashing volumes (the first clash)
        try:
            podspec.check_volumes(vols[: i + 1])
        except podspec.Invalid as exc:
            fail(("kubernetes", "volumes", i), str(exc))
            break
    names: set[str] = set()
    for i, text in enumerate(kube.secret_env):
        at(("secret_env", i), podspec.parse_secret_env, text)
        name = text.partition("=")[0]
        if name in names:
            fail(("kubernetes", "secret_env", i), f"{name} is taken from a Secret twice")
        names.add(name)
    for i, name in enumerate(kube.image_pull_secrets):
        at(("image_pull_secrets", i), podspec.subdomain, name, "Secret name")
    for key, value in kube.labels.items():
        at(("labels", key), podspec.qualified_name, key, "label key")
        at(("labels", key), podspec.label_value, value, "label value")
    for key in kube.annotations:
        at(("annotations", key), podspec.qualified_name, key, "annotation key")
    if kube.affinity is not None:
        for path, message in podspec.affinity_errors(kube.affinity):
            fail(("kubernetes", "affinity", *path), message)


def env_name_problem(e: EnvSetting) -> str | None:
    """Why ``e``'s name may not be set from a file: it runs code, or needs the opt-in (load/envnames.py)."""
    from . import envnames

    return envnames.check(e.name, e.value, e.unchecked)


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
    return desc, check(desc, doc)


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

    raise UserError(
        f"--cluster: unknown cluster {name_or_path!r}{did_you_mean(name_or_path, found)}; "
        f"available: {', '.join(sorted(found)) or 'none'}"
    )


def load_cluster(name_or_path: str) -> Descriptor:
    return load(resolve(name_or_path))


def schema_json() -> str:
    """The descriptor JSON Schema as `ncclgen schema` prints it (and docs/descriptor.schema.json holds)."""
    import json

    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"
