"""examples/kustomize: the overlay runs with the real `kubectl kustomize` and its result passes the same
checks as ncclgen's own output (CRD structural schemas, typed models, pod rules, operator rules).

kubectl comes from Debian (`kubernetes-client`, installed by tests/run.sh); off CI the test skips when
kubectl is missing, on CI (CI=true) it fails instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import k8s_validate as kv
import pytest
from test_render_k8s import docs_of

from ncclgen.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "kustomize"
BASE_ARGS = [
    "--cluster",
    "h100-ib",
    "--tier",
    "3",
    "--workload",
    "verl-grpo-qwen2-7b",
    "--name",
    "grpo",
    "--volume",
    "pvc:checkpoints:/checkpoints",
    "--volume",
    "hostpath:/lustre/datasets:/data:ro",
    "--service-account",
    "verl-trainer",
    "--secret-env",
    "WANDB_API_KEY=wandb:api-key",
]


def kubectl() -> str:
    path = shutil.which("kubectl")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("kubectl is missing on CI: tests/run.sh installs Debian's kubernetes-client")
        pytest.skip("kubectl not installed (Debian: apt-get install kubernetes-client)")
    return path


def test_base_is_a_fresh_render(tmp_path, monkeypatch, capsys):
    """The committed base is what the documented command renders (regenerate: bash examples/regen.sh)."""
    for key in ("NCCLGEN_CLUSTER", "NCCLGEN_TIER", "NCCLGEN_WORKLOAD", "NCCLGEN_CLUSTERS"):
        monkeypatch.delenv(key, raising=False)
    # From a copy of the layout regen.sh writes into, so the header's Regenerate line (-o PATH) matches.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples" / "kustomize" / "base").mkdir(parents=True)
    out = "examples/kustomize/base/job.yaml"
    assert main(["k8s", *BASE_ARGS, "-o", out]) == 0
    assert (tmp_path / out).read_text() == (EXAMPLE / "base" / "job.yaml").read_text(), (
        "examples/kustomize/base/job.yaml is stale; regenerate: bash examples/regen.sh"
    )
    readme = (EXAMPLE / "README.md").read_text()
    for arg in BASE_ARGS[BASE_ARGS.index("--name") :]:
        assert arg in readme


def test_overlay_with_real_kubectl_kustomize():
    proc = subprocess.run(
        [kubectl(), "kustomize", str(EXAMPLE / "overlays" / "team-a")], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    base = docs_of((EXAMPLE / "base" / "job.yaml").read_text())
    docs = docs_of(proc.stdout)
    assert (
        sorted((d["kind"], d["metadata"]["name"]) for d in docs)
        == sorted((d["kind"], d["metadata"]["name"]) for d in base)
        == [("ConfigMap", "grpo-ncclgen"), ("RayJob", "grpo")]
    )
    for d in docs:
        kv.validate(d)
        assert d["metadata"]["namespace"] == "team-a"
        assert d["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a-gpu"
        assert d["metadata"]["labels"]["app.kubernetes.io/name"] == "grpo"
    assert kv.check_stream(docs) == []
    job = next(d for d in docs if d["kind"] == "RayJob")
    assert job["spec"]["activeDeadlineSeconds"] == 7200
    pods = [t for _, t in kv.pod_templates(job)]
    assert len(pods) == 2
    for t in pods:
        for c in t["spec"]["containers"]:
            assert c["image"] == "registry.example.com/mirror/verl:vllm024.dev2"  # the pinned tag kept
        assert t["spec"]["serviceAccountName"] == "verl-trainer"
    # Nothing else changed: the overlay's edits are the only differences from the base.
    base_job = next(d for d in base if d["kind"] == "RayJob")
    assert job["spec"]["entrypoint"] == base_job["spec"]["entrypoint"]
    assert (
        next(d for d in docs if d["kind"] == "ConfigMap")["data"]
        == next(d for d in base if d["kind"] == "ConfigMap")["data"]
    )
