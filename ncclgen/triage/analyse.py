"""Pick the first failure among a job's events and collapse what follows it.

The loudest lines of a dead job are symptoms (every rank's watchdog timeout after one rank was
killed), so roles decide before time does: the earliest root is the first failure, unless an earlier
suspect explains it (a failure NCCL reported at INFO, a link-local bootstrap interface, nodes that run
different NCCL releases: same area of cause); a suspect alone is the cause only when the job then
failed; symptoms alone leave the failure unclassified. Memory stays bounded: one representative per group.
"""

from __future__ import annotations

import re
from dataclasses import field

from ..record import dataclass
from . import (
    absent,
    aftermath,
    catalogue,
    frames,
    handled,
    lastline,
    nodes,
    podsched,
    progress,
    raypg,
    slow,
    stopped,
    torchtable,
    wrapped,
)
from .events import NCCL_PREFIX, REGENERATE, TRACEBACK, Event, before, classify, glog_head, order
from .reader import Line

MAX_KEYS = 64  # distinct ranks remembered per group (the count goes on)
MAX_GROUPS = 512
# symptoms that name the cause when the logs show no root: ranks waiting in a group's first one-element collective
# for a rank that was busy elsewhere or gone (no rank's error anywhere); Gloo's monitored barrier naming its absentees;
# Ray's wrapper of PyTorch's GPU out-of-memory error, its 'CUDA out of memory' line cut off
ALONE = ("watchdog-start-timeout", "monitored-barrier", "ray-task-gpu-oom")
# symptoms whose own text names where the cause is when nothing else does: an RDMA completion flushed on a queue
# pair already in error names the peer whose log (or link) holds it
NAMES_PEER = ("ib-flush",)
WATCHDOG_TIMEOUTS = ("watchdog-timeout", "watchdog-start-timeout")  # a collective timed out (SeqNum, OpType)
ABSENT = "ranks-absent"  # with no root: the ranks of a group that printed no timeout where the others did (absent.py)
FACT_ONLY = ("Init COMPLETE", "Init START", "Init timings - ", "via NET/", "Destroy COMPLETE", "opCount")
# ncclgen's launch (jobside/node.sh, transport_entry.sh) names the node of each torchrun agent's pid, which
# torchrun's own log lines carry after their time stamp ('E1205 21:10:13.384000 29895 torch/...')
PID_LINE = re.compile(r"ncclgen: torchrun on node (?P<node>\S+) is pid (?P<pid>\d+)")
GLOG_PID = re.compile(r"(?:^|[\s\]])" + glog_head())
# Node differences that stop NCCL's ranks from talking to each other, or an environment that reached some nodes
# only: named even with no error line.
MISMATCH = ("nodes-differ-version", "nodes-differ-net", "nodes-differ-plugin", "env-not-forwarded")
# A GPU failing in hardware explains a CUDA error no text refined (nccl-tests' 'Test CUDA failure' alone, then the
# driver's NV_ERR_RESET_REQUIRED in dmesg): the error's line keeps its place as the root, the cause is the hardware.
HARDWARE = ("gpu-hardware", "gpu-xid", "gpu-nvrm-fatal")
# Host names that say nothing about which node (every container or fake node may report them).
NO_NODE = (None, "localhost", "127.0.0.1", "::1")
# lines from a generic root (Ray's ActorDiedError; pyxis' failed import, then the enroot log it prints) to the line
# of the same message that says why
REFINE_SPAN = 40
QUOTE_SPAN = 8  # lines from PyTorch's DistBackendError to its 'Last error:' quote (NCCLUtils.cpp getNcclErrorDetailStr)
# Ray's RayTaskError(Exc) prints the task's traceback after its own line (python/ray/exceptions.py), which the
# wrapped exception's 'Exc: message' closes (CPython Lib/traceback.py): that line is the error, the wrapper its symptom
WRAP_SPAN = 80
WRAPPERS = ("ray-task-error", "ray-task-gpu-oom")
# a Python exception line's type (its module path left out), for a wrapper that does not name the one it wraps
ANY_EXCEPTION = r"[A-Z]\w*(?:Error|Exception)"


