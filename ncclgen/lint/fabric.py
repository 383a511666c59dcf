"""Rules that read the descriptor's fabric (HCAs, interfaces, rails) and rules across two settings."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..record import dataclass
from . import knowledge as kb
from .knowledge import matches, parse_if_list
from .rules import VERBS_FABRICS, _Target

if TYPE_CHECKING:
    from ..load.descriptor import Descriptor


@dataclass(frozen=True)
class _HcaView:
    """What NCCL_IB_HCA is judged against: the cluster's compute rails, storage HCAs and the parsed value."""

    value: str
    cluster_name: str
    rails: tuple
    storage: tuple
    known: tuple[str, ...]
    exclude: bool
    exact: bool
    entries: tuple[tuple[str, int], ...]

    @property
    def exact_fix(self) -> str:
        return "use NCCL_IB_HCA==" + ",".join(f"{r.hca}:{r.port}" for r in self.rails)


def _hca_view(value: str, t: _Target) -> _HcaView | None:
    cluster = t.cluster
    if cluster is None or t.fabric not in VERBS_FABRICS:
        return None
    net = cluster.network
    rails = tuple(r for r in net.compute if r.hca)
    storage = tuple(s for s in net.storage if s.kind == "hca")
    known = tuple(sorted({r.hca for r in rails if r.hca} | {s.name for s in storage}, key=_natural))
    exclude, exact, entries = parse_if_list(value)
    return _HcaView(value, cluster.name, rails, storage, known, exclude, exact, tuple(entries))


def _hca_storage_picked(v: _HcaView) -> list[tuple]:
    """Storage/in-band HCAs the value selects (a prefix such as mlx5 selects them all)."""
    picked = [s for s in v.storage if matches(v.value, s.name, -1)]
    if not picked:
        return []
    plain = not v.exact and not v.exclude
    prefixes = [n for n, _ in v.entries if plain and any(s.name.startswith(n) and s.name != n for s in picked)]
    how = (
        f" ({', '.join(repr(p) for p in prefixes)} is a prefix: it matches every HCA whose name starts with it)"
        if prefixes
        else ""
    )
    message = (
        f"NCCL_IB_HCA={v.value} selects storage/in-band NIC(s) {', '.join(s.name for s in picked)} of "
        f"{v.cluster_name}{how}: NCCL would send GPU traffic over them"
    )
    return [("NG012", "error", message, v.exact_fix)]


def _hca_entry_hits(v: _HcaView, name: str, port: int) -> list[str]:
    """The cluster's HCA names one entry selects (a port must be one of that HCA's rails)."""
    hits = [d for d in v.known if (d == name if v.exact else d.startswith(name))]
    if port == -1:
        return hits
    rail_hcas = {r.hca for r in v.rails}
    return [d for d in hits if d not in rail_hcas or any(r.hca == d and r.port == port for r in v.rails)]


def _hca_entry_findings(v: _HcaView) -> list[tuple]:
    """Entries that match no HCA port of the cluster, and bare names that are prefixes of others."""
    out = []
    for name, port in v.entries:
        hits = _hca_entry_hits(v, name, port)
        if not hits:
            shown = f"{name}{':' + str(port) if port != -1 else ''}"
            out.append(
                (
                    "NG012",
                    "warning" if v.exclude else "error",
                    f"NCCL_IB_HCA entry {shown} matches no HCA port of {v.cluster_name} (HCAs: {', '.join(v.known)})",
                    v.exact_fix,
                )
            )
        elif not v.exact and name in v.known and len(hits) > 1:
            others = ", ".join(d for d in hits if d != name)
            message = f"NCCL_IB_HCA entry {name} is a prefix: it also matches {others}"
            out.append(("NG012", "warning", message, f"{v.exact_fix} ('=' makes every name exact)"))
    return out


def _hca_lost_rails(v: _HcaView) -> list[tuple]:
    """Compute rails the value leaves out: their GPUs lose their nearest NIC."""
    lost = [r for r in v.rails if not matches(v.value, r.hca or "", r.port)]
    if not lost:
        return []
    gpus = ", ".join(map(str, sorted({g for r in lost for g in r.gpus})))
    rails = ", ".join(f"{r.hca}:{r.port}" for r in lost)
    message = f"NCCL_IB_HCA={v.value} leaves out compute rail(s) {rails}: GPU(s) {gpus} lose their nearest NIC"
    return [("NG012", "warning", message, v.exact_fix)]


