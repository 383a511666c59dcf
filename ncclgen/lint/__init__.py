"""Step 3 of load -> plan -> lint -> render: check settings against what NCCL, PyTorch and the net
plugins really read (the knowledge base in ncclgen/data/kb), for `ncclgen lint` and for every plan.

The linter and its knowledge base load on first use: a plan made of ncclgen's own rules skips them
(lint/gate.py), which keeps `ncclgen slurm` fast.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "CODES",
    "SEVERITIES",
    "Finding",
    "cluster_checks_skipped",
    "counts",
    "detect",
    "format_json",
    "format_text",
    "is_relevant",
    "lint_environ",
    "lint_pairs",
    "lint_text",
    "parse_text",
    "read_input",
    "target_label",
    "unchecked",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module(".linter", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
