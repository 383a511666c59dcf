"""Writing results: to stdout, or to a regular file, atomically, never through a link. The one writer
for every path ncclgen writes (-o of every command, --json, `ncclgen init`).

The rules, and why:
- Regular files only. An existing FIFO, device or socket at the path is refused at once: opening a
  FIFO with no reader blocks forever, and writing into a device is not writing a file. (`-o -` writes
  to stdout; redirect that into a pipe or device.)
- Never through a symbolic link: a link at the path is refused, not followed (a link to a FIFO, to
  ~/.bashrc or out of the project), and `init` refuses a link anywhere below the folder it was given.
- Bounded: the target itself is never opened; the folder is opened O_DIRECTORY|O_NOFOLLOW, the temp
  file O_CREAT|O_EXCL|O_NOFOLLOW|O_NONBLOCK inside it, so no step can block or follow a link.
- Atomic: each writer renames its own finished temp file over the path (renameat(2) is atomic within
  a file system and replaces a name without following it), so a reader, and concurrent writers, only
  ever see one complete file, never a mix, and an error leaves no partial or temporary file behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys

from .errors import UserError

OUTPUT_MODE = 0o644  # every file ncclgen writes (scripts, manifests, JSON, plots): readable by the job's users
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def emit(text: str, path: str | None, mode: int = OUTPUT_MODE) -> None:
    """Write ``text`` to the regular file ``path`` (see the module's rules) or to stdout when path is
    None or '-'. Every failure is one UserError naming the path, never a traceback."""
    if path in (None, "-"):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    if path == "":
        raise UserError("-o: empty file name")
    data = text.encode("utf-8")  # before touching the file system: an error here leaves nothing
    folder, name = os.path.split(path)
    if name in ("", ".", ".."):
        raise UserError("is a directory, expected a file to write", file=path)
    fd = _open_folder(folder or ".", path)
    try:
        write_at(fd, name, data, mode, path)
    finally:
        os.close(fd)


def emit_inside(root: str, rel: str, text: str, mode: int = OUTPUT_MODE) -> str:
    """Write ``text`` to ``root``/``rel``, creating the folders of ``rel``, none of which (nor the file)
    may be a link: `ncclgen init DIR` never follows DIR/ci, a link planted or left there, out of DIR.
    Returns the path written."""
    path = os.path.join(root, rel)
    *folders, name = rel.split("/")
    fd = _open_folder(root, path)
    try:
        for i, part in enumerate(folders):
            sub = _subfolder(fd, part, os.path.join(root, *folders[: i + 1]))
            os.close(fd)
            fd = sub
        write_at(fd, name, text.encode("utf-8"), mode, path)
    finally:
        os.close(fd)
    return path


def check_inside(root: str, rel: str) -> None:
    """The check emit_inside makes, before anything is written: no folder of ``rel`` below ``root`` and
    not the file itself is a link, the folders are folders, the file is absent or a regular file."""
    *folders, _name = rel.split("/")
    for i in range(len(folders)):
        shown = os.path.join(root, *folders[: i + 1])
        try:
            _folder_mode(os.lstat(shown).st_mode, shown)
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise _error(exc, shown) from None
    check_target(os.path.join(root, rel))


def check_target(path: str) -> None:
    """Nothing when ``path`` may be written (absent, or a regular file that is not a link), else the
    UserError emit would raise: for commands that check every path before writing the first."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot write: {getattr(exc, 'strerror', None) or exc}", file=path) from None
    _writable(st.st_mode, path)


def _writable(mode: int, path: str) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISLNK(mode):
        try:
            to = f" (to {os.readlink(path)!r})"
        except OSError:
            to = ""
        raise UserError(f"is a symbolic link{to}; ncclgen never writes through a link: name the file itself", file=path)
    if stat.S_ISDIR(mode):
        raise UserError("is a directory, expected a file to write", file=path)
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    raise UserError(
        f"is {kind}; ncclgen writes regular files only (for a pipe or device, write to stdout with -o - "
        "and redirect it)",
        file=path,
    )


def _open_folder(folder: str, path: str) -> int:
    """The folder ``folder`` opened O_DIRECTORY|O_NOFOLLOW, or one UserError naming ``path``."""
    try:
        return os.open(folder, _DIR_FLAGS)
    except FileNotFoundError:
        raise UserError("output folder does not exist", file=path) from None
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError) and exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UserError("output folder is a symbolic link or not a folder", file=path) from None
        raise _error(exc, path) from None


def _subfolder(fd: int, name: str, shown: str) -> int:
    """Folder ``name`` inside the open folder ``fd`` (created if missing), opened without following a
    link. A link or a file there is one UserError."""
    try:
        try:
            os.mkdir(name, 0o775, dir_fd=fd)
            made = True
        except FileExistsError:
            _folder_mode(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode, shown)
            made = False
        sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
        if made:  # never writable by others, whatever the umask (ncclgen/trust.py reads only such folders)
            os.fchmod(sub, stat.S_IMODE(os.fstat(sub).st_mode) & ~stat.S_IWOTH)
        return sub
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UserError(
                "is a symbolic link or not a folder; ncclgen never writes through a link", file=shown
            ) from None
        raise _error(exc, shown) from None


def _folder_mode(mode: int, shown: str) -> None:
    if stat.S_ISLNK(mode):
        raise UserError(
            "is a symbolic link; ncclgen writes only inside the folder it was given, never through a link",
            file=shown,
        )
    if not stat.S_ISDIR(mode):
        raise UserError("exists and is not a folder", file=shown)


def write_at(fd: int, name: str, data: bytes, mode: int, shown: str) -> None:
    """``data`` as file ``name`` in the open folder ``fd``: checked, written to a temp file, renamed."""
    try:
        _writable(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode, shown)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        raise _error(exc, shown) from None
    tmp = ""
    try:
        for _ in range(100):
            tmp = f".ncclgen-{os.urandom(6).hex()}.tmp"  # as secrets.token_hex, without its import
            try:
                out = os.open(tmp, _TMP_FLAGS, 0o600, dir_fd=fd)
                break
            except FileExistsError:
                continue
        else:  # pragma: no cover - 100 clashes of 48 random bits
            raise UserError("cannot create a temporary file", file=shown)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(out, view) :]
            os.fchmod(out, mode)
        finally:
            os.close(out)
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        tmp = ""
    except OSError as exc:
        raise _error(exc, shown) from None
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)


def _error(exc: Exception, path: str) -> UserError:
    return UserError(f"cannot write: {getattr(exc, 'strerror', None) or exc}", file=path)
