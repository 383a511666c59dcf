"""`ncclgen doctor`: check the live node against its descriptor before a job trusts the descriptor.

The rules and renderers take the descriptor as truth; a node with a missing HCA, a port that
trained at half rate, a GPU on another NUMA node or paired with a far HCA, no GPUDirect RDMA, a
bootstrap interface that does not exist, locked-memory limits that break RDMA registration or an
environment full of invented variables makes the generated settings wrong or useless. Each
check gives one row: pass, info, warn or fail; any fail makes the exit status 1.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass

from ..load import cpuset, quantity
from ..load.descriptor import Descriptor
from . import Unavailable, nvml, sysfs
from .discover import gpu_numa
from .sysfs import Sysfs

STATUSES = ("pass", "info", "warn", "fail")
RDMA_FABRICS = ("infiniband", "roce", "efa")
LINK_LAYER = {"infiniband": "InfiniBand", "roce": "Ethernet"}  # what the port reports per fabric
_MODEL = re.compile(r"\b[A-Z]{1,2}\d{2,4}[A-Z]?\b")


@dataclass(frozen=True)
class Check:
    status: str  # one of STATUSES
    check: str  # what was checked, e.g. hca.mlx5_0:1
    detail: str


def quantity_bytes(text: str) -> int:
    """A Kubernetes quantity ('256Gi', '64M', '1.5Gi') in whole bytes; the descriptor schema checked the syntax."""
    return int(quantity.value(text))


def _worst(statuses) -> str:
    return max(statuses, key=STATUSES.index, default="pass")


def model_matches(declared: str, reported: str) -> bool | None:
    """Whether NVML's name ('NVIDIA H100 80GB HBM3') is the declared model ('H100-SXM5-80GB').

    Compared by the model number (H100, A100, L40S, GB200): names differ in everything else.
    None when the declared name has no model number to compare.
    """
    want = _MODEL.findall(declared.upper())
    if not want:
        return None
    return want[0] in _MODEL.findall(reported.upper())


def check_gpus(
    desc: Descriptor, fs: Sysfs, numa: dict[int, frozenset[int]], backend, found: list | None = None
) -> list[Check]:
    """GPU count, model, PCI address and NUMA node; ``found`` receives NVML's GPUs for later checks."""
    words = (max((max(c) for c in numa.values() if c), default=63) // 64) + 1
    try:
        with nvml.session(backend) as nv:
            gpus = nv.gpus(cpu_words=words)
    except Unavailable as exc:
        return [Check("fail", "gpu.count", str(exc))]
    if found is not None:
        found.extend(gpus)
    want = desc.node.gpus_per_node
    out = [Check("pass" if len(gpus) == want else "fail", "gpu.count", f"{len(gpus)} GPUs (descriptor: {want})")]
    if gpus:
        out.append(_check_model(desc, gpus))
    by_index = {g.index: g for g in gpus}
    cpus_with = {n: c for n, c in numa.items() if c}
    for g in sorted(desc.node.gpus, key=lambda g: g.index):
        live = by_index.get(g.index)
        if live is None:
            out.append(Check("fail", f"gpu{g.index}", "not present"))
        else:
            out.append(_check_gpu(g, live, sysfs.pci_device(fs, live.bus_id), cpus_with))
    return out


def _check_model(desc: Descriptor, gpus: list) -> Check:
    names = sorted({g.name for g in gpus})
    ok = model_matches(desc.node.gpu_model, names[0]) if len(names) == 1 else False
    status = {True: "pass", False: "fail", None: "warn"}[ok]
    text = f"{', '.join(names)} (descriptor: {desc.node.gpu_model})"
    return Check(status, "gpu.model", text + (" - no model number to compare" if ok is None else ""))


def _check_gpu(g, live, loc: sysfs.PciLoc | None, cpus_with: dict[int, frozenset[int]]) -> Check:
    """One declared GPU against the one NVML reports at its index: PCI address and NUMA node."""
    problems = []
    if g.pci_bus_id and g.pci_bus_id.lower() != live.bus_id:
        problems.append(f"PCI {live.bus_id}, descriptor {g.pci_bus_id.lower()}")
    node, guess = gpu_numa(live, loc, cpus_with) if cpus_with else (None, None)
    if node != g.numa:
        problems.append(f"NUMA {node if node is not None else 'unknown'}, descriptor {g.numa}")
    ok = f"{live.bus_id}, NUMA {node}" + (" (from NVML affinity)" if guess else "")
    return Check("fail" if problems else "pass", f"gpu{g.index}", "; ".join(problems) or ok)


def check_numa(desc: Descriptor, numa: dict[int, frozenset[int]]) -> list[Check]:
    out = []
    for n in desc.node.numa_nodes:
        want = cpuset.parse(n.cpus)
        have = numa.get(n.id)
        if have is None:
            out.append(Check("fail", f"numa{n.id}", "no such NUMA node on this node"))
        elif have != want:
            out.append(Check("fail", f"numa{n.id}", f"CPUs {cpuset.format(have) or 'none'}, descriptor {n.cpus}"))
        else:
            out.append(Check("pass", f"numa{n.id}", f"CPUs {n.cpus}"))
    declared = {n.id for n in desc.node.numa_nodes}
    for node_id, cpus in numa.items():
        if node_id not in declared and cpus:
            out.append(
                Check(
                    "warn",
                    f"numa{node_id}",
                    f"CPUs {cpuset.format(cpus)} are on a NUMA node the descriptor "
                    "does not declare; no rank will be bound there",
                )
            )
    return out


def check_rails(desc: Descriptor, fs: Sysfs) -> list[Check]:
    ports = {(p.hca, p.port): p for p in sysfs.hca_ports(fs)}
    nets = {n.name: n for n in sysfs.netdevs(fs)}
    fabric = desc.network.fabric
    out = []
    for r in desc.network.compute:
        if r.hca is None:
            out.append(_check_netdev_rail(r.netdev or "", nets))
            continue
        name = f"hca.{r.hca}:{r.port}"
        p = ports.get((r.hca, r.port))
        if p is None:
            out.append(Check("fail", name, "RDMA port not present in /sys/class/infiniband"))
            continue
        rows = [_port_state(p), _port_phys_state(p), _port_rate(p, r.gbps)]
        rows += [*_port_link_layer(p, fabric), _port_numa(p, r.numa)]
        if r.netdev and p.netdev and p.netdev != r.netdev:
            rows.append(("warn", f"netdev {p.netdev}, descriptor {r.netdev}"))
        out.append(Check(_worst(s for s, _ in rows), name, ", ".join(t for _, t in rows)))
    if fabric == "efa" and desc.network.efa is not None:
        efa = {p.hca for p in ports.values() if p.driver == "efa"}
        want = desc.network.efa.devices_per_node
        out.append(
            Check("pass" if len(efa) >= want else "fail", "efa.devices", f"{len(efa)} EFA devices (descriptor: {want})")
        )
    return out


Row = tuple[str, str]  # (status, text): one part of a rail's row


def _check_netdev_rail(netdev: str, nets: Mapping) -> Check:
    nd = nets.get(netdev)
    if nd is None:
        return Check("fail", f"net.{netdev}", "interface not present")
    return Check("pass" if nd.operstate == "up" else "fail", f"net.{netdev}", f"operstate {nd.operstate}")


def _port_state(p: sysfs.HcaPort) -> Row:
    return ("pass" if p.state == "ACTIVE" else "fail", p.state or "state unknown")


def _port_phys_state(p: sysfs.HcaPort) -> Row:
    return ("pass" if p.phys_state == "LinkUp" else "fail", p.phys_state or "phys_state unknown")


def _port_rate(p: sysfs.HcaPort, gbps: int) -> Row:
    if p.rate_gbps is None:
        return ("fail", f"rate unknown (descriptor {gbps} Gb/s)")
    if round(p.rate_gbps) < gbps:
        return ("fail", f"{p.rate_gbps:g} Gb/s, descriptor {gbps} (link trained low?)")
    if round(p.rate_gbps) > gbps:
        return ("warn", f"{p.rate_gbps:g} Gb/s, descriptor {gbps} (descriptor out of date?)")
    return ("pass", f"{p.rate_gbps:g} Gb/s")


def _port_link_layer(p: sysfs.HcaPort, fabric: str) -> list[Row]:
    want = LINK_LAYER.get(fabric)
    if not want:
        return []
    if p.link_layer == want:
        return [("pass", p.link_layer)]
    return [("fail", f"link layer {p.link_layer}, fabric {fabric} needs {want}")]


def _port_numa(p: sysfs.HcaPort, numa: int) -> Row:
    node = p.pci.numa if p.pci else None
    if node is None:
        return ("warn", f"NUMA unknown, descriptor {numa}")
    if node == numa:
        return ("pass", f"NUMA {node}")
    return ("fail", f"NUMA {node}, descriptor {numa}")


def check_pcie(desc: Descriptor, fs: Sysfs, gpus: list) -> list[Check]:
    """Each GPU's declared rails against the PCIe tree, as `discover` pairs them: a rail must be among
    the GPU's nearest compute HCAs (nvidia-smi topo -m classes PIX < PXB < PHB < NODE < SYS), else
    the descriptor sends the GPU's traffic the long way (or names the wrong HCA)."""
    ports = {(p.hca, p.port): p for p in sysfs.hca_ports(fs)}
    compute = [ports[(r.hca, r.port)] for r in desc.network.compute if r.hca and (r.hca, r.port) in ports]
    placed = [(p, p.pci) for p in compute if p.pci is not None]
    out = []
    for g in sorted(gpus, key=lambda g: g.index):
        rails = [r for r in desc.rails_for_gpu(g.index) if r.hca]
        loc = sysfs.pci_device(fs, g.bus_id)
        if not rails or loc is None or not placed:
            continue
        levels = {(p.hca, p.port): sysfs.distance(loc, pci) for p, pci in placed}
        check = _check_gpu_rails(f"pcie.gpu{g.index}", rails, levels)
        if check is not None:
            out.append(check)
    return out


def _check_gpu_rails(name: str, rails: list, levels: dict[tuple[str, int], sysfs.Level]) -> Check | None:
    """Pass when every declared rail of a GPU is among its nearest compute HCAs; None when none is present."""
    best = min(levels.values())
    mine = {f"{r.hca}:{r.port}": levels.get((r.hca, r.port)) for r in rails}
    known = {k: v for k, v in mine.items() if v is not None}
    if not known:
        return None  # its ports are missing: the hca rows already fail
    text = ", ".join(f"{k} {v.name}" for k, v in known.items())
    if max(known.values()) <= best:
        return Check("pass", name, text)
    nearest = sorted(f"{h}:{pt}" for (h, pt), lvl in levels.items() if lvl == best)
    return Check(
        "fail",
        name,
        f"descriptor rail {text}; nearest compute HCA {', '.join(nearest)} ({best.name}): check network.compute's gpus",
    )


# GPUDirect RDMA, as NCCL detects it (NVIDIA/nccl src/transport/net_ib: ibGdrSupportInitOnce tests
# these files; ncclIbDmaBufSupport probes ibv_reg_dmabuf_mr, which needs Linux >= 5.12, and the CUDA
# attribute DMA_BUF_SUPPORTED, which the open GPU kernel module provides).
PEERMEM_FILES = (
    "/sys/kernel/mm/memory_peers/nv_mem/version",
    "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
    "/sys/module/nvidia_peermem/version",
)


def check_gdr(desc: Descriptor, fs: Sysfs) -> list[Check]:
    if desc.network.fabric not in ("infiniband", "roce"):
        return []
    for path in PEERMEM_FILES:
        if fs.exists(path):
            return [Check("pass", "gdr", f"peer memory module loaded ({path})")]
    release = fs.read("/proc/sys/kernel/osrelease") or ""
    kernel = tuple(int(x) for x in re.findall(r"\d+", release)[:2])
    driver = fs.read("/proc/driver/nvidia/version") or ""
    if kernel >= (5, 12) and "Open Kernel Module" in driver:
        return [Check("pass", "gdr", f"no nvidia_peermem; DMA-BUF path: Linux {release}, NVIDIA open kernel module")]
    why = []
    if kernel and kernel < (5, 12):
        why.append(f"Linux {release} is older than 5.12")
    if driver and "Open Kernel Module" not in driver:
        why.append("the NVIDIA kernel module is not the open one")
    return [
        Check(
            "warn",
            "gdr",
            "no GPUDirect RDMA module (modprobe nvidia_peermem) and DMA-BUF "
            + (f"unlikely ({'; '.join(why)})" if why else "unknown")
            + ": without either NCCL stages network traffic through host memory",
        )
    ]


def check_bootstrap(desc: Descriptor, fs: Sysfs, in_pod: bool) -> list[Check]:
    """The interfaces NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME will name must exist here."""
    net = desc.network
    names = {n.name: n for n in sysfs.netdevs(fs)}
    out = []
    for want in net.bootstrap_interfaces:
        row = f"bootstrap.{want}"
        if net.bootstrap_match == "prefix":
            hits = sorted(n for n in names if n.startswith(want))
            found = [names[n] for n in hits]
        else:
            found = [names[want]] if want in names else []
        if not found:
            # a pod has its own network namespace (eth0...), unless it runs in the host's
            status = "info" if in_pod and not desc.kubernetes.host_network else "fail"
            out.append(
                Check(
                    status,
                    row,
                    "no such interface"
                    + (" in this pod's network namespace" if in_pod else "")
                    + "; NCCL/Gloo bootstrap would fail (network.bootstrap_interfaces)",
                )
            )
            continue
        down = [n.name for n in found if n.operstate == "down"]
        ok = [n.name for n in found if n.operstate != "down"]
        if not ok:
            out.append(Check("fail", row, f"{', '.join(down)} down"))
        else:
            out.append(Check("pass", row, ", ".join(f"{n.name} {n.operstate}" for n in found)))
    return out


def in_pod(environ: Mapping[str, str], fs: Sysfs) -> bool:
    """Running in a Kubernetes pod: the kubelet sets KUBERNETES_SERVICE_HOST in every container, and
    mounts the service-account token where one is granted."""
    return "KUBERNETES_SERVICE_HOST" in environ or fs.exists("/var/run/secrets/kubernetes.io")


def check_limits(
    desc: Descriptor, memlock: int | None, shm_path: str, which: Callable[[str], str | None], pod: bool = False
) -> list[Check]:
    out = []
    soft = memlock if memlock is not None else resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]
    rdma = desc.network.fabric in RDMA_FABRICS
    if soft == resource.RLIM_INFINITY:
        out.append(Check("pass", "ulimit.memlock", "unlimited"))
    else:
        why = "RDMA memory registration needs unlimited" if rdma else f"fine without RDMA ({desc.network.fabric})"
        out.append(Check("fail" if rdma else "info", "ulimit.memlock", f"{soft // 1024} KiB (ulimit -l); {why}"))
    try:
        st = os.statvfs(shm_path)
    except OSError as exc:
        out.append(Check("fail", "shm", f"{shm_path}: {exc.strerror}; NCCL's shared-memory transport needs it"))
    else:
        size = st.f_frsize * st.f_blocks
        gib = f"{size / 2**30:.1f} GiB"
        if pod:  # kubernetes.shm_size sizes a pod's memory-backed /dev/shm; a host's is its own
            want = quantity_bytes(desc.kubernetes.shm_size)
            out.append(
                Check(
                    "pass" if size >= want else "warn",
                    "shm",
                    f"{shm_path} {gib}"
                    + ("" if size >= want else f", smaller than kubernetes.shm_size {desc.kubernetes.shm_size}"),
                )
            )
        else:
            out.append(Check("pass", "shm", f"{shm_path} {gib} (not in a pod: kubernetes.shm_size not compared)"))
    path = which("numactl")
    out.append(
        Check(
            "pass" if path else "fail",
            "numactl",
            path or "not on PATH; the per-rank NUMA binding runs ranks under numactl",
        )
    )
    return out


