"""A stand-in for NCCL's communicator init, for tests: no GPU here, so nothing real can run NCCL.

It is NOT NCCL. It writes the lines one rank's NCCL init writes, in NCCL's exact formats (NVIDIA/nccl
v2.30.7-1; file:line per release in ncclgen/jobside/nccllines.py), and honours what NCCL reads:
- NCCL_DEBUG: nothing below WARN; the version line alone at VERSION/WARN (src/init.cc:698-703);
  INFO lines only at INFO or above (src/debug.cc:284-287);
- NCCL_DEBUG_SUBSYS: each line only when its subsystem passes the mask (src/debug.cc:55-79,
  include/param/parser_bitset.h:31-32 for '^'); the version line always (NCCL_ALL);
- NCCL_DEBUG_FILE: %h/%p/%% expanded as src/debug.cc:197-244 does, opened "w" and line-buffered; a file
  that cannot be opened means stdout;
- NCCL_NET: only the named net (case-insensitive, src/plugin/net.cc:331); none matching is
  "Failed to initialize any NET plugin" (src/plugin/net.cc:349) and exit 1.

Rank, size and node from torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
GROUP_RANK) or the flags. What it simulates is chosen by NCCLGEN_STANDIN_* variables (or flags), and a
fault applies only on the node named by NCCLGEN_STANDIN_FAULT_NODE (SLURMD_NODENAME, else the host
name) when that is set:
  NCCLGEN_STANDIN_HCAS      the node's IB ports, "mlx5_0:1,mlx5_3:1" (default); empty: no IB device
  NCCLGEN_STANDIN_VERSION   the NCCL version printed (default 2.30.7)
  NCCLGEN_STANDIN_PLUGIN    "Libfabric:aws-ofi-nccl:1.13.2-aws": a net plugin that registers Libfabric
  NCCLGEN_STANDIN_FAULT     comma-separated: nogdr (no GPUDirect RDMA: channels via NET/IB/N),
                            rail (the last HCA is missing), socket (no IB device: NET/Socket),
                            version=X (another NCCL version), noplugin (the plugin is not found),
                            warn (one WARN line, as NCCL writes it)
  NCCLGEN_STANDIN_AFTER_S   seconds to stay alive after init (default 0.5): "training"
  NCCLGEN_STANDIN_START_S   seconds before init (default 0.5): a real rank imports its framework first,
                            for seconds, so its node's transport check (started beside the launch) is
                            reading before NCCL writes a line
  NCCLGEN_STANDIN_STAMP     a file to which a rank with a fault appends "NODE EPOCH" once its lines are
                            written (tests measure from it how soon the job ended)
Exit status 0, or 1 where NCCL would fail init.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ncclgen.jobside import nccllines

CHANNELS = 2


class Log:
    """NCCL's logger (src/debug.cc ncclDebugLogV): level and subsystem filters, prefix, file."""

    def __init__(self, env: dict[str, str], host: str, dev: int):
        self.level = nccllines.debug_level(env.get("NCCL_DEBUG"))
        self.mask = nccllines.debug_mask(env.get("NCCL_DEBUG_SUBSYS"))
        self.host, self.pid, self.tid, self.dev = (
            nccllines.log_hostname(host),
            os.getpid(),
            threading.get_native_id(),
            dev,
        )
        self.out = sys.stdout
        pattern = env.get("NCCL_DEBUG_FILE")
        if self.level > nccllines.LEVELS["VERSION"] and pattern:
            with contextlib.suppress(OSError):
                self.out = open(nccllines.expand_debug_file(pattern, host, self.pid), "w", buffering=1)  # noqa: SIM115

    def info(self, kind: str, text: str) -> None:
        if self.level >= nccllines.LEVELS["INFO"] and nccllines.shows(kind, self.mask):
            self.out.write(f"{self.host}:{self.pid}:{self.tid} [{self.dev}] NCCL INFO {text}\n")

    def warn(self, where: str, func: str, text: str) -> None:
        if self.level >= nccllines.LEVELS["WARN"]:
            stamp = time.strftime("[%Y-%m-%d %H:%M:%S] ")
            self.out.write(
                f"\n{stamp}{self.host}:{self.pid}:{self.tid} [{self.dev}] {where} ({func}) NCCL WARN {text}\n"
            )


def options(argv: list[str] | None) -> argparse.Namespace:
    env = os.environ
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rank", type=int, default=int(env.get("RANK", "0")))
    p.add_argument("--nranks", type=int, default=int(env.get("WORLD_SIZE", "1")))
    p.add_argument("--local-rank", type=int, default=int(env.get("LOCAL_RANK", "0")))
    p.add_argument("--local-ranks", type=int, default=int(env.get("LOCAL_WORLD_SIZE", "1")))
    p.add_argument("--hcas", default=env.get("NCCLGEN_STANDIN_HCAS", "mlx5_0:1,mlx5_3:1"))
    p.add_argument("--version", default=env.get("NCCLGEN_STANDIN_VERSION", "2.30.7"))
    p.add_argument("--plugin", default=env.get("NCCLGEN_STANDIN_PLUGIN", ""))
    p.add_argument("--fault", default=env.get("NCCLGEN_STANDIN_FAULT", ""))
    p.add_argument("--fault-node", default=env.get("NCCLGEN_STANDIN_FAULT_NODE", ""))
    p.add_argument("--after", type=float, default=float(env.get("NCCLGEN_STANDIN_AFTER_S", "0.5")))
    p.add_argument("--start", type=float, default=float(env.get("NCCLGEN_STANDIN_START_S", "0.5")))
    return p.parse_args(argv)


