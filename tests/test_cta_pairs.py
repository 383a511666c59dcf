"""MIN/MAX CTA bounds NCCL clamps against each other (issue 31 item 4), in lint and in render; lint's fix never
proposes a cap the plan's own minimum would undo. Each fails on main 0ddb3a1."""

from __future__ import annotations

import subprocess
import sys

from ncclgen.lint import lint_pairs
from ncclgen.load import descriptor

H100 = descriptor.load_cluster("h100-ib")


def run(pairs, cluster=None):
    return lint_pairs([(k, v, i + 1) for i, (k, v) in enumerate(pairs)], cluster)


def test_min_above_max_is_reported_with_nccls_clamp():
    [f] = [f for f in run([("NCCL_MIN_CTAS", "16"), ("NCCL_MAX_CTAS", "8")]) if f.code == "NG021"]
    assert f.severity == "warning" and "sets both to 8" in f.message and "init.cc:2190-2193" in f.message
    assert run([("NCCL_MIN_CTAS", "8"), ("NCCL_MAX_CTAS", "16")]) == []


def test_the_legacy_channel_names_clamp_the_same_way():
    found = run([("NCCL_MIN_NCHANNELS", "32"), ("NCCL_MAX_CTAS", "4")])
    assert any(f.code == "NG021" and f.variable == "NCCL_MIN_NCHANNELS" for f in found)


def test_max_rings_fix_does_not_undo_tier_3():
    [f] = run([("NCCL_MAX_RINGS", "8")], H100)
    assert f.code == "NG002" and "NCCL_MAX_CTAS=8" in f.fix
    assert "tier 3 writes NCCL_MIN_CTAS=16" in f.fix and "NCCL_MIN_CTAS=8" in f.fix


def test_max_rings_fix_with_a_minimum_in_the_same_file():
    found = run([("NCCL_MIN_CTAS", "16"), ("NCCL_MAX_RINGS", "8")])
    [f] = [f for f in found if f.variable == "NCCL_MAX_RINGS"]
    assert "NCCL_MIN_CTAS=8" in f.fix


def test_render_reports_the_clamp_of_a_set_against_tier_3():
    out = subprocess.run(
        [sys.executable, "-m", "ncclgen", "env", "--cluster", "h100-ib", "--tier", "3", "--set", "NCCL_MAX_CTAS=8"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and "NG021 NCCL_MIN_CTAS" in out.stderr and "sets both to 8" in out.stderr