@dataclass
class Group:
    first: Event
    lines: int = 0
    who: set[str] = field(default_factory=set)
    includes_first: bool = False  # the first failure is one of these lines (it is not counted)


@dataclass
class Result:
    status: str  # cause | unclassified | slow | mismatch | clean
    first: Event | None
    groups: list[tuple[str, Group]]  # (summary, group) after the first failure, by first occurrence
    contexts: list[Event]
    regenerate: str | None
    lines_kept: int
    facts: nodes.Facts = field(default_factory=nodes.Facts)
    findings: list[Event] = field(default_factory=list)  # node and plan comparisons, as events
    notes: list[Event] = field(default_factory=list)  # suspects seen in a log with no failure: harmless alone


def explains(suspect: Event, root: Event) -> bool:
    """A suspect explains a later root of the same area; a launch-level difference (two NCCL releases)
    explains any failure of the network, sockets or the program; a suspect that lists the roots it explains, only those."""
    if suspect.sig.explains:  # type: ignore[union-attr]
        return root.sig.id in suspect.sig.explains  # type: ignore[union-attr]
    a, b = suspect.sig.area, root.sig.area  # type: ignore[union-attr]
    return a == b or (a == "launch" and b in ("net", "socket", "program", "launch"))


class Accumulator:
    def __init__(self) -> None:
        self.best: dict[str, Event] = {}  # role -> earliest event of that role ("error": uncatalogued)
        self.groups: dict[tuple[str, str], Group] = {}
        self.contexts: dict[str, Event] = {}
        self.regenerate: str | None = None
        self.seq = 0
        self.facts = nodes.Facts()
        self.suspects: list[Event] = []  # every suspect, earliest first (bounded)
        self.table = torchtable.Table()  # torchrun's failure table: host, rank and time of a failed rank
        self.hardware: Event | None = None  # the earliest GPU hardware failure
        self.pids: dict[str, str] = {}  # pid -> node, from ncclgen's 'torchrun on node N is pid P' lines
        self.in_bootstrap: set[str] = set()  # 'host:pid:tid' of NCCL threads whose error trace runs through bootstrap
        self.quote: Event | None = None  # the earliest NCCL text PyTorch quoted after 'Last error:' (a symptom)
        self.header: Event | None = None  # the last line read, when it is an exception header its message runs past
        self.progress = progress.Progress()  # each rank's last enqueued/completed work at the failure
        self.timeouts = absent.Timeouts()  # the ranks that timed out in each collective, and the group's size
        self.handled = handled.Handled()  # tracebacks of exceptions a program logged and went on from
        self.frames = frames.Frames()  # the innermost frame of each file's traceback: where an exception was raised
        self.ends = lastline.LastLines()  # each file's last event: a log that stops while c10d retries its store
        self.untimed: dict[str, list[Event]] = {}  # file -> its untimed events since its last timed one (bounded)
        self.pgs = raypg.PendingGroups()  # Ray placement groups waited for
        self.pods = podsched.PodScheduling()  # pods the Kubernetes scheduler placed after all
        self.crashes = aftermath.Aftermath()  # the error line a native crash followed
        # the RayTaskError(Exc) lines read until their traceback's 'Exc: ' line: one, or a chain of them (a task whose
        # actor call failed prints its own RayTaskError(Exc) above the actor's, and both wrap the one exception)
        self.wrappers: list[Event] = []
        self.unwrapped: dict[int, Event] = {}  # a wrapper's seq -> the exception line it wraps (bounded)
        self.explainers: list[Event] = []  # context findings that explain the roots they list (hca-mixed-links)

    def add(self, line: Line) -> None:
        self.seq += 1
        if self.regenerate is None and (m := REGENERATE.search(line.text)):
            self.regenerate = m.group("argv")
            return
        self.facts.add(line, self.seq)
        if any(k in line.text for k in FACT_ONLY):
            return  # a channel or init line: a fact about the node, never a failure (and the most frequent kept line)
        if " is pid " in line.text and (m := PID_LINE.search(line.text)):
            self.pids.setdefault(m.group("pid"), m.group("node"))
            return
        field, earlier = self.table.read(line)
        if earlier is not None and ((best := self.best.get("symptom")) is None or order(earlier) < order(best)):
            self.best["symptom"] = earlier  # a ChildFailedError whose table says its rank failed before
        if field:
            return
        self.progress.add(line, self.seq)
        self.pgs.add(line, self.seq)
        self.pods.add(line)
        self.frames.add(line)
        ev = classify(line, self.seq)
        if ev is None or self.handled.absorbs(ev):
            return
        self.frames.mark(ev)
        self._place(ev)
        self._from_block(ev)
        self._wrapped(ev)
        self._record(self._unwrapped(ev))

    def _place(self, ev: Event) -> None:
        """An untimed root takes its place in time from the next timed event of its file (a traceback's `Type: message`
        before its logger's stamped echo); symptoms stay after the timed lines (NCCL's error traces: their aftermath)."""
        f = ev.line.file
        if ev.time is None:
            root = ev.sig is not None and ev.sig.role == "root"
            if root and len(self.untimed) < MAX_GROUPS and len(waiting := self.untimed.setdefault(f, [])) < MAX_KEYS:
                waiting.append(ev)
            return
        for e in self.untimed.pop(f, ()):
            e.placed = ev.time

    def _wrapped(self, ev: Event) -> None:
        """The line of the exception a RayTaskError(Exc) wraps: the next error line of its file, within its
        traceback's length, that starts 'Exc: ' (with no Exc named, as in Ray's 'Unhandled error' line, the first
        exception line of any type); not a root (a root wins by itself)."""
        ws = self.wrappers
        last = ws[-1] if ws else None
        if ev.sig is not None and ev.sig.id in WRAPPERS:
            chained = last is not None and _near(last, ev) and last.groups.get("exc") == ev.groups.get("exc")
            self.wrappers = [*ws, ev] if chained and len(ws) < MAX_KEYS else [ev]
        elif last is not None and (ev.sig is None or ev.sig.role == "symptom"):
            exc = re.escape(last.groups["exc"]) if last.groups.get("exc") else ANY_EXCEPTION
            if not _near(last, ev):
                self.wrappers = []
            elif re.search(rf"(?:^|[\s:\]).)]){exc}: \S", ev.line.text):  # bare or module-qualified
                for w in ws:
                    if len(self.unwrapped) < MAX_KEYS:
                        self.unwrapped[w.seq] = ev
                self.wrappers = []

    def _unwrapped(self, ev: Event) -> Event:
        """An exception's message wrapped over lines (a terminal or a paste cut it): a signature matched on a
        continuation line ("local network address. port: 29500, ... EADDRINUSE") is reported at the header line
        above it ("DistNetworkError: The server socket has failed to listen on any"), where the error starts."""
        header, self.header = self.header, None
        if ev.sig is None:
            if wrapped.HEADER.search(ev.line.text):
                self.header = ev
            return ev
        if header is None or not wrapped.continues(header.line, ev.line):
            return ev
        self.groups.pop(("error", summary(header)), None)
        if self.best.get("error") is header:
            del self.best["error"]
        return Event(
            header.line, ev.sig, ev.groups, ev.time or header.time, ev.node, ev.rank or header.rank, header.seq
        )

    def _record(self, ev: Event) -> None:
        """The event into the earliest-per-role, the suspects and its group."""
        role = ev.sig.role if ev.sig else "traceback" if TRACEBACK in ev.line.text else "error"
        self.ends.add(ev)
        if role == "context":
            self.contexts.setdefault(ev.sig.id, ev)  # type: ignore[union-attr]
            return
        if role not in self.best or before(ev, self.best[role]):
            self.best[role] = ev
        self.crashes.add(ev)
        self._note(ev)
        if role == "symptom" and self.quote is None and _quoted(ev):
            self.quote = ev
        if role == "suspect" and len(self.suspects) < MAX_KEYS:
            self.suspects.append(ev)
        key = (ev.sig.id if ev.sig else "error", summary(ev))
        if key not in self.groups and len(self.groups) >= MAX_GROUPS:  # a log of a million SeqNums stays bounded
            key = (key[0], f"{key[0]} (more groups than {MAX_GROUPS})")
        group = self.groups.setdefault(key, Group(ev))
        group.lines += 1
        if order(ev) < order(group.first):
            group.first = ev
        if len(group.who) < MAX_KEYS:
            group.who.add(f"{ev.node or ''}/{ev.rank}" if ev.rank else ev.node or UNPLACED + ev.where)

    def _note(self, ev: Event) -> None:
        """What a later choice needs: the earliest GPU hardware failure, threads whose error runs through bootstrap."""
        if ev.sig and ev.sig.id == "nccl-error-trace" and ev.groups.get("file", "").startswith("bootstrap"):
            self.in_bootstrap.add(_thread(ev))
        if ev.sig and ev.sig.id in HARDWARE and (self.hardware is None or order(ev) < order(self.hardware)):
            self.hardware = ev
        if ev.sig and ev.sig.id in WATCHDOG_TIMEOUTS:
            self.timeouts.add(ev)

    def _from_block(self, ev: Event) -> None:
        """Node and rank from the table lines just above; a root already seen for the same signature in the
        same file without a node (torchrun logs 'failed (exitcode: -9)' before its table) takes the node too."""
        self.table.fill(ev)
        best = self.best.get("root")
        same = best is not None and best is not ev and best.sig is ev.sig and best.line.file == ev.line.file
        if same and ev.node and best.node is None:  # type: ignore[union-attr]
            best.node, best.rank = ev.node, best.rank or ev.rank  # type: ignore[union-attr]

    def _node_of(self, first: Event) -> str | None:
        """The node of a line that names none: by its process id where ncclgen's launch said which node runs that
        pid (torchrun's log lines carry its pid), else the node srun names for the first task that failed (the
        order in which srun reports its tasks' exits is a race)."""
        if (m := GLOG_PID.search(first.line.text)) and m.group("pid") in self.pids:
            return self.pids[m.group("pid")]
        srun = self.best_of("srun-task-exit")
        return srun.node if srun else None

    def best_of(self, sid: str) -> Event | None:
        """The earliest event of signature ``sid`` (from its group)."""
        return next((g.first for (gid, _t), g in self.groups.items() if gid == sid), None)

    def add_finding(self, ev: Event) -> None:
        """A node or plan comparison's finding, at the line that shows it: a failure in itself (a root class: two
        ranks on one GPU, nccl-tests run as separate jobs) is a root like a line's."""
        if ev.sig.role == "root":  # type: ignore[union-attr]
            self._record(ev)
        elif ev.sig.explains:  # type: ignore[union-attr]
            self.explainers.append(ev)  # context that names the cause of the roots it lists, and no other
        elif ev.sig.role == "suspect":  # type: ignore[union-attr]
            self.suspects.append(ev)
            if "suspect" not in self.best or order(ev) < order(self.best["suspect"]):
                self.best["suspect"] = ev

    def pick(self) -> tuple[str, Event | None]:
        """(status, first failure): the earliest root, or an earlier suspect that explains it."""
        root = self.pods.root(self.best.get("root"), [g.first for g in self.groups.values()])
        failed = (root or any(r in self.best for r in ("symptom", "error", "traceback"))) and not self._recovered()
        if root is not None:
            return self._from_root(root)
        if failed and self.suspects:
            return "cause", min(self.suspects, key=order)
        if failed:
            first = self._unclassified()
            named = first.sig is not None and first.sig.id in ALONE + NAMES_PEER + (ABSENT,)
            return ("cause" if named else "unclassified"), first
        return "clean", None

    def _from_root(self, root: Event) -> tuple[str, Event]:
        """The earliest root, or what stands before it: a suspect that explains it, the line of its message that
        says why, the error a crash followed, the GPU hardware failure behind a generic CUDA error."""
        earlier = [s for s in self.suspects + self.explainers if order(s) < order(root) and explains(s, root)]
        if earlier:
            return "cause", min(earlier, key=order)
        if (why := self._why(root)) is not None:
            return "cause", why
        if (before := self.crashes.first(root)) is not None:
            before = self._earliest_alike(before)
            return ("cause" if before.sig is not None and before.sig.role == "root" else "unclassified"), before
        hw = self.hardware
        if root.sig.refine_cuda and hw is not None and hw is not root:  # type: ignore[union-attr]
            return "cause", Event(root.line, hw.sig, hw.groups, root.time, root.node or hw.node, root.rank, root.seq)
        return "cause", self.crashes.lead(root)

    def _earliest_alike(self, ev: Event) -> Event:
        """The first line of ``ev``'s signature in its file: a crash's aftermath window may start at a second copy of
        the warning its process printed twice (vLLM's NCCL init: two 'Connection closed by remote peer' lines)."""
        if ev.sig is None:
            return ev
        alike = [
            g.first for (gid, _t), g in self.groups.items() if gid == ev.sig.id and g.first.line.file == ev.line.file
        ]
        return min([ev, *alike], key=order)

    def _recovered(self) -> bool:
        """A run that ended well (Destroy COMPLETE, nccl-tests' average) whose only failure lines are NCCL's error
        traces ('file.cc:N -> 3'): a step NCCL recovered from (its IB net failing to start before it took Socket)."""
        if not self.facts.success or any(r in self.best for r in ("root", "error", "traceback")):
            return False
        symptoms = {gid for (gid, _t), g in self.groups.items() if g.first.sig and g.first.sig.role == "symptom"}
        return symptoms == {"nccl-error-trace"}

    def _unclassified(self) -> Event:
        """With no root: the earliest symptom or error line (a summary line gives way to the error it sums up a few
        lines below; PyTorch's exception to the NCCL text it quotes)."""
        told = [self.best[r] for r in ("symptom", "error") if r in self.best]
        first = min(told or [self.best["traceback"]], key=order)
        if first.sig is not None:
            first = self._why(first) or self.unwrapped.get(first.seq) or self.crashes.below(first) or first
        quote = self.quote
        if first.sig is not None and first.sig.id in WATCHDOG_TIMEOUTS:
            return self.timeouts.finding() or first  # the ranks the others waited for
        return quote if quote is not None and quotes(first, quote) else first

    def _why(self, root: Event) -> Event | None:
        """A generic root's message continued a few lines below with the line that says why (Ray's ActorDiedError,
        then 'Task was killed due to the node running low on memory'): that line."""
        for sid in root.sig.refined_by:  # type: ignore[union-attr]
            ev = self.best_of(sid)
            if (
                ev is not None
                and ev.line.file == root.line.file
                and 0 < ev.line.lineno - root.line.lineno <= REFINE_SPAN
            ):
                return ev
        return None

    def result(self, findings: list[Event] = ()) -> Result:  # type: ignore[assignment]
        if (odd := self.timeouts.desync()) is not None:
            self._record(odd)
        if not self.timeouts.p2p and (behind := self.progress.finding()) is not None:
            self._record(behind)
        if (pending := self.pgs.finding()) is not None:
            self._record(pending)
        for ev in findings:
            self.add_finding(ev)
        if (stop := stopped.finding(self.contexts.get(stopped.STOP), self.timeouts)) is not None:
            self.add_finding(stop)  # a rank left the loop a timeout before the others timed out
        status, first = self._bootstrap(*self._without_error(*self.pick(), findings))
        if status == "clean":
            end = self.ends.finding(self.facts.success) or lastline.stalled_at(self.suspects, self.facts)
            status, first = ("unfinished", end) if end is not None else (status, first)
        if first is not None and first.node in NO_NODE:
            first.node = self._node_of(first) or first.node
        contexts = list(self.contexts.values())
        rest = self._rest(first)
        return Result(
            status, first, rest, contexts, self.regenerate, self.seq, self.facts, list(findings), self._notes(status)
        )

    def _notes(self, status: str) -> list[Event]:
        """With no failure, the suspects that have something to say alone (a signature's `then`), one per signature."""
        if status != "clean":
            return []
        seen: dict[str, Event] = {}
        for ev in self.suspects:
            if ev.sig and ev.sig.then:
                seen.setdefault(ev.sig.id, ev)
        return list(seen.values())[:8]

    def _bootstrap(self, status: str, first: Event | None) -> tuple[str, Event | None]:
        """A socket a peer closed is a symptom, except in NCCL's bootstrap (the thread's error trace runs through
        bootstrap.cc): there no communicator exists yet, and the usual cause is an address the peer cannot reach.
        So is a socket call's error trace with no WARN line (misc/socket.cc -> 2, then bootstrap.cc)."""
        sid = first.sig.id if first and first.sig else None
        socket_trace = sid == "nccl-error-trace" and first.groups.get("file", "").startswith("misc/socket")  # type: ignore[union-attr]
        closed = status == "unclassified" and (sid == "socket-peer-closed" or socket_trace)
        if closed and first and _thread(first) in self.in_bootstrap:
            sig = catalogue.classes()["bootstrap-connect"]
            if shown := self._ipoib_bootstrap(first):
                line, text = shown
                groups = {**first.groups, "text": text}
                return "cause", Event(
                    line, sig, groups, first.time, first.node, first.rank, self.facts.seqs.get(line, 0)
                )
            return "cause", Event(first.line, sig, first.groups, first.time, first.node, first.rank, first.seq)
        return status, first

    def _ipoib_bootstrap(self, first: Event) -> tuple[Line, str] | None:
        """The line where the failing rank's host chose an IPoIB interface for its sockets, NCCL_SOCKET_IFNAME unset:
        NCCL tries ib* first (v2.21.5-1 src/misc/socket.cc:338), and an IPoIB subnet the containers or hosts do not
        share is the usual bootstrap failure (nccl#1000), so that choice is the first sign."""
        m = NCCL_PREFIX.search(first.line.text)
        h = self.facts.hosts.get(m.group("host")) if m else None
        if h is None or not h.iface or not nodes.IPOIB.match(h.iface) or "NCCL_SOCKET_IFNAME" in h.env:
            return None
        return h.lines["iface"], f"bootstrap over {h.iface} ({h.addr}), an IPoIB interface, NCCL_SOCKET_IFNAME unset"

    def _without_error(self, status: str, first: Event | None, findings: list[Event]) -> tuple[str, Event | None]:
        """A log with no failure can still name a problem: network channels without GDRDMA or GPU peer-to-peer
        (slow), or, with no sign the run got through (a hang, a log cut short), nodes whose NCCL cannot talk to each
        other's. (A finding of a root class is a root already: add_finding.)"""
        if status != "clean":
            return status, first
        if sign := slow.first(findings, self.suspects, self.contexts):
            return "slow", sign
        if not self.facts.success and (odd := next((f for f in findings if self._mismatch(f)), None)):
            return "mismatch", odd
        return status, first

    def _mismatch(self, f: Event) -> bool:
        """A finding that stops nodes from talking to each other: a difference between them, or a bootstrap address
        only its own host reaches (loopback, link-local) in a job of several hosts."""
        sid = f.sig.id if f.sig else None
        if sid == "bootstrap-unroutable":
            return sum(1 for name in self.facts.hosts if name != nodes.UNPREFIXED) > 1
        return sid in MISMATCH

    def _rest(self, first: Event | None) -> list[tuple[str, Group]]:
        """The groups after the first failure, by first occurrence; suspects that are not the cause left out."""
        rest = []
        for (_sid, text), g in sorted(self.groups.items(), key=lambda kv: order(kv[1].first)):
            if first is not None and g.first is first:
                if g.lines == 1:
                    continue
                g = Group(g.first, g.lines - 1, g.who, includes_first=True)
            if g.first.sig and g.first.sig.role == "suspect" and first is not g.first:
                continue  # a suspect that is not the cause is no failure
            rest.append((text, g))
        return rest


