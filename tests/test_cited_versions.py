"""Lint messages that cite NCCL or PyTorch source name the release the cluster in hand declares when the
source was read at another one (issue 31 item 5): on 53b6203 a cluster declaring NCCL 2.21.5 and PyTorch
2.6.0 was told only 'NCCL v2.30.7 src/init.cc:...' and 'PyTorch 2.13.0 ProcessGroupNCCL.cpp'. Without a
cluster, and for a cluster at the cited release, the message is unchanged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

PRESET = Path(__file__).resolve().parent.parent / "clusters" / "h100-ib.yaml"
SCRIPT = (
    "export NCCL_MIN_CTAS=16\nexport NCCL_MAX_CTAS=8\nexport NCCL_P2P_NET_CHUNKSIZE=1048576\n"
    "export TORCH_NCCL_BLOCKING_WAIT=1\nexport TORCH_NCCL_ASYNC_ERROR_HANDLING=3\nexport NCCL_NET_GDR_LEVEL=9\n"
)


def _lint(tmp_path: Path, *cluster: str) -> str:
    script = tmp_path / "job.sh"
    script.write_text(SCRIPT)
    r = subprocess.run(
        [sys.executable, "-m", "ncclgen", "lint", *cluster, str(script)], capture_output=True, text=True, check=False
    )
    assert r.returncode == 1 or r.returncode == 0, r.stderr
    return r.stdout + r.stderr


@pytest.fixture
def old_cluster(tmp_path: Path) -> Path:
    doc = yaml.safe_load(PRESET.read_text())
    doc["name"] = "old-site"
    doc["software"]["nccl"] = "2.21.5"
    doc["software"]["torch"] = "2.6.0"
    path = tmp_path / "old-site.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _finding(text: str, code: str, name: str) -> str:
    lines = [ln for ln in text.splitlines() if f" {code} {name}:" in ln]
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize(
    ("code", "name", "product"),
    [
        ("NG021", "NCCL_MIN_CTAS", "NCCL 2.21.5"),
        ("NG021", "NCCL_P2P_NET_CHUNKSIZE", "NCCL 2.21.5"),
        ("NG019", "TORCH_NCCL_BLOCKING_WAIT", "PyTorch 2.6.0"),
        ("NG021", "NCCL_NET_GDR_LEVEL", "NCCL 2.21.5"),
    ],
)
def test_a_message_names_the_clusters_release(tmp_path, old_cluster, code, name, product):
    line = _finding(_lint(tmp_path, "--cluster", str(old_cluster)), code, name)
    assert f"; the cluster old-site declares {product})" in line


@pytest.mark.parametrize("cluster", [(), ("--cluster", "h100-ib")])
def test_at_the_cited_release_or_without_a_cluster_nothing_is_added(tmp_path, cluster):
    text = _lint(tmp_path, *cluster)
    assert "declares" not in _finding(text, "NG021", "NCCL_MIN_CTAS")
    assert "declares" not in _finding(text, "NG019", "TORCH_NCCL_BLOCKING_WAIT")
