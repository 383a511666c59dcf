"""Platform views of a descriptor: the same hardware as a Slurm job on the host or VM sees it, or as a
pod on the cluster's Kubernetes flavour sees it.

A view is again a Descriptor, so the tier rules read it unchanged. The host view is the descriptor's
`network` with the net plugin's folder resolved. The pod view renames interfaces and RDMA devices to
their names inside the pod (kubernetes.netdevs, kubernetes.hcas, kubernetes.bootstrap_interfaces),
moves NCCL_TOPO_FILE to where the pod sees it, resolves the plugin's folder for the flavour, and merges
the plugin's pod elements (volumes, sidecars, device annotations) and the multi-network annotations
into `kubernetes`. Values that differ by platform are declared per platform in the descriptor (or in
ncclgen/data/plugins.yaml), never patched through `env`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import field, replace
from typing import Literal

from ..errors import UserError
from ..record import dataclass
from . import plugins
from .descriptor import Descriptor, Volume

TARGETS = ("host", "pod")
TOPO_VOLUME = "ncclgen-topo"
Match = Literal["exact", "prefix", "exclude"]  # how NCCL reads NCCL_SOCKET_IFNAME


def view(desc: Descriptor, target: str = "host") -> Descriptor:
    """``desc`` as seen from ``target``: "host" (Slurm, env, explain) or "pod" (Kubernetes)."""
    if target not in TARGETS:
        raise ValueError(f"unknown view target {target!r}")  # a bug in ncclgen, not user input
    return _pod(desc) if target == "pod" else _host(desc)


def plugin_of(desc: Descriptor) -> plugins.Plugin | None:
    """The net plugin a view loads (network.net_plugin, with its folder resolved), or None."""
    net = desc.network
    plugin = plugins.get(net.net_plugin)
    return plugin if plugin is not None and net.plugin_dir else None


def _host(desc: Descriptor) -> Descriptor:
    net = desc.network
    plugin = plugins.get(net.net_plugin)
    lib_dir = net.plugin_dir
    if plugin is not None and lib_dir is None:
        loc = plugin.location("host")
        lib_dir = loc.lib_dir if loc else None
    loaded = plugin is not None and lib_dir is not None
    sharp = net.sharp and loaded and plugin is not None and plugin.collnet
    slurm = desc.slurm
    loc = plugin.location("host") if plugin is not None else None
    if loaded and loc is not None and loc.container_mount:
        # A pyxis container sees the plugin folder only if it is mounted (the job exports its path).
        mount = f"{lib_dir}:{lib_dir}"
        if not any(m.split(":")[0].rstrip("/") == lib_dir for m in slurm.container_mounts):
            slurm = replace(slurm, container_mounts=(*slurm.container_mounts, mount))
    return replace(desc, network=replace(net, plugin_dir=lib_dir if loaded else None, sharp=sharp), slurm=slurm)


def _rename(value: str, names: dict[str, str]) -> str:
    """Whole device/interface names in ``value`` replaced by their pod names (mlx5_ib0:1 -> mlx5_0:1)."""
    if not names:
        return value
    pattern = (
        r"(?<![A-Za-z0-9_.-])("
        + "|".join(re.escape(k) for k in sorted(names, key=len, reverse=True))
        + r")(?![A-Za-z0-9_.-])"
    )
    return re.sub(pattern, lambda m: names[m.group(1)], value)


def host_only_names(desc: Descriptor) -> dict[str, str]:
    """Host interface and device names that a pod on this cluster does not see -> the pod's name ('' if
    none). Used by the pod view and by `ncclgen lint`."""
    kube, net = desc.kubernetes, desc.network
    out = {**kube.netdevs, **kube.hcas}
    pod_boot = kube.bootstrap_interfaces
    if pod_boot is not None and not kube.host_network:
        exact = (kube.bootstrap_match or "exact") == "exact"
        for name in net.bootstrap_interfaces:
            if name not in pod_boot:
                out.setdefault(name, pod_boot[0] if exact and len(pod_boot) == 1 else "")
    return out


def _pod(desc: Descriptor) -> Descriptor:
    kube, net = desc.kubernetes, desc.network
    where = f"cluster {desc.name}, kubernetes"
    names = {**kube.netdevs, **kube.hcas}
    boot, match = _pod_bootstrap(desc, where)
    rails = tuple(
        replace(
            r,
            hca=names.get(r.hca, r.hca) if r.hca else None,
            netdev=names.get(r.netdev, r.netdev) if r.netdev else None,
        )
        for r in net.compute
    )
    storage = tuple(replace(s, name=names.get(s.name, s.name)) for s in net.storage)
    topo, volumes = _pod_topo(desc, where)
    plugin = plugins.get(net.net_plugin)
    lib_dir, elements = _pod_plugin(desc, plugin, where)
    volumes = elements.volumes + volumes  # the plugin's first, as the flavour lists them
    annotations = _annotations(
        where, kube.annotations, ("net plugin", elements.annotations), ("network", _network_annotations(desc, boot))
    )
    loaded = plugin is not None and lib_dir is not None
    network = replace(
        net,
        bootstrap_interfaces=boot,
        bootstrap_match=match,
        compute=rails,
        storage=storage,
        topo_file=topo,
        net_plugin=net.net_plugin if loaded else "none",
        plugin_dir=lib_dir if loaded else None,
        sharp=net.sharp and loaded and bool(plugin and plugin.collnet),
    )
    _check_sidecar_mounts(desc, elements.sidecars, volumes, where)
    # The view keeps every host-only name (bootstrap ones included) so `lint` can still name them.
    kubernetes = replace(
        kube,
        annotations=annotations,
        volumes=tuple(volumes) + kube.volumes,
        sidecars=tuple(elements.sidecars) + kube.sidecars,
        netdevs=host_only_names(desc),
        hcas={},
        bootstrap_interfaces=boot,
        bootstrap_match=match,
    )
    vendor_env = tuple(replace(e, value=None if e.value is None else _rename(e.value, names)) for e in desc.vendor_env)
    return replace(desc, network=network, kubernetes=kubernetes, vendor_env=vendor_env)


def _pod_bootstrap(desc: Descriptor, where: str) -> tuple[tuple[str, ...], Match]:
    """The bootstrap interfaces inside the pod and how NCCL matches them."""
    kube, net = desc.kubernetes, desc.network
    if kube.bootstrap_interfaces is not None:
        return kube.bootstrap_interfaces, kube.bootstrap_match or "exact"
    if kube.host_network or kube.flavour == "generic":
        return net.bootstrap_interfaces, net.bootstrap_match
    raise UserError(
        f"{where}: a {kube.flavour.upper()} pod does not see the host's interfaces "
        f"({', '.join(net.bootstrap_interfaces)}); declare kubernetes.bootstrap_interfaces "
        "(the names inside the pod) or host_network: true"
    )


def _annotations(where: str, own: dict[str, str], *made: tuple[str, dict[str, str]]) -> dict[str, str]:
    """ncclgen's pod annotations (the plugin's devices, the multi-network ones) with the descriptor's; a
    descriptor key that would replace one of ncclgen's with another value is refused, not applied
    silently (the pod would lose its devices or networks without a word)."""
    out: dict[str, str] = {}
    for what, theirs in made:
        out.update(theirs)
        for key, value in theirs.items():
            if key in own and own[key] != value:
                raise UserError(
                    f"{where}.annotations.{key}: ncclgen sets this annotation for the {what} ({value!r}); "
                    "remove it from the descriptor or give the same value"
                )
    return {**out, **own}


def _pod_topo(desc: Descriptor, where: str) -> tuple[str | None, list[Volume]]:
    """The topology file's path in the pod and the volume that puts it there: a host path is not in a pod
    unless something mounts it."""
    net, t = desc.network, desc.kubernetes.topo_file
    if not net.topo_file:
        return None, []
    if t is None:
        raise UserError(
            f"{where}: network.topo_file {net.topo_file} is a file on the node, not in the pod; "
            "declare kubernetes.topo_file (its path in the pod, and host_path or config_map "
            "to mount it, or neither when the image carries it)"
        )
    if t.host_path:
        volume = Volume(
            name=TOPO_VOLUME, host_path=t.host_path, host_path_type="File", mount_path=t.path, read_only=True
        )
    elif t.config_map:
        volume = Volume(
            name=TOPO_VOLUME,
            config_map=t.config_map,
            mount_path=t.path,
            sub_path=t.key or os.path.basename(t.path),
            read_only=True,
        )
    else:
        return t.path, []
    return t.path, [volume]


@dataclass
class _PodElements:
    """What the net plugin adds to a pod on this flavour (ncclgen/data/plugins.yaml)."""

    volumes: list[Volume] = field(default_factory=list)
    sidecars: list[plugins.Sidecar] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)


def _pod_plugin(desc: Descriptor, plugin: plugins.Plugin | None, where: str) -> tuple[str | None, _PodElements]:
    """The net plugin's folder in the pod (None: not loaded) and its pod elements."""
    kube = desc.kubernetes
    out = _PodElements()
    if plugin is None or kube.net_plugin == "none":
        return None, out
    loc = plugin.location(kube.flavour)
    lib_dir = kube.plugin_dir or (loc.lib_dir if loc else None)
    if lib_dir is None:
        raise UserError(
            f"{where}: ncclgen does not know where the {plugin.id} plugin is in a "
            f"{kube.flavour} pod; set kubernetes.plugin_dir to its folder in your image, or "
            "kubernetes.net_plugin: none if the pod has no such plugin"
        )
    if loc is not None:
        out.volumes[:0] = loc.volumes
        out.sidecars.extend(loc.sidecars)
        out.annotations.update(loc.annotations)
        for container, devices in loc.device_annotations.items():
            paths = []
            for d in devices:
                paths += [d.format(gpu=g.index) for g in desc.node.gpus] if "{gpu}" in d else [d]
            out.annotations[f"devices.gke.io/container.{container}"] = "".join(f"- path: {p}\n" for p in paths)
    return lib_dir, out


