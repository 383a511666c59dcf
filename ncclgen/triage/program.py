"""A failure that is the program's own: a Python exception raised in the job's code or a library's, with nothing
before it that names a failure of NCCL, the network, a GPU or the host.

Most failures in the logs of distributed training are not the fabric's: a KeyError in a trainer, a TypeError between
two releases of a library, a configuration the code rejects. The traceback says whose code raised the exception (its
innermost frame, CPython's Lib/traceback.py prints frames outermost first) and, where that is PyTorch or Python's
standard library, which caller's arguments led there (frames.py). That is where the cause is: the report names the
exception, the package that raised it and the caller, instead of 'not classified'. Exceptions that report the
environment rather than the program (the OS, the network, memory, CUDA, a collective backend, Ray's own failures)
are not the program's and stay unclassified; so does a RuntimeError raised inside PyTorch, which reports runtime
faults as often as wrong arguments.
"""

from __future__ import annotations

import re

from .events import LOG_PREFIX, Event
from .frames import INNER

# The exception's type: dotted, ending as Python's exception names do (Lib/traceback.py: `Type: message`, or the
# type alone for an exception raised without one)
TYPE = re.compile(
    r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|StopIteration))(?:\([\w.]+\))?(?::|\s*$)"
)
# Types that report the environment, not the program: the OS (OSError's family), memory, CUDA and the collective
# backends, PyTorch's distributed runtime, Ray's own failures, a process stopped by a signal, TLS and HTTP (FAULT below
# reads the type too: connections, timeouts, sockets, the network, NCCL)
ENVIRONMENT = re.compile(
    r"OSError|IOError|EnvironmentError|BrokenPipe|Permission|BlockingIO|ChildProcess|Interrupted|ProcessLookup|Memory"
    r"|SystemError|\bDist|Backend|HCCL|Hccl|Gloo|CUDA|Cuda|Accelerator|Ray|ObjectLost|OwnerDied|WorkerCrashed|NodeDied"
    r"|ActorDied|ActorUnavailable|ChildFailed|Rendezvous|Store|Signal|Preempt|SSL|Certificate|HTTP|URL|Proxy"
    r"|Credential|Authentication|Unauthorized"
)
# A message that reports a fault of the fabric, the device or the run's state whatever the exception's type (DeepEP's
# 'RuntimeError: DeepEP error: timeout', an accelerator runtime's 'NPU function error ... error code is 507011')
FAULT = re.compile(
    r"[Tt]ime(?:d )?out|NCCL|[Nn]ccl|CUDA error|device-side|illegal memory|out of memory|ECC|Xid|NVLink|InfiniBand"
    r"|RDMA|ibv_|[Cc]onnection|[Ss]ocket|[Nn]etwork|error code is|function error|[Ss]egmentation fault|[Kk]illed"
)
# Packages whose RuntimeError reports a runtime fault as often as a wrong argument: PyTorch and its device back ends
RUNTIMES = re.compile(r"PyTorch$|torch_\w+$|habana\w*$|intel_extension\w*$|triton$")
# What Python raises for a program's own logic (Python/ceval.c, Objects/): wherever the traceback was cut, the
# line alone says the program failed on its own
LOGIC = (
    "AttributeError",
    "TypeError",
    "KeyError",
    "IndexError",
    "NameError",
    "UnboundLocalError",
    "ZeroDivisionError",
    "AssertionError",
    "RecursionError",
    "NotImplementedError",
    "ValueError",
)
# CPython's own messages for those types, where a logger printed str(exc) without the type ('[MCPBaseTool] Execution
# failed: local variable 'x' referenced before assignment'): the message names the type
MESSAGES = tuple(
    (re.compile(rx), name)
    for rx, name in (
        # Python/ceval.c: <= 3.10, and 3.11's UNBOUNDLOCAL_ERROR_MSG
        (r"local variable '\w+' referenced before assignment", "UnboundLocalError"),
        (r"cannot access local variable '\w+' where it is not associated with a value", "UnboundLocalError"),
        (r"(?<!\w)name '\w+' is not defined", "NameError"),  # Python/ceval.c NAME_ERROR_MSG
        (r"'[\w.]+' object has no attribute '\w+'", "AttributeError"),  # Objects/object.c
        # Python/ceval.c and Python/getargs.c: a call that does not fit the function's parameters
        (
            r"\w\(\) (?:got an unexpected keyword argument '\w+'|missing \d+ required (?:positional|keyword-only) argument)",
            "TypeError",
        ),
    )
)
# A path the job was given that is not there (FileNotFoundError and its kin) is its input's problem, not the OS's
INPUT_OS = ("FileNotFoundError", "IsADirectoryError", "NotADirectoryError", "FileExistsError")
# (an egg's folder first: 'dist-packages/deep_ep-1.2.1+309785a-py3.12-linux-x86_64.egg/deep_ep/buffer.py')
SITE = re.compile(
    r"[/\\](?:site|dist)-packages[/\\](?:[^/\\]+\.egg[/\\])?(?P<pkg>[A-Za-z_][\w.-]*?)(?:\.py)?(?:[/\\]|$)"
)
PYTORCH, STDLIB = "PyTorch", "Python's standard library"
LIBRARIES = (PYTORCH, STDLIB)  # owners named as they are, not as "NAME's code", and whose release is not the advice
SOURCES = [
    "https://docs.python.org/3/library/traceback.html (a traceback's frames, outermost first; the last frame is the "
    "code that raised the exception)",
    "python/cpython v3.11.7 Lib/traceback.py (format_exception_only: the closing `Type: message` line)",
]


