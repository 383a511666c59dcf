"""The last step of the tools that store generated modules in the package (compile_data.py, compact_jobside.py,
compile_triage.py): write the fresh text, or with --check compare it with the stored one (exit 1 on a difference,
which the tests and `make check-regen` run)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def main(doc: str | None, target: Path, fresh: Callable[[], str]) -> int:
    ap = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the stored module; exit 1 when it differs")
    args = ap.parse_args()
    text = fresh()
    if not args.check:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return 0
    if not target.exists() or target.read_text(encoding="utf-8") != text:
        print(f"{target} is stale: run python tools/{Path(sys.argv[0]).name}", file=sys.stderr)
        return 1
    return 0
