"""Check a triaged cause against the plan the job was launched with.

The plan comes from --cluster/--tier/--workload, or from the `# Regenerate: ncclgen slurm ...` line when
the job script is among the inputs (ncclgen's sbatch scripts carry it). The plan gives the fabric (so a
fix that only holds on RoCE is not offered on InfiniBand), its env (a signature's `plan:` entries say
which variable bears on its cause) and what NCCL should have chosen (the net, the bootstrap interface),
compared with what each node's INFO lines show.
"""

from __future__ import annotations

import itertools
import shlex

from .. import pipeline
from ..errors import UserError
from ..lint import knowledge as kb
from ..record import dataclass
from . import catalogue, compare, nodes
from .analyse import Result

GPUDIRECT_FABRICS = ("infiniband", "roce")
# fabrics whose plan puts NCCL's inter-node traffic on an RDMA net (IB verbs, or EFA through aws-ofi-nccl): NCCL's
# Socket net there is not the plan
RDMA_FABRICS = (*GPUDIRECT_FABRICS, "efa")
FABRIC_NAMES = {
    "infiniband": "on InfiniBand",
    "roce": "on RoCE",
    "tcp": "on TCP",
    "efa": "on EFA",
}  # NCCL's IB verbs transport: GDRDMA when the GPU and NIC allow


@dataclass(frozen=True)
class PlanInfo:
    env: dict[str, str]
    origin: str
    fabric: str


FLAGS = {"--cluster": "c", "-c": "c", "--tier": "t", "-t": "t", "--workload": "w", "-w": "w"}


def _from_regenerate(regenerate: str) -> tuple[str | None, int | None, str | None]:
    argv = shlex.split(regenerate)[2:]  # drop 'ncclgen slurm|k8s'
    opts = {FLAGS[flag]: value for flag, value in itertools.pairwise(argv) if flag in FLAGS}
    tier = opts.get("t", "")
    return opts.get("c"), int(tier) if tier.isdigit() else None, opts.get("w")


def plan_info(cluster, tier, workload, regenerate: str | None) -> PlanInfo | None:
    """The plan's env, fabric and how it was found; None when no plan is at hand."""
    if not (cluster or tier or workload) and regenerate:
        cluster, tier, workload = _from_regenerate(regenerate)
        origin = f"the job script's Regenerate: line ({regenerate})"
    elif cluster or tier or workload:
        origin = "--cluster/--tier/--workload"
    else:
        return None
    try:
        plan = pipeline.make_plan(pipeline.request(cluster, tier, workload))
    except UserError as exc:
        raise UserError(f"the plan to check against does not load ({origin}): {exc.message}") from None
    return PlanInfo(plan.env_dict(), origin, plan.cluster.network.fabric)


def notes(result: Result, env: dict[str, str]) -> list[str]:
    """Plan notes for the first failure and the context events (NCCL fell back to sockets, ...)."""
    out = []
    events = ([result.first] if result.first and result.status == "cause" else []) + result.contexts
    for ev in events:
        if ev.sig is None:
            continue
        for var, note in ev.sig.plan:
            if var in env:
                out.append(catalogue.fill(note, {**ev.groups, "value": env[var]}))
    return out


def _iface_planned(value: str, iface: str) -> bool:
    """NCCL_SOCKET_IFNAME semantics (src/misc/socket.cc): '^a,b' excludes prefixes, '=a' is exact, else prefixes."""
    exclude = value.startswith("^")
    body = value.lstrip("^")
    exact = body.startswith("=")
    names = [n for n in body.lstrip("=").split(",") if n]
    hit = any(iface == n if exact else iface.startswith(n) for n in names)
    return not hit if exclude else hit


def _hcas_outside(value: str, hcas: tuple[str, ...]) -> list[str]:
    """The HCAs NCCL used that NCCL_IB_HCA (the plan's value, NCCL's matchIfList via lint's kb.matches) excludes."""
    out = []
    for hca in hcas:
        dev, _, port = hca.partition(":")
        if not kb.matches(value, dev, int(port) if port.isdigit() else -1):
            out.append(hca)
    return out


def _host_findings(h: nodes.Host, plan: PlanInfo) -> list[compare.Finding]:
    out = []
    ifname, ib_hca = plan.env.get("NCCL_SOCKET_IFNAME"), plan.env.get("NCCL_IB_HCA")
    if plan.fabric in RDMA_FABRICS and h.net == "Socket":
        detail = f"Socket on {h.shown}, the plan's fabric is {plan.fabric}"
        out.append(compare.Finding("plan-net", detail, h.lines["net"], h.name))
    if ifname and h.iface and not _iface_planned(ifname, h.iface):
        detail = f"{h.iface} on {h.shown}, the plan sets NCCL_SOCKET_IFNAME={ifname}"
        out.append(compare.Finding("plan-iface", detail, h.lines["iface"], h.name))
    if ib_hca and h.hcas and (outside := _hcas_outside(ib_hca, h.hcas)):
        detail = f"{', '.join(outside)} on {h.shown}, the plan sets NCCL_IB_HCA={ib_hca}"
        out.append(compare.Finding("plan-hca", detail, h.lines["hcas"], h.name))
    return out


def findings(facts: nodes.Facts, plan: PlanInfo) -> list[compare.Finding]:
    """What NCCL chose on each node against what the plan says it should."""
    out = []
    for h in sorted(facts.hosts.values(), key=lambda h: h.name):
        out += _host_findings(h, plan)
    return out[:4]


def fix_for(sig: catalogue.Signature, fabric: str | None, groups: dict[str, str]) -> str:
    """The fix to offer: the one for the run's fabric when the signature has per-fabric fixes; with the fabric
    unknown, each under its fabric's name; never one for another fabric."""
    if not sig.fixes:
        return catalogue.fill(sig.fix, groups)
    chosen = [(f, text) for f, text in sig.fixes if fabric is None or f == fabric]
    if not chosen:
        return catalogue.fill(sig.fix or "no fix ncclgen knows for this on " + (fabric or "this fabric"), groups)
    if len(chosen) == 1:
        return catalogue.fill(chosen[0][1], groups)
    return " | ".join(f"{FABRIC_NAMES.get(f, f)}: {catalogue.fill(text, groups)}" for f, text in chosen)


def holds_on(sig: catalogue.Signature, fabric: str | None) -> bool:
    """False when the signature's cause cannot hold on the run's fabric (an IB verbs error on a TCP cluster)."""
    return not sig.fabrics or fabric is None or fabric in sig.fabrics
