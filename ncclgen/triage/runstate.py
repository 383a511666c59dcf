"""What a job's per-node facts (nodes.Facts) say of the run as a whole, for the report: the fabric the logs show,
ranks that did not finish NCCL's init, an excerpt that ends before the run did, each rank's last collective, and
the table of nodes."""

from __future__ import annotations

from .benchtable import TABLE_STOPS
from .nodes import IPOIB, Facts, Host
from .reader import is_last


def fabric(facts: Facts) -> str | None:
    """The fabric the logs show: RoCE or IB from the HCAs' link layer; else InfiniBand where an IPoIB interface
    (a bootstrap interface or a peer's address) shows it; else None (Omni-Path's hfi1_* HFIs too: none of the
    InfiniBand fixes apply to them)."""
    links = {h.link for h in facts.hosts.values() if h.link}
    hcas = [name for h in facts.hosts.values() for name in h.hcas]
    if hcas and all(name.startswith("hfi1_") for name in hcas):
        return None  # Omni-Path HFIs, which NCCL's IB verbs net labels /IB (v2.7.8-1 src/transport/net_ib.cc:174)
    if links == {"RoCE"}:
        return "roce"
    if links == {"IB"} or (not links and (facts.ipoib_peer or ipoib(facts))):
        return "infiniband"
    return None


def unfinished(facts: Facts) -> list[str]:
    """'HOST rank R' for every rank that started NCCL init (Init START) and never printed Init COMPLETE, when
    some rank did (so the log carries the COMPLETE lines, and these ranks are behind the others)."""
    hosts = facts.hosts.values()
    if not any(h.complete for h in hosts):
        return []
    return sorted(f"{h.name} rank {c.split('/')[1]}" for h in hosts for c in h.started - h.complete)


def cut_out(facts: Facts) -> bool:
    """An excerpt with lines left out: a rank printed Init COMPLETE whose Init START (or channel line) is not in the
    logs, beside ranks that did print theirs (NCCL prints START before COMPLETE, v2.18.3-1 on: src/init.cc). Its
    missing COMPLETE lines are then no sign that ranks stayed in init."""
    hosts = facts.hosts.values()
    started = {c for h in hosts for c in h.started}
    return bool(started) and any(c not in started for h in hosts for c in h.complete)


def _began(h: Host) -> bool:
    """Setup lines, from a release that prints Init COMPLETE when it ends (2.4.2 on: v2.4.2-1 src/init.cu)."""
    old = h.version is not None and tuple(int(p) for p in h.version.split(".")[:2]) < (2, 4)
    return not old and bool(h.net_channels or h.started or h.progress or h.version or h.iface)


def ends_early(facts: Facts) -> list[str]:
    """With no sign the run ended (Destroy COMPLETE, nccl-tests' average): a table that stops after rows; or, with
    no Init COMPLETE, the hosts whose NCCL setup began (a version or bootstrap line: a hang in P2P setup prints
    nothing more), nccl-tests' table with no row. A hang there, or a log cut short: the log cannot tell."""
    if facts.success:
        return []
    if facts.bench.rows:  # a table that stops: the run froze or hung in a collective, or the log was cut
        return [TABLE_STOPS]
    if facts.ran or any(h.complete for h in facts.hosts.values()):
        return []
    began = (h for h in facts.hosts.values() if _began(h))
    out = sorted(f"{h.name} began NCCL init" for h in began)
    if facts.bench.banner:
        out.append("nccl-tests printed its header and no result row")
    if facts.start_last and not out and is_last(facts.start_last[0]):
        out.append(f"the last line is {facts.start_last[1]}")
    return out + lightning_short(facts)


LIGHTNING_SHORT = "Lightning: "  # the start of lightning_short's line, which needs no tail in the report


def lightning_short(facts: Facts) -> list[str]:
    """Lightning's join lines ('MEMBER: m/N') of fewer than N ranks and not its rank 0's 'All distributed processes
    registered': the others never started (a Slurm batch script that runs python without srun starts the batch
    host's ranks only), or their output is in other files."""
    worlds = {w for _r, w in facts.joined}
    if facts.registered or facts.twice is not None or len(worlds) != 1:  # twice: compare._ranks_twice
        return []
    world = int(next(iter(worlds)))
    ranks = sorted(int(r) for r, _w in facts.joined)
    if len(ranks) >= world:
        return []
    shown = ", ".join(map(str, ranks[:8])) + (", ..." if len(ranks) > 8 else "")
    return [
        f"{LIGHTNING_SHORT}{len(ranks)} of {world} ranks joined (GLOBAL_RANK {shown}) and rank 0 never saw them all; on"
        " Slurm every task must run the script (srun python ..., --ntasks-per-node = Trainer(devices), --nodes ="
        " num_nodes), or read the other nodes' logs"
    ]


def last_collectives(facts: Facts) -> list[str]:
    """With no sign the run ended well, where each process's collectives stopped: the processes behind the
    others first (what the rest wait for), and how many of the communicator's ranks the logs show. opCounts
    count per communicator, so processes are compared only when their last lines are of one size of group."""
    procs = [(c, f"{h.name}:{pid}") for h in facts.hosts.values() for pid, c in h.colls.items()]
    if facts.success or not procs:
        return []
    top = max(procs, key=lambda p: p[0][0])[0]
    if len({c[2] for c, _who in procs}) > 1:
        return [
            f"{len(procs)} processes' last collectives are in communicators of different sizes; the latest: {top[1]} opCount {top[0]:#x}"
        ]
    behind = sorted(who for c, who in procs if c[0] < top[0])
    out = [f"{', '.join(behind[:8])} stopped before opCount {top[0]:#x}, which the others reached"] if behind else []
    out.append(
        f"{top[1]} opCount {top[0]:#x} is the last collective in the logs ({len(procs) - len(behind)} processes)"
    )
    if len(procs) < top[2]:
        out.append(f"{len(procs)} of the communicator's {top[2]} ranks appear in these logs: read the others' too")
    return out


def ipoib(facts: Facts) -> list[str]:
    return [h.name for h in facts.hosts.values() if h.iface and IPOIB.match(h.iface)]


def as_data(facts: Facts) -> list[dict]:
    rows = []
    for h in sorted(facts.hosts.values(), key=lambda h: h.name)[:64]:
        rows.append(
            {
                "node": h.name,
                "nccl": h.version,
                "net": h.net,
                "plugin": h.plugin,
                "bootstrap": f"{h.iface}:{h.addr}" if h.iface else None,
                "hcas": list(h.hcas),
                "link": h.link,
                "net_channels": h.net_channels,
                "gdrdma_channels": h.gdr_channels,
            }
        )
    return rows
