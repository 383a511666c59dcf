"""An exception message wrapped over two lines (a terminal or a paste cut it): the header line and its rest.

CPython prints an exception as `Type: message` on one line (Lib/traceback.py); a message that stops mid-sentence
(no closing '.', ':', ')' or quote) was wrapped, and the next line of the same file holds the rest. A signature that
matches the rest is reported at the header, where the error starts. Under Ray both lines carry the worker's prefix
('(RayWorkerWrapper pid=593, ip=10.5.6.103) ', python/ray/_private/log_monitor.py), which the rest then starts with.
"""

from __future__ import annotations

import re

from .events import RAY_PREFIX
from .reader import Line

HEADER = re.compile(
    r"(?:^|[\s:\]])(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception):(?: \S.*[^\s.:)\]'\"])?\s*$"
    # (or the class alone, its message wrapped whole onto the next line; or a c10 or gloo enforce's place,
    # '[enforce fail at FILE:LINE]', its failed condition on the next line)
    r"|\[enforce fail at [^\]]+\]\s*$"
)


def continues(header: Line, line: Line) -> bool:
    """``line`` is the next line of ``header``'s file and reads as the rest of its sentence (it starts in lower
    case after the prefix both share: no log prefix, time stamp or new message of its own)."""
    if line.file != header.file or line.lineno != header.lineno + 1:
        return False
    bare = header.text.rstrip().endswith(":")  # 'AssertionError:' with its message on the next line
    rest = line.text
    if (m := RAY_PREFIX.match(header.text)) and rest.startswith(m.group(0)):
        rest = rest[m.end() :].lstrip()
    return bare or rest[:1].islower()
