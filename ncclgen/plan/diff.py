"""What a change of tier or descriptor does to a plan: the env entries, the binding, the launch command.

`ncclgen diff` prints it for a reviewer of a descriptor change (text) or for tools (JSON).
"""

from __future__ import annotations

import json
import shlex

from .build import EnvVar, Plan


def diff_plans(a: Plan, b: Plan) -> dict:
    """What changes from plan ``a`` to plan ``b``: env entries, the binding, the launch command."""
    old, new = {e.name: e for e in a.env}, {e.name: e for e in b.env}
    kept = [n for n in new if n in old]
    return {
        "changed": [(old[n], new[n]) for n in kept if old[n].value != new[n].value],
        "added": [new[n] for n in new if n not in old],
        "removed": [old[n] for n in old if n not in new],
        "unchanged": sum(1 for n in kept if old[n].value == new[n].value),
        "binding": _binding_change(a, b),
        "command": (a.launch.command, b.launch.command) if a.launch.command != b.launch.command else None,
    }


def _binding_change(a: Plan, b: Plan) -> dict | None:
    """Binding switched on or off, or the local ranks whose map differs (all of them when the count does)."""
    ranks: list[int] = []
    if b.launch.bind and len(a.binding) != len(b.binding):
        ranks = [r.local_rank for r in b.binding]
    elif b.launch.bind:
        ranks = [y.local_rank for x, y in zip(a.binding, b.binding) if x != y]
    if a.launch.bind == b.launch.bind and not ranks:
        return None
    return {"from": a.launch.bind, "to": b.launch.bind, "ranks": ranks}


def _why(e: EnvVar) -> list[str]:
    return [f"    why: {' '.join(e.reason.split())}", f"    source: {e.source}"]


def render_diff(a: Plan, b: Plan, names: tuple[str, str]) -> str:
    """Text for reviewers; ``names`` label the sides (a file path when two files share a name)."""
    d = diff_plans(a, b)
    out = [
        f"ncclgen diff: {names[0]} tier {a.tier} -> {names[1]} tier {b.tier} "
        f"(workload {b.workload.name}, {b.launch.nodes} node(s))"
    ]
    for old, new in d["changed"]:
        out.append(f"~ {new.name}: {shlex.quote(old.value)} -> {shlex.quote(new.value)}    [{new.label()}]")
        out += _why(new)
    for e in d["added"]:
        out.append(f"+ {e.name}={shlex.quote(e.value)}    [{e.label()}]")
        out += _why(e)
    for e in d["removed"]:
        out.append(f"- {e.name}={shlex.quote(e.value)}    [{e.label()}]")
        out += _why(e)
    bind = d["binding"]
    if bind and bind["from"] != bind["to"]:
        out.append(
            f"~ binding: {'on' if bind['from'] else 'off'} -> {'on' if bind['to'] else 'off'}"
            f" ({'; '.join((b if bind['to'] else a).launch.applied_binding())}; `ncclgen explain` shows the map)"
        )
    elif bind:
        out.append(
            f"~ binding: local rank(s) {','.join(map(str, bind['ranks']))} bind to other CPUs, "
            "NUMA nodes or rails (`ncclgen explain` shows each map)"
        )
    if d["command"]:
        out.append(f"~ command: {shlex.join(d['command'][0])}")
        out.append(f"        -> {shlex.join(d['command'][1])}")
    out.append(
        f"{len(d['changed'])} changed, {len(d['added'])} added, {len(d['removed'])} removed, {d['unchanged']} unchanged"
    )
    return "\n".join(out) + "\n"


def diff_json(a: Plan, b: Plan, names: tuple[str, str]) -> str:
    d = diff_plans(a, b)

    doc = {
        "from": {"cluster": names[0], "tier": a.tier},
        "to": {"cluster": names[1], "tier": b.tier},
        "workload": b.workload.name,
        "changed": [
            {
                "name": n.name,
                "from": o.value,
                "to": n.value,
                "tier": n.tier,
                "origin": str(n.origin),
                "reason": n.reason,
                "source": n.source,
            }
            for o, n in d["changed"]
        ],
        "added": [e.as_json() for e in d["added"]],
        "removed": [e.as_json() for e in d["removed"]],
        "unchanged": d["unchanged"],
        "binding": d["binding"],
        "command": None if d["command"] is None else {"from": list(d["command"][0]), "to": list(d["command"][1])},
    }
    return json.dumps(doc, indent=2) + "\n"
