"""Validate rendered Kubernetes objects the way an API server and the two operators would.

No kube-apiserver can run here (Debian 12 ships kubectl and etcd but not the API server; PyPI has none;
kind, minikube and envtest download binaries), so this module re-implements what matters:

- ``check_custom_resource``: a CR against its CRD's openAPIV3Schema with structural-schema semantics:
  type, required, enum, int32/int64 ranges, pattern, min/max, x-kubernetes-int-or-string,
  x-kubernetes-preserve-unknown-fields, list-type map/set uniqueness, nullable. Unknown fields are
  ERRORS wherever a schema does not preserve them: a real API server silently prunes them, which is
  how a misplaced `resources:` loses its GPUs and RDMA devices. CEL rules (x-kubernetes-validations)
  cannot be evaluated here: a transition rule (oldSelf) only applies on update and is skipped, any
  other rule on a field the object sets is reported so it cannot pass unchecked.
- ``check_core``: a core object (ConfigMap, PodTemplateSpec) against the `kubernetes` client's typed
  models, strictly: every key must be a field of the model (openapi_types/attribute_map), of its type.
- ``check_pod_template``: the API server's own pod validation that no schema expresses (extended
  resources requests == limits, hugepages need cpu or memory, mounts name volumes, names, labels).
- ``check_pytorchjob`` / ``check_rayjob`` / ``check_trainjob`` / ``check_trainingruntime``: the
  training-operator webhook, KubeRay's ValidateRayJobSpec/ValidateRayJobMetadata rules and Kubeflow
  Trainer's webhook and torch plugin rules that apply to what ncclgen renders.
- ``check_stream``: references between the objects of one rendering (a TrainJob's runtimeRef, a pod's
  ConfigMap volume) resolve to objects of the same stream and namespace.

CEL rules (x-kubernetes-validations) that the CRDs put on fields ncclgen sets are evaluated by hand
translations (``CEL``), keyed by the rule's exact text, so a changed rule in a newer CRD is reported as
unchecked instead of passing silently.

Every check returns a list of "path: message" strings; ``validate`` raises when any is found.
"""

from __future__ import annotations

import re

from k8s_schema import CEL, CRD_DIR, CRD_FILES, INT_RANGE, cel_errors, check_schema, crd_schemas  # noqa: F401

DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = rf"{DNS1123_LABEL}(\.{DNS1123_LABEL})*"
DNS1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE = rf"({QUALIFIED_NAME})?"
QUANTITY = (
    r"(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?"
    r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?"
)


class Invalid(AssertionError):
    """The object would be rejected (or silently pruned) by the API server or an operator."""


def validate(obj: dict) -> None:
    """Every check that applies to ``obj`` (a ConfigMap, PyTorchJob or RayJob); raise Invalid on any error."""
    errors = check(obj)
    if errors:
        raise Invalid(f"{obj.get('kind')} {obj.get('metadata', {}).get('name')}: " + "; ".join(errors))


def check(obj: dict) -> list[str]:
    kind = obj.get("kind")
    if kind == "ConfigMap":
        bad_keys = [k for k in obj.get("data") or {} if len(k) > 253 or not re.fullmatch(r"[-._a-zA-Z0-9]+", k)]
        return (
            check_core(obj, "V1ConfigMap")
            + check_object_meta(obj.get("metadata"), "metadata")
            + [f"data.{k}: not a valid ConfigMap key" for k in bad_keys]
        )
    group = str(obj.get("apiVersion", "")).split("/")[0]
    if (group, kind) not in CRD_FILES:
        return [f"kind: no validator for {obj.get('apiVersion')} {kind}"]
    errors = check_custom_resource(obj)
    for path, template in pod_templates(obj):
        errors += check_core(template, "V1PodTemplateSpec", path)
        errors += check_pod_template(template, path)
    errors += {
        "PyTorchJob": check_pytorchjob,
        "RayJob": check_rayjob,
        "TrainJob": check_trainjob,
        "TrainingRuntime": check_trainingruntime,
    }[kind](obj)
    return errors


