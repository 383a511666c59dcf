"""What says a run with no error line was slower than its nodes allow (status slow, exit 0).

Three kinds of sign: a node or plan comparison's finding (network channels without GDRDMA where GPUDirect is there,
NCCL's traffic on TCP sockets over InfiniBand or RoCE, GPUs without peer access, HCAs of two link layers); c10d's
store waiting out resolver timeouts on reverse lookups of its clients (lookups.py); and a line that says so by
itself (an OpenMP runtime's warning that a task's threads oversubscribe its CPUs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from . import lookups
from .events import Event

# findings that mean a run slower than its fabric allows: traffic staged through host memory, or TCP sockets on IB/RoCE
FINDINGS = ("no-gdrdma", "net-socket-fallback", "plan-net", "p2p-disabled", "p2p-unavailable", "hca-mixed-links")
# lines that say by themselves the run is slower than its nodes allow: a task's threads oversubscribing its CPUs
LINES = ("cpu-oversubscribed",)


def first(findings: Iterable[Event], suspects: Iterable[Event], contexts: Mapping[str, Event]) -> Event | None:
    """The first sign of a slow run, in the order above; None where there is none."""
    found = next((f for f in findings if f.sig and f.sig.id in FINDINGS), None) or lookups.slowed(suspects)
    return found or next((contexts[c] for c in LINES if c in contexts), None)