def read(ev: Event) -> dict | None:
    """The exception, its owner and its caller, where ``ev`` is the program's exception line; else None. Under a
    traceback frame any type that does not report the environment is; with no frame in the logs (a traceback cut
    from the excerpt), only the types Python raises for the program's own logic, at the start of the line or named by
    CPython's message for them (MESSAGES)."""
    raised_in = ev.groups.get("raised_in")
    if ev.sig is not None:
        return None
    m = TYPE.search(ev.line.text) if raised_in else TYPE.match(LOG_PREFIX.sub("", ev.line.text, count=1))
    if m is None:
        named = None if raised_in or FAULT.search(ev.line.text) else by_message(ev.line.text)
        if named is None:
            return None
        by = "type" if f"{named}: " in ev.line.text else "message"  # the type stood after a prefix TYPE does not take
        return {"type": named, "owner": None, "raised_in": None, "called_from": None, "named_by": by}
    name = m.group("type").rsplit(".", 1)[-1]
    if (ENVIRONMENT.search(m.group(0)) and name not in INPUT_OS) or FAULT.search(ev.line.text):
        return None
    if not raised_in:
        return (
            {"type": name, "owner": None, "raised_in": None, "called_from": None, "named_by": "type"}
            if name in LOGIC
            else None
        )
    raiser = owner(raised_in)
    if name == "RuntimeError" and RUNTIMES.match(raiser or ""):
        return None
    caller = ev.groups.get("called_from") if INNER.search(raised_in.split(":", 1)[0]) else None
    return {
        "type": name,
        "owner": owner(caller) if caller else raiser,
        "raised_in": raised_in,
        "called_from": caller,
        "named_by": "type",
    }


MESSAGE_SOURCE = (
    "python/cpython v3.11.7 Python/ceval.c (NAME_ERROR_MSG, UNBOUNDLOCAL_ERROR_MSG; 'got an unexpected keyword "
    "argument', 'missing %i required positional argument'), Objects/object.c (\"'%.100s' object has no attribute "
    "'%U'\"); v3.10 Python/ceval.c (\"local variable '%.200s' referenced before assignment\")"
)


def sources(p: dict) -> list[str]:
    return [*SOURCES, MESSAGE_SOURCE] if p["named_by"] == "message" else list(SOURCES)


def by_message(text: str) -> str | None:
    """The type whose CPython message the line holds without the type's name, or None."""
    return next((name for rx, name in MESSAGES if rx.search(text)), None)


def owner(where: str) -> str | None:
    """Whose code a frame's path is: a package under site-packages, PyTorch or Python's library; None for a file
    elsewhere (the job's own script, or a package installed from a source checkout: its path alone cannot tell)."""
    path = where.split(":", 1)[0]
    if m := SITE.search(path):
        pkg = m.group("pkg")
        return PYTORCH if pkg == "torch" else pkg
    if INNER.search(path):
        return STDLIB
    return None


def _package(who: str | None) -> bool:
    """A package of its own under site-packages, not PyTorch or Python's library (nor a path with no owner)."""
    return who is not None and who not in LIBRARIES


def _code(who: str | None, where: str) -> str:
    if who is None:
        return where
    named = who if who in LIBRARIES else f"{who}'s code"
    return f"{named} ({where})"


def cause(p: dict) -> str:
    if p["raised_in"] is None:
        where = "(these lines hold none of its traceback's frames to say whose code raised it)"
        if p["named_by"] == "message":
            where = "(named by its message, which CPython gives no other type; " + where[1:]
    elif p["called_from"]:
        where = f"raised in {p['raised_in']} on a call from {_code(p['owner'], p['called_from'])}"
    else:
        where = f"raised in {_code(p['owner'], p['raised_in'])}"
    return (
        f"the program failed on its own: {p['type']} {where}; no line before it names a failure of NCCL, the "
        "network, a GPU or the host"
    )


def fix(p: dict) -> str:
    text = (
        "read the code at that frame with the exception's message: the configuration, data or arguments it was "
        "given, or a bug there"
    )
    if p["raised_in"] is None:
        text = (
            "find the exception's traceback in the process's whole output (its last frame is the code that raised it), then "
            + text
        )
    if _package(p["owner"]):
        text += (
            f"; check that the installed {p['owner']} is the release the job's other packages expect, and search its "
            "issues for the message"
        )
    return text
