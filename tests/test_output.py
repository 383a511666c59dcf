"""-o FILE: regular files only, written atomically; devices and pipes refused; never a partial file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from ncclgen.errors import UserError
from ncclgen.output import emit


def test_regular_file_is_replaced_atomically(tmp_path):
    target = tmp_path / "job.sh"
    target.write_text("old")
    emit("new\n", str(target), mode=0o755)
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o755
    assert [p.name for p in tmp_path.iterdir()] == ["job.sh"]  # no temp file left behind


def test_devices_are_refused_not_written():
    """Regular files only (issue 33): -o /dev/null is a device, and -o - writes to stdout for a redirect."""
    with pytest.raises(UserError, match="is a device; ncclgen writes regular files only"):
        emit("discarded\n", os.devnull)
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_fifo_without_reader_is_refused_at_once(tmp_path):
    """Opening a FIFO with no reader blocked forever (issue 33); now it is refused without opening it."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    proc = subprocess.run(
        [sys.executable, "-m", "ncclgen", "env", "-o", str(fifo)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "is a FIFO; ncclgen writes regular files only" in proc.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_failed_render_leaves_no_file(tmp_path):
    out = tmp_path / "job.sh"
    proc = subprocess.run(
        [sys.executable, "-m", "ncclgen", "slurm", "--cluster", "nope", "-o", str(out)], capture_output=True, text=True
    )
    assert proc.returncode == 2 and not out.exists() and list(tmp_path.iterdir()) == []
