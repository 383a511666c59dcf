"""What lint reads and echoes from hostile input: names with characters NCCL never matches, a byte order
mark, values too long to repeat.

A name with a Cyrillic 'С', a zero-width space or any character outside ASCII letters, digits and '_'
is not the variable it looks like: bash refuses it as an identifier (`export` fails, `NAME=V cmd` runs a
command of that name) and NCCL's getenv() asks only for its own ASCII names, so the real variable stays
unset. Lint reports such a name as not read, naming the character by its code point
(errors.char_name), instead of skipping it as irrelevant. Reports never copy control characters from
the input (errors.printable, in findings.format_text) and echo a long value once, cut short.
"""

from __future__ import annotations

import re
import unicodedata

from ..errors import char_name, shown

BOM = "\ufeff"
ECHO_LIMIT = 80  # characters of a value a report repeats; a 200 kB value is echoed cut to this
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def strip_bom(text: str) -> str:
    """``text`` without a leading byte order mark, which would otherwise hide the first line's name."""
    return text[1:] if text.startswith(BOM) else text


def is_identifier(name: str) -> bool:
    return _IDENTIFIER.fullmatch(name) is not None


def looks_like_name(word: str) -> bool:
    """True for an assignment's left side that is a name but for characters outside ASCII (a Cyrillic
    'С', a zero-width space, a BOM): what a reader takes for NAME, though bash and NCCL do not."""
    if word.isascii():
        return False
    return bool(_IDENTIFIER.fullmatch("".join(ch for ch in word if ch.isascii())))


def foreign_name(name: str, relevant, suggest) -> tuple[str, str] | None:
    """(message, fix) for a name that is not an ASCII identifier but would be a checked one without its
    odd characters (``relevant(name)`` says which names lint checks, ``suggest(name)`` gives close real
    names); None when lint may skip it."""
    visible = unicodedata.normalize("NFKC", "".join(ch for ch in name if unicodedata.category(ch)[0] not in "CZ"))
    ascii_only = "".join(ch for ch in name if ch.isascii() and (ch.isalnum() or ch == "_"))
    if not (relevant(ascii_only) or relevant(visible) or relevant(name)):
        return None
    bad = next(ch for ch in name if not (ch.isascii() and (ch.isalnum() or ch == "_")))
    meant = visible if is_identifier(visible) else next(iter(suggest(name.encode("ascii", "replace").decode())), None)
    message = (
        f"{shown(name)} is not a name NCCL or PyTorch reads: {char_name(bad)}, not an ASCII letter, digit or "
        "'_' (bash refuses such a name and NCCL asks only for its ASCII names)"
        + (f", so {meant} stays unset" if meant else "")
    )
    return message, f"retype the name as {meant}" if meant else "retype the name in ASCII"


def display(name: str) -> str:
    """A name as a report shows it: non-ASCII characters escaped ('NCCL_IB_H\\u0421A'), so the odd one shows."""
    return name.encode("ascii", "backslashreplace").decode("ascii")


def clip(text: str, value: str | None) -> str:
    """``text`` with each copy of a long ``value`` (as written, or as repr) cut to ECHO_LIMIT characters."""
    if value is None or len(value) <= ECHO_LIMIT:
        return text
    short = f"{value[:ECHO_LIMIT]}... ({len(value) - ECHO_LIMIT} more characters)"
    return text.replace(repr(value), repr(short)).replace(value, short)