def _network_annotations(desc: Descriptor, boot: tuple[str, ...]) -> dict[str, str]:
    """Secondary networks: GKE multi-networking, or Multus elsewhere."""
    kube = desc.kubernetes
    if not kube.networks:
        return {}
    if kube.flavour != "gke":
        return {"k8s.v1.cni.cncf.io/networks": ",".join(f"{n.network}@{n.interface}" for n in kube.networks)}
    ifaces = [{"interfaceName": boot[0], "network": "default"}]
    ifaces += [{"interfaceName": n.interface, "network": n.network} for n in kube.networks]
    return {
        "networking.gke.io/default-interface": boot[0],
        "networking.gke.io/interfaces": json.dumps(ifaces, separators=(",", ":")),
    }


def _check_sidecar_mounts(desc: Descriptor, sidecars: list, volumes: list[Volume], where: str) -> None:
    kube = desc.kubernetes
    names_known = {v.name for v in volumes} | {v.name for v in kube.volumes}
    for sc in (*sidecars, *kube.sidecars):
        for m in sc.mounts:
            if m.volume not in names_known:
                raise UserError(
                    f"{where}.sidecars: {sc.name} mounts volume {m.volume!r}, which neither "
                    f"kubernetes.volumes nor the net plugin's pod elements declare (known: "
                    f"{', '.join(sorted(names_known)) or 'none'})"
                )


def plugin_files(desc: Descriptor) -> tuple[str, ...]:
    """Paths of the files the view's net plugin needs on the node (for the preflight)."""
    plugin = plugin_of(desc)
    if plugin is None:
        return ()
    return tuple(f"{desc.network.plugin_dir}/{f}" for f in plugin.files)
