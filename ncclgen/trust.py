"""Whether another local user could have written a file or folder ncclgen reads without being told to.

ncclgen reads some files implicitly: ./clusters, ./workloads and ./ncclgen.yaml of the current folder.
A descriptor or workload decides what runs in the job, so on a shared host (a login node, /tmp) a file
planted there by another user would run their code under your account. An implicit path is read only
when it, and every folder above it, could have been written by nobody but you or root: owned by you or
root, not writable by group or others, and no folder above it writable by others unless sticky (the
rules ssh's StrictModes and the old jinja cache applied). Naming a path or folder explicitly (--cluster
./x.yaml, $NCCLGEN_CLUSTERS) is the opt-in: ncclgen reads what you name.
"""

from __future__ import annotations

import functools
import os
import stat
import sys


def why_untrusted(path: str) -> str | None:
    """Why another user could have written ``path`` (or a folder above it), or None when nobody can."""
    me = os.getuid()
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return None  # absent: nothing to read
    if st.st_uid not in (0, me):
        return f"{path} is owned by uid {st.st_uid}, not by you or root"
    if stat.S_IMODE(st.st_mode) & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    parent = os.path.dirname(real)
    while True:
        pst = os.stat(parent)
        if pst.st_uid not in (0, me):
            return f"{parent} (above {path}) is owned by uid {pst.st_uid}, who can replace what it holds"
        if pst.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not pst.st_mode & stat.S_ISVTX:
            return f"{parent} (above {path}) is writable by group or others and not sticky"
        up = os.path.dirname(parent)
        if up == parent:
            return None
        parent = up


def implicit(path: str) -> bool:
    """True when ``path`` may be read implicitly; otherwise says once on stderr why it is skipped."""
    why = why_untrusted(path)
    if why is None:
        return True
    _warn(why, path)
    return False


@functools.cache
def _warn(why: str, path: str) -> None:
    print(
        f"ncclgen: warning: not reading {path}: {why}; another user could have planted it. Fix its "
        "permissions, or name it explicitly (a path, or $NCCLGEN_CLUSTERS / $NCCLGEN_WORKLOADS)",
        file=sys.stderr,
    )
