"""Which releases the knowledge base covers, version arithmetic, and what each PyTorch release's 'nccl' is.

The release tables (data/kb/nccl-releases.tsv, torch-releases.tsv, torch-aliases.tsv) are generated from the
released wheels by tools/nccl_wheel_names.py and tools/torch_wheel_names.py; their headers say what is covered.
"""

from __future__ import annotations

import os
import re

from .. import datapaths

RELEASE_TABLES = {"nccl": "nccl-releases.tsv", "torch": "torch-releases.tsv"}
REFRESH = {
    "nccl": "refresh it with tools/nccl_wheel_names.py --extend (the new nvidia-nccl wheel), or upgrade ncclgen",
    "torch": "refresh it with tools/torch_wheel_names.py (the new torch wheel), or upgrade ncclgen",
}


def _covered(reader: str) -> tuple[str, ...]:
    """The releases the knowledge base was generated from: the header of data/kb/<reader>-releases.tsv."""
    with open(os.path.join(datapaths.data("kb"), RELEASE_TABLES[reader]), encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("name\t"):
                return tuple(line.rstrip("\n").split("\t")[1:])
    raise ValueError(f"{RELEASE_TABLES[reader]}: no header line")


# The releases the knowledge base covers (oldest..newest), read from the generated release tables, and the
# newest of each: a cluster declaring a newer release gets "unknown to ncclgen's knowledge", not "not read".
KB_COVERS = {reader: _covered(reader) for reader in RELEASE_TABLES}
KB_VERSIONS = {reader: versions[-1] for reader, versions in KB_COVERS.items()}


def version_tuple(v: str) -> tuple[int, ...]:
    """'2.30.7' -> (2, 30, 7); a leading 'v', a '-N' package suffix ('v2.30.7-1') and PyTorch's local or
    pre-release part ('2.6.0a0+ecf3bae40a', '2.15.0+cu130', '2.15.0rc1') are dropped."""
    text = v.strip()
    text = text[1:] if text[:1] in ("v", "V") else text
    text = re.split(r"[-+]|(?<=\d)(?:a|b|rc|\.dev|\.post)\d*", text, maxsplit=1)[0]
    if not re.fullmatch(r"\d+(\.\d+)*", text):
        raise ValueError(f"not a version: {v!r}")
    return tuple(int(p) for p in text.split("."))


def compare_versions(a: str, b: str) -> int:
    """-1/0/1, comparing on the common prefix, so '2.17' means any 2.17.x (a descriptor may give only major.minor)."""
    ta, tb = version_tuple(a), version_tuple(b)
    n = min(len(ta), len(tb))
    return (ta[:n] > tb[:n]) - (ta[:n] < tb[:n])


def beyond_knowledge(reader: str, version: str | None) -> bool:
    """Whether ``version`` of ``reader`` (nccl | torch) is newer than every release the knowledge base read."""
    newest = KB_VERSIONS.get(reader)
    return bool(version and newest and compare_versions(version, newest) > 0)


def older_than_knowledge(reader: str, version: str | None) -> bool:
    """Whether ``version`` is older than the oldest release whose wheel the knowledge base read (for
    PyTorch, whose rows carry no history before 2.13.0)."""
    oldest = KB_COVERS.get(reader, ("",))[0]
    return bool(version and oldest and compare_versions(version, oldest) < 0)


_ALIASES: dict[str, tuple[str, str]] | None = None


def torch_alias_of(name: str) -> tuple[str, str] | None:
    """(old name, 'file:line') when the newest PyTorch the knowledge base read lists ``name`` first in a
    {"NEW", "OLD"} list (data/kb/torch-aliases.tsv): OLD is what older releases read."""
    global _ALIASES
    if _ALIASES is None:
        _ALIASES = {}
        with open(os.path.join(datapaths.data("kb"), "torch-aliases.tsv"), encoding="utf-8") as fh:
            rows = [ln.rstrip("\n").split("\t") for ln in fh if not ln.startswith("#")]
        for version, old, new, where in rows[1:]:
            if version == KB_VERSIONS["torch"]:
                _ALIASES.setdefault(new, (old, where))
    return _ALIASES.get(name)


def nccl_backend(torch_version: str, use_nccl2: str | None) -> tuple[str, str]:
    """(class, why with its source) of what init_process_group(backend="nccl") builds on PyTorch
    ``torch_version`` with TORCH_DIST_USE_NCCL2=``use_nccl2`` (None = unset), as the released wheels say:
    2.15.0 distributed_c10d.py:961-966 builds ProcessGroupNCCL2 unless the value is '0'; 2.14.0/2.14.1
    distributed_c10d.py:829-834 the legacy ProcessGroupNCCL unless '1'; 2.13.0 has no ProcessGroupNCCL2."""
    if compare_versions(torch_version, "2.15") >= 0:
        src = "torch 2.15.0 torch/distributed/distributed_c10d.py:961-966"
        if use_nccl2 == "0":
            return "ProcessGroupNCCL", f"legacy: TORCH_DIST_USE_NCCL2=0 on PyTorch {torch_version}; {src}"
        return (
            "ProcessGroupNCCL2",
            f"PyTorch {torch_version}'s default; TORCH_DIST_USE_NCCL2=0 selects the legacy ProcessGroupNCCL; {src}",
        )
    if compare_versions(torch_version, "2.14") >= 0:
        src = "torch 2.14.1 torch/distributed/distributed_c10d.py:829-834"
        if use_nccl2 == "1":
            return "ProcessGroupNCCL2", f"TORCH_DIST_USE_NCCL2=1 on PyTorch {torch_version}; {src}"
        return (
            "ProcessGroupNCCL",
            f"PyTorch {torch_version}'s default; TORCH_DIST_USE_NCCL2=1 selects ProcessGroupNCCL2; {src}",
        )
    return "ProcessGroupNCCL", f"PyTorch {torch_version} has no ProcessGroupNCCL2: the 2.13.0 wheel has none"
