"""Stream a job's log files and keep only the lines worth reading, in bounded memory.

A 2 GiB log must not be held in memory, and Python-level work per line is too slow for one: the
files are read in fixed-size chunks and bytes.find looks for every signature's literal keys, the
error markers and the Regenerate: line at C speed; only those lines are decoded.
Memory is one chunk plus the kept lines, whatever the file's size.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from ..errors import UserError
from . import catalogue, grepscan

CHUNK = 4 << 20
# Lines that are errors whatever their text: kept so an unclassified failure can be shown.
ERROR_MARKERS = (
    "NCCL WARN",
    " WARN ",  # NCCL before 2.4: "include/socket.h:344 WARN ..." (events.NCCL_LINE)
    "Traceback (most recent call last)",
    "Error: ",
    "srun: error:",
    "slurmstepd: error:",
    "FATAL",
    "ERROR",
    "Check failed: ",  # glog/absl CHECK (Ray's C++, c10's TORCH_CHECK in older releases): a fatal assertion
    "terminate called after throwing",  # a C++ exception nobody caught
    "Regenerate: ncclgen ",
)
# NCCL INFO lines that report a failure (the words tools/nccl_warn_strings.py keeps INFO formats by), and
# those that describe the transport per node (nodes.py).
FAILURE_WORDS = (
    "ailed",
    "rror",
    "nable to",
    "annot ",
    "ould not",
    "not found",
    "No device",
    "No usable",
    "not supported",
)
FACT_KEYS = (
    "NCCL version",
    "Using network",
    "NCCL INFO Bootstrap",
    "NCCL INFO NET/IB",
    "GPU Direct RDMA Disabled",
    "set by environment to",
    "NET : Using interface",
    "NET/Socket : Using",
    "Destroy COMPLETE",
    "Avg bus bandwidth",
    "NET/Plugin",
    "Plugin Path",
    "opCount",
    "GLOBAL_RANK: ",
    "All distributed processes registered",
    "Out of bounds values",
    " Pid ",
)
# Keys of a Python stack dump: faulthandler's header and frames, py-spy dump's headers (stackdump.py reads them)
STACK_DUMP_KEYS = ("(most recent call first)", '", line ', "Python v", "Thread 0x")
# py-spy dump's frame lines ('    FUNC (FILE.py:LINE)'): most Python loggers' lines hold '.py:' too, so a group of its own
PYSPY_FRAME_KEYS = (".py:",)
# Keys every line of a chatty kind holds: kept up to a count per file, so a 2 GiB INFO log stays fast
# (the first thousands show each node's channels and init; later communicators repeat them). A tuple is one
# group: its lines share the count (one grep -m for them all).
CAPPED: dict[str | tuple[str, ...], int] = {
    "via NET/": 4096,
    "Init COMPLETE": 65536,
    "Init START": 65536,
    "opCount": 65536,
    # init under way (nodes.PROGRESS), and NCCL 2.23+'s 'Init timings' line printed just after Init COMPLETE
    ("INFO Channel ", "INFO Ring ", "Setting affinity for GPU", "Init timings - ", "INFO NVLS "): 4096,
    # Python stack dumps (stackdump.py); a traceback's frames hold '", line ' too, so the count is per file and generous
    STACK_DUMP_KEYS: 4096,
    PYSPY_FRAME_KEYS: 4096,
    # nccl-tests' table (benchtable.BENCH_ROW, BENCH_BANNER): every row names its data type (nccl-tests src/common.cu
    # test_typenames: int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2)
    (
        "float ",
        "half ",
        "double ",
        "int8 ",
        "int32 ",
        "int64 ",
        "bfloat16 ",
        "f8e",
        "fp8_",
        "out-of-place",
        "# nThread ",
    ): 64,
}
Capped = dict[tuple[bytes, ...], int]


NBSP = "\u00a0".encode()  # U+00A0 NO-BREAK SPACE in UTF-8


def _capped() -> Capped:
    return {tuple(x.encode() for x in ((k,) if isinstance(k, str) else k)): n for k, n in CAPPED.items()}


# Flight-recorder dumps (TORCH_FR_DUMP_TEMP_FILE's default prefix, torch's pickles): not text.
FR_DUMP = re.compile(r"(^|/)nccl_trace_rank_\d+$")
# A job script (ncclgen's sbatch output, any sbatch script): read for its Regenerate: line only, never as a log,
# since its embedded programs hold the very message strings triage looks for.
SCRIPT_MARKS = (b"#SBATCH", b"# Regenerate: ncclgen ")
# The header of a corpus file (tests/data/triage/*.log: `# source:`, `# cause:`, `# root:`; any `# key: value`
# lines that open a file, as people annotate a log they share): not log, though it quotes the failing line.
HEADER_LINE = re.compile(rb"# [A-Za-z][\w ()/-]{0,40}: ")


def header_lines(head: bytes) -> int:
    """How many `# key: value` lines open the file (read from its first 64 KiB)."""
    n = 0
    for raw in head.split(b"\n"):
        if not HEADER_LINE.match(raw):
            return n
        n += 1
    return n


# One line, or (ncclgen slurm --comments full) continued with ' \\' onto '#   ' lines, joined when read.
REGENERATE_LINE = re.compile(rb"^# Regenerate: (ncclgen (?:.* \\\n#   )*.*)$", re.M)
CONTINUED = re.compile(rb" \\\n#   ")


class Line(NamedTuple):
    """One line read (a tuple: made for every line kept, where a record's generic __init__ cost about a tenth of the
    whole read)."""

    file: str
    lineno: int
    text: str  # as in the file
    nccl_text: str | None = None  # NCCL's WARN text PyTorch quoted after "Last error:" (read as a WARN line)
    stamp: str | None = None  # the time a log collector put before the line (collected(): kubectl --timestamps)


# NCCL lines joined into one ("[0] NCCL INFO a [0] NCCL INFO b"): a forum post or a log collector that dropped the
# newlines; each part is read as its own line (same line number)
JOINED = re.compile(r"\s(?:[\w.-]+:\d+:\d+ )?\[\d+\] NCCL (?:INFO|WARN) ")
# What a log collector puts before each line of a program's output: `kubectl logs --timestamps` and `docker logs -t`
# an RFC 3339 time (kubernetes pkg/kubelet/kuberuntime/logs: RFC3339Nano), docker compose the container's name and
# a bar ('worker-1  | ', compose v1 'worker_1  | '). Taken off before any signature reads the line, whose own
# prefixes (NCCL's host:pid:tid, a logger's) then start it as they do in the program's output; the time is kept.
# The node's own copy of a container's log (/var/log/pods: the CRI format, kubelet pkg/kubelet/kuberuntime/logs/logs.go)
# puts the stream and a full or partial tag after the time ('2016-10-06T00:17:09.669794202Z stdout F text').
COLLECTED = re.compile(
    r"(?:(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)) (?:std(?:out|err) [FP] )?"
    r"|[A-Za-z][\w.-]{0,62}[-_]\d{1,4} +\| )"
)
# Docker's json-file driver writes each line as JSON ('{"log":"text\\n","stream":"stderr","time":"RFC 3339"}',
# moby daemon/logger/jsonfilelog): the text and the time are read out of it.
DOCKER_JSON = '{"log":'
DOCKER_LOG = re.compile(r'\{"log":\s*("(?:[^"\\]|\\.)*")')
DOCKER_MAX = 1 << 20  # Docker splits a line at 16 KiB into several entries; a longer one is no json-file line
DOCKER_TIME = re.compile(r'"time":\s*"([^"\\]{1,64})"')


# A terminal's colour and style codes (ECMA-48 SGR: ESC [ params m), kept in a log captured from a terminal or a
# tool that colours its output (Ray's prefixes, glog, pytest): taken off so the program's own prefixes start the line
SGR = re.compile(r"\x1b\[[\d;]*m")


def collected(name: str, lineno: int, text: str) -> Line:
    """The line without a log collector's prefixes (COLLECTED; at most two: compose's name, then a time) and
    without colour codes."""
    stamp = None
    if text.startswith(DOCKER_JSON) and len(text) <= DOCKER_MAX:
        text, stamp = _docker_json(text)
    if "\x1b[" in text:
        text = SGR.sub("", text)
    for _ in range(2):
        if not (text[:1].isdigit() or "| " in text[:70]) or not (m := COLLECTED.match(text)):
            break
        stamp = m.group("ts") or stamp
        text = text[m.end() :]
    return Line(name, lineno, text, None, stamp)


def _docker_json(text: str) -> tuple[str, str | None]:
    """The "log" string and the "time" of a json-file line. Only that string literal is decoded: the rest of a
    hostile line (arrays nested a hundred thousand deep) is never parsed."""
    m = DOCKER_LOG.match(text)
    if m is None:  # a line cut short (the reader's line cap), or not JSON after all: read as it is
        return text, None
    try:
        log = json.loads(m.group(1))
    except ValueError:
        return text, None
    t = DOCKER_TIME.search(text, m.end())
    return log.rstrip("\r\n"), t.group(1) if t else None


TID_END = re.compile(r"[\w.-]+:\d+:\d+$")  # a 'host:pid:tid' the cut would take from the prefix it belongs to


def split_joined(line: Line) -> list[Line]:
    text = line.text
    if text.count(" NCCL ") < 2:
        return [line]
    # a prefix after the line's start begins a new message (the search after 'host:pid:tid ' finds the whole prefix)
    cuts = [m.start() + 1 for m in JOINED.finditer(text) if text[: m.start()].strip()]
    cuts = [c for c in cuts if not TID_END.search(text[:c].rstrip())]
    if not cuts:
        return [line]
    bounds = [0, *cuts, len(text)]
    return [Line(line.file, line.lineno, text[a:b].strip(), None, line.stamp) for a, b in itertools.pairwise(bounds)]


@functools.cache
def anchors() -> tuple[str, ...]:
    """What the reader searches for (ncclgen/data/triage/anchors.yaml): one of them is in every key a line may need."""
    return tuple(catalogue.load_data("anchors.yaml")["anchors"])


def _keys() -> tuple[bytes, ...]:
    return tuple(sorted(a.encode() for a in anchors()))


def all_keys() -> set[str]:
    """Every literal a kept line may need: the signatures' keys, the markers, the failure words, the fact keys."""
    return (
        {k for s in catalogue.signatures() for k in s.keys} | set(ERROR_MARKERS) | set(FAILURE_WORDS) | set(FACT_KEYS)
    )


