"""The one golden-file check: a reviewed file must equal what ncclgen renders now.

After an intended change run `make regen` (docs, examples/ and goldens; NCCLGEN_REGEN_GOLDEN=1 makes
these checks rewrite their file), then read `git diff` before committing: goldens are reviewed, never
regenerated blindly. examples/ are the goldens for the bundled workloads on h100-ib; tests/golden/
holds only renders no example covers.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

REGEN = os.environ.get("NCCLGEN_REGEN_GOLDEN") == "1"


def check(path: Path, got: str) -> None:
    """Fail with a unified diff when ``got`` differs from ``path``; rewrite it under NCCLGEN_REGEN_GOLDEN=1."""
    if REGEN or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
        if not REGEN:
            pytest.fail(f"{path} did not exist and was written; review it and commit it")
    want = path.read_text(encoding="utf-8")
    if got != want:
        diff = "\n".join(
            difflib.unified_diff(want.splitlines(), got.splitlines(), str(path), "rendered", lineterm="", n=2)
        )
        pytest.fail(f"{path.name} differs from its golden file (`make regen` if intended, then review):\n{diff}")