def check_stream(docs: list[dict]) -> list[str]:
    """References between the objects of one rendering resolve inside it (same namespace)."""
    errors = []
    have = {
        (d.get("kind"), (d.get("metadata") or {}).get("namespace"), (d.get("metadata") or {}).get("name")) for d in docs
    }
    for d in docs:
        ns = (d.get("metadata") or {}).get("namespace")
        where = f"{d.get('kind')} {(d.get('metadata') or {}).get('name')}"
        if d.get("kind") == "TrainJob":
            ref = (d.get("spec") or {}).get("runtimeRef") or {}
            if ref.get("kind") == "TrainingRuntime" and ("TrainingRuntime", ns, ref.get("name")) not in have:
                errors.append(
                    f"{where}: spec.runtimeRef names TrainingRuntime {ref.get('name')!r}, which is "
                    "not in the stream's namespace"
                )
        for path, template in pod_templates(d) if d.get("kind") in KINDS_WITH_PODS else []:
            for v in (template.get("spec") or {}).get("volumes", []):
                cm = (v.get("configMap") or {}).get("name")
                if cm is not None and cm.endswith("-ncclgen") and ("ConfigMap", ns, cm) not in have:
                    errors.append(f"{where}: {path} mounts ConfigMap {cm!r}, which is not in the stream")
    return errors


# -- custom resources (the structural-schema rules are in tests/k8s_schema.py) ---------------------------


def check_custom_resource(obj: dict, schemas: dict | None = None) -> list[str]:
    """``obj`` against the served version of its CRD named by apiVersion."""
    group, _, version = str(obj.get("apiVersion", "")).partition("/")
    if schemas is None:
        schemas = crd_schemas(group, obj.get("kind"))
    if version not in schemas:
        return [f"apiVersion: {obj.get('apiVersion')} is not served (served: {', '.join(sorted(schemas))})"]
    schema = schemas[version]
    errors = check_object_meta(obj.get("metadata"), "metadata")
    # Rules on the whole object (they read metadata.name) are evaluated here, on the whole object.
    errors += cel_errors(obj, schema.get("x-kubernetes-validations", []), "<root>")
    # The API server validates ObjectMeta itself; the CRD schema only says `type: object` there.
    body = {k: v for k, v in obj.items() if k != "metadata"}
    top = dict(schema, properties={k: v for k, v in schema.get("properties", {}).items() if k != "metadata"})
    top.pop("x-kubernetes-validations", None)
    errors += check_schema(body, top, "")
    return errors


# -- ObjectMeta and core objects ------------------------------------------------------------------------


def check_object_meta(meta, path: str, *, name_required: bool = True) -> list[str]:
    """The API server's ObjectMeta rules for what ncclgen writes: name, namespace, labels, annotations."""
    if not isinstance(meta, dict):
        return [f"{path}: expected a mapping"]
    errors = []
    name = meta.get("name")
    if (name_required or name is not None) and (
        not isinstance(name, str) or len(name) > 253 or not re.fullmatch(DNS1123_SUBDOMAIN, name)
    ):
        errors.append(f"{path}.name: {name!r} is not a DNS-1123 subdomain")
    ns = meta.get("namespace")
    if ns is not None and (not isinstance(ns, str) or len(ns) > 63 or not re.fullmatch(DNS1123_LABEL, ns)):
        errors.append(f"{path}.namespace: {ns!r} is not a DNS-1123 label")
    for key, value in (meta.get("labels") or {}).items():
        errors += [f"{path}.labels.{key}: {m}" for m in _qualified_name_errors(key)]
        if not isinstance(value, str) or len(value) > 63 or not re.fullmatch(LABEL_VALUE, value):
            errors.append(f"{path}.labels.{key}: {value!r} is not a valid label value")
    annotations = meta.get("annotations") or {}
    for key, value in annotations.items():
        errors += [f"{path}.annotations.{key}: {m}" for m in _qualified_name_errors(key)]
        if not isinstance(value, str):
            errors.append(f"{path}.annotations.{key}: values must be strings")
    if sum(len(k) + len(str(v)) for k, v in annotations.items()) > 256 * 1024:
        errors.append(f"{path}.annotations: larger than 256 KiB")
    return errors


