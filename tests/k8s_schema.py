"""CRD structural schemas, as the API server applies them (split from tests/k8s_validate.py, which
documents the whole validator): type, required, enum, int32/int64 ranges, pattern, min/max,
x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields, list-type map/set uniqueness,
nullable, and the CRDs' CEL rules by hand translation (``CEL``); unknown fields are errors.
"""

from __future__ import annotations

import functools
import os
import re

import yaml

CRD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "crds")
CRD_FILES = {
    ("kubeflow.org", "PyTorchJob"): "kubeflow.org_pytorchjobs.yaml",
    ("ray.io", "RayJob"): "ray.io_rayjobs.yaml",
    ("trainer.kubeflow.org", "TrainJob"): "trainer.kubeflow.org_trainjobs.yaml",
    ("trainer.kubeflow.org", "TrainingRuntime"): "trainer.kubeflow.org_trainingruntimes.yaml",
}

INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}

# CEL rules of the CRDs in tests/data/crds, translated by hand (self: the value the rule is attached to).
# Kubeflow Trainer v2.3.0 api/trainer/v1alpha1 (trainjob_types.go, trainingruntime_types.go) and JobSet.
CEL = {
    "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')": lambda s: (
        re.search(r"^[a-z]([-a-z0-9]*[a-z0-9])?$", s["metadata"]["name"]) is not None
    ),
    "size(self.metadata.name) <= 63": lambda s: len(s["metadata"]["name"]) <= 63,
    "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),has(self.flux)].filter(x, x).size() <= 1": lambda s: (
        sum(k in s for k in ("torch", "mpi", "jax", "xgboost", "flux")) <= 1
    ),
    "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && "
    "self.replicatedJobs.exists(x, has(x.dependsOn)))": lambda s: (
        not (
            (s.get("startupPolicy") or {}).get("startupPolicyOrder") == "InOrder"
            and any("dependsOn" in j for j in s.get("replicatedJobs", []))
        )
    ),
    "self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']": lambda s: (
        s in ("trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue")
    ),
}


@functools.cache
def crd_schemas(group: str, kind: str) -> dict[str, dict]:
    """version -> openAPIV3Schema for the CRD copied into tests/data/crds (see the README there)."""
    with open(os.path.join(CRD_DIR, CRD_FILES[(group, kind)]), encoding="utf-8") as fh:
        crd = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    assert crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == kind
    return {v["name"]: v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v.get("served")}


def check_schema(value, schema: dict, path: str) -> list[str]:
    """Structural-schema validation of ``value`` at ``path`` (a JSON-path-like string, '' for the root)."""
    where = path or "<root>"
    if value is None:
        return [] if schema.get("nullable") else [f"{where}: null is not allowed"]
    errors: list[str] = []
    if schema.get("x-kubernetes-int-or-string"):
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            return [f"{where}: expected an integer or a string, got {type(value).__name__}"]
    else:
        errors += _type_errors(value, schema.get("type"), where)
        if errors:
            return errors
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
        if len(value) > schema.get("maxLength", len(value)) or len(value) < schema.get("minLength", 0):
            errors.append(
                f"{where}: length {len(value)} outside [{schema.get('minLength', 0)}, {schema.get('maxLength', 'inf')}]"
            )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        lo, hi = INT_RANGE.get(schema.get("format"), (None, None))
        lo = schema.get("minimum", lo)
        hi = schema.get("maximum", hi)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            errors.append(f"{where}: {value} outside [{lo}, {hi}]")
    for key in ("anyOf", "oneOf"):
        if key in schema and not schema.get("x-kubernetes-int-or-string"):
            ok = sum(not check_schema(value, s, path) for s in schema[key])
            if ok == 0 or (key == "oneOf" and ok > 1):
                errors.append(f"{where}: matches {ok} of the {key} alternatives")
    for s in schema.get("allOf", []):
        errors += check_schema(value, s, path)
    errors += cel_errors(value, schema.get("x-kubernetes-validations", []), where)
    if isinstance(value, dict):
        errors += _object_errors(value, schema, path)
    elif isinstance(value, list):
        errors += _array_errors(value, schema, path)
    return errors


def cel_errors(value, rules: list[dict], where: str) -> list[str]:
    """Transition rules (oldSelf) only apply on update: skipped. Known rules are evaluated (CEL);
    any other rule is reported, so a field with an unevaluated rule cannot pass unchecked."""
    errors = []
    for rule in rules:
        text = rule.get("rule", "")
        if "oldSelf" in text:
            continue
        if text not in CEL:
            errors.append(f"{where}: CEL rule {text!r} cannot be checked here")
        elif not CEL[text](value):
            errors.append(f"{where}: {rule.get('message') or text}")
    return errors


def _type_errors(value, typ, where: str) -> list[str]:
    ok = {
        None: True,
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
    }[typ]
    return [] if ok else [f"{where}: expected {typ}, got {type(value).__name__} {value!r}"[:300]]


def _object_errors(value: dict, schema: dict, path: str) -> list[str]:
    errors = []
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") or extra is True
    for key in schema.get("required", []):
        if key not in value:
            errors.append(f"{path}.{key}: required" if path else f"{key}: required")
    for key, sub in value.items():
        sub_path = f"{path}.{key}" if path else str(key)
        if not isinstance(key, str):
            errors.append(f"{sub_path}: keys must be strings")
        elif key in props:
            errors += check_schema(sub, props[key], sub_path)
        elif isinstance(extra, dict):
            errors += check_schema(sub, extra, sub_path)
        elif not preserve:
            errors.append(f"{sub_path}: unknown field (the API server would prune it)")
    return errors


def _array_errors(value: list, schema: dict, path: str) -> list[str]:
    errors = []
    if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
        errors.append(
            f"{path}: {len(value)} items outside [{schema.get('minItems', 0)}, {schema.get('maxItems', 'inf')}]"
        )
    if "items" in schema:
        for i, item in enumerate(value):
            errors += check_schema(item, schema["items"], f"{path}[{i}]")
    kind = schema.get("x-kubernetes-list-type")
    if kind == "map":
        keys = schema.get("x-kubernetes-list-map-keys", [])
        seen = [tuple(item.get(k) for k in keys) for item in value if isinstance(item, dict)]
        if len(seen) != len(set(seen)):
            errors.append(f"{path}: duplicate entries for list-map keys {keys}")
    elif kind == "set":
        seen = [repr(item) for item in value]
        if len(seen) != len(set(seen)):
            errors.append(f"{path}: duplicate entries in a set")
    return errors
