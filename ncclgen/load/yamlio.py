"""Safe YAML reading that keeps line:column for every key path and refuses hostile documents.

PyYAML's safe_load loses positions, accepts duplicate keys and expands alias bombs; descriptors and
workloads are user input, so we compose the node graph ourselves and build plain values from it.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import zlib
from typing import Any

from .. import datapaths
from ..errors import Location, UserError

MAX_BYTES = 256 << 10  # a descriptor or workload is a few KiB; 256 KiB is generous and reads in well under 2 s
_LINE_BREAKS = re.compile("[\x85\u2028\u2029]")
MAX_DEPTH = 64  # descriptors nest about 6 deep; deeper crashes libyaml's C composer

Path = tuple  # a key path: ("node", "gpus", 3, "numa")


def format_path(path: Path) -> str:
    """("node", "gpus", 3, "numa") -> node.gpus[3].numa

    A key with a control or line-break character is shown quoted and escaped (repr): error messages
    must stay one line and must not carry terminal escapes from a hostile file.
    """
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = str(part)
            out += ("." if out else "") + (text if text.isprintable() else repr(text))
    return out


class Document:
    """A loaded YAML document: its plain value and the position of every key path."""

    def __init__(self, data: Any, marks: dict[Path, tuple[int, int]], file: str):
        self.data = data
        self.marks = marks
        self.file = file

    def error(self, path: Path, message: str) -> UserError:
        """A UserError at the nearest known position of ``path``."""
        p = tuple(path)
        while p not in self.marks and p:
            p = p[:-1]
        line, col = self.marks.get(p, (None, None))
        return UserError(message, file=self.file, path=format_path(path) or None, line=line, col=col)

    def location(self, path: Path) -> Location:
        """Where the value at ``path`` is (its nearest known position), for a check made later."""
        err = self.error(path, "")
        return Location(self.file, err.line, err.col, err.path)


def read_text(file: str, *, limit: int = MAX_BYTES, what: str = "a YAML file") -> str:
    """The text of ``file``, or one clear error: missing, a directory, too big, binary, not UTF-8."""
    return decode(read_bytes(file, limit=limit, what=what), file, limit=limit, what=what)


def read_bytes(file: str, *, limit: int = MAX_BYTES, what: str = "a YAML file") -> bytes:
    """At most ``limit + 1`` bytes of the regular file ``file``, or one clear error.

    Anything but a regular file is refused before it is opened: a FIFO (`mkfifo ncclgen.yaml`) or a
    terminal would block the read forever, and opening some devices has side effects. The file is then
    opened non-blocking and checked again, so swapping it for a FIFO in between cannot block either.
    """
    with open_regular(file, what) as fh:
        try:
            return fh.read(limit + 1)
        except OSError as exc:
            raise UserError(f"cannot read: {exc.strerror or exc}", file=file) from None


def open_regular(file: str, what: str):
    """``file`` opened for binary reading if it is a regular file, else one UserError (see read_bytes)."""
    if file == "":
        raise UserError(f"empty file name, expected {what}")
    try:
        _regular(os.stat(file).st_mode, file, what)
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UserError("no such file", file=file) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise UserError(f"cannot read: {getattr(exc, 'strerror', None) or exc}", file=file) from None
    try:
        _regular(os.fstat(fd).st_mode, file, what)
    except UserError:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def require_regular(file: str, what: str) -> None:
    """Nothing when ``file`` (followed through links) is a regular file, else one UserError: missing
    (a dangling link), a folder, a FIFO, a device (a link to /dev/zero)."""
    try:
        mode = os.stat(file).st_mode
    except FileNotFoundError:
        raise UserError(f"no such file (a dangling link?), expected {what}", file=file) from None
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read: {getattr(exc, 'strerror', None) or exc}", file=file) from None
    _regular(mode, file, what)


def _regular(mode: int, file: str, what: str) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise UserError(f"is a directory, expected {what}", file=file)
    kind = (
        "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )
    raise UserError(f"is {kind}, expected {what} (a regular file)", file=file)


def decode(raw: bytes, label: str, *, limit: int = MAX_BYTES, what: str = "a YAML file") -> str:
    """``raw`` as text if it is small UTF-8 without NUL bytes (``label`` names it in the error)."""
    if len(raw) > limit:
        raise UserError(f"larger than {limit} bytes, expected {what}", file=label)
    if b"\0" in raw:
        raise UserError(f"binary data (NUL byte), expected {what}", file=label)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"not UTF-8 text (byte {exc.start})", file=label) from None
    m = _LINE_BREAKS.search(text)
    if m:
        # YAML 1.1 (PyYAML) reads NEL, U+2028 and U+2029 as line breaks and folds them into a space inside
        # quotes; a shell reads them as ordinary characters. Either way the value is not what it shows.
        line = text.count("\n", 0, m.start()) + 1
        col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
        raise UserError(
            f"character U+{ord(m.group()):04X} (a Unicode line break): YAML reads it as a new line, "
            "other readers do not; remove it",
            file=label,
            line=line,
            col=col,
        )
    return text


def load_file(file: str) -> Document:
    return load_text(read_text(file), file)


_LAST: list = [None, None, None]  # (file, text, Document): `validate` and a render read a file twice


def load_text(text: str, file: str) -> Document:
    """Parse one YAML document from ``text``; ``file`` names it in errors (the last one is remembered:
    composing is most of the time a 1 MiB file takes)."""
    if _LAST[0] == file and _LAST[1] == text:
        return _LAST[2]
    doc = _precompiled(text, file) or parse(text, file)
    _LAST[:] = [file, text, doc]
    return doc


@functools.lru_cache(maxsize=1)
def bundled_folders() -> dict[str, str]:
    """Kind -> the folder of the YAML ncclgen ships (its data, workloads and cluster presets)."""
    return {
        "data": datapaths.data(""),
        "workloads": datapaths.bundled("workloads"),
        "clusters": datapaths.bundled("clusters"),
    }


@functools.lru_cache(maxsize=1)
def _bundled_kinds() -> dict[str, str]:
    return {os.path.realpath(d): k for k, d in bundled_folders().items()}


def checksum(text: str) -> str:
    """CRC-32 and length: tells an edited bundled file from the one precompiled (a change detector, not
    a seal: the precompiled module ships beside the files, and whoever can change one can change both)."""
    raw = text.encode("utf-8")
    return f"{zlib.crc32(raw):08x}:{len(raw)}"


def _precompiled(text: str, file: str) -> Document | None:
    """A bundled document as tools/compile_data.py built it, while ``text`` is still what it was built from.

    Why: parsing rules.yaml, plugins.yaml, a workload and a preset was a tenth of a render (issue 34). The
    module holds what ``parse`` returned for the same text, checks included, as functions that build
    fresh values; any other file, or a bundled one edited since, is parsed.
    """
    folder, name = os.path.split(os.path.realpath(file))
    kinds = _bundled_kinds()
    if folder not in kinds:
        return None
    from .compiled import DOCUMENTS  # here: a render from a user's files needs none of it

    entry = DOCUMENTS.get((kinds[folder], name))
    if entry is None or entry[0] != checksum(text):
        return None
    data, marks = entry[1]()
    return Document(data, marks, file)


def parse(text: str, file: str) -> Document:
    """``text`` composed and built with every check (depth, aliases, keys, scalars); ``file`` names it.

    The parser lives in yamlparse, imported here: PyYAML costs a render 11 ms to import, and a render
    from the bundled files needs none of it (``_precompiled``)."""
    from . import yamlparse

    return yamlparse.parse(text, file)


# -- JSON input (lint's `ncclgen env --format json`, monitor records) ----------------------------------

MAX_JSON_DIGITS = 40  # no count, size or id in ncclgen's JSON inputs needs more


class _JsonRefused(ValueError):
    pass


def _json_int(text: str) -> int:
    # Python refuses int() of more than 4,300 digits with a ValueError (and is quadratic below that).
    if len(text.lstrip("-")) > MAX_JSON_DIGITS:
        raise _JsonRefused(f"an integer of {len(text.lstrip('-'))} digits (more than {MAX_JSON_DIGITS})")
    return int(text)


def _json_constant(text: str):
    raise _JsonRefused(f"{text} is not JSON (RFC 8259 has no NaN or Infinity)")


def load_json(text: str, file: str, *, line: int | None = None, expected: str = ""):
    """``text`` parsed as strict JSON, or one UserError at ``file`` (``line`` for one-record-per-line files).

    Refuses what the stdlib parser would turn into a traceback: integers beyond the 4,300-digit limit
    and nesting deep enough to exhaust the interpreter's recursion limit.
    """
    import json

    try:
        return json.loads(text, parse_int=_json_int, parse_constant=_json_constant)
    except json.JSONDecodeError as exc:
        msg = f"not JSON ({exc.msg}); expected {expected}" if expected else f"JSON syntax error: {exc.msg}"
        raise UserError(msg, file=file, line=(line if line is not None else exc.lineno), col=exc.colno) from None
    except _JsonRefused as exc:
        raise UserError(f"JSON: {exc}", file=file, line=line if line is not None else 1) from None
    except RecursionError:
        raise UserError("JSON nested too deeply", file=file, line=line if line is not None else 1) from None
