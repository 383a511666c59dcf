"""Whether a pod on this cluster can do what the plan asks: see the interfaces and RDMA devices it names.

A pod without hostNetwork lives in its own network namespace: it sees `lo` and the CNI's `eth0`, not
the host's bond0/eno1np0, so an NCCL_SOCKET_IFNAME naming them matches nothing and NCCL fails at init
(NCCL v2.30.7 src/misc/socket.cc). InfiniBand/RoCE HCAs reach a container only through an RDMA device
plugin's resource (the NVIDIA Network Operator's rdma/rdma_shared_device_a, Azure's rdma/ib), a
/dev/infiniband mount or a privileged container; without one NCCL finds no IB device and silently falls
back to TCP sockets (src/transport/net_ib/init.cc). Both are checked at render, before any GPU node is
scheduled, as errors naming the descriptor key to set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .descriptor import Descriptor

POD_INTERFACES = ("lo", "eth0")  # what a pod's own network namespace always has (loopback, the CNI's)
RDMA_FABRICS = ("infiniband", "roce")
RDMA_MOUNT = "/dev/infiniband"


def has_rdma(kube) -> bool:
    """An RDMA device plugin's resource, a /dev/infiniband mount, or a privileged container."""
    if kube.privileged or any("rdma" in key or "hostdev" in key for key in kube.resources):
        return True
    return any((v.host_path or "").rstrip("/").startswith(RDMA_MOUNT) for v in kube.volumes)


def problems(desc: Descriptor) -> list[tuple[tuple, str, str]]:
    """(descriptor key path, variable, message) for each thing a pod cannot do as planned."""
    kube, net = desc.kubernetes, desc.network
    out = []
    if not kube.host_network and kube.bootstrap_interfaces is None and net.bootstrap_match != "exclude":
        host = [n for n in net.bootstrap_interfaces if n not in POD_INTERFACES]
        if host:
            out.append(
                (
                    ("kubernetes", "host_network"),
                    "NCCL_SOCKET_IFNAME",
                    f"cluster {desc.name}: a pod without hostNetwork does not see the host interface(s) "
                    f"{', '.join(host)} (network.bootstrap_interfaces) that NCCL_SOCKET_IFNAME would name; "
                    "set kubernetes.host_network: true, or kubernetes.bootstrap_interfaces to the names "
                    "inside the pod",
                )
            )
    hcas = [r.hca for r in net.compute if r.hca]
    if net.fabric in RDMA_FABRICS and hcas and not has_rdma(kube):
        out.append(
            (
                ("kubernetes", "resources"),
                "NCCL_IB_HCA",
                f"cluster {desc.name}: the {net.fabric} HCAs ({', '.join(hcas)}) reach a pod only through an "
                "RDMA device plugin's resource or a /dev/infiniband mount, and this pod has neither (NCCL "
                "would fall back to TCP sockets); set kubernetes.resources (e.g. rdma/rdma_shared_device_a: "
                "1, your RDMA device plugin's resource) or a kubernetes.volumes host_path /dev/infiniband",
            )
        )
    return out


def check(desc: Descriptor, path: str | None) -> None:
    """Raise every problem at once, each at the descriptor's file:line:col nearest its key."""
    found = problems(desc)
    if not found:
        return
    from ..errors import UserError, UserErrors

    if path is None:
        raise UserErrors([UserError(msg, path=".".join(key)) for key, _, msg in found])
    from .yamlio import load_file

    doc = load_file(path)
    raise UserErrors([doc.error(key, msg) for key, _, msg in found])
