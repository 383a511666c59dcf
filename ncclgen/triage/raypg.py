"""A Ray placement group the job waited for and never got: the framework's last word on it is a wait.

Frameworks create their workers' placement group and block on it (ray-project/ray python/ray/util/placement_group.py:
PlacementGroup.ready() resolves, and wait() returns True, only once every bundle is placed; a bundle larger than
every node's Ray resources stays pending, with no error), printing a wait line first and often a line once it is
placed: 'Waiting for placement group to be scheduled' (open-instruct), 'Waiting for placement group to be ready...'
(NeMo-RL and many verl launch scripts), 'Waiting for placement group to start.' (Ray Train's older Horovod and
XGBoost backends), 'waiting for placement group to be created for N GPUs' (several RL frameworks). A file whose last
such line is a wait is a job still waiting for resources its Ray cluster does not have; the bundle list printed just
above the wait names them.
"""

from __future__ import annotations

import re

from . import catalogue
from .events import Event, locate, when
from .reader import Line

WAIT = re.compile(
    r"(?i)\bwaiting for (?:the |a )?placement groups? (?:to (?:be (?:scheduled|ready|created)|start)|until ready)"
)
DONE = re.compile(
    r"(?i)placement groups? (?:\S+ )?(?:is |are |has |have )?(?:now )?(?:ready|created|started|scheduled)\b"
)
# a bundle list as Python prints it, GPU or CPU first: [{'GPU': 6, 'CPU': 60}] or {'CPU': 1.0, 'GPU': 1.0}
BUNDLES = re.compile(r"\{'(?:GPU|CPU)': [\d.]+(?:, '[\w:.-]+': [\d.]+)*\}")
BUNDLE_SPAN = 3  # lines from the bundle list to the wait it belongs to
MAX_FILES = 64


class PendingGroups:
    """Per file, the last placement-group line (a wait or a group placed) and the last bundle list (bounded)."""

    def __init__(self) -> None:
        self.last: dict[str, tuple[bool, Line, int]] = {}  # file -> (waiting, line, seq)
        self.bundles: dict[str, tuple[Line, int]] = {}

    def add(self, line: Line, seq: int) -> None:
        text = line.text
        room = line.file in self.bundles or len(self.bundles) < MAX_FILES
        if ("{'GPU'" in text or "{'CPU'" in text) and room and BUNDLES.search(text):
            self.bundles[line.file] = (line, seq)
        if "lacement group" not in text:
            return
        waiting = WAIT.search(text) is not None
        if (waiting or DONE.search(text)) and (line.file in self.last or len(self.last) < MAX_FILES):
            self.last[line.file] = (waiting, line, seq)

    def finding(self) -> Event | None:
        """The earliest file's pending wait, as a ray-pg-pending root at its bundle list when one is just above."""
        for waiting, line, seq in sorted(self.last.values(), key=lambda t: t[2]):
            if not waiting:
                continue
            shown, at, text = line, seq, ""
            if (b := self.bundles.get(line.file)) and 0 <= line.lineno - b[0].lineno <= BUNDLE_SPAN:
                shown, at, text = b[0], b[1], "bundles " + ", ".join(BUNDLES.findall(b[0].text))[:200]
            node, rank = locate(shown.text, {})
            sig = catalogue.classes()["ray-pg-pending"]
            groups = {"text": text or "no bundle list in the logs"}
            return Event(shown, sig, groups, when(line), node, rank, at)
        return None
