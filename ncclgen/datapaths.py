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


def search_dirs(env_var: str, folder: str) -> list[str]:
    """$ENV_VAR (colon-separated folders), then ./FOLDER, then the bundled FOLDER: where names are found.

    ./FOLDER is read implicitly, so only when no other user could have written it (ncclgen/trust.py);
    the folders in $ENV_VAR are named by the user and read as named.
    """
    from . import trust

    dirs = [d for d in os.environ.get(env_var, "").split(":") if d]
    here = os.path.join(os.getcwd(), folder)
    if trust.implicit(here):
        dirs.append(here)
    dirs.append(bundled(folder))
    return dirs


def yaml_files(dirs: list[str], *, regular_only: bool = False) -> dict[str, str]:
    """name -> path of every *.yaml/*.yml in ``dirs``; the first folder in order wins a name."""
    from . import trust

    found: dict[str, str] = {}
    for d in dirs:
        if not os.path.isdir(d):
            continue
        implicit = d in (os.path.join(os.getcwd(), "clusters"), os.path.join(os.getcwd(), "workloads"))
        for entry in sorted(os.listdir(d)):
            path = os.path.join(d, entry)
            if not entry.endswith((".yaml", ".yml")) or (regular_only and not os.path.isfile(path)):
                continue
            if not implicit or trust.implicit(path):
                found.setdefault(entry.rsplit(".", 1)[0], path)
    return found
