"""The node programs an sbatch script embeds are compacted (ncclgen/jobside/__init__.py): every node's
launch receives them in its environment, so their comments cost on every node. Compacting must not
change the program: bash parses the compact shell to the same commands, Python to the same code."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from ncclgen import jobside

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools import compact_jobside  # noqa: E402

sys.path.remove(str(ROOT))

JOBSIDE = Path(jobside.__file__).parent
SHELL = sorted(p.name for p in JOBSIDE.glob("*.sh"))
PYTHON = sorted(p.stem for p in JOBSIDE.glob("*.py") if p.name not in ("__init__.py", "compacted.py"))


def _parsed(text: str) -> str:
    """bash's own rendering of the program's commands (comments and layout gone): the program as a
    function body, printed back by `declare -f`."""
    script = 'eval "f() {\n$1\n}"; declare -f f'
    done = subprocess.run(["bash", "-c", script, "bash", text], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("name", SHELL)
def test_compact_shell_parses_to_the_same_commands(name):
    full, compact = jobside.source(name), jobside.source(name, compact=True)
    assert len(compact) < 0.8 * len(full), "nothing was dropped"
    assert not any(line.lstrip().startswith("#") for line in compact.splitlines()[1:])
    assert _parsed(compact) == _parsed(full)


def test_the_check_sees_a_dropped_command():
    """The comparison itself can fail: a program that lost a command parses differently."""
    full = jobside.source("node.sh")
    broken = full.replace("exec 9>&-\n", "\n", 1)
    assert broken != full and _parsed(broken) != _parsed(full)


@pytest.mark.parametrize("name", PYTHON)
def test_compact_python_is_the_same_code(name):
    """Docstrings go; every other node of the syntax tree stays."""
    full, compact = jobside.source(name), jobside.source(name, compact=True)

    def code(text: str) -> str:
        tree = ast.parse(text)
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            first = body[0] if isinstance(body, list) and body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined,index]
        return ast.dump(tree)

    assert len(compact) < len(full)
    assert code(compact) == code(full)


def test_the_stored_texts_are_current(monkeypatch, capsys):
    """ncclgen/jobside/compacted.py (what a render embeds) is tools/compact_jobside.py's output today."""
    monkeypatch.setattr(sys, "argv", ["compact_jobside.py", "--check"])
    assert compact_jobside.main() == 0, capsys.readouterr().err


def test_check_fails_on_a_stale_store(monkeypatch, tmp_path):
    stale = tmp_path / "compacted.py"
    stale.write_text(compact_jobside.TARGET.read_text(encoding="utf-8") + "#", encoding="utf-8")
    monkeypatch.setattr(compact_jobside, "TARGET", stale)
    monkeypatch.setattr(sys, "argv", ["compact_jobside.py", "--check"])
    assert compact_jobside.main() == 1


def test_an_edited_program_is_compacted_afresh(monkeypatch):
    """A stored text is used only for the text it was made from: an edited program (a checkout with
    a stale store) is compacted again, never swapped for the old program."""
    from ncclgen.jobside import compacted

    name = "raywait"
    crc, text = compacted.TEXTS[name]
    assert jobside.source(name, compact=True) == text
    monkeypatch.setitem(compacted.TEXTS, name, (crc, "print('old program')\n"))
    assert jobside.source(name, compact=True) == "print('old program')\n"
    monkeypatch.setitem(compacted.TEXTS, name, ("00000000:1", "print('old program')\n"))
    assert jobside.source(name, compact=True) == text
