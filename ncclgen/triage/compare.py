"""Nodes compared with each other: what one node's NCCL chose that another's did not (two releases, a bootstrap
interface that is a container bridge on one host, IB on one and Socket on another, GDRDMA on one side of a
connection), each a finding at the line that shows it. The per-node facts come from nodes.py.
"""

from __future__ import annotations

import re

from ..record import dataclass
from .events import Event
from .nodes import (
    BRIDGE,
    GDR_HCA,
    INTERNAL,
    IPOIB,
    LIGHTNING_RANK,
    LINK_LOCAL,
    UNPREFIXED,
    Facts,
    Host,
    one_host,
    p2p_off,
)
from .reader import Line

LOOPBACK = re.compile(r"^(?:127\.|::1$)")


@dataclass
class Finding:
    cls: str  # a class of classes.yaml
    detail: str
    line: Line
    node: str | None


def _named(facts: Facts) -> list[Host]:
    """The hosts named by NCCL's line prefix: lines without one may come from any host, so they are compared with
    none (the plan check still reads them)."""
    return [h for h in facts.hosts.values() if h.name != UNPREFIXED]


def _iface_kind(iface: str) -> str:
    """What kind of interface a name is: hosts may name their NICs differently (eno2, enp3s0) and agree."""
    return "virtual/bridge" if BRIDGE.match(iface) else "IPoIB" if IPOIB.match(iface) else "Ethernet"


def _kind(attr: str, text: str) -> str:
    """The value compared between hosts: an interface's kind; a plugin loaded or none (one release names
    the library's path, another the plugin's own name); else the value itself."""
    if attr == "iface":
        return _iface_kind(text)
    if attr == "plugin":
        return text if text == INTERNAL else "a net plugin"
    return text


def _differs(facts: Facts, attr: str) -> Finding | None:
    """A fact that differs between hosts (the bootstrap interface by its kind): the finding names every
    value and shows the minority's line."""
    by: dict[str, list[Host]] = {}
    for h in _named(facts):
        value = getattr(h, attr)
        if value:
            text = ",".join(value) if isinstance(value, tuple) else str(value)
            by.setdefault(_kind(attr, text), []).append(h)
    if len(by) < 2:
        return None
    ranked = sorted(by.items(), key=lambda kv: (len(kv[1]), kv[0]))
    odd = ranked[0][1][0]

    def named(v: str, hs: list[Host]) -> str:
        if attr == "iface":
            v = f"{v} ({', '.join(sorted({h.iface or '' for h in hs}))})"
        elif attr == "plugin" and v != INTERNAL:
            v = ", ".join(sorted({h.plugin or "" for h in hs}))
        return f"{v} on {', '.join(sorted(h.name for h in hs)[:4])}"

    detail = "; ".join(named(v, hs) for v, hs in ranked)
    return Finding(f"nodes-differ-{attr}", detail, odd.lines[attr], odd.name)


def _env_findings(facts: Facts) -> list[Finding]:
    """An NCCL variable set to different values on different hosts, or on some hosts only (of those that log
    their settings): the ranks did not get one environment."""
    hosts = [h for h in _named(facts) if h.env]
    if len(hosts) < 2:
        return []
    for var in sorted({v for h in hosts for v in h.env}):
        # NCCL prints a setting when it first reads it: a host that has not printed it is unset only once
        # its communicator finished init (a host still starting may not have read it yet)
        values = {h.name: h.env.get(var, "(unset)") for h in hosts if var in h.env or h.complete}
        if len(set(values.values())) > 1:
            odd = min(hosts, key=lambda h: (list(values.values()).count(values[h.name]), h.name))
            detail = f"{var}: " + "; ".join(f"{v} on {n}" for n, v in sorted(values.items())[:4])
            line = odd.lines.get(f"env:{var}") or next(iter(odd.lines.values()))
            return [Finding("nodes-differ-env", detail, line, odd.name)]
    return []


def _iface_findings(facts: Facts) -> list[Finding]:
    out: list[Finding] = []
    addrs: dict[str, list[str]] = {}
    alone = one_host(facts)  # a job on one host reaches its own loopback and bridges
    for h in _named(facts):  # an unprefixed line's loopback may be a one-host run's
        if h.iface is None:
            continue
        addrs.setdefault(h.addr or "", []).append(h.name)
        if (found := _commid_loopback(h)) is not None:
            out.insert(0, found)
        elif not alone and (BRIDGE.match(h.iface) or LINK_LOCAL.match(h.addr or "")):
            out.append(Finding("bootstrap-unroutable", f"{h.iface} ({h.addr}) on {h.name}", h.lines["iface"], h.name))
    for addr, names in addrs.items():
        if len(names) > 1 and addr:
            first = facts.hosts[names[0]]
            detail = f"{addr} on {', '.join(sorted(names)[:4])}"
            out.append(Finding("bootstrap-same-address", detail, first.lines["iface"], first.name))
    return out[:1] + [f for f in out[1:] if f.cls == "bootstrap-same-address"]


