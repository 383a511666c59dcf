"""An exception a program logged and went on from is no failure: its traceback and closing line are part of the
report the program made, not errors of their own.

Python's logging.exception (and log.error(..., exc_info=e)) prints the message, then the traceback, then the
exception's `Type: message` line (CPython Lib/logging/__init__.py Formatter.format, Lib/traceback.py). Where the
message is one a program prints for an error it handles (a signature in HANDLED: TorchInductor dropping an
autotuning choice that does not fit the GPU, JAX going on without a GPU plugin that failed to start), the traceback
right under it (the next line), its indented lines and its closing `Type: message` line (the first line no longer
indented, within SPAN lines) are that report.
"""

from __future__ import annotations

import re

from .events import LOG_PREFIX, TRACEBACK, Event

HANDLED = ("inductor-autotune-choice", "jax-plugin-init")
SPAN = 200  # lines a handled traceback may run
MAX_FILES = 64
EXCEPTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit)\b")


class Handled:
    """Per file: the last handled report's line, and the traceback being read under it (bounded)."""

    def __init__(self) -> None:
        self.said: dict[str, int] = {}  # file -> line number of the last handled report
        self.open: dict[str, int] = {}  # file -> line number of the traceback header under it

    def absorbs(self, ev: Event) -> bool:
        """Whether ``ev`` belongs to a handled report (its traceback or closing line): then it is no failure."""
        f, n = ev.line.file, ev.line.lineno
        start = self.open.get(f)
        if start is not None and n - start <= SPAN:
            text = LOG_PREFIX.sub("", ev.line.text, count=1)
            if text[:1].isspace():
                return True  # a frame of the traceback
            del self.open[f]  # the first line no longer indented ends it: its closing line, or a line after it
            return bool(EXCEPTION.match(text))
        self.open.pop(f, None)
        if ev.sig is not None and ev.sig.id in HANDLED:
            if f in self.said or len(self.said) < MAX_FILES:
                self.said[f] = n
            return False
        if TRACEBACK in ev.line.text and self.said.get(f) == n - 1:
            self.open[f] = n
            return True
        return False