def check_env(desc: Descriptor, environ: Mapping[str, str]) -> list[Check]:
    from ..lint import lint_environ

    status = {"error": "fail", "warning": "warn", "info": "info"}
    out = [
        Check(status[f.severity], f"env.{f.variable}", f"{f.code}: {f.message}" + (f"; fix: {f.fix}" if f.fix else ""))
        for f in lint_environ(environ, desc)
    ]
    return out or [Check("pass", "env", "no findings in the NCCL/PyTorch variables of this environment")]


def run(
    desc: Descriptor,
    *,
    sysfs_root: str = "/",
    backend=None,
    environ: Mapping[str, str] | None = None,
    memlock: int | None = None,
    shm_path: str = "/dev/shm",
    which: Callable[[str], str | None] = shutil.which,
) -> list[Check]:
    """Every check, in table order. ``backend``: a pynvml-like module (tests); ``memlock``: a
    RLIMIT_MEMLOCK soft limit to judge instead of this process's."""
    fs = Sysfs(sysfs_root)
    numa = sysfs.numa_cpus(fs)
    env = os.environ if environ is None else environ
    pod = in_pod(env, fs)
    gpus: list = []
    return (
        check_gpus(desc, fs, numa, backend, gpus)
        + check_numa(desc, numa)
        + check_rails(desc, fs)
        + check_pcie(desc, fs, gpus)
        + check_gdr(desc, fs)
        + check_bootstrap(desc, fs, pod)
        + check_limits(desc, memlock, shm_path, which, pod)
        + check_env(desc, env)
    )


def failed(checks: list[Check]) -> bool:
    return any(c.status == "fail" for c in checks)


def render_text(desc: Descriptor, checks: list[Check]) -> str:
    width = max(len(c.check) for c in checks)
    lines = [f"{'STATUS':<6}  {'CHECK':<{width}}  DETAIL"]
    lines += [f"{c.status:<6}  {c.check:<{width}}  {c.detail}" for c in checks]
    counts = {s: sum(c.status == s for c in checks) for s in STATUSES}
    lines.append("")
    lines.append(
        f"{desc.name}: "
        + ", ".join(f"{counts[s]} {s}" for s in STATUSES)
        + (" - FAILED" if counts["fail"] else " - ok")
    )
    return "\n".join(lines) + "\n"


def render_json(desc: Descriptor, checks: list[Check]) -> str:
    return (
        json.dumps(
            {
                "cluster": desc.name,
                "ok": not failed(checks),
                "counts": {s: sum(c.status == s for c in checks) for s in STATUSES},
                "checks": [asdict(c) for c in checks],
            },
            indent=2,
        )
        + "\n"
    )
