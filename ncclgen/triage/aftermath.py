"""The error lines each log printed last, and what they say about the line that reports the failure.

A native crash right after an error line of the same log is that error's aftermath: NCCL's error path or a
library preloaded into the process (a GPU-sharing interposer, a net plugin) failed first, and the segmentation
fault is how the process ended (nccl#1538: a connect error, then SIGSEGV in the error path; HAMi-core#169: the
interposer's own ERROR line, then 'Segfault encountered'; glibc's heap-corruption abort while a failed process
tears down: MindSpore's 'malloc_consolidate(): invalid chunk size' after an HCCL timeout). A task Slurm killed
after cancelling its step is that cancel's aftermath the same way. So the crash gives way to the earliest error
line within a few lines above it in the same file; NCCL's own WARN or another program's error line before NCCL's
bare error traces ('file.cc:N -> 2'), which only say an error returned.

The same lines place a root at the start of its block of error lines (lead) and a wrapper that says its cause is
printed under it at the exception its traceback ends with (below)."""

from __future__ import annotations

from collections import deque

from .events import LOG_PREFIX, Event
from .handled import EXCEPTION

# A crash and what it may follow: a native crash any error line (None), a task Slurm killed only Slurm's cancel of
# its step (slurmstepd signals the tasks of a cancelled step, then kills those still running after KillWait; srun
# then reports 'task N: Killed')
CRASHES: dict[str, tuple[str, ...] | None] = {
    "process-crash": None,
    "heap-corruption": None,
    "sigkill": ("slurm-cancelled",),
}
SPAN = 20  # lines above the crash an error of its aftermath is looked for in
LEAD_SPAN = 3  # lines above a root its message block may start
BELOW_SPAN = 60  # lines of a traceback under a wrapper line
# Lines that head the report below them, which is the error's own line: PyTorch's 'Last error:' over the NCCL
# text it quotes (analyse.quotes), libstdc++'s 'terminate called after throwing an instance of' over what()
HEADS = ("Last error:", "terminate called after throwing")
KEEP = 16  # recent error lines remembered per file
MAX_FILES = 64
TRACE = "nccl-error-trace"


class Aftermath:
    def __init__(self) -> None:
        self.recent: dict[str, deque[Event]] = {}  # file -> its last error lines (not roots)
        self.before: dict[int, Event] = {}  # a crash's seq -> the error line it follows

    def add(self, ev: Event) -> None:
        """Remember a symptom or an uncatalogued error; for a crash, the error line it follows."""
        f = ev.line.file
        if ev.sig is not None and ev.sig.id in CRASHES:
            after = CRASHES[ev.sig.id]
            near = [
                e
                for e in self.recent.get(f, ())
                if 0 < ev.line.lineno - e.line.lineno <= SPAN and (after is None or (e.sig and e.sig.id in after))
            ]
            said = [e for e in near if e.sig is None or e.sig.id != TRACE] or near
            if said and len(self.before) < MAX_FILES * KEEP:
                self.before[ev.seq] = min(said, key=lambda e: e.line.lineno)
            return
        if (ev.sig is None or ev.sig.role == "symptom") and (f in self.recent or len(self.recent) < MAX_FILES):
            self.recent.setdefault(f, deque(maxlen=KEEP)).append(ev)

    def first(self, crash: Event) -> Event | None:
        """The error line ``crash`` followed, or None."""
        return self.before.get(crash.seq)

    def lead(self, root: Event) -> Event:
        """``root`` at the line its message block starts: the error lines right above it in its file, one after
        the other with nothing between, are the same report (torch_npu's 'RuntimeError: ... call aclnn... failed',
        then CANN's 'EZ9999: Inner Error!', then the line that says why), and the first of them is where it starts."""
        n, start = root.line.lineno, None
        for e in reversed(self.recent.get(root.line.file, ())):
            near = e.line.lineno == n - 1 and root.line.lineno - e.line.lineno <= LEAD_SPAN
            if not near or e.sig is not None or any(h in e.line.text for h in HEADS):
                break
            n, start = e.line.lineno, e
        if start is None:
            return root
        return Event(start.line, root.sig, root.groups, root.time or start.time, root.node, root.rank, start.seq)

    def below(self, wrapper: Event) -> Event | None:
        """For a wrapper that says its cause is printed under it (Ray's 'The actor died because of an error raised in
        its creation task'): the exception line its traceback ends with, within BELOW_SPAN lines in its file."""
        if wrapper.sig is None or not wrapper.sig.told_below:
            return None
        n = wrapper.line.lineno
        for e in self.recent.get(wrapper.line.file, ()):
            near = n < e.line.lineno <= n + BELOW_SPAN and e.sig is None
            if near and EXCEPTION.match(LOG_PREFIX.sub("", e.line.text, count=1)):
                return e
        return None
