"""A CUDA out-of-memory message whose own figures show much of the GPU held outside this process: another process on
the same GPU (a leftover of an earlier job, a second rank or an engine placed there), not a batch too large.

PyTorch's caching allocator prints the GPU's total and free memory and this process's use (torch 2.14.1 wheel,
lib/libc10_cuda.so: 'has a total capacity of ', ' is free. ', 'Including non-PyTorch memory, this process',
' memory in use. '); releases before 2.1 printed '(GPU N; T total capacity; A already allocated; F free; R reserved
in total by PyTorch)', where R leaves out the CUDA context and other non-PyTorch memory of the process, so that form
needs a larger gap before the rest is put down to another process (gpt-neox's llemma log: 79.33 GiB total, 31.59 GiB
reserved, 0.24 GiB free, an orphaned train.py holding 46 GB).
"""

from __future__ import annotations

import re

GIB = {"B": 2**-30, "bytes": 2**-30, "KiB": 2**-20, "MiB": 2**-10, "GiB": 1.0, "TiB": 1024.0}
NEW = re.compile(
    r"total capacity of (?P<total>[\d.]+ \w+) of which (?P<free>[\d.]+ \w+) is free\..*?"
    r"this process has (?P<mine>[\d.]+ \w+) memory in use"
)
OLD = re.compile(
    r"\(GPU \d+; (?P<total>[\d.]+ \w+) total capacity; [\d.]+ \w+ already allocated; (?P<free>[\d.]+ \w+) free; "
    r"(?P<mine>[\d.]+ \w+) reserved in total by PyTorch\)"
)
# (the floor in GiB, the share of the GPU) the rest must exceed: the old form's figure leaves out the process's own
# CUDA context, NCCL's buffers and other memory outside PyTorch's allocator
NEEDED = {NEW: (4.0, 0.10), OLD: (8.0, 0.20)}


def held_elsewhere(text: str) -> dict[str, str] | None:
    """The figures of an out-of-memory message that leaves much of the GPU unaccounted for, or None."""
    for rx, (floor, share) in NEEDED.items():
        m = rx.search(text)
        if m is None:
            continue
        total, free, mine = (_gib(m.group(k)) for k in ("total", "free", "mine"))
        if total is None or free is None or mine is None:
            return None
        other = total - free - mine
        if other > max(floor, share * total):
            return {"total": f"{total:.1f} GiB", "mine": f"{mine:.1f} GiB", "other": f"{other:.1f} GiB"}
        return None
    return None


def _gib(size: str) -> float | None:
    value, _, unit = size.partition(" ")
    factor = GIB.get(unit)
    return float(value) * factor if factor is not None else None
