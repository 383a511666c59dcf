"""The descriptor's kubernetes section: Kubernetes defaults and the pod view of the node's hardware.

Split out of descriptor.py (one module per section); its cross-field checks are in kubecheck.py.
"""

from __future__ import annotations

from typing import Literal

from ..record import dataclass
from . import podspec
from .patterns import DNS1123, ENV_NAME, HCA, IFNAME, IMAGE, IMAGE_DOC, QUANTITY, RESOURCE_NAME
from .schema import field


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
    namespace: str | None = field(
        None,
        doc="namespace written into every object (default: none, so `kubectl apply -n NS` chooses)",
        pattern=DNS1123,
        pattern_doc="a DNS-1123 label",
    )
    image: str = field(
        "verlai/verl:latest",
        doc="container image; left at this floating default, a verl "
        "workload gets the image verl's CI ran for its release (see docs/workload.md)",
        pattern=IMAGE,
        pattern_doc=IMAGE_DOC,
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