def faults(o: argparse.Namespace) -> dict[str, str]:
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    if o.fault_node and o.fault_node != node:
        return {}
    out = {}
    for item in filter(None, o.fault.split(",")):
        name, _, value = item.partition("=")
        out[name] = value
    return out


def nets(o: argparse.Namespace, fault: dict[str, str]) -> list[tuple[str, list[str]]]:
    """The nets NCCL would initialise, in its order: the external plugin first, then IB, then Socket
    (src/plugin/net.cc:262-300 builds the list: plugin libraries, then the internal IB and Socket)."""
    hcas = [h for h in o.hcas.split(",") if h] if "socket" not in fault else []
    if "rail" in fault and hcas:
        hcas = hcas[:-1]
    out = []
    if o.plugin and "noplugin" not in fault:
        out.append((o.plugin.split(":")[0], []))
    if hcas:
        out.append(("IB", hcas))
    out.append(("Socket", []))
    return out


def init(o: argparse.Namespace, log: Log, fault: dict[str, str]) -> int:
    version = fault.get("version") or o.version
    log.info("version", f"NCCL version {version}+cuda12.9")
    if o.plugin:
        name, package, pversion = ([*o.plugin.split(":"), "", ""])[:3]
        if "noplugin" in fault:
            log.info("nofile", "NET/Plugin: Could not find: libnccl-net.so")
        else:
            log.info("plugin", f"NET/Plugin: Loaded net plugin {name} (v10)")
            log.info("plugin_version", f"NET/OFI Initializing {package} {pversion}")
    available = nets(o, fault)
    want = os.environ.get("NCCL_NET")
    chosen = next((n for n in available if not want or n[0].lower() == want.lower()), None)
    for name, hcas in available:
        if name == "IB":
            devs = "".join(f" [{i}]{h.split(':')[0]}:{h.split(':')[1]}/IB" for i, h in enumerate(hcas))
            log.info("ib", f"NET/IB : Using{devs} [RO]; OOB eth0:10.0.0.1<0>")
        elif name == "Socket":
            log.info("socket", "NET/Socket : Using [0]eth0:10.0.0.1<0>")
    if "warn" in fault:
        log.warn("misc/standin.cc:1", "standin", "NET/IB : stand-in warning")
    if chosen is None:
        log.warn("plugin/net.cc:349", "ncclNetInit", "Failed to initialize any NET plugin")
        return 1
    log.info("net", f"Using network {chosen[0]}")
    nnodes = max(1, o.nranks // max(1, o.local_ranks))
    comm = f"0x{0x55D0C0DE0000 + o.rank * 0x100:x}"
    log.info(
        "comm",
        f"comm {comm} rank {o.rank} nRanks {o.nranks} nNodes {nnodes} localRanks {o.local_ranks} localRank {o.local_rank} MNNVL 0",
    )
    log.info(
        "complete",
        f"ncclCommInitRankConfig comm {comm} rank {o.rank} nranks {o.nranks} cudaDev {o.local_rank} "
        f"nvmlDev {o.local_rank} busId {0x1B000 + 0x10000 * o.local_rank:x} commId 0x7e1d3c5b2a190f00 - Init COMPLETE",
    )
    channels(o, log, chosen, fault, nnodes)
    stamp = os.environ.get("NCCLGEN_STANDIN_STAMP")
    if stamp and fault:
        node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
        with open(stamp, "a", encoding="utf-8") as fh:
            fh.write(f"{node} {time.time():.3f}\n")
    return 0


def channels(o: argparse.Namespace, log: Log, net: tuple[str, list[str]], fault: dict[str, str], nnodes: int) -> None:
    """Ring channels at the first collective (NCCL_RUNTIME_CONNECT=1, src/init.cc:61): the previous and
    next rank; across nodes via NET (src/transport/net.cc), within a node via P2P (src/transport/p2p.cc)."""
    prev, nxt = (o.rank - 1) % o.nranks, (o.rank + 1) % o.nranks
    gdr = "" if ("nogdr" in fault or net[0] == "Socket") else "/GDRDMA"
    dev = o.local_rank % max(1, len(net[1]) or 1)
    for c in range(CHANNELS):
        for peer, direction in ((prev, "receive"), (nxt, "send")):
            src, dst = (peer, o.rank) if direction == "receive" else (o.rank, peer)
            if nnodes > 1 and peer // o.local_ranks != o.rank // o.local_ranks:
                text = f"Channel {c:02d}/0 : {src}[{src % o.local_ranks}] -> {dst}[{dst % o.local_ranks}] [{direction}] via NET/{net[0]}/{dev}{gdr}"
                log.info("channel_net", text)
            elif direction == "send" and peer != o.rank:
                log.info(
                    "channel_p2p",
                    f"Channel {c:02d}/0 : {src}[{src % o.local_ranks}] -> {dst}[{dst % o.local_ranks}] via P2P/IPC",
                )
    log.info("rings", f"Connected all rings, use ring PXN 0 GDR {0 if gdr == '' else 1}")


def main(argv: list[str] | None = None) -> int:
    o = options(argv)
    fault = faults(o)
    time.sleep(o.start)
    log = Log(dict(os.environ), socket.gethostname(), o.local_rank)
    rc = init(o, log, fault)
    if rc == 0:
        time.sleep(o.after)
    log.out.flush()
    return rc


if __name__ == "__main__":
    sys.exit(main())
