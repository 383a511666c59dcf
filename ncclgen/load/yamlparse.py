"""PyYAML's composer under yamlio's rules: line:column for every key path, hostile documents refused.

Kept apart from yamlio (reading, positions, the precompiled bundled files) because importing PyYAML is
a tenth of a render that reads only bundled files; yamlio.parse imports this module when it must parse.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml
import yaml.constructor

from ..errors import UserError, unsafe_char
from .yamlio import MAX_DEPTH, Document, Path, format_path

MAX_NODES = 200_000  # values built, aliases counted each time they are used
MAX_INT_DIGITS = 30  # no count, size or id in a descriptor needs more (Python stops at 4,300)
_DECIMAL = re.compile(r"[-+]?(0|[1-9][0-9]*)")

# The one loader every reader of YAML in ncclgen uses (descriptors, manifests, the triage catalogue, rules.yaml)
LOADER: type[yaml.SafeLoader] | type[yaml.CSafeLoader]
try:  # libyaml is in PyYAML's wheels; the pure-Python parser is the fallback
    LOADER = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    LOADER = yaml.SafeLoader


def parse(text: str, file: str) -> Document:
    """``text`` composed and built with every check (depth, aliases, keys, scalars); ``file`` names it."""
    try:
        _check_depth(text, file)
        node = yaml.compose(text, Loader=LOADER)
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
    for event in yaml.parse(text, Loader=LOADER):
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
