"""The API server's own limits for every manifest field (issue 33), from the descriptor and the command
line alike: annotations at most 256 KiB of keys and values in bytes, counted with ncclgen's own
(kubernetes/apimachinery pkg/api/validation/objectmeta.go TotalAnnotationSizeLimitB), keys as qualified
names, nodeSelector as labels, tolerations as ValidateTolerations; and no key in ncclgen.io/, whose
keys ncclgen writes itself (an --annotation ncclgen.io/explain was silently replaced)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclgen.cli import main

ROOT = Path(__file__).resolve().parent.parent
PRESET = (ROOT / "clusters" / "h100-ib.yaml").read_text()
LIMIT = 262144


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(
    "option, text",
    [
        ("--annotation", "ncclgen.io/explain=ncclgen explain --tier 1"),
        ("--annotation", "NCCLGEN.IO/explain=x"),
        ("--label", "ncclgen.io/cluster=other"),
    ],
)
def test_ncclgen_keys_are_refused_not_silently_replaced(capsys, option, text):
    rc, out, err = run(capsys, "k8s", option, text)
    assert rc == 2 and out == "" and "ncclgen's own" in err, err


def test_annotation_size_counts_bytes(capsys, tmp_path):
    """131,000 'é' are 262,000 bytes: under the old count of characters they passed."""
    rc, out, err = run(capsys, "k8s", "--annotation", "a=" + "\u00e9" * 131_000)
    assert rc == 2 and out == "" and "more than the API server's 262144" in err, err


def test_annotations_that_fit_alone_are_refused_with_ncclgens_own(capsys, tmp_path):
    """Under the limit on their own, over it once ncclgen adds ncclgen.io/explain to the pod template."""
    value = "x" * (LIMIT - 2 - 100)
    rc, _, err = run(capsys, "k8s", "--kind", "pytorchjob", "--annotation", "a=" + value, "-o", str(tmp_path / "j"))
    assert rc == 2 and "template.metadata.annotations" in err and "262144" in err, err
    assert not (tmp_path / "j").exists()


def test_an_uppercase_annotation_prefix_is_what_the_api_server_accepts(capsys):
    rc, _, err = run(capsys, "k8s", "--annotation", "Example.COM/note=1")
    assert rc == 0, err


def _descriptor(tmp_path: Path, kube: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(PRESET.replace("kubernetes:\n", "kubernetes:\n" + kube, 1))
    return path


@pytest.mark.parametrize(
    "kube, key, words",
    [
        ('  node_selector: {"bad key!": gpu}\n', "kubernetes.node_selector.bad key!", "not a qualified name"),
        ("  node_selector: {pool: two words}\n", "kubernetes.node_selector.pool", "not a label value"),
        ("  tolerations: [{key: 'a b', operator: Exists}]\n", "kubernetes.tolerations[0].key", "not a qualified name"),
        ("  tolerations: [{key: gpu, operator: Exists, value: x}]\n", "kubernetes.tolerations[0].value", "Exists"),
        ("  tolerations: [{operator: Equal, value: x}]\n", "kubernetes.tolerations[0].operator", "key is empty"),
        ("  tolerations: [{key: gpu, operator: Equal, value: 'a b'}]\n", "kubernetes.tolerations[0].value", "label"),
        ("  annotations: {ncclgen.io/explain: mine}\n", "kubernetes.annotations.ncclgen.io/explain", "ncclgen's own"),
        ("  labels: {ncclgen.io/tier: '9'}\n", "kubernetes.labels.ncclgen.io/tier", "ncclgen's own"),
    ],
)
def test_descriptor_pod_fields_are_checked_where_they_are_written(capsys, tmp_path, kube, key, words):
    path = _descriptor(tmp_path, kube)
    line = PRESET.splitlines().index("kubernetes:") + 2  # the line inserted below it
    rc, out, err = run(capsys, "k8s", "--cluster", str(path))
    assert rc == 2 and out == "" and f"{path}:{line}:" in err and f" {key}: " in err and words in err, err


def test_size_helpers_follow_apimachinery():
    from ncclgen.load import k8snames

    assert k8snames.annotations_size({"ab": "\u00e9"}) == 4
    k8snames.check_annotations_size({"a": "x" * (LIMIT - 1)})
    with pytest.raises(k8snames.Invalid):
        k8snames.check_annotations_size({"a": "x" * LIMIT})
    assert k8snames.toleration_errors(None, "Exists", None) == []  # tolerate every taint
