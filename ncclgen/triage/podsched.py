"""A pod the Kubernetes scheduler could not place at first and placed later: its FailedScheduling was no failure.

The scheduler retries a pending pod whenever the cluster changes (kubernetes/kubernetes pkg/scheduler: a pod that
does not fit goes back to the queue and is tried again); with an autoscaler (Karpenter, cluster-autoscaler) a GPU pod
is unschedulable until a node is added, then the scheduler records 'Scheduled ... Successfully assigned NS/POD to
NODE' (pkg/scheduler/schedule_one.go). In `kubectl describe pod`'s Events, or an events listing, a FailedScheduling
followed by that line in the same file is the usual wait for capacity, not the cause of anything.
"""

from __future__ import annotations

from .events import Event, order
from .reader import Line

ASSIGNED = "Successfully assigned "
UNSCHEDULABLE = "k8s-unschedulable"
MAX_FILES = 64


class PodScheduling:
    def __init__(self) -> None:
        self.assigned: dict[str, int] = {}  # file -> line number of its last 'Successfully assigned'

    def add(self, line: Line) -> None:
        if ASSIGNED in line.text and (line.file in self.assigned or len(self.assigned) < MAX_FILES):
            self.assigned[line.file] = line.lineno

    def placed_later(self, ev: Event) -> bool:
        """Whether ``ev`` is a FailedScheduling the scheduler got past: a pod assigned later in the same file."""
        later = self.assigned.get(ev.line.file, 0) > ev.line.lineno
        return later and ev.sig is not None and ev.sig.id == UNSCHEDULABLE

    def root(self, root: Event | None, firsts: list[Event]) -> Event | None:
        """``root``, or where it is a FailedScheduling the scheduler got past, the earliest other root of
        ``firsts`` (the first event of each group) that is not one."""
        if root is None or not self.placed_later(root):
            return root
        rest = [e for e in firsts if e.sig is not None and e.sig.role == "root" and not self.placed_later(e)]
        return min(rest, key=order) if rest else None
