"""A log whose last line starts a framework's distributed setup or first collective, with nothing after it.

Frameworks print one line as they begin to set up NCCL, a process group or the first collective, and more once it
worked: vLLM's and SGLang's 'is using nccl==' banner, Paddle's 'init nccl context', TensorFlow's first
'batch_all_reduce', DeepSpeed's 'Initializing TorchBackend', Megatron's '> initializing torch distributed',
torchrun's agent waiting for the other nodes. A file that ends on such a line, in a log with no sign the run ended,
stopped there: a hang in that setup (an interface the nodes cannot reach, GPU peer-to-peer DMA that never completes,
a node that never joined), or an excerpt cut there. Either way it is no clean run (runstate.ends_early). The lines,
each with the source that prints it, are data: ncclgen/data/triage/startlines.yaml. The check is on the file's own
last line (reader.is_last): the reader keeps only lines that may matter, so a training loop's progress after the
start line is read in the file.
"""

from __future__ import annotations

import functools
import re

from . import catalogue


@functools.cache
def _starts() -> tuple[tuple[str, re.Pattern[str], str], ...]:
    """(a literal the line holds, its form, what began there) from ncclgen/data/triage/startlines.yaml."""
    return tuple((s["key"], re.compile(s["form"]), s["what"]) for s in catalogue.load_data("startlines.yaml")["starts"])


def started(text: str) -> str | None:
    """What began at this line, when it is one of the start lines; else None."""
    for key, form, what in _starts():
        if key in text and form.search(text):
            return what
    return None
