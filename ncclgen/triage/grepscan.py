"""The reader's fast path: GNU/BSD `grep -F` finds the candidate lines of a big log at C speed.

Python has no multi-literal search: one bytes.find pass per anchor over every chunk costs ~85 passes
(20 MB/s on this machine under load), and one regex alternation is slower still. `grep -F` with every
anchor as a pattern makes one pass (Aho-Corasick / Commentz-Walter in GNU grep), and prints only the
matching lines with their line number and byte offset (-n -b). The chatty keys (channel and init lines)
run as separate greps that stop after their cap (-m), so a 2 GiB INFO log stays bounded. Output is merged
by line number. reader.py uses this when a grep is on PATH and falls back to bytes.find otherwise; both
give the same lines (tests/test_triage_reader.py).
"""

from __future__ import annotations

import heapq
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

ENV = {**os.environ, "LC_ALL": "C"}  # bytes, not characters: the fastest matcher and no locale surprises


def available() -> bool:
    return shutil.which("grep") is not None and os.environ.get("NCCLGEN_TRIAGE_GREP", "1") != "0"


def _spawn(path: Path, patterns: Iterable[bytes], cap: int | None) -> subprocess.Popen:
    cmd = ["grep", "-F", "-a", "-n", "-b"]
    if cap is not None:
        cmd += ["-m", str(cap)]
    for p in patterns:
        cmd += ["-e", p.decode()]
    cmd += ["--", str(path)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV)


def _read(proc: subprocess.Popen) -> Iterator[tuple[int, int, bytes]]:
    assert proc.stdout is not None
    for raw in proc.stdout:
        lineno, offset, text = raw.split(b":", 2)
        yield int(lineno), int(offset), text.rstrip(b"\n")


def lines(
    path: Path, anchors: tuple[bytes, ...], capped: dict[tuple[bytes, ...], int]
) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, text) of every line holding an anchor, and of the first ``cap`` lines holding
    a key of each capped group, in file order, each line once."""
    procs = [_spawn(path, anchors, None)] + [_spawn(path, group, n) for group, n in capped.items() if n > 0]
    last = 0
    try:
        for item in heapq.merge(*(_read(p) for p in procs)):
            if item[0] != last:
                last = item[0]
                yield item
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            if p.stdout:
                p.stdout.close()
    if any(p.returncode not in (0, 1, -9) for p in procs):
        raise OSError(f"grep failed on {path}")
