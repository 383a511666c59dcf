"""A descriptor's cross-field checks: small named checks sharing one :class:`Check` (its findings).

Each check reads one part of the descriptor and reports through ``c.fail`` / ``c.warn`` with the key
path of the value, so every problem is located at file:line:col. :func:`check` runs them in file order
and raises every error at once; warnings (mistakes that can be meant but almost always are typos) are
returned for the caller to print. The kubernetes section's checks are in kubecheck.py.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from .. import datapaths
from ..errors import Findings, UserError
from . import cpuset, kubecheck, sbatch
from .patterns import IFNAME

if TYPE_CHECKING:
    from .descriptor import Descriptor, Node
    from .yamlio import Document


class Check(Findings):
    """The findings of one descriptor's checks, and what several checks share: the cited source ids,
    and the NUMA nodes, GPUs and rails found so far."""

    def __init__(self, desc: Descriptor, doc: Document):
        super().__init__(doc.error)
        self.desc = desc
        self.doc = doc
        self.known = set(desc.sources)
        self.numa_cpus: dict[int, frozenset[int]] = {}
        self.seen_numa: dict[int, int] = {}
        self.seen_gpu: dict[int, int] = {}
        self.rails_of: dict[int, list[int]] = {}  # GPU index -> rail positions serving it

    def cite(self, path: tuple, source: str | None) -> None:
        if source is not None and source not in self.known:
            self.fail(
                (*path, "source"),
                f"source {source!r} is not an id in `sources` (known: {', '.join(sorted(self.known)) or 'none'})",
            )


def check(desc: Descriptor, doc: Document) -> list[UserError]:
    """Cross-field checks. Raises every error at once (errors.UserErrors, in file order); returns the
    warnings: mistakes that can be meant but almost always are typos, for the caller to print."""
    c = Check(desc, doc)
    _bootstrap_interfaces(c)
    _sources(c)
    _numa_nodes(c)
    _gpus(c)
    _rails(c)
    _software(c)
    _fabric(c)
    _slurm(c)
    kubecheck.check(c)
    _env_groups(c)
    return c.done()


def _bootstrap_interfaces(c: Check) -> None:
    """An empty list would render NCCL_SOCKET_IFNAME='=' (no interface); a ',' or '^' inside a name would
    change the list NCCL parses."""
    for where, names in (
        (("network",), c.desc.network.bootstrap_interfaces),
        (("kubernetes",), c.desc.kubernetes.bootstrap_interfaces),
    ):
        if names is not None and not names:
            c.fail(
                (*where, "bootstrap_interfaces"),
                "name at least one interface (an empty list would render NCCL_SOCKET_IFNAME='=')",
            )
        for i, ifname in enumerate(names or ()):
            if not re.fullmatch(IFNAME, ifname, re.ASCII):
                c.fail(
                    (*where, "bootstrap_interfaces", i),
                    f"{ifname!r} is not an interface name (at most 15 of A-Z a-z 0-9 _ . : @ -)",
                )


def _sources(c: Check) -> None:
    desc = c.desc
    if not desc.sources:
        c.fail(("sources",), "cite at least one source for the facts in this file")
    c.cite(("node",), desc.node.source)
    c.cite(("network",), desc.network.source)
    c.cite(("software",), desc.software.source)
    c.cite(("kubernetes",), desc.kubernetes.source)


def _numa_nodes(c: Check) -> None:
    node = c.desc.node
    owner: dict[int, int] = {}
    for i, n in enumerate(node.numa_nodes):
        path = ("node", "numa_nodes", i)
        if n.id in c.seen_numa:
            c.fail((*path, "id"), f"NUMA node {n.id} is declared twice")
        c.seen_numa.setdefault(n.id, i)
        c.cite(path, n.source)
        try:
            cpus = cpuset.parse(n.cpus)
        except ValueError as exc:
            c.fail((*path, "cpus"), str(exc))
            continue
        c.numa_cpus.setdefault(n.id, cpus)
        overlap = sorted(x for x in cpus if x in owner)
        if overlap:
            c.fail(
                (*path, "cpus"),
                f"CPU {overlap[0]} is also in NUMA node {owner[overlap[0]]}; NUMA CPU lists must not overlap",
            )
        for x in cpus:
            owner.setdefault(x, n.id)
    if not node.numa_nodes:
        c.fail(("node", "numa_nodes"), "declare at least one NUMA node")
    elif not c.errors and len(c.numa_cpus) == len(node.numa_nodes):
        _cpu_holes(node, c)


def _cpu_holes(node: Node, c: Check) -> None:
    """Warn when CPUs 0..max are not all in some NUMA node, or NUMA nodes differ in size.

    Both are what a cut-short list looks like: `0-47` where `0-47,96-143` was meant (the second
    hardware thread of each core is numbered after all the first ones on most x86 servers).
    """
    every = frozenset().union(*c.numa_cpus.values())
    missing = sorted(set(range(max(every) + 1)) - every)
    sizes = {i: len(cpus) for i, cpus in c.numa_cpus.items()}
    small = [i for i, n in enumerate(node.numa_nodes) if sizes[n.id] < max(sizes.values())]
    at = ("node", "numa_nodes", small[0] if small else 0, "cpus")
    if missing:
        c.warn(
            at,
            f"CPUs {cpuset.format(missing)} are in no NUMA node's list (a CPU list cut short, "
            "e.g. 0-47 where 0-47,96-143 was meant?)",
        )
    elif small:
        n = node.numa_nodes[small[0]]
        c.warn(
            at,
            f"NUMA node {n.id} has {sizes[n.id]} CPUs, another has {max(sizes.values())}: "
            "check this CPU list against /sys/devices/system/node/node*/cpulist",
        )


def _gpus(c: Check) -> None:
    node = c.desc.node
    if len(node.gpus) != node.gpus_per_node:
        c.fail(("node", "gpus"), f"gpus_per_node is {node.gpus_per_node} but {len(node.gpus)} GPUs are listed")
    seen_bus: dict[str, int] = {}
    for i, g in enumerate(node.gpus):
        path = ("node", "gpus", i)
        if g.index in c.seen_gpu:
            c.fail((*path, "index"), f"GPU {g.index} is listed twice")
        elif g.index >= node.gpus_per_node:
            c.fail((*path, "index"), f"GPU index {g.index} is out of range 0..{node.gpus_per_node - 1}")
        c.seen_gpu.setdefault(g.index, i)
        if g.numa not in c.seen_numa:
            c.fail((*path, "numa"), f"NUMA node {g.numa} is not declared in node.numa_nodes")
        if g.pci_bus_id is not None:
            bus = g.pci_bus_id.lower()
            if bus in seen_bus:
                c.fail(
                    (*path, "pci_bus_id"), f"PCI address {g.pci_bus_id} is also GPU {node.gpus[seen_bus[bus]].index}'s"
                )
            seen_bus.setdefault(bus, i)


def _rails(c: Check) -> None:
    net = c.desc.network
    storage = {s.name for s in net.storage if s.kind == "hca"}
    storage_netdevs = {s.name for s in net.storage if s.kind == "netdev"}
    seen_port: set[tuple] = set()
    netdev_owner: dict[str, str] = {}
    for i, r in enumerate(net.compute):
        path = ("network", "compute", i)
        c.cite(path, r.source)
        if r.hca is None and r.netdev is None:
            c.fail(path, "a rail needs an hca or a netdev")
            continue
        key = (r.hca or r.netdev, r.port)
        if key in seen_port:
            c.fail(path, f"{key[0]} port {r.port} is listed twice")
        seen_port.add(key)
        if r.hca in storage:
            c.fail((*path, "hca"), f"{r.hca} is listed both as a compute rail and as storage")
        if r.netdev is not None:
            if r.netdev in storage_netdevs:
                c.fail((*path, "netdev"), f"{r.netdev} is listed both as a compute rail and as storage")
            port = f"{r.hca}:{r.port}" if r.hca else r.netdev
            if r.netdev in netdev_owner and netdev_owner[r.netdev] != port:
                c.fail(
                    (*path, "netdev"),
                    f"interface {r.netdev} is also the netdev of {netdev_owner[r.netdev]}; one port has one interface",
                )
            netdev_owner.setdefault(r.netdev, port)
        _rail_gpus(c, i, path)
    for i, s in enumerate(net.storage):
        c.cite(("network", "storage", i), s.source)
    if not c.errors:
        _rail_layout(c)


def _rail_gpus(c: Check, i: int, path: tuple) -> None:
    r = c.desc.network.compute[i]
    if not r.gpus:
        c.fail((*path, "gpus"), "a rail serves at least one GPU")
    for j, gi in enumerate(r.gpus):
        if gi not in c.seen_gpu:
            c.fail((*path, "gpus", j), f"GPU {gi} is not in node.gpus")
        elif gi in r.gpus[:j]:
            c.fail((*path, "gpus", j), f"GPU {gi} is listed twice in this rail")
        elif i not in c.rails_of.setdefault(gi, []):
            c.rails_of[gi].append(i)
    if r.numa not in c.seen_numa:
        c.fail((*path, "numa"), f"NUMA node {r.numa} is not declared in node.numa_nodes")


def _rail_layout(c: Check) -> None:
    """Warn about rail layouts that run but are almost always a typo in network.compute."""
    desc, rails_of = c.desc, c.rails_of
    net = desc.network
    if not net.compute:
        return
    gpus = sorted(desc.node.gpus, key=lambda g: g.index)
    numa_of = {g.index: g.numa for g in gpus}
    for i, r in enumerate(net.compute):
        other = [g for g in r.gpus if numa_of.get(g, r.numa) != r.numa]
        if other:
            g = other[0]
            c.warn(
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
            c.warn(
                ("node", "gpus", pos),
                f"GPU {g} has no compute rail while GPU {gd} has "
                f"{len(rails_of[gd])} (network.compute[{rails_of[gd][1]}]): a typo in a rail's gpus?",
            )
        else:
            c.warn(
                ("node", "gpus", pos),
                f"GPU {g} has no compute rail (no network.compute entry lists "
                "it): its traffic goes through another GPU's NIC",
            )


def _software(c: Check) -> None:
    nccl = c.desc.software.nccl
    newest = kb_newest_nccl()
    if newest and _newer(nccl, newest):
        c.warn(
            ("software", "nccl"),
            f"NCCL {nccl} is newer than ncclgen's knowledge base (NCCL "
            f"{newest}): lint and the rules do not know the variables it added or "
            "dropped; check its release notes, or upgrade ncclgen",
        )
    torch = c.desc.software.torch
    newest = kb_newest("torch")
    if newest and _newer(torch.split("+")[0], newest):
        c.warn(
            ("software", "torch"),
            f"PyTorch {torch} is newer than ncclgen's knowledge base (PyTorch {newest}): lint and the rules do "
            "not know the variables it added or dropped; check its release notes, or upgrade ncclgen",
        )


def _fabric(c: Check) -> None:
    net = c.desc.network
    fabric = net.fabric
    if fabric in ("infiniband", "roce"):
        # a rail with neither an hca nor a netdev is already reported above
        if not net.compute or any(r.hca is None and r.netdev is not None for r in net.compute):
            c.fail(("network", "compute"), f"{fabric} needs compute rails with an hca each")
        if "storage" not in (c.doc.data.get("network") or {}):
            c.warn(
                ("network",),
                f"fabric {fabric} and no network.storage list: a storage or in-band HCA "
                "the node has is not kept away from NCCL; list it, or write `storage: []` "
                "if the node has none",
            )
    if fabric == "roce" and net.roce is None:
        c.fail(("network",), "fabric roce needs network.roce.gid_index (a number, or auto)")
    if fabric != "roce" and net.roce is not None:
        c.fail(("network", "roce"), f"a RoCE GID index has no meaning on fabric {fabric}")
    _efa(c)
    if fabric in ("tcpx", "tcpxo") and any(r.hca for r in net.compute):
        c.fail(("network", "compute"), f"{fabric} rails are interfaces (netdev), not HCAs")
    if net.roce is not None:
        c.cite(("network", "roce"), net.roce.source)
    if net.efa is not None:
        c.cite(("network", "efa"), net.efa.source)


def _efa(c: Check) -> None:
    net = c.desc.network
    if net.fabric == "efa":
        if net.efa is None:
            c.fail(("network",), "fabric efa needs network.efa.devices_per_node")
        if any(r.hca for r in net.compute):
            c.fail(
                ("network", "compute"),
                "EFA clusters declare no InfiniBand HCAs; EFA devices are counted in network.efa",
            )
    elif net.efa is not None:
        c.fail(("network", "efa"), f"network.efa is only for fabric efa, not {net.fabric}")


def _slurm(c: Check) -> None:
    slurm = c.desc.slurm
    gpu_request = (f"{slurm.gres_type}:" if slurm.gres_type else "") + str(c.desc.node.gpus_per_node)
    for key, value in slurm.extra_sbatch.items():
        try:
            sbatch.check(key, value, gpu_request=gpu_request)
        except sbatch.SbatchOptionError as e:
            c.fail(("slurm", "extra_sbatch", key), str(e))
    for i, mount in enumerate(slurm.container_mounts):
        if re.search(r"[\x00-\x1f\x7f]", mount):  # located here, not as a --container-mounts error at render
            c.fail(("slurm", "container_mounts", i), "a mount must not contain control characters (newline, tab, ...)")
        elif "," in mount:
            c.fail(
                ("slurm", "container_mounts", i),
                "a mount must not contain ',': pyxis --container-mounts separates mounts with it",
            )


def _env_groups(c: Check) -> None:
    for group in ("vendor_env", "env"):
        names: set[str] = set()
        for i, e in enumerate(getattr(c.desc, group)):
            if e.omit and group != "vendor_env":
                c.fail((group, i, "omit"), "omit is for vendor_env: leave the variable out of env instead")
            if e.omit and e.value is not None:
                c.fail((group, i, "value"), "an omitted variable has no value")
            if not e.omit and e.value is None:
                c.fail((group, i), "missing required key 'value' (a string)")
            if e.name in names:
                c.fail((group, i, "name"), f"{e.name} is set twice in {group}")
            names.add(e.name)
            problem = None if e.omit else env_name_problem(e)
            if problem:
                c.fail((group, i, "name"), problem)


def env_name_problem(e) -> str | None:
    """Why ``e``'s name may not be set from a file: it runs code, or needs the opt-in (load/envnames.py)."""
    from . import envnames

    return envnames.check(e.name, e.value, e.unchecked)


def kb_newest_nccl() -> str | None:
    """The newest NCCL release the knowledge base covers (see kb_newest)."""
    return kb_newest("nccl")


def kb_newest(reader: str) -> str | None:
    """The newest NCCL or PyTorch release the knowledge base covers: the last column of
    data/kb/<reader>-releases.tsv (generated from the PyPI wheels by tools/nccl_wheel_names.py and
    tools/torch_wheel_names.py). Read here, not from ncclgen.lint, because the load layer may not import the
    lint layer; tests/test_knowledge.py checks they agree."""
    try:
        with open(datapaths.data(os.path.join("kb", f"{reader}-releases.tsv")), encoding="utf-8") as fh:
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
