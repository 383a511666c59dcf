"""Print a triage result as text (for people) or JSON (for tools): the same facts either way."""

from __future__ import annotations

import json

from . import benchtable, catalogue, nodes, overrides, plancheck, program, runstate
from .analyse import ALONE, Result, counted, order, quotes
from .events import Event

WHY = {
    "cause": "first failure",
    "slow": "slow run",
    "mismatch": "nodes set up differently, with no error line",
    "program": "the program's own exception",
    "unclassified": "a failure ncclgen cannot classify; the first line it reads as one",
    "hang": "a hang with no error line",
    "unfinished": "no error line, and the logs end before the run did (a hang there, or a log cut short)",
    "clean": "no failure found",
}
# A clean read of logs that do not show the run's end: what was checked, and what it cannot tell apart.
NO_END = (
    "end of run: not in these logs (no line ncclgen reads as a finished run: NCCL's 'Destroy COMPLETE', "
    "nccl-tests' closing lines); a run that hung with no error line reads the same"
)
NET_UNSEEN = (
    "net: no line says which network NCCL used between nodes (NCCL_DEBUG unset or below INFO): TCP sockets on an "
    "RDMA fabric (a container without /dev/infiniband or IPC_LOCK, a net plugin not loaded) run slower and say "
    "nothing; to see it: NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET, then `ncclgen triage` on the log"
)
# After the NCCL path settings the job forced (overrides.seen), in a run that did not end well
OVERRIDES = (
    "(set by the job's environment, not NCCL's own choice): a hang or timeout with them is often theirs; rerun once "
    "without them (ncclgen explain says which the plan sets, and why)"
)
# What to collect next when the logs do not name the rank that stopped first.
COLLECT = (
    "with PyTorch, read the flight recorder's dumps (the last collectives of every rank): a job ncclgen rendered "
    "writes them to the folder `ncclgen explain` names (TORCH_FR_DUMP_TEMP_FILE); otherwise PyTorch writes "
    "$HOME/.cache/torch/comm_lib_trace_rank_N on a timeout (seen with PyTorch 2.11; set "
    "TORCH_NCCL_DUMP_ON_TIMEOUT=1 where it is off); `ncclgen triage` on the dumps names the ranks that never "
    "joined; with any framework (JAX has no flight recorder), NCCL_DEBUG=INFO on every process shows each rank's "
    "last NCCL setup line, and `py-spy dump --native --pid PID` (or gdb) on a stuck rank shows where it waits"
)
COLLECT_SOURCE = "https://docs.pytorch.org/docs/stable/torch_nccl_environment_variables.html"
# Ranks that stop in NCCL's setup with no error line: what holds connections there without failing them.
IN_SETUP = (
    "; ranks that stop in NCCL's setup: on Kubernetes, a service-mesh sidecar (Istio's istio-proxy) in the pods "
    'intercepts their TCP connections; run the job\'s pods without it (annotation sidecar.istio.io/inject: "false")'
)
IN_SETUP_SOURCE = (
    "https://github.com/NVIDIA/nccl/issues/1638 (the Istio sidecar held NCCL's setup; without it the run worked)"
)
# Every rank in the logs on one host: NCCL's traffic there is GPU peer-to-peer (P2P/IPC), which the IOMMU or PCIe
# ACS can break without an error, so the first thing to rule out is P2P.
ONE_HOST = (
    "; all ranks in these logs are on one host: a hang there in or right after NCCL's setup is most often GPU "
    "peer-to-peer broken by the IOMMU or PCIe ACS: rerun once with NCCL_P2P_DISABLE=1 (if it then runs, P2P is the "
    "cause), then boot with iommu=pt or turn ACS off on the PCIe switches (`nvidia-smi topo -p2p r` shows what P2P "
    "the driver allows)"
)
# Every timeout at SeqNum=1: the process group's first collective (PyTorch numbers a group's collectives from 1) never
# completed, so no data ever passed: a rank that never reached it, or a transport that never carried data.
FIRST_COLLECTIVE = (
    "; the timeouts are all at SeqNum=1, the group's first collective: a rank of the group never reached it (it "
    "failed, or waits elsewhere), or NCCL's connections never carried data: on one host GPU peer-to-peer (rerun once "
    "with NCCL_P2P_DISABLE=1: if it then runs, P2P is broken: the IOMMU, PCIe ACS, or GPUs without peer access), "
    "across hosts the network path NCCL_DEBUG=INFO's channel lines show"
)
FIRST_COLLECTIVE_SOURCE = (
    "pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (seqCollective_: a group's collectives from 1)"
)
# Timeouts in different operations: the ranks were not all in one collective. With no rank failed first, either
# the ranks issued different collectives (one skipped or added one) or two threads used one communicator at once.
MIXED = (
    "; the timeouts are in different collectives ({shown}): unless a rank failed first, the ranks did not issue "
    "the same collectives in the same order on a process group (a collective called on some ranks only, a "
    "data-dependent branch), or two threads used one communicator at once, which NCCL does not allow; the flight "
    "recorder's dumps show each rank's sequence"
)
MIXED_SOURCE = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/usage/threadsafety.html (not allowed: NCCL "
    "operations issued to one communicator in parallel from several threads); https://github.com/NVIDIA/nccl/issues/1610 "
    "(two threads' all-to-alls on one communicator deadlocked the ranks)"
)
ONE_HOST_SOURCE = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs"
)


