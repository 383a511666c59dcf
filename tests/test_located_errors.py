"""Content errors at their own file:line:col and key path (issue 33), never as a flag the user did not
type: descriptor slurm.partition/account, kubernetes.image, env/vendor_env and workload env values,
ncclgen.yaml's cluster:; and an ncclgen.yaml that is no regular file is an error, not skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ncclgen.cli import main

ROOT = Path(__file__).resolve().parent.parent
PRESET = (ROOT / "clusters" / "h100-ib.yaml").read_text()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def line_of(text: str, needle: str) -> int:
    (n,) = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    return n


@pytest.mark.parametrize(
    "old, new, key, command, flag",
    [
        ("slurm:\n", 'slurm:\n  partition: "gpu\\nx"\n', "slurm.partition", "slurm", "--partition"),
        ("slurm:\n", 'slurm:\n  account: "a\\tb"\n', "slurm.account", "slurm", "--account"),
        ("slurm:\n", 'slurm:\n  qos: "hi prio"\n', "slurm.qos", "slurm", "--qos"),
        (
            "slurm:\n",
            'slurm:\n  container_image: nvcr.io/x\n  container_mounts: ["/a:/b\\n/c"]\n',
            "slurm.container_mounts[0]",
            "slurm",
            "container mount",
        ),
        ("  image: verlai/verl:latest\n", '  image: ""\n', "kubernetes.image", "k8s", "--image"),
        ("  image: verlai/verl:latest\n", '  image: "verl ai/verl"\n', "kubernetes.image", "k8s", "--image"),
        ("  image: verlai/verl:latest\n", '  image: "verlai/verl\\u200b"\n', "kubernetes.image", "k8s", "--image"),
    ],
)
def test_descriptor_values_are_located(capsys, tmp_path, old, new, key, command, flag):
    assert PRESET.count(old) == 1
    text = PRESET.replace(old, new)
    path = tmp_path / "c.yaml"
    path.write_text(text)
    line = line_of(text, new.strip().splitlines()[-1].split(":")[0] + ":")
    rc, out, err = run(capsys, command, "--cluster", str(path))
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert f"{path}:{line}:" in err and f" {key}: " in err and flag not in err, err


@pytest.mark.parametrize("group, name", [("env", "NCCL_DEBUG"), ("vendor_env", "NCCL_IB_TIMEOUT")])
def test_descriptor_env_values_are_located(capsys, tmp_path, group, name):
    text = PRESET + f"{group}:\n  - {{name: {name}, value: 'a\\nb', reason: r}}\n"
    path = tmp_path / "c.yaml"
    path.write_text(text)
    for command in ("slurm", "k8s", "env"):
        rc, out, err = run(capsys, command, "--cluster", str(path))
        assert rc == 2 and out == ""
        assert f"{path}:{len(text.splitlines())}:" in err and f"{group}[0].value: {name}" in err, err


def test_workload_env_values_are_located(capsys, tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(
        "name: w\nlauncher: torchrun\ncommand: [python, x.py]\nenv:\n  - {name: NCCL_PROTO, value: 'LL;x', reason: r}\n"
    )
    rc, out, err = run(capsys, "slurm", "--workload", str(path))
    assert rc == 2 and out == "" and f"{path}:5:" in err and "env[0].value: NCCL_PROTO" in err, err


@pytest.fixture
def project(tmp_path, monkeypatch):
    os.chmod(tmp_path, 0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NCCLGEN_CLUSTER", raising=False)
    monkeypatch.delenv("NCCLGEN_WORKLOAD", raising=False)
    return tmp_path


@pytest.mark.parametrize(
    "line, words",
    [
        ("cluster: no-such-cluster", "unknown cluster 'no-such-cluster'"),
        ('cluster: "$(touch pwned)"', "is neither a file nor a cluster name"),
        ("cluster: ./missing.yaml", "no such descriptor file"),
        ("workload: no-such-workload", "unknown workload 'no-such-workload'"),
    ],
)
def test_project_file_values_are_located(capsys, project, line, words):
    (project / "ncclgen.yaml").write_text(line + "\n")
    os.chmod(project / "ncclgen.yaml", 0o644)
    for argv in (["env"], ["slurm"], ["lint", "--format", "text", str(ROOT / "examples" / "seed-article.env")]):
        if argv[0] == "lint" and "workload" in line:
            continue
        rc, out, err = run(capsys, *argv)
        key = line.split(":")[0]
        assert rc == 2 and out == "", err
        assert f"ncclgen.yaml:1:{len(key) + 3}: {key}: " in err and words in err, err
        assert "--cluster" not in err and "--workload" not in err
    assert not (project / "pwned").exists()


@pytest.mark.parametrize("make", ["devzero", "fifo", "dangling", "folder"])
def test_a_project_file_that_is_no_regular_file_is_an_error(capsys, project, make):
    target = project / "ncclgen.yaml"
    if make == "devzero":
        target.symlink_to("/dev/zero")
    elif make == "fifo":
        os.mkfifo(target)
    elif make == "dangling":
        target.symlink_to(project / "nowhere")
    else:
        target.mkdir()
    rc, out, err = run(capsys, "env")
    assert rc == 2 and out == "" and err.startswith("ncclgen: error: ncclgen.yaml: "), err


def test_ncclgen_cluster_variable_is_named(capsys, project, monkeypatch):
    monkeypatch.setenv("NCCLGEN_CLUSTER", "no-such")
    rc, _, err = run(capsys, "env")
    assert rc == 2 and "NCCLGEN_CLUSTER: unknown cluster 'no-such'" in err and "--cluster" not in err