def _hits(buf: bytes, end: int, keys: tuple[bytes, ...], capped: Capped) -> list[int]:
    """Offsets of every key in buf[:end]. bytes.find per key runs at memory speed; one regex
    alternation of ~50 literals ran at 5 MB/s (Python's re has no multi-literal search). A capped group's
    lines are taken in file order only while its count (per file, in ``capped``) lasts, as grep -m does."""
    out = []
    for k in keys:
        i = buf.find(k, 0, end)
        while i >= 0:
            out.append(i)
            i = buf.find(k, i + 1, end)
    for group, left in capped.items():
        starts: set[int] = set()
        for k in group if left > 0 else ():
            i = buf.find(k, 0, end)
            while i >= 0:
                starts.add(buf.rfind(b"\n", 0, i) + 1)
                i = buf.find(k, i + 1, end)
        taken = sorted(starts)[:left]
        out += taken
        capped[group] = left - len(taken)
    out.sort()
    return out


def job_script(head: bytes) -> bool:
    return head.startswith(b"#!") and any(m in head for m in SCRIPT_MARKS)


def expand(paths: list[str]) -> tuple[list[Path], list[Path]]:
    """(log files, flight-recorder dumps) under ``paths``; a missing path is bad input."""
    logs: list[Path] = []
    dumps: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file())
        elif p.is_file():
            found = [p]
        else:
            raise UserError("no such file or folder", file=raw)
        for f in found:
            (dumps if FR_DUMP.search(f.as_posix()) else logs).append(f)
    return logs, dumps


