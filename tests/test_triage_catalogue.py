"""The triage catalogue (ncclgen/data/triage/) is consistent with its sources and with itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ncclgen.triage import catalogue

ROOT = Path(__file__).resolve().parent.parent
NCCL_MIRROR = Path("/work/.mirror/NVIDIA+nccl/repo")


def test_ids_unique_and_every_entry_has_cause_fix_and_sources():
    sigs = catalogue.signatures()
    assert len({s.id for s in sigs}) == len(sigs)
    for s in sigs:
        assert s.cause and s.fix and s.sources and s.keys, s.id
        if s.role == "symptom":
            assert "{n}" in s.then, s.id


def test_quoted_nccl_warnings_are_real_format_strings():
    formats = catalogue.nccl_warn_formats()
    quoted = [s for s in catalogue.signatures() if s.nccl_warn]
    assert len(quoted) >= 4
    for s in quoted:
        assert s.nccl_warn in formats, s.id


def test_nccl_warn_table_covers_the_kb_releases_it_has_tags_for():
    header = (catalogue.DATA / "nccl-warn.tsv").read_text().splitlines()[3].split("\t")
    assert header[:2] == ["format", "where"] and "2.28.3" in header and "2.30.7" in header
    assert len(catalogue.nccl_warn_formats()) > 500


def test_a_matching_line_always_holds_a_key():
    """The reader only looks at lines holding a key: a signature matching without one would never fire."""
    for f in (ROOT / "tests" / "data" / "triage").glob("*.log"):
        for line in f.read_text().splitlines():
            for s in catalogue.signatures():
                if s.match.search(line):
                    assert any(k in line for k in s.keys), (s.id, line)


def test_nccl_source_names_the_file_for_a_current_warning():
    text = "Call to ibv_modify_qp failed with 110 Connection timed out, hint"
    assert catalogue.nccl_source(text) == ("Call to ibv_modify_qp failed with %d %s, %s", "src/misc/ibvwrap.cc:376")


@pytest.mark.skipif(not NCCL_MIRROR.is_dir(), reason="needs a clone of NVIDIA/nccl (the fetch tool's mirror)")
def test_table_is_what_the_tool_generates():
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "nccl_warn_strings.py"), str(NCCL_MIRROR)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ},
        timeout=300,
    ).stdout
    assert out == (catalogue.DATA / "nccl-warn.tsv").read_text()
