"""`ncclgen lint`'s command-line contract: the seed-article golden, exit 0/1/2, stdin, imports kept light,
the project's cluster as the target (split out of tests/test_lint.py, which keeps the rules and inputs).

Golden file: examples/seed-article.lint.txt (the seed article's settings linted against h100-ib). After
an intended change to a message, run
    NCCLGEN_REGEN_GOLDEN=1 python -m pytest -q tests/test_lint_cli.py
and review the diff line by line: every line must stay true and actionable.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import goldens
import pytest

from ncclgen.cli import main

ROOT = Path(__file__).resolve().parent.parent
SEED = "examples/seed-article.env"
GOLDEN = ROOT / "examples" / "seed-article.lint.txt"


# -- the CLI ---------------------------------------------------------------------------------------


@pytest.fixture
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("NCCLGEN_CLUSTERS", raising=False)


def test_seed_article_matches_golden(at_root, capsys):
    assert main(["lint", "--cluster", "h100-ib", SEED]) == 1
    out = capsys.readouterr()
    assert out.err == ""
    goldens.check(GOLDEN, out.out)


def test_seed_article_flags_every_false_or_misleading_setting(at_root, capsys):
    main(["lint", "--cluster", "h100-ib", "--format", "json", SEED])
    doc = json.loads(capsys.readouterr().out)
    flagged = {f["variable"]: f["code"] for f in doc["findings"]}
    assert flagged == {
        "NCCL_TIMEOUT": "NG002",
        "NCCL_IB_DISABLE": "NG009",
        "NCCL_IB_HCA": "NG012",
        "NCCL_BUFFSIZE": "NG010",
        "NCCL_FP16_ENABLE": "NG002",
        "NCCL_FP16_BIAS_CORRECTION": "NG002",
        "NCCL_MAX_RINGS": "NG002",
        "NCCL_MIN_NRINGS": "NG004",
        "NCCL_SOCKET_NTHREADS": "NG011",
        "NCCL_NSOCKS_PERTHREAD": "NG011",
    }  # NCCL_DEBUG=INFO is real and valid
    assert (doc["errors"], doc["warnings"], doc["checked"]) == (5, 4, 11)
    assert all(f["file"] == SEED and f["line"] and f["rule"] for f in doc["findings"])


def test_clean_input_exits_0_and_stdin_works(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", type("In", (), {"buffer": __import__("io").BytesIO(b"NCCL_DEBUG=WARN\n")})())
    assert main(["lint", "-"]) == 0
    assert (
        "<stdin>: 1 variable(s) checked against NCCL 2.32.6 and PyTorch 2.15.0: 0 error(s)" in capsys.readouterr().out
    )


def test_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.env"
    bad.write_bytes(b"NCCL_DEBUG=\x00INFO\n")
    for args in (
        [str(bad)],
        [str(tmp_path)],
        [str(tmp_path / "missing.env")],
        ["--cluster", "no-such-cluster", str(bad)],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "ncclgen", "lint", *args], capture_output=True, text=True, cwd=tmp_path, timeout=60
        )
        assert proc.returncode == 2 and proc.stdout == "", proc
        assert proc.stderr.startswith("ncclgen: error: ") and proc.stderr.count("\n") == 1, proc.stderr


def test_lint_imports_neither_kubernetes_nor_torch(tmp_path):
    env_file = tmp_path / "a.env"
    env_file.write_text("NCCL_DEBUG=WARN\n")
    code = (
        "import sys; from ncclgen.cli import main; rc = main(['lint', '--cluster', 'h100-ib', sys.argv[1]]); "
        "heavy = [m for m in ('kubernetes', 'torch', 'ray') if m in sys.modules]; "
        "sys.exit(f'imported {heavy}' if heavy else rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(env_file)], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert proc.returncode == 0, proc.stderr


def test_lint_uses_the_project_cluster_and_says_so(tmp_path, monkeypatch, capsys):
    """In a project folder, ncclgen.yaml's cluster: is the target when no --cluster is given (issue 16:
    the storage-NIC error vanished because lint silently checked against no cluster)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NCCLGEN_CLUSTER", raising=False)
    (tmp_path / "job.env").write_text("NCCL_IB_HCA=mlx5\n")
    assert main(["lint", "job.env"]) == 0  # no project: the KB's newest NCCL, no HCAs to match
    assert "checked against NCCL 2.32.6 and PyTorch 2.15.0:" in capsys.readouterr().out
    (tmp_path / "ncclgen.yaml").write_text("cluster: h100-ib\n")
    assert main(["lint", "job.env"]) == 1
    out = capsys.readouterr().out
    assert "error NG012" in out and "selects storage/in-band NIC(s)" in out
    assert "checked against h100-ib (NCCL 2.30.7, PyTorch 2.13.0, from ncclgen.yaml):" in out
    monkeypatch.setenv("NCCLGEN_CLUSTER", "local-ci")
    main(["lint", "job.env"])
    assert "checked against local-ci (NCCL 2.30.7, PyTorch 2.13.0, from NCCLGEN_CLUSTER):" in capsys.readouterr().out
    assert main(["lint", "--cluster", "h100-ib", "job.env"]) == 1  # the flag wins, and needs no origin
    assert "checked against h100-ib (NCCL 2.30.7, PyTorch 2.13.0):" in capsys.readouterr().out
