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
