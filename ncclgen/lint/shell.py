"""The shell reader: env files, dotenv files and sbatch/bash scripts, read without running them."""

from __future__ import annotations

import re

from ..errors import UserError

_PLAIN = re.compile(r"[^ \t\n;&|<>()'\"\\$`]+")
_BLANKS = re.compile(r"[ \t\r]+")
_DQ_PLAIN = re.compile(r'[^"\\$`]+')


class Scanner:
    """One left-to-right pass over a shell text: logical lines as words, here-document bodies skipped.

    Linear in the input whatever it holds: an unclosed quote is found once at the end of the text
    (re-splitting each growing line made 16,000 lines after an unclosed `"` take 14-25 s). `<<` starts a
    here-document only as an operator, never inside quotes, a comment, `$((...))`, `((...))` or a
    here-string (`<<<`). What cannot be read (an unclosed quote, `$(`, or here-document) is an error
    with its line, never a silent skip.
    """

    STOP = " \t\n;&|<>()"

    def __init__(self, text: str, name: str):
        self.s, self.n, self.name = text, len(text), name
        self.newlines = [m.start() for m in re.finditer("\n", text)]

    def line_at(self, pos: int) -> int:
        import bisect

        return bisect.bisect_left(self.newlines, pos) + 1

    def fail(self, what: str, pos: int):
        return UserError(what, file=self.name, line=self.line_at(pos))

    def lines(self):
        """(first line number, [(word, dynamic), ...]) for each logical line."""
        s, n, i = self.s, self.n, 0
        words: list[tuple[str, bool]] = []
        heredocs: list[tuple[str, bool, int]] = []
        start = 0
        while i < n:
            c = s[i]
            if c in " \t\r":
                i = _BLANKS.match(s, i).end()  # type: ignore[union-attr]  # c is a blank
            elif c == "\\" and s.startswith("\n", i + 1):
                i += 2  # line continuation
            elif c == "\n":
                yield self.line_at(start), words
                words, i = [], i + 1
                for delim, strip, at in heredocs:
                    i = self._skip_heredoc(i, delim, strip, at)
                heredocs, start = [], i
            elif c == "#":
                j = s.find("\n", i)
                i = n if j < 0 else j
            elif s.startswith("((", i) and not words:
                j = self._balanced(i + 2, "(", ")", 2, i)  # arithmetic command: `<<` is a shift here
                words.append((s[i:j], True))
                i = j
            elif s.startswith("<<<", i):
                words.append(("<<<", False))
                i += 3
            elif s.startswith("<<", i):
                strip = s.startswith("<<-", i)
                i += 3 if strip else 2
                while i < n and s[i] in " \t":
                    i += 1
                at = i
                delim, _, i = self._word(i)
                if not delim:
                    raise self.fail("here-document operator << without a delimiter word", at)
                heredocs.append((delim, strip, at))
                words.append(("<<", False))
            elif c in ";&|<>()":
                words.append((c, False))
                i += 1
            else:
                word, dynamic, i = self._word(i)
                words.append((word, dynamic))
        if words:
            yield self.line_at(start), words
        if heredocs:
            delim, _, at = heredocs[0]
            raise self.fail(f"here-document <<{delim} is not closed: no line '{delim}' follows", at)

    def _skip_heredoc(self, i: int, delim: str, strip: bool, at: int) -> int:
        s, n = self.s, self.n
        while i < n:
            j = s.find("\n", i)
            end = n if j < 0 else j
            line = s[i:end]
            if (line.lstrip("\t") if strip else line) == delim:
                return end + 1
            i = end + 1
        raise self.fail(f"here-document <<{delim} is not closed: no line '{delim}' follows", at)

    def _word(self, i: int) -> tuple[str, bool, int]:
        """One word from ``i``: (text with quotes removed, dynamic, end)."""
        s, n = self.s, self.n
        buf: list[str] = []
        dynamic = False
        plain = _PLAIN.match
        while i < n and s[i] not in self.STOP:
            m = plain(s, i)
            if m:  # a run of ordinary characters, in one step
                buf.append(m.group())
                i = m.end()
                continue
            c = s[i]
            if c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    raise self.fail("unclosed quote", i)
                buf.append(s[i + 1 : j])
                i = j + 1
            elif c == '"':
                i, dq_dynamic = self._double_quoted(i, buf)
                dynamic = dynamic or dq_dynamic
            elif c == "\\":
                if not s.startswith("\n", i + 1) and i + 1 < n:  # a backslash-newline continues the word
                    buf.append(s[i + 1])
                i += 2
            else:
                i, was = self._expansion(i, buf)
                dynamic = dynamic or was
        return "".join(buf), dynamic, i

    def _double_quoted(self, i: int, buf: list[str]) -> tuple[int, bool]:
        """Append the text of the double-quoted run at ``i`` to ``buf``: (its end, whether it expands)."""
        s, n, start, dynamic = self.s, self.n, i, False
        i += 1
        while True:
            if i >= n:
                raise self.fail("unclosed quote", start)
            m = _DQ_PLAIN.match(s, i)
            if m:
                buf.append(m.group())
                i = m.end()
            elif s[i] == '"':
                return i + 1, dynamic
            elif s[i] == "\\" and i + 1 < n and s[i + 1] in '$`"\\\n':
                buf.append(s[i + 1])
                i += 2
            else:
                i, was = self._expansion(i, buf)
                dynamic = dynamic or was

    def _expansion(self, i: int, buf: list[str]) -> tuple[int, bool]:
        """The one place `$(...)`, `${...}`, backquotes and `$NAME` are read, quoted or not: the character
        or expansion at ``i`` appended to ``buf`` as written, with (its end, whether it expands)."""
        s = self.s
        if s.startswith("$(", i) or s.startswith("${", i):
            j = self._substitution(i)
        elif s[i] == "`":
            j = self._backquote(i)
        else:
            buf.append(s[i])
            return i + 1, s[i] == "$"
        buf.append(s[i:j])
        return j, True

    def _substitution(self, i: int) -> int:
        """End of `$(...)`, `$((...))` or `${...}` starting at ``i`` (the `$`)."""
        if self.s.startswith("{", i + 1):
            return self._balanced(i + 2, "{", "}", 1, i)
        return self._balanced(i + 2, "(", ")", 1, i)

    def _backquote(self, i: int) -> int:
        s, j = self.s, i + 1
        while j < self.n:
            if s[j] == "\\":
                j += 2
            elif s[j] == "`":
                return j + 1
            else:
                j += 1
        raise self.fail("unclosed `", i)

    def _balanced(self, j: int, open_: str, close: str, depth: int, start: int) -> int:
        """End of a bracketed run from ``j`` with ``depth`` brackets open; quotes inside are skipped."""
        s, n = self.s, self.n
        while j < n:
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c == "'":
                k = s.find("'", j + 1)
                if k < 0:
                    break
                j = k + 1
                continue
            if c == '"':
                k = j + 1
                while k < n and s[k] != '"':
                    k += 2 if s[k] == "\\" else 1
                if k >= n:
                    break
                j = k + 1
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        raise self.fail(f"unclosed {s[start : start + 2]}", start)
