"""Safe YAML reading that keeps line:column for every key path and refuses hostile documents.

PyYAML's safe_load loses positions, accepts duplicate keys and expands alias bombs; descriptors and
workloads are user input, so we compose the node graph ourselves and build plain values from it.
"""

from __future__ import annotations

import math
import os
import re
import stat
from typing import Any

import yaml
import yaml.constructor

from ..errors import Location, UserError, unsafe_char

MAX_BYTES = 256 << 10  # a descriptor or workload is a few KiB; 256 KiB is generous and reads in well under 2 s
MAX_NODES = 200_000  # values built, aliases counted each time they are used
MAX_INT_DIGITS = 30  # no count, size or id in a descriptor needs more (Python stops at 4,300)
_LINE_BREAKS = re.compile("[\x85\u2028\u2029]")
_DECIMAL = re.compile(r"[-+]?(0|[1-9][0-9]*)")
MAX_DEPTH = 64  # descriptors nest about 6 deep; deeper crashes libyaml's C composer

_Loader: type[yaml.SafeLoader] | type[yaml.CSafeLoader]
try:  # libyaml is in PyYAML's wheels; the pure-Python parser is the fallback
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

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
    doc = _load_text(text, file)
    _LAST[:] = [file, text, doc]
    return doc


def _load_text(text: str, file: str) -> Document:
    try:
        _check_depth(text, file)
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        msg = f"YAML syntax error: {exc.problem or exc.context}"
        if mark is not None and (" tab " in str(exc.problem) or _char_at(text, mark.index) == "\t"):
            msg = "YAML syntax error: tabs are not allowed in YAML indentation (indent with spaces)"
        raise UserError(
            msg, file=file, line=mark.line + 1 if mark else None, col=mark.column + 1 if mark else None
        ) from None
    except yaml.YAMLError as exc:
        raise yaml_error(exc, text, file) from None
    if node is None:
        raise UserError("empty document, expected a mapping", file=file)
    _check_shape(node, file)
    builder = _Builder(file)
    data = builder.build(node, ())
    return Document(data, builder.marks, file)


def _char_at(text: str, index: int) -> str:
    return text[index] if 0 <= index < len(text) else ""


def yaml_error(exc: Exception, text: str, file: str) -> UserError:
    """A YAML error other than a syntax error, at its line:column when the reader knows its offset
    (a raw control character: `unacceptable character #x001f`)."""
    line = col = None
    character = getattr(exc, "character", None)
    # libyaml counts the position in bytes, the pure-Python reader in characters: the reader stops at the
    # first character it refuses, so its first occurrence is the place.
    position = text.find(chr(character)) if isinstance(character, int) else -1
    if isinstance(exc, yaml.reader.ReaderError) and position >= 0:
        line = text.count("\n", 0, position) + 1
        col = position - (text.rfind("\n", 0, position) + 1) + 1
        return UserError(
            f"YAML error: character #x{exc.character:04x} is not allowed (a control character)",
            file=file,
            line=line,
            col=col,
        )
    return UserError(f"YAML error: {str(exc).splitlines()[0]}", file=file, line=line, col=col)


def _check_depth(text: str, file: str) -> None:
    """Refuse deep nesting on the parser's event stream, before composing.

    libyaml's composer recurses in C once per level: 50,000 nested '[' (100 KB) crash the interpreter
    with SIGSEGV. The event stream is produced without recursion, so it is safe to measure first.
    """
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                m = event.start_mark  # the parser marks every event; None only in the stubs' type
                line, col = (m.line + 1, m.column + 1) if m is not None else (None, None)
                raise UserError(f"nested more than {MAX_DEPTH} levels deep", file=file, line=line, col=col)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _node_error(node, file: str, path: Path, message: str) -> UserError:
    m = node.start_mark
    return UserError(message, file=file, path=format_path(path) or None, line=m.line + 1, col=m.column + 1)


