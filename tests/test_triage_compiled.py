"""The triage catalogue stored as Python literals (ncclgen/triage/compiled.py, tools/compile_triage.py): current,
equal to a parse of each file, and used only for the file it was made from."""

from __future__ import annotations

import sys
from pathlib import Path

from ncclgen.triage import catalogue

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools import compile_triage  # noqa: E402

sys.path.remove(str(ROOT))


def test_the_stored_module_is_current(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["compile_triage.py", "--check"])
    assert compile_triage.main() == 0, capsys.readouterr().err


def test_check_fails_on_a_stale_module(monkeypatch, tmp_path):
    stale = tmp_path / "compiled.py"
    stale.write_text(compile_triage.TARGET.read_text(encoding="utf-8") + "#", encoding="utf-8")
    monkeypatch.setattr(compile_triage, "TARGET", stale)
    monkeypatch.setattr(sys, "argv", ["compile_triage.py", "--check"])
    assert compile_triage.main() == 1


def test_every_file_is_stored_as_its_parse():
    from ncclgen.triage.compiled import DOCS

    names = sorted(p.name for p in catalogue.DATA.glob("*.yaml"))
    assert sorted(DOCS) == names
    for name in names:
        assert DOCS[name][1] == catalogue.parse_data((catalogue.DATA / name).read_text(encoding="utf-8")), name


def test_an_edited_file_is_parsed_afresh(monkeypatch):
    """A stored document is used only for the text it was made from."""
    from ncclgen.triage import compiled

    doc = compiled.DOCS["anchors.yaml"][1]
    assert catalogue.load_data("anchors.yaml") is doc
    monkeypatch.setitem(compiled.DOCS, "anchors.yaml", ("00000000:1", {"anchors": ["stale"]}))
    assert catalogue.load_data("anchors.yaml") == doc


def test_every_signature_pattern_compiles():
    """Patterns compile when first used (catalogue.LazyPattern): each one compiles."""
    for sig in catalogue.signatures():
        if sig.match is not None:
            assert sig.match.compiled().pattern == sig.match.pattern, sig.id
