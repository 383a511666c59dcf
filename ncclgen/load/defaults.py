"""Project defaults: which cluster, tier and workload a command uses when no flag says.

Precedence, highest first: command-line flag, NCCLGEN_CLUSTER / NCCLGEN_TIER / NCCLGEN_WORKLOAD, the
`ncclgen.yaml` in the current folder, built-in defaults (h100-ib, tier 1, verl-grpo-qwen2-7b).
"""

from __future__ import annotations

import os

from ..errors import UserError
from ..record import dataclass
from . import workload
from .schema import field, load_dataclass
from .yamlio import Document, load_file, require_regular

FILE = "ncclgen.yaml"
BUILTIN = {"cluster": "h100-ib", "tier": 1, "workload": workload.DEFAULT}


@dataclass(frozen=True, kw_only=True)
class Project:
    """ncclgen.yaml: defaults for every command run in this folder."""

    cluster: str | None = field(None, doc="default --cluster (name or path)")
    tier: int | None = field(None, doc="default --tier", min=1, max=3)
    workload: str | None = field(None, doc="default --workload (name or path)")


def _project() -> Project:
    return _project_doc()[0]


def _project_doc() -> tuple[Project, Document | None]:
    """./ncclgen.yaml, read implicitly: refused (exit 2) when another user could have written it
    (ncclgen/trust.py), or when the name is not a regular file (a FIFO, a link to /dev/zero, a folder,
    a dangling link): the user meant it as the project file, so it is an error, not a file to skip."""
    from .. import trust

    if not os.path.lexists(FILE):
        return Project(), None
    require_regular(FILE, "the project file (ncclgen.yaml: cluster, tier, workload)")
    trust.require(FILE, "the values it sets as flags or NCCLGEN_CLUSTER / NCCLGEN_TIER / NCCLGEN_WORKLOAD")
    doc = load_file(FILE)
    return load_dataclass(doc, doc.data, Project), doc


def _checked(key: str, value, where: str, doc: Document | None):
    """``value`` for ``key`` from NCCLGEN_<KEY> (``where``) or ncclgen.yaml (``doc``), checked to name a
    descriptor or workload that exists: the error names that file:line:col and key, not --cluster."""
    if key not in ("cluster", "workload"):
        return value
    from . import descriptor

    resolve = descriptor.resolve if key == "cluster" else workload.resolve
    try:
        resolve(value, "")
    except UserError as exc:
        if doc is not None:
            raise doc.error((key,), str(exc)) from None
        raise UserError(f"{where}: {exc}") from None
    return value


def default(key: str):
    """The default for ``key`` (cluster, tier or workload) by the precedence above."""
    env = os.environ.get(f"NCCLGEN_{key.upper()}")
    if env:
        if key == "tier":
            if env not in ("1", "2", "3"):
                raise UserError(f"NCCLGEN_TIER={env!r}: expected 1, 2 or 3")
            return int(env)
        return _checked(key, env, f"NCCLGEN_{key.upper()}", None)
    project, doc = _project_doc()
    value = getattr(project, key)
    return _checked(key, value, FILE, doc) if value is not None else BUILTIN[key]


def configured_cluster() -> tuple[str, str] | None:
    """(cluster, where it was set) from NCCLGEN_CLUSTER or ncclgen.yaml, without the built-in default.

    For `lint` and `doctor`, which check against no cluster (lint) or refuse (doctor) rather than
    assume h100-ib when nothing names one.
    """
    env = os.environ.get("NCCLGEN_CLUSTER")
    if env:
        return _checked("cluster", env, "NCCLGEN_CLUSTER", None), "NCCLGEN_CLUSTER"
    project, doc = _project_doc()
    value = project.cluster
    return (_checked("cluster", value, FILE, doc), FILE) if value is not None else None
