"""The CLI's own text says what is so (issue 20 item 7): top-level help, no-argument help, completion."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ncclgen.cli import COMMANDS
from ncclgen.load import descriptor, workload


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", "from ncclgen.cli import run; run()", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
        check=False,
    )


def test_k8s_help_line_names_every_kind_it_renders():
    from ncclgen.cli.k8s import k8s

    (kind,) = [p for p in k8s.params if p.name == "kind"]
    listed = COMMANDS["k8s"][2].lower()
    assert kind.type.choices, "k8s --kind has choices"
    for choice in kind.type.choices:
        assert choice in listed, f"`ncclgen --help` does not name {choice}"


@pytest.mark.parametrize("args", [(), ("clusters",)])
def test_no_arguments_prints_the_help_on_many_lines(args):
    proc = _cli(*args)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("Usage: ncclgen")
    assert len(lines) > 5, proc.stderr
    assert "Commands:" in lines


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("ncclgen slurm --cluster ", lambda: descriptor.available()),
        ("ncclgen explain -w ", lambda: workload.available()),
        ("ncclgen lint --cluster ", lambda: descriptor.available()),
        ("ncclgen doctor -c ", lambda: descriptor.available()),
    ],
)
def test_completion_offers_names(words, expected):
    cword = len(words.split())
    proc = _cli(env={"_NCCLGEN_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword)})
    offered = {line.split(",", 1)[1] for line in proc.stdout.splitlines() if line.startswith("plain,")}
    assert offered == set(expected()), proc.stdout + proc.stderr
    assert "h100-ib" in offered or "verl-sft" in offered