def event_data(ev: Event) -> dict:
    data = {
        "time": ev.time,
        "node": ev.node,
        "rank": ev.rank,
        "line": ev.line.text,
        "where": ev.where,
        "signature": ev.sig.id if ev.sig else None,
    }
    if ev.groups.get("nccl_where"):
        data["nccl_source"] = f"NVIDIA/nccl {ev.groups['nccl_where']}"
    elif "NCCL WARN " in ev.line.text and (src := catalogue.nccl_source(ev.line.text.split("NCCL WARN ", 1)[1])):
        data["nccl_source"] = f"NVIDIA/nccl {src[1]}"
    elif ev.groups.get("plugin_source"):
        data["plugin_source"] = ev.groups["plugin_source"]
    if ev.groups.get("raised_in"):
        data["raised_in"] = ev.groups["raised_in"]
    if ev.groups.get("called_from"):
        data["called_from"] = ev.groups["called_from"]
    return data


def _hang(result: Result) -> dict | None:
    """What the logs show last when no line names a cause: unfinished NCCL inits and the collectives the
    ranks timed out in, with what to collect next. `certain`: a timeout, ranks behind others that completed
    init, collectives or a Python stack dump, rather than only a log that ends before the run's end."""
    timeouts = [(text, g) for text, g in result.groups if _timeout(g.first)]
    first_timeout = result.first is not None and _timeout(result.first)
    incomplete = runstate.unfinished(result.facts)
    stopped = runstate.last_collectives(result.facts)
    early = runstate.ends_early(result.facts) if result.status == "clean" else []  # an error line ends it otherwise
    dump = result.facts.dumps.says() if result.status == "clean" else None
    certain = bool(timeouts or first_timeout or _behind(result.facts, incomplete) or stopped or dump)
    if (result.status not in ("unclassified", "clean") and not _alone(result.first)) or not (
        certain or early or incomplete
    ):
        return None
    last = _own_collective(result, timeouts) + [counted(text, g) for text, g in timeouts] + stopped
    last += [dump] if dump else []
    return {
        "certain": certain,
        "init_incomplete": incomplete[:32],
        "ends_early": early[:32],
        "last": last[:16],
        **_collect(bool(incomplete or early), nodes.one_host(result.facts), _collectives(result, timeouts)),
    }


def _own_collective(result: Result, timeouts: list) -> list[str]:
    """The first failure's own collective, beside the others': timeouts of several process groups (an all-to-all and
    an all-reduce) are each a collective some rank never reached."""
    first = result.first
    if first is None or first.sig is None or not _timeout(first) or _same_collective(first, timeouts):
        return []
    return [catalogue.fill(first.sig.then.replace("{n} ranks", "rank " + (first.rank or "?")), first.groups)]


def _behind(facts: nodes.Facts, incomplete: list[str]) -> bool:
    """Ranks without Init COMPLETE in a log that holds every START line: behind the others, a hang (in an excerpt
    that left other ranks' START lines out, their COMPLETE lines may be left out too)."""
    return bool(incomplete) and not runstate.cut_out(facts)


def _alone(ev: Event | None) -> bool:
    """A cause read from the timeouts alone (analyse.ALONE): it still leaves what to collect next."""
    return ev is not None and ev.sig is not None and ev.sig.id in ALONE


def _same_collective(ev: Event, timeouts: list) -> bool:
    """A group of timeouts is already in the same collective (operation and sequence number) as ``ev``."""
    key = (ev.groups.get("op"), ev.groups.get("seq"))
    return any((g.first.groups.get("op"), g.first.groups.get("seq")) == key for _text, g in timeouts)


def _collectives(result: Result, timeouts: list) -> set[tuple[str, str]]:
    """(operation, sequence number) of every timeout the logs show."""
    events = [g.first for _text, g in timeouts]
    if result.first is not None and _timeout(result.first):
        events.append(result.first)
    return {(ev.groups.get("op") or "?", ev.groups.get("seq") or "?") for ev in events}


