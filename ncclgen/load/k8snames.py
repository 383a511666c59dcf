"""Kubernetes names and values, checked as the API server checks them: DNS-1123 names, qualified names
(label and annotation keys), label values, the total size of annotations, nodeSelector and tolerations.

Sources (read, not copied): kubernetes/apimachinery@eed236ce pkg/util/validation/validation.go
(IsDNS1123Subdomain, IsQualifiedName, IsValidLabelValue), pkg/api/validation/objectmeta.go:39-70
(TotalAnnotationSizeLimitB = 256 * (1 << 10); ValidateAnnotations checks IsQualifiedName on the key in
lower case; ValidateAnnotationsSize sums len(key) + len(value), bytes), pkg/apis/meta/v1/validation/
validation.go:106-124 (ValidateLabels: qualified-name keys, label values); kubernetes/kubernetes
pkg/apis/core/validation/validation.go (ValidatePodSpec checks nodeSelector with ValidateLabels;
ValidateTolerations: a key is a label name, an empty key needs operator Exists, Exists takes no value,
Equal's value is a label value).
"""

from __future__ import annotations

import re

# k8s.io/apimachinery/pkg/util/validation/validation.go
DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = rf"{DNS1123_LABEL}(\.{DNS1123_LABEL})*"
QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE = rf"({QUALIFIED_NAME})?"
CONFIG_KEY = r"[-._a-zA-Z0-9]+"  # IsConfigMapKey: Secret and ConfigMap data keys
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"  # a name every shell can export as well
ANNOTATIONS_MAX = 256 * 1024  # TotalAnnotationSizeLimitB, in bytes of key and value


class Invalid(ValueError):
    """A bad value; the caller names where it came from (an option or a descriptor key)."""


def subdomain(value: str, what: str) -> str:
    """A DNS-1123 subdomain (IsDNS1123Subdomain): the name of a Secret, ConfigMap, PVC, ServiceAccount,
    PriorityClass, or a scheduler."""
    if not isinstance(value, str) or len(value) > 253 or not re.fullmatch(DNS1123_SUBDOMAIN, value):
        raise Invalid(
            f"{what} {value!r} is not a DNS-1123 subdomain (lower-case letters, digits, '-' and "
            "'.', starting and ending with a letter or digit, at most 253 characters)"
        )
    return value


def qualified_name(key: str, what: str) -> str:
    """A label or annotation key (IsQualifiedName): [DNS-1123 subdomain '/'] name of at most 63."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not re.fullmatch(DNS1123_SUBDOMAIN, prefix)):
        raise Invalid(f"{what} {key!r}: prefix {prefix!r} is not a DNS-1123 subdomain")
    if not name or len(name) > 63 or not re.fullmatch(QUALIFIED_NAME, name):
        raise Invalid(
            f"{what} {key!r}: {name!r} is not a qualified name (at most 63 letters, digits, "
            "'-', '_', '.', starting and ending with a letter or digit, after an optional "
            "DNS-subdomain prefix and '/')"
        )
    return key


def label_value(value: str, what: str) -> str:
    if not isinstance(value, str) or len(value) > 63 or not re.fullmatch(LABEL_VALUE, value):
        raise Invalid(
            f"{what} {value!r} is not a label value (at most 63 letters, digits, '-', '_', '.', "
            "starting and ending with a letter or digit, or empty)"
        )
    return value


def env_name(value: str, what: str) -> str:
    from . import envnames  # the one name policy

    bad = envnames.name_problem(value)
    if bad:
        raise Invalid(f"{what}: {bad}")
    return value


def key_value(text: str, what: str) -> tuple[str, str]:
    """KEY=VALUE from the command line."""
    key, eq, value = text.partition("=")
    if not eq:
        raise Invalid(f"{what} {text!r}: expected KEY=VALUE")
    return key, value


# -- what ncclgen writes itself, and the API server's limits on the whole set ------------------------------

RESERVED_PREFIX = "ncclgen.io/"  # ncclgen's own keys: ncclgen.io/explain on every pod, ncclgen.io/cluster, /tier


def label_key(key: str, what: str = "label key") -> str:
    """A label key a user may set: a qualified name outside ncclgen's own ncclgen.io/ prefix."""
    _not_reserved(key, what)
    return qualified_name(key, what)


