"""--set of a name the knowledge base does not know needs --set-unchecked, as `unchecked: true` does in files."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _ncclgen(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ncclgen", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", ["env", "explain", "slurm", "k8s", "diff"])
def test_unknown_name_needs_the_opt_in_and_the_error_says_how(command):
    extra = ["--vs-tier", "2"] if command == "diff" else []
    out = _ncclgen(command, "--set", "MY_APP_VAR=1", *extra)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1
    assert "--set MY_APP_VAR: no NCCL, PyTorch or plugin variable" in out.stderr
    assert "use --set-unchecked MY_APP_VAR=VALUE" in out.stderr
    ok = _ncclgen(command, "--set-unchecked", "MY_APP_VAR=1", *extra)
    assert ok.returncode in (0, 1) and "Traceback" not in ok.stderr, ok.stderr  # diff exits 1 on a difference


def test_opted_in_name_is_rendered_marked_and_repeated():
    ok = _ncclgen("explain", "--set-unchecked", "MY_APP_VAR=1")
    assert ok.returncode == 0
    assert "unchecked: opted in by the author" in ok.stdout.split("MY_APP_VAR", 1)[1]
    script = _ncclgen("slurm", "--set-unchecked", "MY_APP_VAR=1").stdout
    assert "export MY_APP_VAR='1'" in script
    assert "--set-unchecked MY_APP_VAR=1" in script.split("# Regenerate:", 1)[1].splitlines()[0]


def test_the_opt_in_does_not_lift_a_refusal():
    known = _ncclgen("env", "--set", "NCCL_IB_HCA=mlx5_0")
    assert known.returncode == 0  # a known name needs no opt-in
    refused = _ncclgen("env", "--set-unchecked", "LD_PRELOAD=/tmp/x.so")
    assert refused.returncode == 2 and "--set-unchecked LD_PRELOAD: may not be set" in refused.stderr
