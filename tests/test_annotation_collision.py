"""A descriptor's kubernetes.annotations may not replace an annotation ncclgen sets for the pod's
network or net plugin (GKE multi-networking, the TCPXO daemon's devices) with another value: on
53b6203 the descriptor's value won silently and the pod lost its data NICs or devices. The same value
is accepted; another key is kept beside ncclgen's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

PRESET = Path(__file__).resolve().parent.parent / "clusters" / "gcp-a3-mega.yaml"


def _k8s(tmp_path: Path, annotations: dict[str, str]) -> subprocess.CompletedProcess:
    doc = yaml.safe_load(PRESET.read_text())
    doc["kubernetes"]["annotations"] = annotations
    path = tmp_path / "gcp.yaml"
    path.write_text(yaml.safe_dump(doc))
    return subprocess.run(
        [sys.executable, "-m", "ncclgen", "k8s", "--cluster", str(path)], capture_output=True, text=True, check=False
    )


def test_another_value_for_ncclgens_network_annotation_is_refused(tmp_path):
    r = _k8s(tmp_path, {"networking.gke.io/default-interface": "eth1"})
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "kubernetes.annotations.networking.gke.io/default-interface: ncclgen sets this annotation" in r.stderr
    assert "for the network ('eth0')" in r.stderr


def test_another_value_for_the_plugins_device_annotation_is_refused(tmp_path):
    r = _k8s(tmp_path, {"devices.gke.io/container.tcpxo-daemon": "- path: /dev/null\n"})
    assert r.returncode == 2 and "for the net plugin" in r.stderr, r.stderr


def test_the_same_value_and_other_keys_are_kept(tmp_path):
    r = _k8s(tmp_path, {"networking.gke.io/default-interface": "eth0", "team.example.com/owner": "rl"})
    assert r.returncode == 0, r.stderr
    pods = [d for d in yaml.safe_load_all(r.stdout) if d]
    text = r.stdout
    assert "team.example.com/owner: rl" in text and "networking.gke.io/interfaces:" in text and pods