def annotation_key(key: str, what: str = "annotation key") -> str:
    """An annotation key a user may set: a qualified name once lower-cased (ValidateAnnotations), outside
    ncclgen.io/, whose keys ncclgen writes itself (ncclgen.io/explain would silently replace the user's)."""
    _not_reserved(key, what)
    try:
        qualified_name(key.lower(), what)
    except Invalid as exc:
        raise Invalid(str(exc).replace(repr(key.lower()), repr(key), 1)) from None
    return key


def _not_reserved(key: str, what: str) -> None:
    if key.lower().startswith(RESERVED_PREFIX):
        raise Invalid(
            f"{what} {key!r}: keys under {RESERVED_PREFIX} are ncclgen's own (it writes ncclgen.io/explain on every "
            "pod and ncclgen.io/cluster, ncclgen.io/tier on every object); yours would be silently replaced"
        )


def annotations_size(annotations: dict) -> int:
    """Bytes the API server counts: len(key) + len(value) of every annotation, in UTF-8 (Go strings)."""
    return sum(
        len(k.encode("utf-8", "surrogateescape")) + len(v.encode("utf-8", "surrogateescape"))
        for k, v in annotations.items()
    )


def check_annotations_size(annotations: dict, what: str = "annotations") -> None:
    size = annotations_size(annotations)
    if size > ANNOTATIONS_MAX:
        raise Invalid(
            f"{what}: {size} bytes of keys and values, more than the API server's {ANNOTATIONS_MAX} (256 KiB, "
            "TotalAnnotationSizeLimitB): kubectl apply would be refused"
        )


def node_selector_errors(selector: dict) -> list[tuple[str, str]]:
    """(key, message) for each nodeSelector entry ValidateLabels refuses."""
    out = []
    for key, value in selector.items():
        for fn, item, what in ((qualified_name, key, "nodeSelector key"), (label_value, value, "nodeSelector value")):
            try:
                fn(item, what)
            except Invalid as exc:
                out.append((key, str(exc)))
    return out


def toleration_errors(key: str | None, operator: str, value: str | None) -> list[tuple[str, str]]:
    """(field, message) for what ValidateTolerations refuses in one toleration."""
    out = []
    if key:
        try:
            qualified_name(key, "toleration key")
        except Invalid as exc:
            out.append(("key", str(exc)))
    elif operator != "Exists":
        out.append(("operator", "operator must be Exists when key is empty (a toleration of every taint)"))
    if operator == "Exists" and value:
        out.append(("value", f"value {value!r} must be empty when operator is Exists"))
    if operator == "Equal":
        try:
            label_value(value or "", "toleration value")
        except Invalid as exc:
            out.append(("value", str(exc)))
    return out


def object_meta_errors(docs: list) -> list[str]:
    """One line per object or pod template in ``docs`` whose annotations the API server would refuse for
    their total size, once ncclgen's own (the explain line, a net plugin's, GKE's networks) are in."""
    out: list[str] = []

    def walk(node, label: str, path: str) -> None:
        if isinstance(node, dict):
            meta = node.get("metadata")
            if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
                try:
                    check_annotations_size(meta["annotations"], f"{label}: {path}metadata.annotations")
                except Invalid as exc:
                    out.append(str(exc))
            for k, v in node.items():
                walk(v, label, f"{path}{k}.")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, label, f"{path[:-1]}[{i}].")

    for doc in docs:
        walk(doc, f"{doc.get('kind', 'object')} {doc.get('metadata', {}).get('name', '')}".strip(), "")
    return out