def _ib_hca_findings(value: str, t: _Target) -> list[tuple]:
    """NCCL_IB_HCA against the descriptor: storage NICs, over-wide prefixes, unknown names, lost rails."""
    v = _hca_view(value, t)
    if v is None:
        return []
    return _hca_storage_picked(v) + _hca_entry_findings(v) + _hca_lost_rails(v)


def _socket_ifname_findings(value: str, t: _Target) -> list[tuple]:
    """NCCL_SOCKET_IFNAME against the descriptor's bootstrap (and storage) interfaces."""
    cluster = t.cluster
    if cluster is None:
        return []
    net = cluster.network
    boot = list(net.bootstrap_interfaces)
    if net.bootstrap_match == "exclude":
        # The names are the CNI's (a pod view): only the exclusion list is known.
        want = "^" + ",".join(boot)
        if value != want:
            return [
                (
                    "NG013",
                    "warning",
                    f"NCCL_SOCKET_IFNAME={value}: {cluster.name} declares no interface "
                    f"names here, only that NCCL must not use {', '.join(boot)}",
                    f"use NCCL_SOCKET_IFNAME={want}",
                )
            ]
        return []
    storage = [s.name for s in net.storage if s.kind == "netdev"]
    known = boot + [r.netdev for r in net.compute if r.netdev] + storage
    exclude, exact, entries = parse_if_list(value)
    fix = "use NCCL_SOCKET_IFNAME==" + ",".join(boot)
    out = []
    if not any(matches(value, b, -1) for b in boot):
        out.append(
            (
                "NG013",
                "error",
                f"NCCL_SOCKET_IFNAME={value} selects none of {cluster.name}'s bootstrap "
                f"interface(s) {', '.join(boot)}: NCCL would bootstrap elsewhere or find "
                "no interface",
                fix,
            )
        )
    picked = [s for s in storage if matches(value, s, -1)]
    if picked:
        out.append(
            (
                "NG013",
                "warning",
                f"NCCL_SOCKET_IFNAME={value} also selects storage interface(s) {', '.join(picked)}",
                fix,
            )
        )
    if not exclude:
        for name, _ in entries:
            if not any((k == name if exact else k.startswith(name)) for k in known):
                out.append(
                    (
                        "NG013",
                        "warning",
                        f"NCCL_SOCKET_IFNAME entry {name} is not an interface "
                        f"{cluster.name} declares ({', '.join(known)})",
                        fix,
                    )
                )
    if any(port != -1 for _, port in entries):
        out.append(
            (
                "NG013",
                "warning",
                "a ':port' suffix in NCCL_SOCKET_IFNAME is ignored for IP interfaces",
                "remove the ':port' suffix",
            )
        )
    return out


# NCCL's path levels as ncclGetLevel reads a number (NCCL v2.30.7 src/graph/paths.cc:243-269):
# levelsOldToNew = {LOC, PIX, PXB, PHB, SYS, SYS}, and any larger number is clamped to the last entry.
LEGACY_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")
RAIL_FABRICS = ("infiniband", "roce")


# NCCL's own nets by fabric: ncclNetIb "IB" serves InfiniBand and RoCE, ncclNetSocket "Socket" TCP
# (NVIDIA/nccl v2.30.7-1 src/transport/net_ib/common.cc:194, src/transport/net_socket.cc:804).
FABRIC_NETS = {"infiniband": "IB", "roce": "IB", "tcp": "Socket"}


def _net_findings(value: str, t: _Target) -> list[tuple]:
    """NCCL_NET against the planned net: NCCL initialises only the net of that name (case-insensitive,
    src/plugin/net.cc:321-348), so another name fails at init or runs on a slower transport."""
    from ..load import plugins

    cluster = t.cluster
    if cluster is None:
        return []
    net = cluster.network
    plugin = plugins.get(net.net_plugin)
    if plugin is not None:
        if not plugin.net_name:
            return []  # rdma-sharp: a release-dependent IBext_v<N>
        planned = {plugin.net_name}
        if cluster.kubernetes.net_plugin == "none" and net.fabric in FABRIC_NETS:
            planned.add(FABRIC_NETS[net.fabric])  # its pods run without the plugin
    elif net.net_plugin == "none" and net.fabric in FABRIC_NETS:
        planned = {FABRIC_NETS[net.fabric]}
    else:
        return []  # a plugin ncclgen has no data for: its name is not known here
    if value.strip().casefold() in {p.casefold() for p in planned}:
        return []
    want = " or ".join(sorted(planned))
    return [
        (
            "NG024",
            "error",
            f"NCCL_NET={value} names a net other than the one {cluster.name} plans ({want}, its "
            f"{net.fabric} fabric{' and ' + plugin.id + ' plugin' if plugin else ''}): NCCL initialises "
            "only the named net, so the job fails at init or runs over a slower transport",
            f"NCCL_NET={sorted(planned)[0]}",
        )
    ]


