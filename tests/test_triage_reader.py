"""The reader's anchors cover every literal a signature, marker or fact needs: a line a signature could
match is never skipped by the byte-level pre-filter."""

from __future__ import annotations

from ncclgen.triage import reader


def test_every_key_holds_an_anchor():
    missing = [k for k in reader.all_keys() if not any(a in k for a in reader.ANCHORS)]
    assert missing == []


def test_job_script_is_read_for_its_plan_only(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/bash\n#SBATCH --nodes=2\n# Regenerate: ncclgen slurm --cluster h100-ib --tier 3\n"
        "python - <<'EOF'\nprint('NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable')\n"
        "raise RuntimeError('Watchdog caught collective operation timeout')\nEOF\n"
    )
    lines = list(reader.scan([script]))
    assert [ln.text for ln in lines] == ["# Regenerate: ncclgen slurm --cluster h100-ib --tier 3"]
