"""`ncclgen triage` on a small log the test writes, as the JSON report (with the exit status under `_code`): the
one way the triage tests run it, so a test states only its log and what it expects."""

from __future__ import annotations

import json

from ncclgen.triage import run


def triage(tmp_path, text: str, *plan_args, **plan) -> dict:
    log = tmp_path / "job.out"
    log.write_text(text)
    out, code = run.triage([str(log)], *plan_args, fmt="json", **plan)
    data = json.loads(out)
    data["_code"] = code
    return data
