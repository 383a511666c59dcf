#!/usr/bin/env python3
"""Rewrite the triage examples in docs/triage.md and README.md from real runs on tests/data/triage/.

Usage: python tools/triage_docs.py   (then review `git diff`; tests/test_triage_docs.py fails when they differ)
Each ```console block whose first line is `$ ncclgen triage ...` gets that command's output, run in
tests/data/triage/ as the block shows it; the prose around it is left as written.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"(```console\n\$ (ncclgen triage [^\n]*)\n)(.*?)(```)", re.S)


def run(command: str) -> str:
    argv = [sys.executable, "-m", "ncclgen", *shlex.split(command)[1:]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(argv, cwd=ROOT / "tests" / "data" / "triage", capture_output=True, text=True, env=env)
    return out.stdout


def main() -> int:
    for page in (ROOT / "docs" / "triage.md", ROOT / "README.md"):
        text = page.read_text()
        page.write_text(BLOCK.sub(lambda m: m.group(1) + run(m.group(2)) + m.group(4), text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
