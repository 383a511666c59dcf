"""`ncclgen slurm --pass-env NAME`: the job takes NAME from its environment at run time; only the name is
written (the Slurm counterpart of `ncclgen k8s --secret-env`). The start-up check is run here with real
bash; tests/test_k8s_pod_settings.py proves the value appears in no output.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from ncclgen.cli import main

ROOT = Path(__file__).resolve().parent.parent


def render(capsys, *args) -> tuple[int, str, str]:
    rc = main(["slurm", "--workload", "verl-sft", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def checks(script: str) -> str:
    """The script's start-up checks for passed variables (one line each)."""
    lines = [ln for ln in script.splitlines() if ln.startswith("if [[ -z ${")]
    assert lines
    return "\n".join(lines)


def test_only_the_name_is_written_and_a_missing_value_stops_the_job(capsys):
    rc, out, err = render(
        capsys, "--pass-env", "WANDB_API_KEY", "--pass-env", "HF_TOKEN", "--pass-env", "WANDB_API_KEY"
    )
    assert rc == 0, err
    assert re.search(
        r"^# Regenerate: .* --pass-env WANDB_API_KEY --pass-env HF_TOKEN --pass-env WANDB_API_KEY$", out, re.M
    )
    code = "set -euo pipefail\n" + checks(out) + "\necho started\n"
    assert code.count("WANDB_API_KEY:-") == 1  # a repeated name is checked once
    base = {"PATH": os.environ["PATH"]}
    ok = subprocess.run(
        ["bash", "-c", code], env={**base, "WANDB_API_KEY": "v", "HF_TOKEN": "t"}, capture_output=True, text=True
    )
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "started\n", "")
    for env, missing in (({"HF_TOKEN": "t"}, "WANDB_API_KEY"), ({"WANDB_API_KEY": "v", "HF_TOKEN": ""}, "HF_TOKEN")):
        bad = subprocess.run(["bash", "-c", code], env={**base, **env}, capture_output=True, text=True)
        assert bad.returncode == 2 and bad.stdout == ""
        assert bad.stderr.count("\n") == 1 and f"--pass-env {missing}: {missing} is empty or not set" in bad.stderr


def test_script_with_pass_env_is_shellcheck_clean(tmp_path, capsys):
    rc, out, err = render(capsys, "--tier", "3", "--pass-env", "WANDB_API_KEY")
    assert rc == 0, err
    script = tmp_path / "job.sh"
    script.write_text(out)
    proc = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize(
    "name, message",
    [
        ("NCCL_DEBUG", "--pass-env NCCL_DEBUG: the script sets NCCL_DEBUG itself"),
        ("1X", "--pass-env: '1X' is not an environment variable name (starts with a digit"),
        ("A=B", "--pass-env: 'A=B' is not an environment variable name ('=' is U+003D EQUALS SIGN"),
    ],
)
def test_refused_names(capsys, name, message):
    rc, out, err = render(capsys, "--pass-env", name)
    assert rc == 2 and out == "" and message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("name", ["WANDB_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "TOKEN"])
@pytest.mark.parametrize("command", ["slurm", "k8s", "explain", "env"])
def test_set_refuses_a_credential(capsys, name, command):
    """`--set WANDB_API_KEY=...` would put the key in clear text into the script, the manifests and their
    Regenerate:/explain lines: refused, pointing at --secret-env and --pass-env."""
    rc = main([command, "--set", f"{name}=hunter2"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and "hunter2" not in err and err.count("\n") == 1, err
    assert f"--secret-env {name}=SECRET:KEY" in err and f"--pass-env {name}" in err


@pytest.mark.parametrize("name", ["NCCL_DEBUG", "TOKENIZERS_PARALLELISM", "NCCL_IB_PKEY", "MY_KEYS"])
def test_set_does_not_take_other_names_for_credentials(name):
    from ncclgen.plan import parse_set

    assert parse_set([f"{name}=1"], unchecked=True) == ((name, "1"),)  # names outside the knowledge base opt in
