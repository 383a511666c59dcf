"""Kubernetes quantities as numbers: the descriptor's resources and shm_size are written the way the API
server reads them (patterns.QUANTITY, after k8s.io/apimachinery pkg/api/resource/quantity.go), and a few
places need their value (a negative request, /dev/shm's size in bytes)."""

from __future__ import annotations

import re
from decimal import Decimal

from .patterns import QUANTITY

_SUFFIX = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12),
    "P": Decimal(10**15), "E": Decimal(10**18),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}  # fmt: skip
_SPLIT = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)")


def value(text: str) -> Decimal:
    """The quantity's value ('500m' -> 0.5, '1.5Gi' -> 1610612736, '12e6' -> 12000000); ValueError if
    ``text`` is not a quantity."""
    if not re.fullmatch(QUANTITY, text):
        raise ValueError(f"{text!r} is not a Kubernetes quantity")
    m = _SPLIT.fullmatch(text)
    assert m is not None  # QUANTITY matched, so the number part is there
    number, suffix = m.groups()
    if number.endswith("."):
        number += "0"  # '1.' is 1 in apimachinery; Decimal wants a digit after the point
    if suffix in _SUFFIX:
        return Decimal(number) * _SUFFIX[suffix]
    return Decimal(number + "e" + suffix[1:])  # a decimal exponent (E alone is exa); exact at any size
