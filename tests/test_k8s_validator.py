"""The validator (tests/k8s_validate.py) itself: it accepts a known-good object and rejects what an API
server or operator would (split from tests/test_render_k8s.py)."""

from __future__ import annotations

import k8s_validate as kv
import pytest
from test_render_k8s import (
    job_of,
    plan_for,
)

from ncclgen.render import k8s as render_k8s

# -- the validator itself ----------------------------------------------------------------------------------


@pytest.fixture
def good_pytorchjob():
    return job_of(render_k8s.documents(plan_for("h100-ib", 2, "verl-sft"), kind="pytorchjob"))


def test_validator_accepts_known_good(good_pytorchjob):
    assert kv.check(good_pytorchjob) == []


def test_validator_rejects_misplaced_resources(good_pytorchjob):
    """`resources` one level too high (pod spec, not container) is pruned by a real API server: the GPUs
    and RDMA devices are silently lost. Both the CRD schema and the client's model catch it."""
    spec = good_pytorchjob["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    spec["resources"] = spec["containers"][0].pop("resources")
    errors = kv.check(good_pytorchjob)
    assert any("spec.resources: unknown field" in e for e in errors), errors
    with pytest.raises(kv.Invalid):
        kv.validate(good_pytorchjob)


@pytest.mark.parametrize(
    "mutate,expect",
    [
        (lambda j: j["spec"].__setitem__("nprocPerNod", "8"), "spec.nprocPerNod: unknown field"),
        (
            lambda j: j["spec"]["pytorchReplicaSpecs"]["Master"].__setitem__("replica", 1),
            "Master.replica: unknown field",
        ),
        (lambda j: j["spec"]["pytorchReplicaSpecs"]["Master"].__setitem__("replicas", "1"), "expected integer"),
        (lambda j: j["spec"]["pytorchReplicaSpecs"]["Master"].__setitem__("replicas", 2**31), "outside"),
        (lambda j: j["spec"]["runPolicy"].__setitem__("backoffLimit", True), "expected integer"),
        (lambda j: _c(j)["env"].append({"name": "NCCL_DEBUG", "value": "INFO"}), "set more than once"),
        (lambda j: _c(j)["env"].append({"valu": "x", "name": "X"}), ".valu: unknown field"),
        (lambda j: _c(j)["resources"]["limits"].__setitem__("nvidia.com/gpu", "eight"), "does not match"),
        (lambda j: _c(j)["resources"]["limits"].__setitem__("nvidia.com/gpu", True), "integer or a string"),
        (lambda j: _c(j)["resources"]["requests"].pop("nvidia.com/gpu"), None),  # limit alone is valid
        (lambda j: _c(j)["resources"]["limits"].pop("nvidia.com/gpu"), "Limit must be set"),
        (lambda j: _c(j)["resources"]["requests"].__setitem__("nvidia.com/gpu", "4"), "must be equal"),
        (lambda j: _c(j).__setitem__("name", "torch"), "container named pytorch"),
        (lambda j: _c(j)["volumeMounts"].append({"name": "nope", "mountPath": "/x"}), "names no volume"),
        (lambda j: _c(j).pop("name"), "name: required"),
        (lambda j: j["spec"]["pytorchReplicaSpecs"].__setitem__("Chief", {"replicas": 1}), "only Master and Worker"),
        (lambda j: j["spec"]["pytorchReplicaSpecs"]["Master"].__setitem__("replicas", 2), "must be 1"),
        (lambda j: j["metadata"].__setitem__("name", "9lives"), "DNS-1035"),
        (lambda j: j["metadata"]["labels"].__setitem__("bad key!", "x"), "qualified name"),
        (lambda j: j["metadata"]["labels"].__setitem__("ok", "a" * 64), "label value"),
        (lambda j: j.__setitem__("apiVersion", "kubeflow.org/v2"), "not served"),
        (
            lambda j: j["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"].__setitem__("hostNetwork", "yes"),
            "expected boolean",
        ),
    ],
)
def test_validator_rejects(good_pytorchjob, mutate, expect):
    mutate(good_pytorchjob)
    errors = kv.check(good_pytorchjob)
    if expect is None:
        assert errors == []
    else:
        assert any(expect in e for e in errors), errors


def _c(job):
    return job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]


def test_validator_structural_semantics():
    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {
            "a": {"type": "string", "enum": ["x", "y"]},
            "n": {"type": "integer", "format": "int32", "minimum": 0, "nullable": True},
            "q": {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
                "pattern": "^[0-9]+Gi$",
            },
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "closed": {"type": "object"},
            "m": {"type": "object", "additionalProperties": {"type": "integer"}},
            "s": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "cel": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() > 1"}]},
            "imm": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]},
        },
    }
    ok = {"a": "x", "n": None, "q": 8, "free": {"any": {"thing": 1}}, "m": {"k": 1}, "s": ["a", "b"], "imm": "z"}
    assert kv.check_schema(ok, schema, "") == []
    assert kv.check_schema(dict(ok, q="8Gi"), schema, "") == []
    bad = [
        ({**ok, "a": "z"}, "not one of"),
        ({k: v for k, v in ok.items() if k != "a"}, "a: required"),
        ({**ok, "n": -1}, "outside"),
        ({**ok, "n": 2**31}, "outside"),
        ({**ok, "q": "8G"}, "does not match"),
        ({**ok, "q": 1.5}, "integer or a string"),
        ({**ok, "closed": {"k": 1}}, "closed.k: unknown field"),
        ({**ok, "m": {"k": "1"}}, "m.k: expected integer"),
        ({**ok, "s": ["a", "a"]}, "duplicate entries"),
        ({**ok, "cel": "x"}, "cannot be checked"),
        ({**ok, "extra": 1}, "extra: unknown field"),
        ({**ok, "a": None}, "null is not allowed"),
    ]
    for obj, expect in bad:
        errors = kv.check_schema(obj, schema, "")
        assert any(expect in e for e in errors), (obj, errors)


def test_validator_core_models():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}}
    assert kv.check(cm) == []
    assert any("datta: unknown field of V1ConfigMap" in e for e in kv.check({**cm, "datta": {}}))
    assert any("expected str" in e for e in kv.check({**cm, "data": {"a": 1}}))
    tmpl = {"spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "A", "value": 1}]}]}}
    assert any("value: expected str" in e for e in kv.check_core(tmpl, "V1PodTemplateSpec"))
    tmpl["spec"]["containers"][0]["env"][0] = {"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x", "typo": 1}}}
    assert any("typo: unknown field of V1ObjectFieldSelector" in e for e in kv.check_core(tmpl, "V1PodTemplateSpec"))


def test_validator_resources_rules():
    assert kv.check_resources({"limits": {"hugepages-2Mi": "5Gi"}, "requests": {"hugepages-2Mi": "5Gi"}}, "r") == [
        "r: HugePages require cpu or memory"
    ]
    assert kv.check_resources({"limits": {"hugepages-2Mi": "3Mi", "memory": "1Gi"}}, "r") == [
        "r: hugepages-2Mi '3Mi' is not a multiple of the page size"
    ]
    assert kv.check_resources({"limits": {"gpu": "1"}}, "r") == [
        "r.limits.gpu: must be a standard resource or fully qualified"
    ]
    assert (
        kv.check_resources(
            {
                "limits": {"memory": "1Gi", "hugepages-2Mi": "4Mi", "rdma/ib": "8"},
                "requests": {"rdma/ib": "8", "hugepages-2Mi": "4Mi"},
            },
            "r",
        )
        == []
    )
