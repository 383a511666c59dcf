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
        prefix = re.sub(r"\d+$", "", f.name)  # torch's loader takes the rank from the name after it
        try:
            out.append(read_dump(prefix, str(f)))
        except Exception as e:
            raise DumpError(
                f"{f}: not a flight-recorder dump torch {_torch_version()} can read ({type(e).__name__}: {e})"
            ) from e
    return out


class DumpError(Exception):
    """A dump torch's loader could not read."""


def _torch_version() -> str:
    import torch

    return str(torch.__version__)


def _pending(entries: list[dict]) -> list[tuple[str, int, str]]:
    """(process group, sequence number, op) of each collective the rank had not completed. Gloo's records
    (torch 2.13) stay 'scheduled' even when done, so there only a group's last collective counts as pending:
    the one a hung rank is blocked in."""
    out: list[tuple[str, int, str]] = []
    gloo_last: dict[str, tuple[int, str]] = {}
    for e in entries:
        pg, seq, op = e["process_group"][0], int(e.get("collective_seq_id", 0)), e.get("profiling_name", "?")
        if op.startswith("gloo:"):
            if seq >= gloo_last.get(pg, (-1, ""))[0]:
                gloo_last[pg] = (seq, op)
        elif e.get("state") != "completed":
            out.append((pg, seq, op))
    return out + [(pg, seq, op) for pg, (seq, op) in gloo_last.items()]


def analyse(dumps: list[Path]) -> dict:
    try:
        ranks_data = _load(dumps)
    except DumpError as err:
        return {"read": False, "summary": f"{len(dumps)} dump(s) not read: {err}"}
    if ranks_data is None:
        return {"read": False, "summary": f"{len(dumps)} dump(s) not read: torch is not installed here"}
    findings = _findings(ranks_data)
    summary = "; ".join(_describe(f) for f in findings)
    return {
        "read": True,
        "summary": summary or f"{len(dumps)} dump(s) read: no collective left waiting on a missing rank",
        "collectives": findings,
    }


def _findings(ranks_data: list[dict]) -> list[dict]:
    """Per process group: the oldest collective some rank waits on, who waits, who is behind or left no dump."""
    members: dict[str, set[int]] = {}
    waits: dict[str, tuple[int, str, set[int]]] = {}  # pg -> (seq, op, ranks waiting)
    last: dict[tuple[str, int], int] = {}
    for d in ranks_data:
        for pg, cfg in d["pg_config"].items():
            members.setdefault(pg, set()).update(ast.literal_eval(cfg.get("ranks", "[]")) or [])
        for entry in d["entries"]:
            key = (entry["process_group"][0], d["rank"])
            last[key] = max(int(entry.get("collective_seq_id", 0)), last.get(key, 0))
        for pg, seq, op in _pending(d["entries"]):
            cur = waits.get(pg)
            if cur is None or seq < cur[0]:
                waits[pg] = (seq, op, {d["rank"]})
            elif seq == cur[0]:
                cur[2].add(d["rank"])
    dumped = {d["rank"] for d in ranks_data}
    out = []
    for pg, (seq, op, waiting) in sorted(waits.items()):
        # gloo's dumps (torch 2.13) key their one process group by an empty name, their entries by its id
        group = members.get(pg) or (members.get("", set()) if len(members) == 1 else set())
        absent = sorted(r for r in group if r not in dumped)
        behind = sorted(r for r in group & dumped if last.get((pg, r), 0) < seq)
        out.append({"pg": pg, "op": op, "seq": seq, "waiting": sorted(waiting), "no_dump": absent, "behind": behind})
    return out


def _describe(f: dict) -> str:
    """One finding in words: the ranks that never joined, or a collective every member joined that hung."""
    waited = ", ".join(map(str, f["waiting"]))
    never = f["behind"] + f["no_dump"]
    if not never:
        return (
            f"{f['op']} SeqNum={f['seq']} in process group {f['pg']} did not complete though every member joined "
            f"it (ranks {waited} waited): the collective itself hung (network, GPU kernel), not a missing rank"
        )
    no_dump = f"; no dump from {', '.join(map(str, f['no_dump']))}" if f["no_dump"] else ""
    return (
        f"rank(s) {', '.join(map(str, never))} never joined {f['op']} SeqNum={f['seq']} in process group "
        f"{f['pg']} (ranks {waited} waited{no_dump})"
    )
