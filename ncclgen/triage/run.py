"""triage end to end: read -> classify -> pick the first failure -> check the plan -> report."""

from __future__ import annotations

from ..errors import UserError
from . import flightrec, plancheck, reader, report
from .analyse import Accumulator

EXIT = {"cause": 0, "clean": 0, "unclassified": 1}


def analyse(paths: list[str], progress: bool = True):
    logs, dumps = reader.expand(paths)
    if not logs and not dumps:
        raise UserError(f"no files to read under {', '.join(paths)}")
    bar = reader.Progress(reader.total_size(logs)) if progress else None
    acc = Accumulator()
    try:
        for line in reader.scan(logs, bar):
            acc.add(line)
    finally:
        if bar:
            bar.close()
    return acc.result(), logs, dumps


def triage(paths: list[str], cluster=None, tier=None, workload=None, fmt: str = "text") -> tuple[str, int]:
    result, logs, dumps = analyse(paths)
    plan = plancheck.plan_env(cluster, tier, workload, result.regenerate)
    notes = plancheck.notes(result, plan[0]) if plan else []
    fr = flightrec.analyse(dumps) if dumps else None
    data = report.as_data(result, len(logs) + len(dumps), plan, notes, fr)
    data["bytes_read"] = reader.total_size(logs)
    text = report.as_json(data) if fmt == "json" else report.as_text(data)
    return text, EXIT[result.status]