def total_size(files: list[Path]) -> int:
    return sum(f.stat().st_size for f in files)


def scan(files: list[Path], progress: Callable[[int], None] | None = None, engine: str = "auto") -> Iterator[Line]:
    """Every candidate line of ``files``, in file order, with its 1-based line number. ``engine``: grep (one
    `grep -F` pass, grepscan.py), python (bytes.find per anchor), auto (grep when there is one)."""
    keys = _keys()
    for f in files:
        try:
            fh = open(f, "rb")  # noqa: SIM115 - closed below; a with block would hide the generator's early exit
        except OSError as exc:
            raise UserError(f"cannot read: {exc.strerror}", file=str(f)) from None
        with fh:
            head = fh.read(1 << 16)
            if job_script(head):
                if m := REGENERATE_LINE.search(head):
                    lineno = head.count(b"\n", 0, m.start()) + 1
                    yield Line(str(f), lineno, CONTINUED.sub(b" ", m.group(0)).decode("utf-8", "replace"))
                if progress:
                    progress(f.stat().st_size)
                continue
            capped = _capped()
            skip = header_lines(head)
            # a log copied from a web page may carry no-break spaces where the program printed spaces: read it
            # with them as spaces (only such a file: a job's own log has none)
            if NBSP in head:
                fh.seek(0)
                yield from _scan_one(fh, str(f), keys, progress, capped, skip, spaces=True)
                continue
            if engine == "grep" or (engine == "auto" and grepscan.available()):
                yield from _scan_grep(fh, f, keys, progress, capped, skip)
                continue
            fh.seek(0)
            yield from _scan_one(fh, str(f), keys, progress, capped, skip)