def _setting_findings(info: kb.VarInfo, value: str, t: _Target) -> list[tuple]:
    """One valid value that does something other than the writer most likely meant."""
    out: list = []
    for part in (
        _legacy_level,
        _forced_choice,
        _shm_disabled,
        _ib_disabled,
        _nvl_only,
        _cross_nic,
        _collnet,
    ):
        out += part(info, value, t)
    return out


def _legacy_level(info: kb.VarInfo, value: str, t: _Target) -> list[tuple]:
    name = info.name
    out: list[tuple] = []
    if name in ("NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL") and re.fullmatch(r"\d+", value.strip()):
        number = kb.strtoll(value)[0] or 0
        level = LEGACY_LEVELS[min(number, len(LEGACY_LEVELS) - 1)]
        if number >= len(LEGACY_LEVELS):
            out.append(
                (
                    "NG021",
                    "warning",
                    f"{name}={value} is past the last legacy level: NCCL clamps it to "
                    f"{level} without a warning ({t.cite('NCCL', 'src/graph/paths.cc:262-266')})",
                    f"{name}={level}",
                )
            )
        else:
            out.append(
                (
                    "NG021",
                    "info",
                    f"{name}={value} is the legacy numeric form, which NCCL reads as {level} "
                    "(0 LOC, 1 PIX, 2 PXB, 3 PHB, 4-5 SYS; the numbers do not follow today's "
                    "level list)",
                    f"{name}={level}",
                )
            )
    return out


def _forced_choice(info: kb.VarInfo, value: str, t: _Target) -> list[tuple]:
    name = info.name
    out: list[tuple] = []
    if name in ("NCCL_ALGO", "NCCL_PROTO") and ":" not in value and not value.startswith("^"):
        tokens = {tok.strip().casefold() for tok in value.split(",") if tok.strip()}
        if len(tokens) == 1:
            what = "algorithm" if name == "NCCL_ALGO" else "protocol"
            out.append(
                (
                    "NG022",
                    "warning",
                    f"{name}={value} forces one {what} for every collective and size: "
                    "NCCL can no longer pick the fastest one per message size (a forced "
                    "Ring or Simple typically costs small-message latency or large-message "
                    "bandwidth)",
                    "remove it, unless a measurement on this cluster shows it helps (a tuner plugin or "
                    f"'{name}=^X' to exclude one {what} is narrower)",
                )
            )
    return out


def _shm_disabled(info: kb.VarInfo, value: str, t: _Target) -> list[tuple]:
    name = info.name
    out: list[tuple] = []
    if name == "NCCL_SHM_DISABLE" and _truthy(info, value):
        out.append(
            (
                "NG020",
                "warning",
                "NCCL_SHM_DISABLE=1 turns off the shared-memory transport: GPU pairs "
                "without P2P (across PCIe root complexes or in containers without IPC) "
                "then go through the network transport, much slower",
                "remove it",
            )
        )
    return out


def _ib_disabled(info: kb.VarInfo, value: str, t: _Target) -> list[tuple]:
    name, cluster = info.name, t.cluster
    out: list[tuple] = []
    if name == "NCCL_IB_DISABLE" and _truthy(info, value) and cluster is not None and t.fabric in VERBS_FABRICS:
        # A warning, not an error: switching IB off is a legitimate way to bisect a fabric problem.
        out.append(
            (
                "NG020",
                "warning",
                f"NCCL_IB_DISABLE=1 on {cluster.name}, whose GPU traffic runs over "
                f"{t.fabric}: NCCL falls back to its Socket (TCP) transport, a fraction of "
                "the fabric's bandwidth, without failing",
                "remove it, unless you are ruling out the fabric",
            )
        )
    return out


