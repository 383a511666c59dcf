"""One exception for every kind of bad input, so the CLI can print one line and exit 2."""

from __future__ import annotations

import re
import unicodedata

from .record import dataclass

# Characters refused in every value ncclgen reads (YAML scalars, --set values): C0 controls but tab and
# newline, DEL, C1 controls (U+0085 NEL among them) and the Unicode line/paragraph separators. bash drops
# a NUL from a value; YAML emitters and readers turn NEL, U+2028 and U+2029 into line breaks or spaces;
# CR and ESC rewrite what a terminal shows. None of them has a use in a cluster descriptor or an env value.
UNSAFE_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
# Shown escaped in messages and normal output: everything not printable, newline and tab included.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def unsafe_char(text: str) -> str | None:
    """'U+0085 at offset 3' for the first character of ``text`` no value may hold, else None."""
    m = UNSAFE_CHARS.search(text)
    if m is None:
        return None
    return f"control character U+{ord(m.group()):04X} at offset {m.start()}"


def char_name(ch: str) -> str:
    """ "'С' is U+0421 CYRILLIC CAPITAL LETTER ES": the character (escaped when invisible) and its code point.

    A zero-width space, a BOM or a Cyrillic letter looks like nothing or like a Latin letter; the code
    point and its Unicode name show what the eye cannot.
    """
    category = unicodedata.category(ch)
    visible = ch.isprintable() and category[0] not in "CZ" and category not in ("Mn", "Me")
    name = unicodedata.name(ch, "") or ("a control character" if category == "Cc" else "(no name)")
    if ch == "\ufeff":
        name += " (a byte order mark)"
    return f"{repr(ch) if visible else ascii(ch)} is U+{ord(ch):04X} {name}"


def non_ascii(text: str) -> str:
    """'; '٣' is U+0663 ARABIC-INDIC DIGIT THREE, not ASCII' for the first non-ASCII character, else ''.

    Such characters look like digits or spaces (fullwidth digits, NBSP) but numactl, Slurm and the
    shell read only ASCII: naming the code point shows what the eye cannot.
    """
    for ch in text:
        if not ch.isascii():
            return f"; {char_name(ch)}, not ASCII"
    return ""


def printable(text: str) -> str:
    """``text`` with control characters shown as escapes (\\n, \\x1b, \\u0085): one line, no terminal codes."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii"), text)


def shown(value, limit: int = 60) -> str:
    """repr(value), cut to ``limit`` characters: a hostile 5,000-character value stays out of the line."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


class UserError(Exception):
    """Bad input from a file, a flag or the environment: never a bug in ncclgen.

    Rendered as ``file:line:col: key.path: message`` with whatever parts are known.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        path: str | None = None,
        line: int | None = None,
        col: int | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.file = file
        self.path = path
        self.line = line
        self.col = col

    def located(self, file: str) -> UserError:
        """The same error, naming ``file`` when no file was known yet."""
        if self.file is None:
            self.file = file
        return self

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
                if self.col is not None:
                    where += f":{self.col}"
            where += ": "
        key = f"{self.path}: " if self.path else ""
        # One line, always, without terminal escapes: a newline, CR or ESC inside a hostile value must
        # neither split the message nor rewrite what the terminal shows.
        return printable(where + key + self.message)

    def all(self) -> list[UserError]:
        """Every problem this error stands for, in file order: itself, or those of a :class:`UserErrors`."""
        return [self]


@dataclass(frozen=True)
class Location:
    """Where a value was read: file, line:column and key path (e.g. c.yaml, 70, 12, "env[0].value").

    Kept with a value that is checked later than it is read (an env value reaches the lint step of the
    pipeline), so the error still names the file, line:column and key path, never a flag the user did
    not type."""

    file: str
    line: int | None
    col: int | None
    path: str | None

    def error(self, message: str) -> UserError:
        return UserError(message, file=self.file, path=self.path, line=self.line, col=self.col)


class UserErrors(UserError):
    """Several problems found in one pass over a file, sorted into file order.

    It reads as its first problem (``message``, ``line``... are the first one's), so code that shows
    one error still shows the right one; the CLI prints ``all()``, one line each.
    """

    def __init__(self, errors: list[UserError]):
        flat = [e for err in errors for e in err.all()]
        # file order: line, then column; a problem without a position (the whole file) comes first
        flat.sort(key=lambda e: (e.line or 0, e.col or 0))
        first = flat[0]
        super().__init__(first.message, file=first.file, path=first.path, line=first.line, col=first.col)
        self.errors = flat

    def located(self, file: str) -> UserError:
        for e in self.errors:
            e.located(file)
        return super().located(file)

    def all(self) -> list[UserError]:
        return list(self.errors)


def collect(errors: list[UserError]) -> None:
    """Raise ``errors`` as one exception (the single error itself when there is one); nothing if empty."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise UserErrors(errors)


class Findings:
    """The errors and warnings of one pass of checks over a document, each located when found.

    ``locate(path, message)`` makes the UserError (yamlio.Document.error: file:line:col and the key path
    of the value), so every check names where its value is without knowing how. :meth:`done` raises
    every error at once (in file order) and returns the warnings, in file order too.
    """

    def __init__(self, locate):
        self.locate = locate
        self.errors: list[UserError] = []
        self.warnings: list[UserError] = []

    def fail(self, path: tuple, message: str) -> None:
        self.errors.append(self.locate(path, message))

    def warn(self, path: tuple, message: str) -> None:
        self.warnings.append(self.locate(path, message))

    def done(self) -> list[UserError]:
        collect(self.errors)
        return sorted(self.warnings, key=lambda w: (w.line or 0, w.col or 0))


MAX_SHOWN = 50  # a mangled file can make hundreds of errors; the first ones are the ones to fix


def error_lines(exc: UserError, prefix: str = "ncclgen: error: ") -> list[str]:
    """The lines the CLI prints for ``exc``: one per problem, at most MAX_SHOWN and a count of the rest."""
    problems = exc.all()
    lines = [f"{prefix}{e}" for e in problems[:MAX_SHOWN]]
    if len(problems) > MAX_SHOWN:
        where = f"{problems[0].file}: " if problems[0].file else ""
        lines.append(f"{prefix}{where}{len(problems) - MAX_SHOWN} more problem(s) not shown")
    return lines


def warn(problem: UserError) -> None:
    """Print a warning (a UserError that does not stop the run) as one line on stderr."""
    import sys

    print(f"ncclgen: warning: {problem}", file=sys.stderr)


def did_you_mean(word: str, choices) -> str:
    """' (did you mean 'x'?)' when a close match exists, else ''."""
    import difflib

    choices = [str(c) for c in choices]
    lower = {c.lower(): c for c in reversed(choices)}  # first spelling wins on a case clash
    key = word.lower()
    if key in lower and lower[key] != word:  # fabric: InfiniBand
        return f" (did you mean '{lower[key]}'?)"
    match = difflib.get_close_matches(key, list(lower), n=1, cutoff=0.6)
    if match:
        return f" (did you mean '{lower[match[0]]}'?)"
    # a short abbreviation: IB -> infiniband (same first letter, the rest in order)
    if 2 <= len(key) <= 4 and key.isalpha():
        for low, choice in lower.items():
            if low[0] == key[0] and _subsequence(key[1:], low[1:]):
                return f" (did you mean '{choice}'?)"
    return ""


def _subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(ch in it for ch in short)