def _commid_loopback(h: Host) -> Finding | None:
    """Bootstrap on a loopback address while NCCL_COMM_ID names another: NCCL picks the bootstrap interface on the
    subnet of NCCL_COMM_ID's address (bootstrapNetInit, ncclFindInterfaceMatchSubnet), which loopback never is."""
    root = h.env.get("NCCL_COMM_ID", "")
    host = root.rsplit(":", 1)[0].strip("[]")
    if not host or host.startswith("127.") or host in ("::1", "localhost") or not LOOPBACK.match(h.addr or ""):
        return None
    detail = f"NCCL_COMM_ID={root}, bootstrap on {h.iface} ({h.addr}) on {h.name}, NCCL {h.version or '?'}"
    return Finding("bootstrap-commid-loopback", detail, h.lines["iface"], h.name)


def _gdr_findings(facts: Facts, planned_gdr: bool) -> list[Finding]:
    out = _gdr_off(facts) + _gdr_one_side(facts)
    hosts = [h for h in facts.hosts.values() if h.net_channels]
    some = [h for h in hosts if h.gdr_channels]
    for h in hosts:
        if h.gdr_channels:
            continue
        why = "the plan's fabric has GPUDirect RDMA" if planned_gdr else None
        if some:
            why = f"{some[0].name} uses GDRDMA"
        elif h.gdr_disabled:
            why = "NCCL said GPU Direct RDMA is disabled"
        elif not why and h.ib_channels and not _omni_path(h) and _slowness_shown(facts):
            # IB verbs, no node on GDRDMA: peermem missing everywhere, or a topology NCCL keeps it off on
            why = "no node uses GDRDMA on its RDMA NICs; NCCL also leaves it off where the GPU-NIC path crosses the CPU"
        if why:
            shown = h.lines.get("gdr_disabled") or h.lines["nogdr"]
            detail = f"{h.shown}: {h.net_channels} network channel line(s), none via GDRDMA ({why})"
            out.append(Finding("no-gdrdma", detail, shown, h.name))
    return out[:1]


def _slowness_shown(facts: Facts) -> bool:
    """Channels without GDRDMA where nothing says GPUDirect RDMA could run (no plan, no node using it, no 'GPU Direct
    RDMA Disabled' line) are a slow run only where the logs do not show the run finish (a job that hung or was cut,
    the case nccl#1676 was), or show its bandwidth (nccl-tests' rows or average, nccl#1412): a run that trained to
    its end with no figure may be on a topology or HCA generation where NCCL keeps GDRDMA off by design (a Horovod
    run on ConnectX-3)."""
    return not facts.success or facts.bench.rows or bool(facts.bench.summaries)


def _omni_path(h: Host) -> bool:
    """Every NIC an Omni-Path HFI (hfi1_N, through NCCL's IB verbs net): NCCL tests GPUDirect RDMA by NVIDIA's
    peer-memory module only (v2.7.8-1 src/transport/net_ib.cc ncclIbGdrSupport), which these NICs do not use, so
    channels without GDRDMA there say nothing about a missing module."""
    return bool(h.hcas) and all(name.startswith("hfi1_") for name in h.hcas)


def _gdr_one_side(facts: Facts) -> list[Finding]:
    """A connection whose send end uses GDRDMA and whose receive end does not: the receiving node cannot write to its
    GPU over the NIC (no peer-memory module there), a host name or not in the lines. Receive without send is left
    alone: NCCL leaves GDR reads (the send side) off by default on some platforms."""
    for (pair, side), (gdr, _line) in facts.conns.items():
        other = facts.conns.get((pair, "receive"))
        if side == "send" and gdr and other and not other[0]:
            detail = f"the connection {pair} uses GDRDMA to send and not to receive: the receiving node has none"
            return [Finding("no-gdrdma", detail, other[1], None)]
    return []