def _nvl_only(info: kb.VarInfo, value: str, t: _Target) -> list[tuple]:
    name, cluster = info.name, t.cluster
    out: list[tuple] = []
    if name == "NCCL_P2P_LEVEL" and cluster is not None and not cluster.node.nvlink_gbps and value.strip() == "NVL":
        out.append(
            (
                "NG023",
                "warning",
                f"NCCL_P2P_LEVEL=NVL allows P2P only over NVLink, and {cluster.name} "
                "declares none (node.nvlink_gbps): every GPU pair then goes through "
                "shared memory",
                "remove it, or declare node.nvlink_gbps if the GPUs have NVLink",
            )
        )
    return out


def _cross_nic(info: kb.VarInfo, value: str, t: _Target) -> list[tuple]:
    name, cluster = info.name, t.cluster
    out: list[tuple] = []
    if name == "NCCL_CROSS_NIC" and value.strip() == "1" and cluster is not None and _rail_optimised(cluster):
        out.append(
            (
                "NG023",
                "warning",
                f"NCCL_CROSS_NIC=1 lets rings and trees change NIC between nodes, while "
                f"{cluster.name}'s compute rails are one per GPU (rail-optimised): traffic "
                "then crosses the spine instead of staying on its rail",
                "remove it (the default 2 prefers the same NIC), or NCCL_CROSS_NIC=0",
            )
        )
    return out


def _collnet(info: kb.VarInfo, value: str, t: _Target) -> list[tuple]:
    name, cluster = info.name, t.cluster
    net = cluster.network if cluster is not None else None
    out: list[tuple] = []
    if name == "NCCL_COLLNET_ENABLE" and value.strip() == "1" and cluster is not None and net is not None:
        from ..load import plugins

        plugin = plugins.get(net.net_plugin)
        if plugin is None or not plugin.collnet:
            have = [p.id for p in plugins.all_plugins().values() if p.collnet]
            out.append(
                (
                    "NG011",
                    "warning",
                    f"NCCL_COLLNET_ENABLE=1 takes effect only through a CollNet (SHARP) "
                    f"plugin ({', '.join(have)}), which {cluster.name} does not load "
                    f"(net_plugin: {net.net_plugin}): NCCL ignores it",
                    "remove it, or load the plugin (network.net_plugin) on a fabric with SHARP",
                )
            )
    return out


def _truthy(info: kb.VarInfo, value: str) -> bool:
    number, problem = kb.parse_int(info, value)
    return problem is None and number not in (None, 0)


def _rail_optimised(cluster: Descriptor) -> bool:
    """Several compute rails, each serving its own GPUs, every GPU on exactly one rail."""
    rails = [r for r in cluster.network.compute]
    if cluster.network.fabric not in RAIL_FABRICS or len(rails) < 2:
        return False
    served = [g for r in rails for g in r.gpus]
    return len(served) == len(set(served)) == cluster.node.gpus_per_node


def _gloo_ifname_findings(value: str, t: _Target) -> list[tuple]:
    """GLOO_SOCKET_IFNAME: exact interface names, comma-separated (PyTorch makes one Gloo device per name);
    they must be the descriptor's bootstrap interfaces, which is what NCCL's bootstrap uses too."""
    cluster = t.cluster
    if cluster is None:
        return []
    net = cluster.network
    boot = list(net.bootstrap_interfaces)
    names = [n.strip() for n in value.split(",") if n.strip()]
    if net.bootstrap_match == "exact":
        wrong = [n for n in names if n not in boot]
    elif net.bootstrap_match == "prefix":
        wrong = [n for n in names if not any(n.startswith(b) for b in boot)]
    else:  # "exclude": a pod view names only interfaces to avoid
        wrong = [n for n in names if n in boot]
    if not wrong:
        return []
    fix = (
        f"GLOO_SOCKET_IFNAME={','.join(boot)}"
        if net.bootstrap_match == "exact"
        else "use the interface the pod or host bootstraps on (network.bootstrap_interfaces)"
    )
    return [
        (
            "NG013",
            "error",
            f"GLOO_SOCKET_IFNAME={value}: {', '.join(wrong)} "
            f"{'is' if len(wrong) == 1 else 'are'} not {cluster.name}'s bootstrap interface "
            f"({', '.join(boot)}): Gloo would bind elsewhere than NCCL or fail to start",
            fix,
        )
    ]


# Variables whose value is checked against the descriptor's fabric, and the check.
VALUE_CHECKS = {
    "NCCL_IB_HCA": _ib_hca_findings,
    "NCCL_SOCKET_IFNAME": _socket_ifname_findings,
    "GLOO_SOCKET_IFNAME": _gloo_ifname_findings,
    "NCCL_NET": _net_findings,
}


def _natural(s: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s))
