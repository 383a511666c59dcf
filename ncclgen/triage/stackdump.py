"""Python stack dumps in a log: a process that printed where it was waiting, with no error line, hung there.

Two forms are read. faulthandler's (CPython Python/traceback.c, dump_traceback and dump_frame): a header
'Current thread 0x... (most recent call first):', 'Thread 0x... (most recent call first):' or 'Stack (most recent
call first):', then one '  File "F", line N in FUNC' per frame, innermost first and with no comma before 'in' (a
traceback's frames have one). faulthandler.dump_traceback_later, a SIGUSR1 handler or a launcher's watchdog print
it. And py-spy dump's (benfred/py-spy v0.4.1 src/dump.rs print_traces: 'Process PID: CMD', then 'Python vX.Y.Z
(EXE)'; print_trace: 'Thread 0x7F81445A8440 (active): "MainThread"', then one '    FUNC (FILE:LINE)' per frame,
innermost first), which a person runs on a process that stopped moving; an excerpt often starts at a thread.
"""

from __future__ import annotations

import re

from .reader import PYSPY_FRAME_KEYS, STACK_DUMP_KEYS, Line

HEADER = re.compile(r"(?:\b(?:Current thread|Thread) 0x[0-9a-fA-F]+|\bStack) \(most recent call first\):")
FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>[^\s,]+)\s*$')
PYSPY = re.compile(r"^\W*Python v\d+\.\d+\.\d+\S* \(")
# a thread's header names its activity or its name (a bare 'Thread N' is too common a text to read as one)
PYSPY_THREAD = re.compile(
    r'^\W*Thread (?:0x[0-9A-Fa-f]+|\d+)(?: \((?:active|idle|gil)[^)]*\)(?:: "[^"]*")?|: "[^"]*")\s*$'
)
PYSPY_FRAME = re.compile(r"^\s{2,}(?P<func>[\w<>.]+) \((?P<file>[^\s():]+):(?P<line>\d+)\)\s*$")


KEYS = re.compile("|".join(map(re.escape, STACK_DUMP_KEYS + PYSPY_FRAME_KEYS)))  # one search in C for every line read


class Dumps:
    """The first stack dump in the logs and the innermost frame it shows."""

    def __init__(self) -> None:
        self.first: Line | None = None  # its header, or its first frame where the excerpt left the header out
        self.frame: tuple[str, str, str] | None = None  # (function, file, line) of its first frame
        self.at: Line | None = None  # the log line of that frame
        self.tool = ""

    def add(self, line: Line) -> None:
        text = line.text
        if self.frame is not None or not KEYS.search(text):
            return
        spy = PYSPY.match(text) or PYSPY_THREAD.match(text)
        if self.first is None and (spy or HEADER.search(text)):
            self.first = line
            self.tool = "py-spy dump" if spy else "faulthandler"
        elif self.tool == "py-spy dump" and (m := PYSPY_FRAME.match(text)):
            self._frame(m, line)
        elif m := FRAME.search(text):
            self.first = self.first or line
            self.tool = self.tool or "faulthandler"
            self._frame(m, line)

    def _frame(self, m: re.Match[str], line: Line) -> None:
        self.frame, self.at = (m.group("func"), m.group("file").rsplit("/", 1)[-1], m.group("line")), line

    def says(self) -> str | None:
        """One line for the report's hang section, or None when no dump was read."""
        if self.first is None:
            return None
        where = f"{self.first.file}:{self.first.lineno}"
        inner = ""
        if self.frame and self.at:
            at = f" at {self.at.file}:{self.at.lineno}" if self.at is not self.first else ""
            inner = f"; innermost frame: {self.frame[0]} ({self.frame[1]}:{self.frame[2]}){at}"
        return f"a process printed its Python stacks ({self.tool}) at {where}, with no error line: it was waiting there{inner}"
