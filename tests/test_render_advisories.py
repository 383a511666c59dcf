"""Render shows what lint saw (issue 20 item 3): a plan's lint warnings and infos go to stderr, one line
each pointing to `ncclgen lint`/`ncclgen explain`; stdout stays exactly the script or manifest; an error
still stops the render."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from ncclgen import lint
from ncclgen.cli import main


def run(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv)) or 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("command", ["slurm", "k8s"])
def test_warning_reaches_stderr_and_stdout_is_the_output(command):
    argv = [command, "--cluster", "h100-ib", "--tier", "3", "--set", "NCCL_BUFFSIZE=2097152"]
    code, out, err = run(argv)
    assert code == 0
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ncclgen: warning: NG010 NCCL_BUFFSIZE (--set): NCCL_BUFFSIZE=2097152 shrinks")
    assert "ncclgen lint" in lines[0] and "ncclgen explain" in lines[0]
    assert "ncclgen: warning" not in out  # stdout carries the output alone, which lint reads the same way
    assert {f.code for f in lint.lint_text(out, "out") if f.severity != "info"} == {"NG010"}


def test_info_reaches_stderr():
    code, _, err = run(["slurm", "--cluster", "h100-ib", "--tier", "1", "--set", "NCCL_SHM_DISABLE=0"])
    assert code == 0
    assert [line.split(":")[1].strip() for line in err.splitlines()] == ["info"]
    assert "NG009 NCCL_SHM_DISABLE" in err


def test_a_clean_plan_renders_silently():
    code, out, err = run(["slurm", "--cluster", "h100-ib", "--tier", "3"])
    assert (code, err) == (0, "")
    assert out.startswith("#!")


def test_an_error_still_stops_the_render():
    code, out, err = run(["slurm", "--cluster", "h100-ib", "--set", "NCCL_MAX_RINGS=8"])
    assert code == 2 and out == ""
    assert err.startswith("ncclgen: error: NCCL_MAX_RINGS (--set)")