def _qualified_name_errors(key) -> list[str]:
    """k8s.io/apimachinery validation.IsQualifiedName: [DNS-1123 subdomain '/'] name (max 63)."""
    if not isinstance(key, str):
        return ["keys must be strings"]
    prefix, _, name = key.rpartition("/")
    errors = []
    if "/" in key and (not prefix or len(prefix) > 253 or not re.fullmatch(DNS1123_SUBDOMAIN, prefix)):
        errors.append(f"prefix {prefix!r} is not a DNS-1123 subdomain")
    if not name or len(name) > 63 or not re.fullmatch(QUALIFIED_NAME, name):
        errors.append(f"name part {name!r} is not a qualified name")
    return errors


_GENERIC = re.compile(r"(?:List|list)\[(.+)\]|(?:Dict|dict)[\[(]str, (.+)[\])]")


def check_core(obj, model: str, path: str = "") -> list[str]:
    """``obj`` against the kubernetes client's typed model ``model`` (e.g. "V1PodTemplateSpec").

    The client's own deserializer drops unknown keys silently (as the API server prunes them); here
    every key must name a field (attribute_map), every value must have the field's openapi type, and
    fields the model requires must be present.
    """
    from kubernetes.client import models

    cls = getattr(models, model)
    where = path or model
    if not isinstance(obj, dict):
        return [f"{where}: expected a mapping for {model}, got {type(obj).__name__}"]
    by_json = {json_key: attr for attr, json_key in cls.attribute_map.items()}
    errors = []
    fields = getattr(cls, "model_fields", {})  # pydantic-generated clients (kubernetes >= 33)
    for attr, info in fields.items():
        if info.is_required() and cls.attribute_map.get(attr, attr) not in obj:
            errors.append(f"{where}.{cls.attribute_map.get(attr, attr)}: required by {model}")
    for key, value in obj.items():
        sub = f"{path}.{key}" if path else f"{model}.{key}"
        if key not in by_json:
            errors.append(f"{sub}: unknown field of {model}")
            continue
        errors += _check_openapi(value, cls.openapi_types[by_json[key]], sub)
    return errors


def _check_openapi(value, typ: str, path: str) -> list[str]:
    if value is None:
        return []
    simple = {"str": str, "int": int, "bool": bool, "float": (int, float), "datetime": str, "date": str}
    if typ in simple:
        ok = isinstance(value, simple[typ]) and (typ == "bool" or not isinstance(value, bool))
        return [] if ok else [f"{path}: expected {typ}, got {type(value).__name__} {value!r}"[:300]]
    if typ == "object":
        return []
    m = _GENERIC.fullmatch(typ)
    if m and m.group(1):
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        return [e for i, v in enumerate(value) for e in _check_openapi(v, m.group(1), f"{path}[{i}]")]
    if m:
        if not isinstance(value, dict):
            return [f"{path}: expected a mapping"]
        return [e for k, v in value.items() for e in _check_openapi(v, m.group(2), f"{path}.{k}")]
    return check_core(value, typ, path)


# -- what the API server checks in a pod beyond its schema ----------------------------------------------