def _gdr_off(facts: Facts) -> list[Finding]:
    """A node whose NCCL said GPUDirect RDMA is disabled for an RDMA NIC, with no channel lines to show what it
    then used (NCCL prints it where neither nvidia-peermem nor nv_peer_mem is loaded, the only name NCCL up
    to 2.22 looks for; the channels that follow would show NET/IB without /GDRDMA)."""
    for h in facts.hosts.values():
        if h.gdr_disabled and not h.net_channels:
            hca = GDR_HCA.search(h.lines["gdr_disabled"].text)
            what = f"HCA {hca.group(1)}" if hca else "an HCA"
            detail = (
                f"{h.shown}: NCCL said GPU Direct RDMA is disabled for {what}, so its traffic is staged in host memory"
            )
            return [Finding("no-gdrdma", detail, h.lines["gdr_disabled"], h.name)]
    return []


def _socket_fallback(facts: Facts) -> list[Finding]:
    """NCCL's Socket net not asked for (NCCL_NET=Socket, NCCL_IB_DISABLE=1) where the node has InfiniBand (the Socket
    net over an IPoIB interface) or the job asked for it (NCCL_IB_HCA, NCCL_IB_DISABLE=0) and the IB net found no
    device (no /dev/infiniband in the container, no libibverbs provider): its traffic goes over TCP."""
    for h in facts.hosts.values():
        forced = h.env.get("NCCL_NET", "").lower() == "socket" or h.env.get("NCCL_IB_DISABLE") == "1"
        asked = next((f"{v}={h.env[v]}" for v in ("NCCL_IB_HCA", "NCCL_IB_DISABLE") if v in h.env), None)
        if forced:
            continue
        if h.net == "Socket" and h.socket_if and IPOIB.match(h.socket_if):
            detail = f"NET/Socket on {h.shown} over {h.socket_if}, an IPoIB interface{_why_no_ib(h)}"
            return [Finding("net-socket-fallback", detail, _no_ib_line(h) or h.lines["net"], h.name)]
        if asked and "no_ib" in h.lines and not h.hcas:
            detail = f"NET/IB found no device on {h.shown}, though {asked} asks for InfiniBand{_why_no_ib(h)}"
            return [Finding("net-socket-fallback", detail, _no_ib_line(h) or h.lines["no_ib"], h.name)]
    return []


def _no_ib_line(h: Host) -> Line | None:
    """The line that says why the IB net started with no device: NCCL_IB_HCA's value where it then found none of
    them, else 'NET/IB : No device found.' (the root, before the Socket net it leads to)."""
    if "no_ib" not in h.lines or h.hcas:
        return None
    return h.lines.get("env:NCCL_IB_HCA") or h.lines["no_ib"]


def _why_no_ib(h: Host) -> str:
    if "no_ib" not in h.lines or h.hcas or "NCCL_IB_HCA" not in h.env:
        return ""
    value = h.env["NCCL_IB_HCA"]
    return (
        f"; NET/IB found no device matching NCCL_IB_HCA={value} (a list of name prefixes: 'mlx5_1' also takes "
        "mlx5_10; '=' before the list names exact devices, '^' excludes them)"
    )


def _socket_spread(facts: Facts) -> list[Finding]:
    """The Socket net's channels over several interfaces with NCCL_SOCKET_IFNAME unset: NCCL took every interface it
    found, and one the peer cannot reach (a docker bridge, a veth pair, a link-local address) fails its connections."""
    for h in facts.hosts.values():
        if "socket_dev" in h.lines and "NCCL_SOCKET_IFNAME" not in h.env:
            detail = f"{h.shown}: channels via NET/Socket/1 and up, NCCL_SOCKET_IFNAME unset"
            return [Finding("socket-net-spread", detail, h.lines["socket_dev"], h.name)]
    return []


def _ranks_twice(facts: Facts) -> list[Finding]:
    """A rank that joined twice (Lightning's join line): two launchers each started the job's ranks."""
    if facts.twice is None:
        return []
    m = LIGHTNING_RANK.search(facts.twice.text)
    detail = f"GLOBAL_RANK {m.group('rank')} of {m.group('world')} joined twice" if m else "a rank joined twice"
    return [Finding("ranks-started-twice", detail, facts.twice, None)]


def _p2p_disabled(facts: Facts) -> list[Finding]:
    """GPU peer-to-peer off by a setting, with channels through host memory (SHM) and none via P2P (the setting may
    come from a line pasted without its host prefix, the channels from the named hosts)."""
    shm = sum(h.shm_channels for h in facts.hosts.values())
    if not shm or any(h.p2p_channels for h in facts.hosts.values()):
        return []
    for h in facts.hosts.values():
        if var := p2p_off(h):
            detail = f"{var}={h.env[var]}, {shm} channel lines via SHM, none via P2P"
            line = h.lines[f"env:{var}"]
            return [Finding("p2p-disabled", detail, line, h.name)]
    return []


