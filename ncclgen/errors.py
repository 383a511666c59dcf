"""One exception for every kind of bad input, so the CLI can print one line and exit 2."""

from __future__ import annotations


class UserError(Exception):
    """Bad input from a file, a flag or the environment: never a bug in ncclgen.

    Rendered as ``file:line:col: key.path: message`` with whatever parts are known.
    """

    exit_code = 2

    def __init__(self, message: str, *, file: str | None = None, path: str | None = None,
                 line: int | None = None, col: int | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.path = path
        self.line = line
        self.col = col

    def located(self, file: str) -> "UserError":
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
        # One line, always: a newline inside a hostile value must not split the message.
        return (where + key + self.message).replace("\n", "\\n")


def did_you_mean(word: str, choices) -> str:
    """' (did you mean 'x'?)' when a close match exists, else ''."""
    import difflib

    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""
