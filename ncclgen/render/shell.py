"""Shell quoting for everything ncclgen writes into a script (sbatch scripts, ConfigMap scripts).

Quoting is never left to a template author: every value goes through `quote` unless it is `Raw`,
which marks an expansion ncclgen itself writes (`"$HEAD_ADDR"`), TorchX's `_noquote` idea.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class Raw(str):
    """Shell text written verbatim: an expansion ncclgen controls. Any plain str is shell-quoted."""


def quote(value: object) -> str:
    """shlex.quote (bash $'...' where a control character is, so every value stays on its line), except
    Raw text ncclgen wrote itself."""
    return str(value) if isinstance(value, Raw) else comment_quote(str(value))


def quote_always(value: object) -> str:
    """Always quoted, so `NAME==bond0` reads as the assignment it is (bash accepts it unquoted, but
    people and shellcheck read `==` as a typo)."""
    text = quote(value)
    return text if isinstance(value, Raw) or text.startswith(("'", '"', "$'")) else f"'{text}'"


def args(argv: Iterable[object]) -> str:
    """' a b c', each quoted, for appending to a command line."""
    return "".join(" " + quote(a) for a in argv)


def args_lines(argv: Iterable[object], width: int = 100) -> str:
    """Quoted arguments on continuation lines of at most ``width`` columns (one argument may exceed it)."""
    out, line = [], ""
    for a in argv:
        word = quote(a)
        if line and len(line) + 1 + len(word) > width - 6:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        out.append(line)
    return "".join(" \\\n    " + line for line in out)


def join(argv: Iterable[str]) -> str:
    return shlex.join(list(argv))


def comment_quote(arg: str) -> str:
    """shlex.quote, or bash $'...' when the argument holds control characters: a raw newline inside a
    `# Regenerate:` comment would turn the rest of the argument into a command."""
    if not CONTROL.search(arg):
        return shlex.quote(arg)
    out = []
    for ch in arg:
        if ch in "\\'":
            out.append("\\" + ch)
        elif CONTROL.match(ch):
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, f"\\x{ord(ch):02x}"))
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def comment_line(argv: Iterable[str]) -> str:
    """An argv for a `# ...` comment line: each argument quoted, control characters escaped."""
    return " ".join(comment_quote(a) for a in argv)


def escape_controls(text: str) -> str:
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def one_line(text: str) -> str:
    return escape_controls(" ".join(text.split()))


def sbatch_value(value: str | None) -> str:
    """'' for a flag, else '=' + the quoted value.

    sbatch reads #SBATCH lines with its own parser: quotes work as in the shell, but a backslash
    escapes the next character even inside single quotes, so backslashes are doubled.
    """
    if value is None:
        return ""
    return "=" + shlex.quote(value).replace("\\", "\\\\")