def _collect(in_setup: bool, one_host: bool = False, colls: frozenset | set = frozenset()) -> dict[str, str]:
    """What to collect next for a hang, and where that advice comes from; more when ranks stopped in setup, the P2P
    test when every rank is on one host, what a first collective that never completed means, and what timeouts
    in different collectives (``colls``: (operation, sequence number)) may mean."""
    first = {seq for _op, seq in colls} == {"1"}
    parts = [(COLLECT, COLLECT_SOURCE)]
    parts += [(IN_SETUP, IN_SETUP_SOURCE)] if in_setup else []
    parts += [(FIRST_COLLECTIVE, FIRST_COLLECTIVE_SOURCE)] if first else []
    if len({op for op, _seq in colls if op != "?"}) > 1:  # a timeout line without its operation says nothing here
        shown = ", ".join(f"{op} SeqNum={seq}" for op, seq in sorted(colls)[:4] if op != "?")
        parts.append((MIXED.format(shown=shown), MIXED_SOURCE))
    parts += [(ONE_HOST, ONE_HOST_SOURCE)] if one_host and not first else []
    return {"collect_next": "".join(t for t, _s in parts), "source": "; ".join(s for _t, s in parts)}


def _timeout(ev: Event) -> bool:
    """A line saying a rank waited too long (a watchdog or Gloo timeout): what a hang leaves."""
    timeouts = ("watchdog-timeout", "watchdog-start-timeout", "watchdog-stack", "watchdog-stuck", "gloo-timeout")
    return ev.sig is not None and ev.sig.id in timeouts


def as_data(
    result: Result, files: int, plan, plan_notes: list[str], fr: dict | None, fabric: str | None = None
) -> dict:
    hang = _hang(result)
    data: dict = {"status": _status(result, hang, fr), "files": files, "lines_kept": result.lines_kept}
    data["fabric"] = {
        "name": fabric,
        "from": ("the plan" if plan else "the logs' HCA link layer or IPoIB interfaces") if fabric else None,
    }
    if result.first is not None:
        data.update(_first(result, hang, fabric))
    data["then"] = [
        {
            "summary": counted(text, g),
            "lines": g.lines,
            "first": None if g.includes_first else event_data(g.first),
            # a symptom printed before the first failure (an exception's summary above its cause): not "then"
            "before_first": result.first is not None and order(g.first) < order(result.first),
            "quotes_first": quotes(g.first, result.first),
        }
        for text, g in result.groups
    ]
    data["findings"] = [
        {"class": f.sig.id, "detail": f.groups.get("detail"), "where": f.where}
        for f in result.findings
        if f is not result.first and f.sig is not None
    ]
    data["notes"] = [
        {"class": ev.sig.id, "says": catalogue.fill(ev.sig.then, ev.groups), "where": ev.where}
        for ev in result.notes
        if ev.sig is not None
    ]
    data["nodes"] = runstate.as_data(result.facts)
    data["run_end_seen"] = result.facts.success
    data["net_unseen"] = data["status"] in ("clean", "unfinished") and nodes.net_unseen(result.facts)
    data["hang"] = hang
    data["overrides"] = overrides.seen(result.facts, data["status"])
    data["plan"] = {"from": plan.origin, "notes": plan_notes} if plan else None
    data["flight_recorder"] = fr
    return data


def _first(result: Result, hang: dict | None, fabric: str | None) -> dict:
    """The first failure, with its cause and fix: a cause class's, a symptom's words, or the program's own."""
    ev = result.first
    assert ev is not None
    data: dict = {"first": event_data(ev)}
    sig = ev.sig
    if result.status in ("cause", "slow", "mismatch", "unfinished") and sig is not None:
        data["cause"] = catalogue.fill(sig.cause, ev.groups)
        data["fix"] = plancheck.fix_for(sig, fabric, ev.groups)
        data["sources"] = list(sig.sources)
    elif result.status == "unclassified" and sig is not None:
        # only symptoms: what the line says and what its signature asks to collect for the cause (a hang's
        # own collect-next line, from the ranks' last lines, replaces the latter)
        says = catalogue.fill(sig.cause, ev.groups)
        data["symptom"] = {"says": says, "collect_next": None if hang else sig.fix}
    elif result.status == "unclassified" and (own := program.read(ev)) is not None:
        data.update(status="program", program=own, cause=program.cause(own), fix=program.fix(own))
        data["sources"] = program.sources(own)
    return data


