"""A log whose last line says the job is waiting: with no error and no sign the run ended, the run stopped there.

c10d warns, in its connect retry loop, that the store's host name does not resolve (socket.cpp); while pods and
DNS records come up that is harmless, and a run that then got on prints more. A log whose last kept line is that
warning, with nothing after it (the file's own last line: the reader keeps only lines that may matter, so a
training loop's progress lines after it are read in the file), stops there: a job that never reached its store (on
Kubernetes, torchrun's rank 0 offering its pod's host name, which no Service publishes: skypilot#3788), or an
excerpt cut there (jobset#93). Such a log is unfinished at that line, not clean, and the report says both.

Likewise a log that ends early (runstate.ends_early: NCCL's setup began and nothing shows the run ended) after a line
that can stall NCCL with no error of its own: a connection that was not NCCL's on its listening socket, which before
2.30.7 could leave the proxy thread waiting in place (nccl#1808), or a link-local interface in NCCL's bootstrap or
socket list (pytorch#68893: a container's veth with only an fe80:: address). It is where the run may have hung, not a
note.
"""

from __future__ import annotations

from . import catalogue, runstate
from .events import Event, order
from .nodes import Facts
from .reader import is_last

# suspects that mean "still waiting" when nothing follows them -> the class that says so
WAITS = {
    "store-name-not-yet-resolved": "store-unresolved-at-end",
    "paddle-endpoints-not-ready": "paddle-peers-not-listening",
    "launcher-peer-wait": "launcher-peer-wait-at-end",
    "torch-extensions-root": "torch-extension-lock-wait",
}
# suspects that can stall NCCL without an error line of their own: a connection that was not NCCL's on its listening
# socket; a link-local bootstrap or socket interface, whose address other hosts cannot reach (NCCL's connect to it
# retries before it gives up: src/misc/socket.cc, ncclSocketConnect's retries on refused and timed-out connects)
STALLS = frozenset({"socket-foreign-connection", "link-local-bootstrap"})
ACROSS_HOSTS = frozenset({"link-local-bootstrap"})  # stalls only where ranks on other hosts must reach the address
MAX_FILES = 4096


class LastLines:
    def __init__(self) -> None:
        self.last: dict[str, Event] = {}  # file -> its last kept event

    def add(self, ev: Event) -> None:
        f = ev.line.file
        if f in self.last or len(self.last) < MAX_FILES:
            self.last[f] = ev

    def finding(self, success: bool) -> Event | None:
        """The earliest file end that is a waiting line, where nothing shows the run ended."""
        if success:
            return None
        waits = [ev for ev in self.last.values() if ev.sig is not None and ev.sig.id in WAITS and is_last(ev.line)]
        if not waits:
            return None
        ev = min(waits, key=order)
        return Event(ev.line, catalogue.classes()[WAITS[ev.sig.id]], ev.groups, ev.time, ev.node, ev.rank, ev.seq)  # type: ignore[union-attr]


def _across_hosts(facts: Facts) -> bool:
    """The run spans hosts: more than one host's lines, or a channel over the network (NCCL's NET/)."""
    return len(facts.hosts) > 1 or any(h.net_channels for h in facts.hosts.values())


def stalled_at(suspects: list[Event], facts: Facts) -> Event | None:
    """The earliest suspect that can stall NCCL silently, in a log that ends early; or None."""
    spans = _across_hosts(facts)
    stalls = [
        ev for ev in suspects if ev.sig is not None and ev.sig.id in STALLS and (spans or ev.sig.id not in ACROSS_HOSTS)
    ]
    return min(stalls, key=order) if stalls and runstate.ends_early(facts) else None
