"""The lint corpus (tests/data/lint-corpus.tsv): wrong settings people copy and correct ones, each with
the exact set of findings `ncclgen lint` must give, through the real input parser and, where a row names
one, against a bundled cluster descriptor."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from ncclgen import lint
from ncclgen.load import descriptor

CORPUS = Path(__file__).parent / "data" / "lint-corpus.tsv"


def rows() -> list[dict]:
    lines = [ln for ln in CORPUS.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    header = lines[0].split("\t")
    out = []
    for ln in lines[1:]:
        values = ln.split("\t")
        assert len(values) == len(header), ln
        out.append(dict(zip(header, values)))
    return out


@cache
def cluster(name: str):
    return None if name == "-" else descriptor.load_cluster(name)


def test_corpus_size():
    ids = [r["id"] for r in rows()]
    assert len(ids) == len(set(ids))
    assert sum(r["expected"] != "clean" for r in rows()) >= 40
    assert sum(r["expected"] == "clean" for r in rows()) >= 10


@pytest.mark.parametrize("row", rows(), ids=lambda r: r["id"])
def test_every_setting_gets_its_verdict(row):
    text = row["text"].replace("\\n", "\n") + "\n"
    findings = lint.lint_text(text, row["id"], cluster(row["cluster"]))
    got = sorted({f"{f.code}:{f.severity}" for f in findings})
    want = [] if row["expected"] == "clean" else sorted(set(row["expected"].split(",")))
    assert got == want, [(f.code, f.severity, f.message) for f in findings]
    for f in findings:  # a fix that writes NAME=VALUE gives a valid value: it is itself free of errors
        m = re.match(r"(?:use )?([A-Z][A-Z0-9_]*)=(\S+)", f.fix)
        if m:
            again = [
                g
                for g in lint.lint_pairs([(m.group(1), m.group(2).rstrip(","), 1)], cluster(row["cluster"]))
                if g.severity == "error"
            ]
            assert again == [], (f.fix, again)