def check_pod_template(template: dict, path: str) -> list[str]:
    """Pod rules from k8s pkg/apis/core/validation that ncclgen's output could break."""
    errors = check_object_meta(template.get("metadata") or {}, f"{path}.metadata", name_required=False)
    spec = template.get("spec") or {}
    volumes = [v.get("name") for v in spec.get("volumes", [])]
    if len(volumes) != len(set(volumes)):
        errors.append(f"{path}.spec.volumes: duplicate names")
    for v in volumes:
        if not isinstance(v, str) or not re.fullmatch(DNS1123_LABEL, v) or len(v) > 63:
            errors.append(f"{path}.spec.volumes: {v!r} is not a DNS-1123 label")
    for i, vol in enumerate(spec.get("volumes", [])):
        if (
            "emptyDir" in vol
            and vol["emptyDir"].get("medium", "") not in ("", "Memory", "HugePages")
            and not str(vol["emptyDir"].get("medium")).startswith("HugePages-")
        ):
            errors.append(f"{path}.spec.volumes[{i}].emptyDir.medium: {vol['emptyDir']['medium']!r}")
    if spec.get("hostNetwork") and spec.get("dnsPolicy") not in ("ClusterFirstWithHostNet", "None"):
        errors.append(
            f"{path}.spec.dnsPolicy: a hostNetwork pod needs ClusterFirstWithHostNet to resolve cluster Services"
        )
    names = [c.get("name") for c in spec.get("containers", [])]
    if len(names) != len(set(names)):
        errors.append(f"{path}.spec.containers: duplicate names")
    for i, c in enumerate(spec.get("containers", [])):
        cp = f"{path}.spec.containers[{i}]"
        if not isinstance(c.get("name"), str) or not re.fullmatch(DNS1123_LABEL, c["name"]):
            errors.append(f"{cp}.name: {c.get('name')!r} is not a DNS-1123 label")
        if not c.get("image"):
            errors.append(f"{cp}.image: required")
        env_names = [e.get("name") for e in c.get("env", [])]
        for n in env_names:
            if not isinstance(n, str) or not n or "=" in n or not n.isprintable() or not n.isascii():
                errors.append(f"{cp}.env: {n!r} is not a valid variable name")
        dup = sorted({n for n in env_names if env_names.count(n) > 1})
        if dup:
            errors.append(f"{cp}.env: {', '.join(dup)} set more than once (the last one silently wins)")
        for m in c.get("volumeMounts", []):
            if m.get("name") not in volumes:
                errors.append(f"{cp}.volumeMounts: {m.get('name')!r} names no volume")
        if spec.get("hostNetwork"):
            for p in c.get("ports", []):
                if p.get("hostPort", p.get("containerPort")) != p.get("containerPort"):
                    errors.append(f"{cp}.ports: hostPort must equal containerPort with hostNetwork")
        errors += check_resources(c.get("resources") or {}, f"{cp}.resources")
    return errors


def check_resources(res: dict, path: str) -> list[str]:
    """ValidateResourceRequirements: quantities, limits for extended resources, hugepages rules."""
    errors = []
    limits, requests = res.get("limits") or {}, res.get("requests") or {}
    for kind, q in (("limits", limits), ("requests", requests)):
        for name, value in q.items():
            if not re.fullmatch(QUANTITY, str(value)):
                errors.append(f"{path}.{kind}.{name}: {value!r} is not a quantity")
            errors += [f"{path}.{kind}.{name}: {m}" for m in _qualified_name_errors(name)]
            if (
                "/" not in name
                and name not in ("cpu", "memory", "ephemeral-storage")
                and not name.startswith("hugepages-")
            ):
                errors.append(f"{path}.{kind}.{name}: must be a standard resource or fully qualified")
    for name, value in requests.items():
        overcommit = name in ("cpu", "memory", "ephemeral-storage")
        if not overcommit:
            if name not in limits:
                errors.append(f"{path}.limits.{name}: Limit must be set for non overcommitable resources")
            elif _quantity(limits[name]) != _quantity(value):
                errors.append(f"{path}.requests.{name}: must be equal to {name} limit")
    huge = [n for n in {**limits, **requests} if n.startswith("hugepages-")]
    for n in huge:
        page = _quantity(n[len("hugepages-") :])
        for q in (limits.get(n), requests.get(n)):
            if q is not None and (page is None or _quantity(q) is None or _quantity(q) % page):
                errors.append(f"{path}: {n} {q!r} is not a multiple of the page size")
    if huge and not {"cpu", "memory"} & (set(limits) | set(requests)):
        errors.append(f"{path}: HugePages require cpu or memory")
    return errors


_SUFFIX = {
    "": 1,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}


def _quantity(text) -> int | None:
    """Integer quantities ('8', '5Gi', '2Mi'); None for forms ncclgen never writes (milli, exponents)."""
    m = re.fullmatch(r"([0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?", str(text))
    return int(m.group(1)) * _SUFFIX[m.group(2) or ""] if m else None


# -- operator rules ---------------------------------------------------------------------------------------

KINDS_WITH_PODS = ("PyTorchJob", "RayJob", "TrainingRuntime")


