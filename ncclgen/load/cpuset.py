"""Linux cpuset lists ("0-55,112-167"), as in /sys/devices/system/node/node*/cpulist and numactl."""

from __future__ import annotations

import re

from ..errors import non_ascii

# ASCII digits only ([0-9], not \d, which also matches other scripts' digits that numactl rejects).
_PART = re.compile(r"([0-9]{1,9})(?:-([0-9]{1,9}))?")
# "48-95, 144-191" (a space after the comma, as people write lists) is accepted; normalise() drops it.
PATTERN = r"[0-9]+(-[0-9]+)?( ?, ?[0-9]+(-[0-9]+)?)*"
# NR_CPUS at most 8192 (CPU ids 0-8191): x86-64 arch/x86/Kconfig NR_CPUS_RANGE_END, "default 8192 if
# SMP && CPUMASK_OFFSTACK" (the MAXSMP value; x86 patch threads on lkml quote it). Other arches unchecked.
# https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/tree/arch/x86/Kconfig
# A larger id is a typo (65535 for 655), not a machine.
MAX_CPU = 8192


def parse(text: str) -> frozenset[int]:
    """'0-3,8' -> {0,1,2,3,8}. Raises ValueError with what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("empty CPU list")
    cpus: set[int] = set()
    for part in text.strip().split(","):
        m = _PART.fullmatch(part.strip())
        if not m:
            raise ValueError(f"bad CPU range {part!r} (expected N or N-M){non_ascii(part)}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"bad CPU range {part!r} (end before start)")
        if hi >= MAX_CPU:
            raise ValueError(f"CPU {hi} is beyond {MAX_CPU - 1}: Linux allows at most {MAX_CPU} CPUs (NR_CPUS)")
        cpus.update(range(lo, hi + 1))
    return frozenset(cpus)


def normalise(text: str) -> str:
    """'48-95, 144-191' -> '48-95,144-191': the form numactl and Slurm take."""
    return re.sub(r"\s*,\s*", ",", text.strip())


def format(cpus) -> str:
    """{0,1,2,3,8} -> '0-3,8' (sorted, ranges merged)."""
    out: list[str] = []
    run: list[int] = []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)