def _near(wrapper: Event, ev: Event) -> bool:
    """``ev`` is in ``wrapper``'s file within a traceback's length below it."""
    return ev.line.file == wrapper.line.file and 0 < ev.line.lineno - wrapper.line.lineno <= WRAP_SPAN


def quotes(ev: Event, first: Event | None) -> bool:
    """PyTorch's exception just above the NCCL text it quotes after 'Last error:': one error, named by the quote."""
    if first is None or not _quoted(first) or ev.line.file != first.line.file:
        return False
    return 0 < first.line.lineno - ev.line.lineno <= QUOTE_SPAN


def _quoted(ev: Event) -> bool:
    """NCCL's WARN text without NCCL's own prefix: PyTorch's quote of ncclGetLastError(), after 'Last error:' or
    (a paste that left that line out) right under the exception's text."""
    if ev.line.nccl_text is not None:
        return True
    return "nccl_where" in ev.groups and NCCL_PREFIX.search(ev.line.text) is None and "NCCL " not in ev.line.text


def _thread(ev: Event) -> str:
    """'host:pid:tid' of an NCCL line ('' when it has no NCCL prefix)."""
    m = NCCL_PREFIX.search(ev.line.text)
    return f"{m.group('host')}:{m.group('pid')}:{m.group('tid')}" if m else ""


