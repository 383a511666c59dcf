"""Where bundled data lives: inside the package in a wheel, at the repository root in a checkout."""

from __future__ import annotations

import os

_PKG = os.path.dirname(os.path.abspath(__file__))


def bundled(kind: str) -> str:
    """Folder of bundled ``clusters``, ``templates`` or ``workloads``.

    A wheel carries the top-level folders under ncclgen/_bundled (see pyproject.toml); an editable
    install or a checkout reads them from the repository root.
    """
    if kind == "workloads":
        return os.path.join(_PKG, "data", "workloads")
    inside = os.path.join(_PKG, "_bundled", kind)
    if os.path.isdir(inside):
        return inside
    return os.path.join(os.path.dirname(_PKG), kind)


def data(name: str) -> str:
    """Path of a data file shipped in ncclgen/data."""
    return os.path.join(_PKG, "data", name)
