"""Print a triage result as text (for people) or JSON (for tools): the same facts either way."""

from __future__ import annotations

import json

from . import catalogue
from .analyse import Result, counted
from .events import Event

WHY = {
    "cause": "first failure",
    "unclassified": "a failure ncclgen cannot classify; the earliest error line",
    "clean": "no failure found",
}


def event_data(ev: Event) -> dict:
    data = {
        "time": ev.time,
        "node": ev.node,
        "rank": ev.rank,
        "line": ev.line.text,
        "where": ev.where,
        "signature": ev.sig.id if ev.sig else None,
    }
    if "NCCL WARN " in ev.line.text and (src := catalogue.nccl_source(ev.line.text.split("NCCL WARN ", 1)[1])):
        data["nccl_source"] = f"NVIDIA/nccl {src[1]}"
    return data


def as_data(result: Result, files: int, plan: tuple[dict, str] | None, plan_notes: list[str], fr: dict | None) -> dict:
    data: dict = {"status": result.status, "files": files, "lines_kept": result.lines_kept}
    if result.first is not None:
        data["first"] = event_data(result.first)
        sig = result.first.sig
        if result.status == "cause" and sig is not None:
            data["cause"] = catalogue.fill(sig.cause, result.first.groups)
            data["fix"] = catalogue.fill(sig.fix, result.first.groups)
            data["sources"] = list(sig.sources)
    data["then"] = [
        {"summary": counted(text, g), "lines": g.lines, "first": None if g.includes_first else event_data(g.first)}
        for text, g in result.groups
    ]
    data["plan"] = {"from": plan[1], "notes": plan_notes} if plan else None
    data["flight_recorder"] = fr
    return data


def as_json(data: dict) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def as_text(data: dict) -> str:
    out = []
    status = data["status"]
    first = data.get("first") or {}
    if status == "clean":
        out.append(
            f"no failure found: {data['files']} file(s), {data['bytes_read']} bytes read, "
            f"{data['lines_kept']} line(s) matched a signature or error marker"
        )
    else:
        out.append(f"{WHY[status]}: {_where(first)}")
        out.append(f"  {first['line']}")
        out.append(f"  at {first['where']}" + (f" ({first['nccl_source']})" if first.get("nccl_source") else ""))
        if status == "cause":
            out.append(f"cause: {data['cause']}")
            out.append(f"fix:   {data['fix']}")
            out.append("source: " + "; ".join(data["sources"]))
        else:
            out.append("cause: not classified (no signature in ncclgen/data/triage/signatures.yaml matches a root)")
    for item in data["then"]:
        at = f" (first at {item['first']['where']})" if item["first"] else ""
        out.append(f"then {item['summary']}{at}")
    if data["plan"]:
        for note in data["plan"]["notes"]:
            out.append(f"plan: {note}")
        if not data["plan"]["notes"]:
            out.append(f"plan: checked against {data['plan']['from']}: nothing in the plan bears on this")
    fr = data.get("flight_recorder")
    if fr:
        out.append(f"flight recorder: {fr['summary']}")
    return "\n".join(out) + "\n"


def _where(ev: dict) -> str:
    parts = [ev["time"] or "no time stamp", f"node {ev['node'] or '?'}", f"rank {ev['rank'] or '?'}"]
    return ", ".join(parts)
