"""Where an exception no signature names was raised: the innermost frame of the traceback its line closes.

CPython prints a traceback's frames outermost first, each as '  File "PATH", line N, in FUNC' with its source line
under it (and carets since 3.11), then the exception's `Type: message` (Lib/traceback.py). An exception ncclgen has
no class for is then at least placed: the file and function that raised it say whose code it is (the framework's
runtime, a model's, a library's), which is where its cause is looked for. Where that frame is inside PyTorch or
Python's standard library (torch.cat on an empty list, a socket call), the innermost frame outside them names the
caller whose arguments led there (DeepSpeed's optimizer, the training script).
"""

from __future__ import annotations

import re

from .events import LOG_PREFIX, Event
from .reader import Line

# (after the log prefix; a paste may wrap the line after 'in', leaving the function name on the next line, or drop
# the frame's indentation)
FRAME = re.compile(r'\s*File "(?P<path>[^"]+)", line (?P<n>\d+)(?:, in (?P<func>[^\s(]+))?')
# A terminal's colour codes around Ray's prefix whose escape a paste lost ('[36m(TaskRunner pid=1)[0m'); the reader
# takes off those that kept it (reader.SGR)
COLOUR = re.compile(r"\[[\d;]*m")
SPAN = 5  # lines from the innermost frame to the exception line (source line, carets, a wrapped line)
MAX_FILES = 64
# frames of PyTorch itself and of Python's standard library (not site-packages/dist-packages), POSIX or Windows paths
INNER = re.compile(
    r"[/\\](?:site|dist)-packages[/\\]torch[/\\]|[/\\]lib[/\\]python3\.\d+[/\\](?!(?:site|dist)-packages)|^<frozen "
)


class Frames:
    """The last traceback frame read in each file (bounded)."""

    def __init__(self) -> None:
        self.last: dict[str, tuple[int, str]] = {}  # file -> (line number, 'PATH:N in FUNC')
        self.outside: dict[str, str] = {}  # file -> the current traceback's innermost frame outside INNER

    def add(self, line: Line) -> None:
        if '", line ' not in line.text or (line.file not in self.last and len(self.last) >= MAX_FILES):
            return
        if m := FRAME.match(LOG_PREFIX.sub("", COLOUR.sub("", line.text), count=1)):
            func = f" in {m.group('func')}" if m.group("func") else ""
            where = f"{m.group('path')}:{m.group('n')}{func}"
            previous = self.last.get(line.file)
            if previous is None or line.lineno - previous[0] > SPAN:  # a traceback of its own
                self.outside.pop(line.file, None)
            if not INNER.search(m.group("path")):
                self.outside[line.file] = where
            self.last[line.file] = (line.lineno, where)

    def mark(self, ev: Event) -> None:
        """An unclassified error line right under a frame: the frame it was raised in, into its groups."""
        got = self.last.get(ev.line.file)
        if ev.sig is None and got is not None and 0 < ev.line.lineno - got[0] <= SPAN:
            ev.groups["raised_in"] = got[1]
            if (caller := self.outside.get(ev.line.file)) and caller != got[1]:
                ev.groups["called_from"] = caller