def pod_templates(obj: dict) -> list[tuple[str, dict]]:
    """(path, template) for every pod template in a PyTorchJob, RayJob or TrainingRuntime (a TrainJob
    has none: its pods are the runtime's, with the TrainJob's trainer fields applied)."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "TrainJob":
        return []
    if obj.get("kind") == "TrainingRuntime":
        jobs = ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []
        return [
            (
                f"spec.template.spec.replicatedJobs[{i}].template.spec.template",
                ((j.get("template") or {}).get("spec") or {}).get("template") or {},
            )
            for i, j in enumerate(jobs)
        ]
    if obj.get("kind") == "PyTorchJob":
        return [
            (f"spec.pytorchReplicaSpecs.{rtype}.template", r.get("template") or {})
            for rtype, r in (spec.get("pytorchReplicaSpecs") or {}).items()
        ]
    cluster = spec.get("rayClusterSpec") or {}
    out = [("spec.rayClusterSpec.headGroupSpec.template", (cluster.get("headGroupSpec") or {}).get("template") or {})]
    out += [
        (f"spec.rayClusterSpec.workerGroupSpecs[{i}].template", g.get("template") or {})
        for i, g in enumerate(cluster.get("workerGroupSpecs") or [])
    ]
    return out


def check_pytorchjob(obj: dict) -> list[str]:
    """kubeflow/training-operator v1.9.0 webhook (pkg/webhooks/pytorch/pytorchjob_webhook.go): DNS-1035 name, Master/Worker only, one
    Master, a container named `pytorch` with an image, nprocPerNode not set twice."""
    errors = []
    name = (obj.get("metadata") or {}).get("name", "")
    if len(name) > 63 or not re.fullmatch(DNS1035_LABEL, name):
        errors.append(f"metadata.name: {name!r} is not a DNS-1035 label")
    spec = obj.get("spec") or {}
    replicas = spec.get("pytorchReplicaSpecs") or {}
    for rtype, r in replicas.items():
        if rtype not in ("Master", "Worker"):
            errors.append(f"spec.pytorchReplicaSpecs.{rtype}: only Master and Worker are allowed")
        containers = ((r.get("template") or {}).get("spec") or {}).get("containers") or []
        if not any(c.get("name") == "pytorch" and c.get("image") for c in containers):
            errors.append(f"spec.pytorchReplicaSpecs.{rtype}: needs a container named pytorch with an image")
        if rtype == "Worker" and r.get("replicas", 1) < 1:
            errors.append("spec.pytorchReplicaSpecs.Worker.replicas: at least 1")
    if "Master" in replicas and replicas["Master"].get("replicas", 1) != 1:
        errors.append("spec.pytorchReplicaSpecs.Master.replicas: must be 1")
    if spec.get("nprocPerNode") is not None and (spec.get("elasticPolicy") or {}).get("nProcPerNode") is not None:
        errors.append("spec: nprocPerNode and elasticPolicy.nProcPerNode are both set")
    return errors


def check_rayjob(obj: dict) -> list[str]:
    """KubeRay ValidateRayJobMetadata/ValidateRayJobSpec/ValidateRayClusterSpec rules that apply here."""
    errors = []
    name = (obj.get("metadata") or {}).get("name", "")
    if len(name) > 47 or not re.fullmatch(DNS1035_LABEL, name):
        errors.append(f"metadata.name: {name!r} is not a DNS-1035 label of at most 47 characters")
    spec = obj.get("spec") or {}
    cluster = spec.get("rayClusterSpec")
    if cluster is None:
        return [*errors, "spec.rayClusterSpec: required (ncclgen never uses clusterSelector)"]
    if not spec.get("entrypoint", "").strip():
        errors.append("spec.entrypoint: empty")
    groups = [("headGroupSpec", cluster.get("headGroupSpec") or {})]
    groups += [(f"workerGroupSpecs[{i}]", g) for i, g in enumerate(cluster.get("workerGroupSpecs") or [])]
    names = [g.get("groupName") for _, g in groups[1:]]
    if len(names) != len(set(names)):
        errors.append("spec.rayClusterSpec.workerGroupSpecs: duplicate groupName")
    for where, g in groups:
        params = g.get("rayStartParams") or {}
        if not ((g.get("template") or {}).get("spec") or {}).get("containers"):
            errors.append(f"spec.rayClusterSpec.{where}: needs a Ray container (index 0)")
        if g.get("resources") and {"num-cpus", "num-gpus", "memory", "resources"} & set(params):
            errors.append(f"spec.rayClusterSpec.{where}: resources set in both rayStartParams and resources")
        if "labels" in params:
            errors.append(f"spec.rayClusterSpec.{where}.rayStartParams: labels is not supported")
        if where != "headGroupSpec":
            lo, hi, n = g.get("minReplicas", 0), g.get("maxReplicas", 2**31 - 1), g.get("replicas", 0)
            if not lo <= n <= hi:
                errors.append(f"spec.rayClusterSpec.{where}: replicas {n} outside [{lo}, {hi}]")
    return errors


# Kubeflow Trainer v2.3.0 (github.com/kubeflow/trainer@658725bdae5c7e3a0854d93ac6ff492e109a22ab):
# pkg/constants/constants.go, pkg/runtime/framework/plugins/torch/torch.go, pkg/webhooks.
TORCH_RESERVED_ENV = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")
TRAINER_ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"


def check_trainjob(obj: dict) -> list[str]:
    """The trainer fields as the containers they become (typed models, pod rules), and the torch
    plugin's Validate: no PET_* variable in trainer.env (the plugin injects them)."""
    errors = []
    spec = obj.get("spec") or {}
    trainer = spec.get("trainer") or {}
    for i, e in enumerate(trainer.get("env") or []):
        errors += check_core(e, "V1EnvVar", f"spec.trainer.env[{i}]")
    names = [e.get("name") for e in trainer.get("env") or []]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        errors.append(f"spec.trainer.env: {', '.join(dup)} set more than once (the last one silently wins)")
    reserved = sorted(set(names) & set(TORCH_RESERVED_ENV))
    if reserved:
        errors.append(f"spec.trainer.env: must not have reserved envs {reserved} (torch plugin)")
    if "resourcesPerNode" in trainer:
        errors += check_core(trainer["resourcesPerNode"], "V1ResourceRequirements", "spec.trainer.resourcesPerNode")
        errors += check_resources(trainer["resourcesPerNode"], "spec.trainer.resourcesPerNode")
    ref = spec.get("runtimeRef") or {}
    if ref.get("apiGroup", "trainer.kubeflow.org") != "trainer.kubeflow.org" or ref.get(
        "kind", "ClusterTrainingRuntime"
    ) not in ("TrainingRuntime", "ClusterTrainingRuntime"):
        errors.append(f"spec.runtimeRef: {ref} is not a (Cluster)TrainingRuntime of trainer.kubeflow.org")
    return errors