def summary(ev: Event) -> str:
    """The group an event collapses into: its signature's `then` text, or its id."""
    if ev.sig is None:
        return "error"
    if ev.sig.then:
        return catalogue.fill(ev.sig.then.replace("{n} ", ""), ev.groups)
    return ev.sig.id


UNPLACED = "@"  # a group member known only by its line: no node or rank in it


def counted(text: str, g: Group) -> str:
    """'15 ranks timed out in ALLREDUCE SeqNum=812' from the group's summary and its count."""
    n = len(g.who)
    sig = g.first.sig
    if sig is not None and sig.then and n > 1 and all(w.startswith(UNPLACED) for w in g.who):
        # lines that name no node or rank may come from one rank, or from runs pasted together: count lines
        return f"{catalogue.fill(sig.then.replace('{n} ', ''), g.first.groups)} ({n} lines, no node or rank named)"
    if sig is not None and sig.then:
        shown = catalogue.fill(sig.then, {**g.first.groups, "n": f"{n}{'+' if n >= MAX_KEYS else ''}"})
        if n == 1:
            shown = shown.replace("1 ranks'", "1 rank's").replace("1 ranks", "1 rank").replace("agents", "agent")
            shown = shown.replace(" their ", " its ")
            shown = shown.replace("1 Ray tasks or actor methods", "1 Ray task or actor method")
        return shown
    lines = "line" if g.lines == 1 else "lines"
    if sig is None:
        return f"{g.lines} more error {lines} no signature matches"
    return f"{g.lines} more {text} {lines}"
