"""The precompiled bundled YAML (ncclgen/load/compiled/, tools/compile_data.py): current, equal to a parse of
each file, used only for the unchanged bundled files, and a render from bundled files imports no PyYAML."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ncclgen.load import yamlio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools import compile_data  # noqa: E402

sys.path.remove(str(ROOT))

DOCUMENTS = compile_data._documents()


def test_the_stored_module_is_current(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["compile_data.py", "--check"])
    assert compile_data.main() == 0, capsys.readouterr().out


def test_check_fails_on_a_stale_module(monkeypatch, tmp_path):
    """--check can fail: the stored module with one byte more."""
    stale = tmp_path / "__init__.py"
    stale.write_text(compile_data.TARGET.read_text(encoding="utf-8") + "#", encoding="utf-8")
    monkeypatch.setattr(compile_data, "TARGET", stale)
    monkeypatch.setattr(sys, "argv", ["compile_data.py", "--check"])
    assert compile_data.main() == 1


def test_every_kind_of_bundled_file_is_stored():
    kinds = {kind for kind, _, _ in DOCUMENTS}
    assert kinds == {"data", "workloads", "clusters"}
    assert ("data", "rules.yaml") in {(k, n) for k, n, _ in DOCUMENTS}


@pytest.mark.parametrize(("kind", "name", "path"), DOCUMENTS, ids=[f"{k}/{n}" for k, n, _ in DOCUMENTS])
def test_stored_values_and_positions_equal_a_parse(kind, name, path):
    text = yamlio.read_text(path)
    stored = yamlio._precompiled(text, path)
    assert stored is not None, "an unchanged bundled file is taken from the stored module"
    parsed = yamlio.parse(text, path)
    assert (stored.data, stored.marks, stored.file) == (parsed.data, parsed.marks, parsed.file)


def test_each_load_builds_fresh_values():
    """A caller that changes what it loaded cannot change the next load."""
    path = os.path.join(yamlio.bundled_folders()["data"], "rules.yaml")
    text = yamlio.read_text(path)
    first = yamlio._precompiled(text, path)
    assert first is not None
    first.data.clear()
    again = yamlio._precompiled(text, path)
    assert again is not None and again.data


def test_an_edited_bundled_file_is_parsed(monkeypatch, tmp_path):
    """One character changed in a bundled file: the stored values are not used, the file's own are."""
    folder = tmp_path / "data"
    folder.mkdir()
    source = os.path.join(yamlio.bundled_folders()["data"], "plugins.yaml")
    copy = folder / "plugins.yaml"
    shutil.copy(source, copy)
    monkeypatch.setattr(yamlio, "bundled_folders", lambda: {"data": str(folder)})
    yamlio._bundled_kinds.cache_clear()
    try:
        text = copy.read_text(encoding="utf-8")
        assert yamlio._precompiled(text, str(copy)) is not None  # same text in a bundled folder: used
        edited = text + "\n# edited\nextra_key: 1\n"
        assert yamlio._precompiled(edited, str(copy)) is None
        assert yamlio.load_text(edited, str(copy)).data["extra_key"] == 1
    finally:
        yamlio._bundled_kinds.cache_clear()


def test_a_user_file_with_a_bundled_name_is_parsed(tmp_path):
    """Only the bundled folders' files are looked up: a user's ./rules.yaml is parsed as written."""
    path = os.path.join(yamlio.bundled_folders()["data"], "rules.yaml")
    mine = tmp_path / "rules.yaml"
    shutil.copy(path, mine)
    assert yamlio._precompiled(mine.read_text(encoding="utf-8"), str(mine)) is None


def test_a_render_from_bundled_files_imports_no_pyyaml():
    code = (
        "import sys, io, contextlib\n"
        "from ncclgen.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    rc = main(['slurm', '--cluster', 'h100-ib', '--tier', '3'])\n"
        "print(rc, 'yaml' in sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert r.stdout.split() == ["0", "False"], r.stdout + r.stderr
