"""-o FILE: atomic for regular files, direct for devices and pipes, never a partial file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from ncclgen.output import emit


def test_regular_file_is_replaced_atomically(tmp_path):
    target = tmp_path / "job.sh"
    target.write_text("old")
    emit("new\n", str(target), mode=0o755)
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o755
    assert [p.name for p in tmp_path.iterdir()] == ["job.sh"]  # no temp file left behind


def test_devices_are_written_not_replaced():
    emit("discarded\n", os.devnull)
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_fifo_receives_the_text(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    emit("through the pipe\n", str(fifo))
    assert reader.communicate(timeout=10)[0] == "through the pipe\n"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_failed_render_leaves_no_file(tmp_path):
    out = tmp_path / "job.sh"
    proc = subprocess.run(
        [sys.executable, "-m", "ncclgen", "slurm", "--cluster", "nope", "-o", str(out)], capture_output=True, text=True
    )
    assert proc.returncode == 2 and not out.exists() and list(tmp_path.iterdir()) == []
