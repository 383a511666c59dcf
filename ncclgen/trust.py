"""Whose files ncclgen reads without being told to: ownership, as git's safe.directory decides it.

ncclgen reads some files implicitly: ./ncclgen.yaml, and ./clusters/*.yaml and ./workloads/*.yaml when
a name is looked up. A descriptor or workload decides what runs in the job, so a file another local user
planted there would run their code under your account. git has the same problem with a repository's
hooks and config, and settles it by ownership (git-config(1), safe.directory): a repository owned by
someone else is refused unless the user's own config allows it. ncclgen does the same:

- An implicit file is read when it, the folder that holds it and the project folder (the current
  folder) are owned by you or by root, whatever their group bits: a team folder made under umask 002
  (664 files, 775 folders) is yours. Nothing on the way up may be writable by others unless sticky
  (/tmp), since then anyone could replace it.
- Anything else is refused with one error line (exit 2) saying what, why and how to allow it, never
  skipped: a skipped file would silently change the job into one built from other defaults.
- Allowed anyway: a path you name (--cluster ./x.yaml, $NCCLGEN_CLUSTERS, $NCCLGEN_WORKLOADS), and a
  project folder listed in your own config, ``safe_directories:`` in
  ``$XDG_CONFIG_HOME/ncclgen/config.yaml`` (default ``~/.config/ncclgen/config.yaml``), or in
  ``$NCCLGEN_SAFE_DIRECTORIES`` (colon-separated). A listed folder allows itself and what is under it;
  ``"*"`` allows every folder (git's ``safe.directory=*``).
"""

from __future__ import annotations

import os
import stat

from . import datapaths
from .errors import UserError
from .load.schema import field
from .record import dataclass

ENV = "NCCLGEN_SAFE_DIRECTORIES"


@dataclass(frozen=True, kw_only=True)
class UserConfig:
    """~/.config/ncclgen/config.yaml: settings that belong to the person, never to a project folder."""

    safe_directories: list[str] = field(
        factory=list, doc="project folders whose files ncclgen reads although another user owns them; '*': all"
    )


def config_path() -> str:
    """$XDG_CONFIG_HOME/ncclgen/config.yaml, ~/.config/ncclgen/config.yaml when that is unset."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "ncclgen", "config.yaml")


def user_config() -> UserConfig:
    """The user's config; absent means empty. A bad file is an error at its line:column."""
    from .load.schema import load_dataclass
    from .load.yamlio import load_file

    path = config_path()
    if not os.path.exists(path):
        return UserConfig()
    doc = load_file(path)
    cfg = load_dataclass(doc, {} if doc.data is None else doc.data, UserConfig)
    for i, entry in enumerate(cfg.safe_directories):
        if entry != "*" and not os.path.isabs(entry):
            raise doc.error(("safe_directories", i), f"{entry!r}: expected an absolute folder or '*'")
    return cfg


def safe_directories() -> list[str]:
    """Folders the user allowed: $NCCLGEN_SAFE_DIRECTORIES, then the config file's."""
    named = [d for d in os.environ.get(ENV, "").split(":") if d]
    return named + list(user_config().safe_directories)


def allowed(folder: str) -> bool:
    """True when the user allowed ``folder`` (itself or a folder above it) in the config or $ENV."""
    real = os.path.realpath(folder)
    for entry in safe_directories():
        if entry == "*":
            return True
        top = os.path.realpath(entry)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


def _owner(st: os.stat_result) -> str:
    try:
        import pwd

        return f"uid {st.st_uid} ({pwd.getpwuid(st.st_uid).pw_name})"
    except (ImportError, KeyError):
        return f"uid {st.st_uid}"


def why_untrusted(path: str, project: str | None = None) -> str | None:
    """Why another user could have written ``path``, or None when only you or root could.

    Ownership counts for ``path`` and each folder up to ``project`` (default: the current folder);
    writable-by-others without the sticky bit counts for every folder up to /.
    """
    me = os.getuid()
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return None  # absent: nothing to read
    top = os.path.realpath(project or os.getcwd())
    if st.st_uid not in (0, me):
        return f"it is owned by {_owner(st)}, not by you or root"
    if stat.S_IMODE(st.st_mode) & stat.S_IWOTH:
        return f"anyone can write it (mode {stat.S_IMODE(st.st_mode):o})"
    folder = os.path.dirname(real)
    while True:
        fst = os.stat(folder)
        inside = folder == top or folder.startswith(top.rstrip(os.sep) + os.sep)
        if inside and fst.st_uid not in (0, me):
            return f"the folder {folder} is owned by {_owner(fst)}, not by you or root"
        if fst.st_mode & stat.S_IWOTH and not fst.st_mode & stat.S_ISVTX:
            return f"anyone can replace what the folder {folder} holds (mode {stat.S_IMODE(fst.st_mode):o}, not sticky)"
        up = os.path.dirname(folder)
        if up == folder:
            return None
        folder = up


def require(path: str, named_by: str) -> None:
    """Refuse (UserError, exit 2) to read ``path`` implicitly when another user could have written it.

    ``named_by`` says how to name it explicitly instead ("--cluster PATH or $NCCLGEN_CLUSTERS").
    """
    why = why_untrusted(path)
    if why is None or allowed(os.getcwd()):
        return
    here = os.path.realpath(os.getcwd())
    raise UserError(
        f"not reading it: {why}, so another user could have planted it; if you trust this project folder, "
        f"add it to safe_directories in {config_path()} (or ${ENV}={here}), or name the file ({named_by})",
        file=path,
    )


def found(path: str, named_by: str) -> str:
    """``path`` from a name lookup, once allowed when it was found in ./clusters or ./workloads."""
    if datapaths.implicit(path):
        require(path, named_by)
    return path
