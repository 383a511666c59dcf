"""`ncclgen triage` on flight-recorder dumps read by torch's own loader: a real NCCL timeout dump (H200,
tests/data/device/), a gloo dump whose peer never joined (tests/data/triage-fr/), and a file that is no
dump. Before, every real dump ended in a traceback (the loader was handed a path where it wants the file
name's prefix)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data"


def _triage(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ncclgen", "triage", *map(str, paths)], capture_output=True, text=True, check=False
    )


def test_a_real_nccl_timeout_dump_says_the_collective_itself_hung():
    r = _triage(DATA / "device" / "fr-timeout-h200")
    assert r.returncode == 1 and r.stderr == "", r.stderr
    assert r.stdout.startswith("a hang with no error line: ")
    assert (
        "flight recorder: nccl:all_reduce SeqNum=6 in process group 0 did not complete though every member "
        "joined it (ranks 0 waited)"
    ) in r.stdout


def test_a_gloo_dump_names_the_rank_that_never_joined():
    r = _triage(DATA / "triage-fr" / "gloo-never-joins")
    assert r.returncode == 1 and r.stderr == "", r.stderr
    assert "rank(s) 1 never joined gloo:all_reduce SeqNum=2 in process group 0 (ranks 0 waited; no dump from 1)" in (
        r.stdout
    )


def test_a_file_that_is_no_dump_is_one_line_not_a_traceback(tmp_path):
    bad = tmp_path / "nccl_trace_rank_0"
    bad.write_bytes(b"not a pickle")
    shutil.copy(DATA / "device" / "fr-timeout-h200" / "nccl_trace_rank_0", tmp_path / "nccl_trace_rank_1")
    r = _triage(tmp_path)
    assert "Traceback" not in r.stdout + r.stderr
    assert f"dump(s) not read: {bad}: not a flight-recorder dump torch " in r.stdout, r.stdout