def _check_shape(root, file: str) -> None:
    """Refuse alias bombs and deep nesting before building anything.

    Aliases share node objects in the composed graph, so memoising each node's expanded size prices a
    billion-laughs document in microseconds; building it first and counting would take seconds.
    """
    sizes: dict[int, int] = {}

    def size(node, path: Path) -> int:
        if len(path) > MAX_DEPTH:  # only a self-referencing anchor (&a [*a]) gets here
            raise _node_error(
                node, file, path[:1], f"nested more than {MAX_DEPTH} levels deep (a YAML alias refers to itself?)"
            )
        if id(node) in sizes:
            return sizes[id(node)]
        if isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(k, path) + size(v, (*path, _key_text(k))) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(child, (*path, i)) for i, child in enumerate(node.value))
        else:
            total = 1
        if total > MAX_NODES:
            raise _node_error(node, file, path, f"document expands to more than {MAX_NODES} values (YAML alias bomb?)")
        sizes[id(node)] = total
        return total

    size(root, ())


def _key_text(node) -> str:
    return node.value if isinstance(node, yaml.ScalarNode) else "?"


class _Builder:
    def __init__(self, file: str):
        self.file = file
        self.marks: dict[Path, tuple[int, int]] = {}
        self.constructor = yaml.constructor.SafeConstructor()

    def _err(self, node, path: Path, message: str) -> UserError:
        return _node_error(node, self.file, path, message)

    def build(self, node, path: Path) -> Any:
        self.marks.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.MappingNode):
            out: dict = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise self._err(key_node, path, "YAML merge keys (<<) are not supported")
                key = self.build(key_node, (*path, _key_text(key_node)))  # its errors name the key
                if not isinstance(key, (str, int)) or isinstance(key, bool):
                    raise self._err(key_node, path, f"keys must be strings, got {type(key).__name__}")
                key = str(key)
                if key in out:
                    raise self._err(key_node, (*path, key), "duplicate key")
                # A scalar's errors are about its value, so point there (tier: 5 -> the 5); a mapping's or
                # list's point at its key, since a block value starts on a later line.
                at = value_node if isinstance(value_node, yaml.ScalarNode) else key_node
                here = (*path, key)
                self.marks[here] = (at.start_mark.line + 1, at.start_mark.column + 1)
                out[key] = self.build(value_node, here)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(child, (*path, i)) for i, child in enumerate(node.value)]
        if not node.tag.startswith("tag:yaml.org,2002:") or node.tag.endswith((":binary", ":set", ":omap", ":pairs")):
            raise self._err(node, path, f"unsupported YAML tag {node.tag}")
        self._check_scalar(node, path)
        try:
            value = self.constructor.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            raise self._err(node, path, f"bad scalar: {str(exc).splitlines()[0]}") from None
        if isinstance(value, str):
            bad = unsafe_char(value)
            if bad:
                raise self._err(
                    node,
                    path,
                    f"{bad}: bash drops NUL and YAML readers turn NEL/U+2028 into "
                    "line breaks, so the value would not arrive as written; remove it",
                )
        elif isinstance(value, float) and not math.isfinite(value):
            raise self._err(node, path, f"{node.value} is not a finite number")
        return value

    def _check_scalar(self, node, path: Path) -> None:
        """Refuse the YAML 1.1 number forms that silently change a value.

        PyYAML implements YAML 1.1: 010 is octal 8, 0600 is 384, 0x10 is 16, 1_000 is 1000 and 1:20 is
        80 (base 60). A count or an id written that way is almost always a mistake, so only plain
        decimals are accepted; quote the text if a string is meant.
        """
        text = node.value
        if node.tag == "tag:yaml.org,2002:int":
            if not _DECIMAL.fullmatch(text):
                raise self._err(
                    node,
                    path,
                    f"{text} is not a plain decimal integer: YAML 1.1 reads a leading 0 "
                    "as octal (010 is 8), 0x/0o/0b as other bases, '_' and ':' "
                    "specially; write it in decimal without leading zeros, or quote it "
                    "if it is text",
                )
            if len(text.lstrip("+-")) > MAX_INT_DIGITS:
                raise self._err(
                    node, path, f"an integer of {len(text.lstrip('+-'))} digits (more than {MAX_INT_DIGITS})"
                )
        elif node.tag == "tag:yaml.org,2002:float" and ("_" in text or ":" in text):
            raise self._err(
                node,
                path,
                f"{text} is not a plain decimal number: YAML 1.1 reads '_' and ':' "
                "(base 60) specially; write it as a plain decimal, or quote it",
            )


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
