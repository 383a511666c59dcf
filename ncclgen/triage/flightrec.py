"""Flight-recorder dumps: name the ranks that never joined the collective the others wait on.

Dumps are torch's pickles (TORCH_FR_DUMP_TEMP_FILE, default prefix /tmp/nccl_trace_rank_), read with
torch's own loader (torch.distributed.flight_recorder.components.loader.read_dump, the code fr_trace.py
runs) when torch is installed; without torch they are not read, and the report says so. From each
rank's entries: the oldest collective of a process group that is not completed is the one that rank
waits on; a member of that group whose own record stops before that sequence number, or that left
no dump at all (a killed process writes none), never joined it. Unpickling runs code from the file:
read only dumps your own job wrote.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path


def _load(dumps: list[Path]):
    try:
        from torch.distributed.flight_recorder.components.loader import read_dump
    except ImportError:
        return None
    out = []
    for f in dumps:
        prefix = re.sub(r"\d+$", "", f.name)
        out.append(read_dump(str(f.parent / prefix), str(f)))
    return out


def analyse(dumps: list[Path]) -> dict:
    ranks_data = _load(dumps)
    if ranks_data is None:
        return {"read": False, "summary": f"{len(dumps)} dump(s) not read: torch is not installed here"}
    members: dict[str, set[int]] = {}
    waits: dict[str, tuple[int, str, set[int]]] = {}  # pg -> (seq, op, ranks waiting)
    last: dict[tuple[str, int], int] = {}
    for d in ranks_data:
        for pg, cfg in d["pg_config"].items():
            members.setdefault(pg, set()).update(ast.literal_eval(cfg.get("ranks", "[]")) or [])
        for e in d["entries"]:
            pg = e["process_group"][0]
            seq = int(e.get("collective_seq_id", 0))
            last[(pg, d["rank"])] = max(seq, last.get((pg, d["rank"]), 0))
            if e.get("state") != "completed":
                cur = waits.get(pg)
                if cur is None or seq < cur[0]:
                    waits[pg] = (seq, e.get("profiling_name", "?"), {d["rank"]})
                elif seq == cur[0]:
                    cur[2].add(d["rank"])
    dumped = {d["rank"] for d in ranks_data}
    findings: list[dict] = []
    for pg, (seq, op, waiting) in sorted(waits.items()):
        absent = sorted(r for r in members.get(pg, set()) if r not in dumped)
        behind = sorted(r for r in members.get(pg, set()) & dumped if last.get((pg, r), 0) < seq)
        findings.append(
            {"pg": pg, "op": op, "seq": seq, "waiting": sorted(waiting), "no_dump": absent, "behind": behind}
        )
    parts = []
    f: dict
    for f in findings:
        never = f["behind"] + f["no_dump"]
        if never:
            parts.append(
                f"rank(s) {', '.join(map(str, never))} never joined {f['op']} SeqNum={f['seq']} in process group "
                f"{f['pg']} (ranks {', '.join(map(str, f['waiting']))} waited"
                + (f"; no dump from {', '.join(map(str, f['no_dump']))}" if f["no_dump"] else "")
                + ")"
            )
    summary = "; ".join(parts) or f"{len(dumps)} dump(s) read: no collective left waiting on a missing rank"
    return {"read": True, "summary": summary, "collectives": findings}
