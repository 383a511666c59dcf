"""Writing results: to stdout, or atomically to a file so an error never leaves a partial file."""

from __future__ import annotations

import os
import sys
import tempfile

from .errors import UserError

OUTPUT_MODE = 0o644  # every file ncclgen writes (scripts, manifests, JSON, plots): readable by the job's users


def emit(text: str, path: str | None, mode: int = OUTPUT_MODE) -> None:
    """Write ``text`` to ``path`` (atomically: temp file + rename) or to stdout when path is None/-.

    The guarantee (what -o's help states): a reader, and concurrent writers of the same path, only ever
    see one complete file - each writer renames its own finished temp file over ``path`` (rename(2) is
    atomic within a file system), so the last rename wins whole and contents never mix.
    Every failure is one UserError naming the path (a full disk, a read-only or missing folder, a name
    too long, /proc): never a traceback, and never a partial or temporary file left behind.
    """
    if path in (None, "-"):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    if path == "":
        raise UserError("-o: empty file name")
    data = text.encode("utf-8")  # before touching the file system: an error here leaves nothing
    try:
        _write(data, path, mode)
    except OSError as exc:
        raise UserError(f"cannot write: {exc.strerror or exc}", file=path) from None
    except ValueError as exc:  # a NUL byte in the name
        raise UserError(f"cannot write: {exc}", file=path) from None


def _write(data: bytes, path: str, mode: int) -> None:
    if os.path.exists(path) and not os.path.isfile(path):
        # A device or FIFO (-o /dev/null, -o /dev/stdout, a pipe): renaming over it would replace it.
        if os.path.isdir(path):
            raise UserError("is a directory, expected a file to write", file=path)
        with open(path, "wb") as fh:
            fh.write(data)
        return
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UserError("output folder does not exist", file=path)
    fd, tmp = tempfile.mkstemp(prefix=".ncclgen-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
