"""triage end to end: read -> classify -> compare nodes and the plan -> pick the first failure -> report."""

from __future__ import annotations

from ..errors import UserError
from . import compare, flightrec, plancheck, reader, report, runstate
from .analyse import Accumulator

EXIT = {"cause": 0, "clean": 0, "slow": 0, "mismatch": 0, "unclassified": 1, "program": 1, "hang": 1, "unfinished": 0}


def scan(paths: list[str], progress: bool = True) -> tuple[Accumulator, list, list]:
    logs, dumps = reader.expand(paths)
    if not logs and not dumps:
        raise UserError(f"no files to read under {', '.join(paths)}")
    bar = reader.Progress(reader.total_size(logs)) if progress else None
    acc = Accumulator()
    try:
        for line in reader.scan(logs, bar):
            for part in reader.split_joined(line):
                acc.add(part)
    finally:
        if bar:
            bar.close()
    acc.facts.settle()
    return acc, logs, dumps


def analyse(paths: list[str], cluster=None, tier=None, workload=None, progress: bool = True):
    """(result, plan, fabric, logs, dumps): the plan (from the options or the job script's Regenerate: line)
    decides the fabric; without one, the HCAs' link layer in the logs does."""
    acc, logs, dumps = scan(paths, progress)
    plan = plancheck.plan_info(cluster, tier, workload, acc.regenerate)
    fabric = plan.fabric if plan else runstate.fabric(acc.facts)
    found = compare.findings(acc.facts, planned_gdr=bool(plan and plan.fabric in plancheck.GPUDIRECT_FABRICS))
    if plan:
        found += plancheck.findings(acc.facts, plan)
    events = [compare.evidence(f, acc.facts) for f in found]
    events = [e for e in events if e.sig and plancheck.holds_on(e.sig, fabric)]
    return acc.result(events), plan, fabric, logs, dumps


def triage(paths: list[str], cluster=None, tier=None, workload=None, fmt: str = "text") -> tuple[str, int]:
    result, plan, fabric, logs, dumps = analyse(paths, cluster, tier, workload)
    notes = plancheck.notes(result, plan.env) if plan else []
    fr = flightrec.analyse(dumps) if dumps else None
    data = report.as_data(result, len(logs) + len(dumps), plan, notes, fr, fabric)
    data["bytes_read"] = reader.total_size(logs)
    text = report.as_json(data) if fmt == "json" else report.as_text(data)
    return text, EXIT[data["status"]]
