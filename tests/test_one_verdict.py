"""One verdict (issue 31 item 5): validate, render and lint run the same checks on the same input and report
every problem at once; lint without a cluster says which checks it skipped. Each fails on main 0ddb3a1."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ncclgen.cli import main
from ncclgen.load import descriptor

H100 = Path(descriptor.resolve("h100-ib"))
BAD_ENV = (
    "env:\n"
    "  - {name: NCCL_IB_TIMEOUT, value: abc, reason: x, source: y}\n"
    "  - {name: NCCL_P2P_LEVEL, value: NOPE, reason: x, source: y}\n"
)


def status(argv: list[str]) -> int:
    """main()'s exit status, whether it returns it or raises SystemExit (validate does)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def descriptor_with(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return str(path)


def test_validate_refuses_a_descriptor_whose_env_render_refuses(tmp_path, capsys):
    path = descriptor_with(tmp_path, H100.read_text().replace("\nsoftware:", "\n" + BAD_ENV + "software:", 1))
    assert main(["env", "--cluster", path]) == 2
    render_err = capsys.readouterr().err
    assert status(["validate", path]) == 2
    out, err = capsys.readouterr()
    assert "ok (" not in out
    for name in ("NCCL_IB_TIMEOUT", "NCCL_P2P_LEVEL"):  # both, at once, in render and in validate
        assert name in render_err and f"render refuses it: {name}" in err


def test_validate_says_when_the_pod_view_cannot_render(tmp_path, capsys):
    text = re.sub(r"(?m)^kubernetes:.*(\n[ #].*)*", "", H100.read_text())
    path = descriptor_with(tmp_path, text)
    assert main(["k8s", "--cluster", path]) == 2
    capsys.readouterr()
    assert status(["validate", path]) == 0  # valid for Slurm
    err = capsys.readouterr().err
    assert "`ncclgen k8s` would refuse this descriptor" in err and "RDMA" in err


def test_lint_without_a_cluster_says_fabric_checks_were_skipped(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NCCLGEN_CLUSTER", raising=False)
    (tmp_path / "job.env").write_text("NCCL_IB_HCA=mlx5\n")
    assert main(["lint", "job.env"]) == 0
    out = capsys.readouterr().out
    assert "job.env: skipped: the fabric and cluster checks of NCCL_IB_HCA" in out
    assert "cluster checks skipped for 1" in out
    assert main(["lint", "--format", "json", "job.env"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"]["variables"] == ["NCCL_IB_HCA"]
    assert main(["lint", "--cluster", "h100-ib", "job.env"]) == 1  # with the cluster: checked, an error
    assert "skipped" not in capsys.readouterr().out
