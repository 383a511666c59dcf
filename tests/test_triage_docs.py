"""docs/triage.md shows real runs: each `$ ncclgen triage ...` block is rerun on tests/data/triage/ and must
print exactly what the page shows. `python tools/triage_docs.py` rewrites the outputs (then review the diff)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from ncclgen.cli import cli

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"```console\n\$ (ncclgen triage [^\n]*)\n(.*?)```", re.S)


def test_every_example_is_what_triage_prints(monkeypatch):
    page = (ROOT / "docs" / "triage.md").read_text()
    blocks = BLOCK.findall(page)
    assert len(blocks) >= 4
    monkeypatch.chdir(ROOT / "tests" / "data" / "triage")
    for command, shown in blocks:
        r = CliRunner().invoke(cli, shlex.split(command)[1:])
        assert r.output == shown, command


def test_readme_example_is_what_triage_prints(monkeypatch):
    (command, shown), *_ = BLOCK.findall((ROOT / "README.md").read_text().split("## Triage", 1)[1])
    monkeypatch.chdir(ROOT / "tests" / "data" / "triage")
    assert CliRunner().invoke(cli, shlex.split(command)[1:]).output == shown