def _p2p_unavailable(facts: Facts) -> list[Finding]:
    """GPUs that have no peer access (nodes.NO_PEER) in a run that shows its bandwidth or did not finish, with no
    channel via P2P anywhere: NCCL moves their data through host memory (SHM). A setting that turned P2P off is
    _p2p_disabled's."""
    line = facts.no_peer
    if line is None or not _slowness_shown(facts) or any(h.p2p_channels or p2p_off(h) for h in facts.hosts.values()):
        return []
    return [Finding("p2p-unavailable", line.text.strip()[:160], line, None)]


def _mixed_links(facts: Facts) -> list[Finding]:
    """A node whose IB net took HCAs of both link layers (InfiniBand compute rails and a RoCE or bonded port) with
    NCCL_IB_HCA not set, in a run that shows its bandwidth or did not finish: NCCL takes every active port when
    NCCL_IB_HCA is unset, and the channels on the other port run at its speed."""
    if not _slowness_shown(facts):
        return []
    for h in facts.hosts.values():
        if len(h.links) > 1 and "NCCL_IB_HCA" not in h.env:
            return [Finding("hca-mixed-links", f"{', '.join(h.hcas[:10])} on {h.shown}", h.lines["hcas"], h.name)]
    return []


def _gpu_twice(facts: Facts) -> list[Finding]:
    """Two ranks of one communicator on one GPU, from NCCL's init lines (nodes._gpu)."""
    for h in facts.hosts.values():
        if h.twice is not None:
            return [Finding("duplicate-gpu", h.twice[1], h.twice[0], h.name)]
    return []


def _separate_runs(facts: Facts) -> list[Finding]:
    """Two nccl-tests summaries a few lines apart: each process ran its own test (nodes.Facts._summary)."""
    if facts.bench.twin is None:
        return []
    return [Finding("nccl-tests-separate-runs", facts.bench.twin_what, facts.bench.twin, None)]


def _wrong_results(facts: Facts) -> list[Finding]:
    """nccl-tests counted wrong elements in a collective's result (benchtable.wrong): no error line says so."""
    if facts.bench.wrong is None:
        return []
    return [Finding("nccl-tests-wrong-results", "a results row with wrong elements", facts.bench.wrong, None)]


def _silent_hosts(facts: Facts) -> list[Finding]:
    """Hosts nccl-tests lists in its device table that print no NCCL line while another host does: NCCL_DEBUG (and
    whatever else was set with it) reached only some hosts."""
    # only where the talking host shows settings made by the environment ('NCCL_X set by environment'): the lines
    # of one host alone are what most pasted excerpts keep, and say nothing of the others' settings
    talking = [h for h in _named(facts) if any(k.startswith("env:") for k in h.lines)]
    silent = sorted(facts.bench.hosts - set(facts.hosts))
    if not talking or not silent or len(facts.bench.hosts) < 2:
        return []
    h = talking[0]
    detail = f"{', '.join(silent[:4])} print no NCCL line, {h.name} does"
    line = next(v for k, v in h.lines.items() if k.startswith("env:"))
    return [Finding("env-not-forwarded", detail, line, h.name)]


def findings(facts: Facts, planned_gdr: bool = False) -> list[Finding]:
    """Differences between nodes, unroutable bootstrap interfaces, and network channels without GPUDirect."""
    out = [f for attr in ("version", "net", "plugin", "iface", "hcas") if (f := _differs(facts, attr))]
    out += _env_findings(facts)
    out += _iface_findings(facts)
    out += _gdr_findings(facts, planned_gdr)
    out += _socket_fallback(facts)
    out += _ranks_twice(facts)
    out += _socket_spread(facts)
    out += _separate_runs(facts)
    out += _wrong_results(facts)
    out += _silent_hosts(facts)
    out += _gpu_twice(facts)
    out += _p2p_disabled(facts)
    out += _p2p_unavailable(facts)
    out += _mixed_links(facts)
    return out


def evidence(f: Finding, facts: Facts) -> Event:
    """The finding as an event at the line that shows it (its class from classes.yaml)."""
    from . import catalogue
    from .events import when

    sig = catalogue.classes()[f.cls]
    groups = {"detail": f.detail, "text": f.detail}  # a class written for a line's text reads the finding's detail
    return Event(f.line, sig, groups, when(f.line), f.node, None, facts.seqs.get(f.line, 0))