def check_trainingruntime(obj: dict) -> list[str]:
    """What the trainer plugins need to find in a runtime: a replicated job labelled with the trainer
    ancestor label and a pod container named `node` (FindContainerByPodSetAncestorContainerName),
    and Job templates that a JobSet accepts (a pod restartPolicy of Never or OnFailure)."""
    errors = []
    spec = obj.get("spec") or {}
    jobs = ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []
    found = False
    for i, j in enumerate(jobs):
        pod = ((j.get("template") or {}).get("spec") or {}).get("template") or {}
        where = f"spec.template.spec.replicatedJobs[{i}]"
        if (pod.get("spec") or {}).get("restartPolicy") not in ("Never", "OnFailure"):
            errors.append(f"{where}: a Job's pods need restartPolicy Never or OnFailure")
        job_labels = ((j.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if job_labels.get(TRAINER_ANCESTOR_LABEL) == "trainer":
            found = any(c.get("name") == "node" for c in (pod.get("spec") or {}).get("containers") or [])
    if not found:
        errors.append(
            "spec.template.spec.replicatedJobs: no trainer job (Job template label "
            f"{TRAINER_ANCESTOR_LABEL}: trainer) with a container named node"
        )
    if "torch" not in (spec.get("mlPolicy") or {}):
        errors.append("spec.mlPolicy.torch: required for a torchrun workload")
    return errors
