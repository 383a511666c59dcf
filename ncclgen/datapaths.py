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

    ./FOLDER is read implicitly: a file found there is read only once ncclgen/trust.py allows it (see
    implicit()); the folders in $ENV_VAR are named by the user and read as named.
    """
    dirs = [d for d in os.environ.get(env_var, "").split(":") if d]
    dirs.append(os.path.join(os.getcwd(), folder))
    dirs.append(bundled(folder))
    return dirs


def implicit(path: str) -> bool:
    """True when ``path`` was found in ./clusters or ./workloads, which nobody named (ncclgen/trust.py)."""
    here = os.getcwd()
    return os.path.dirname(path) in (os.path.join(here, "clusters"), os.path.join(here, "workloads"))


def yaml_files(dirs: list[str], *, regular_only: bool = False) -> dict[str, str]:
    """name -> path of every *.yaml/*.yml in ``dirs``; the first folder in order wins a name."""
    found: dict[str, str] = {}
    for d in dirs:
        if not os.path.isdir(d):
            continue
        try:
            entries = sorted(os.listdir(d))
        except OSError as exc:
            from .errors import UserError

            raise UserError(f"cannot list this folder: {exc.strerror}", file=d) from None
        for entry in entries:
            path = os.path.join(d, entry)
            if not entry.endswith((".yaml", ".yml")) or (regular_only and not os.path.isfile(path)):
                continue
            found.setdefault(entry.rsplit(".", 1)[0], path)
    return found