def _scan_grep(fh, f: Path, keys: tuple[bytes, ...], progress, capped: Capped, skip: int) -> Iterator[Line]:
    """The lines grep finds, as _scan_one would give them (the corpus header skipped, the line after
    'Last error:' read from the file)."""
    done = 0
    quoted = 0  # the line read as 'Last error:''s quote: not yielded again when grep finds it too
    name = str(f)
    for lineno, offset, raw in grepscan.lines(f, keys, capped):
        if progress and offset - done > CHUNK:
            progress(offset - done)
            done = offset
        if lineno == quoted:
            continue
        line = collected(name, lineno, raw.decode("utf-8", "replace").rstrip("\r"))
        text = line.text
        if lineno > skip:
            yield line
        if text.endswith("Last error:"):
            fh.seek(offset + len(raw) + 1)
            body = fh.readline(1 << 16)
            if body.endswith(b"\n") and body.strip():
                quoted = lineno + 1
                yield _last_error(name, lineno + 1, text, body.rstrip(b"\r\n").decode("utf-8", "replace"))
    if progress:
        progress(f.stat().st_size - done)


def _last_error(name: str, lineno: int, head: str, body: str) -> Line:
    """PyTorch prints NCCL's last WARN text on the line after "Last error:", without NCCL's prefix but with the
    launcher's or logger's prefix both lines share (`[trainer0|0]:`, Ray's `(Worker pid=1) ERROR ... ]`)."""
    prefix = head[: -len("Last error:")]
    line = collected(name, lineno, body)
    body = line.text
    text = body[len(prefix) :] if prefix and body.startswith(prefix) else body
    return Line(name, lineno, body, text.split(":", 1)[-1] if text.startswith("[") else text, line.stamp)


def _scan_one(
    fh, name: str, keys: tuple[bytes, ...], progress, capped: Capped, skip: int, spaces: bool = False
) -> Iterator[Line]:
    carry = b""
    lineno = 1  # line number of the first line in buf
    while True:
        chunk = fh.read(CHUNK)
        if progress:
            progress(len(chunk))
        if spaces:
            chunk = chunk.replace(NBSP, b" ")  # (a chunk ending inside one: its two bytes stay, decoded as U+00A0)
        buf = carry + chunk
        if not chunk:
            end = len(buf)
        else:
            end = buf.rfind(b"\n") + 1
            if end == 0:  # one line longer than a chunk: keep reading (bounded by the line's length)
                carry = buf
                continue
        pos = 0
        seen = 0  # offset up to which newlines are counted into lineno
        for hit in _hits(buf, end, keys, capped):
            if hit < pos:
                continue  # another key on a line already kept
            start = buf.rfind(b"\n", 0, hit) + 1
            stop = buf.find(b"\n", hit, end)
            stop = end if stop < 0 else stop
            lineno += buf.count(b"\n", seen, start)
            seen = start
            line = collected(name, lineno, buf[start:stop].decode("utf-8", "replace").rstrip("\r"))
            text = line.text
            if lineno > skip:
                yield line
            if text.endswith("Last error:") and (after := buf.find(b"\n", stop + 1, end)) > 0:
                # PyTorch prints NCCL's last WARN text on the line after "Last error:", without NCCL's prefix
                body = buf[stop + 1 : after].decode("utf-8", "replace").rstrip("\r")
                if body.strip():  # an empty quote (NCCL had no WARN text to give) is no line of its own
                    yield _last_error(name, lineno + 1, text, body)
                lineno += 1
                seen = stop + 1
                stop = after
            pos = stop
        lineno += buf.count(b"\n", seen, end)
        carry = buf[end:]
        if not chunk:
            return


class Progress:
    """A progress bar on stderr, only when stderr is a terminal (never in pipes, files or tests)."""

    def __init__(self, total: int, stream=None):
        self.stream = stream or sys.stderr
        self.total = max(total, 1)
        self.done = 0
        self.shown = -1
        self.on = self.stream.isatty() and total > 100 << 20

    def __call__(self, n: int) -> None:
        self.done += n
        pct = self.done * 100 // self.total
        if self.on and pct != self.shown:
            self.shown = pct
            bar = "#" * (pct // 4)
            self.stream.write(f"\rncclgen triage: reading [{bar:<25}] {pct:3d}%")
            self.stream.flush()

    def close(self) -> None:
        if self.on:
            self.stream.write("\r" + " " * 60 + "\r")
            self.stream.flush()


TAIL = 65536  # bytes read from a file's end for its last line


def is_last(line: Line) -> bool:
    """The line is its file's last non-blank line (a compressed or unreadable file: no)."""
    try:
        with open(line.file, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - TAIL))
            tail = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return False
    last = next((text for text in reversed(tail) if text.strip()), "")
    return bool(line.text.strip()) and line.text.strip() in last