def _status(result: Result, hang: dict | None, fr: dict | None) -> str:
    """A clean read becomes a hang when the logs or a rank's flight recorder show a collective left waiting,
    and 'unfinished' when init began and nothing shows the run ended (hung, or cut short)."""
    if result.status != "clean":
        return result.status
    if (hang and hang["certain"]) or (fr and fr.get("collectives")):
        return "hang"
    return "unfinished" if hang else "clean"


def as_json(data: dict) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def as_text(data: dict) -> str:
    out = _head(data)
    for item in data["then"]:
        at = f" (first at {item['first']['where']})" if item["first"] else ""
        lead = "the same error:" if item["quotes_first"] else "before it" if item["before_first"] else "then"
        out.append(f"{lead} {item['summary']}{at}")
    for f in data["findings"]:
        out.append(f"also: {f['class']}: {f['detail']} ({f['where']})")
    for n in data["notes"]:
        out.append(f"note: {n['says']} ({n['where']})")
    if data["fabric"]["name"]:
        out.append(f"fabric: {data['fabric']['name']} (from {data['fabric']['from']}; fixes offered for it only)")
    out += _nodes_text(data["nodes"])
    if data["net_unseen"]:
        out.append(NET_UNSEEN)
    out += _overrides_text(data["overrides"])
    if data["hang"]:
        for who in data["hang"]["init_incomplete"]:
            out.append(f"hang: {who} never printed Init COMPLETE")
        for what in data["hang"]["ends_early"]:
            # past init (rows printed): only the table's end is missing
            alone = what == benchtable.TABLE_STOPS or what.startswith(runstate.LIGHTNING_SHORT)
            tail = "" if alone else "; no rank printed Init COMPLETE or an end of the run"
            out.append(f"ends early: {what}{tail}")
        for item in data["hang"]["last"]:
            out.append(f"last: {item}")
        unsure = "" if data["hang"]["certain"] else "if it hung: "
        out.append(f"collect next: {unsure}{data['hang']['collect_next']}")
    if data["plan"]:
        for note in data["plan"]["notes"]:
            out.append(f"plan: {note}")
        if not data["plan"]["notes"]:
            out.append(f"plan: checked against {data['plan']['from']}: nothing in the plan bears on this")
    fr = data.get("flight_recorder")
    if fr:
        out.append(f"flight recorder: {fr['summary']}")
    return "\n".join(out) + "\n"


def _head(data: dict) -> list[str]:
    status = data["status"]
    first = data.get("first") or {}
    if status in ("clean", "hang", "unfinished") and not first:
        head = [
            f"{WHY[status]}: {data['files']} file(s), {data['bytes_read']} bytes read, "
            f"{data['lines_kept']} line(s) kept to read (a signature's key, an error marker, an NCCL or stack-dump fact)"
        ]
        return head + ([NO_END] if status == "clean" and not data["run_end_seen"] else [])
    out = [f"{WHY[status]}: {_where(first)}", f"  {first['line']}"]
    source = first.get("nccl_source") or first.get("plugin_source")
    out.append(f"  at {first['where']}" + (f" ({source})" if source else ""))
    if "cause" in data:
        out.append(f"cause: {data['cause']}")
        out.append(f"fix:   {data['fix']}")
        out.append("source: " + "; ".join(data["sources"]))
    else:
        out.append("cause: not classified (no cause class in ncclgen/data/triage/ matches a root)")
        if first.get("raised_in"):
            out.append(f"raised in: {first['raised_in']} (the innermost frame of its traceback: whose code raised it)")
        if first.get("called_from"):
            out.append(
                f"called from: {first['called_from']} (its innermost frame outside PyTorch and Python's library)"
            )
        if symptom := data.get("symptom"):
            out.append(f"it says: {symptom['says']}")
            if symptom["collect_next"]:
                out.append(f"collect next: {symptom['collect_next']}")
    return out


def _overrides_text(names: list[str]) -> list[str]:
    return [f"overrides: {', '.join(names)} {OVERRIDES}"] if names else []


def _nodes_text(rows: list[dict]) -> list[str]:
    if len(rows) < 2:
        return []
    out = []
    for r in rows[:16]:
        gdr = f"{r['gdrdma_channels']}/{r['net_channels']} GDRDMA" if r["net_channels"] else "no net channels"
        hcas = ",".join(r["hcas"]) or "-"
        plugin = f", plugin {r['plugin']}" if r["plugin"] else ""
        out.append(
            f"node {r['node']}: NCCL {r['nccl'] or '?'}, net {r['net'] or '?'}{plugin}, bootstrap {r['bootstrap'] or '?'}, HCAs {hcas}, {gdr}"
        )
    return out


def _where(ev: dict) -> str:
    parts = [ev["time"] or "no time stamp", f"node {ev['node'] or '?'}", f"rank {ev['rank'] or '?'}"]
    return ", ".join(parts)
