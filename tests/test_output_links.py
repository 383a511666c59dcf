"""One writer for every output path (ncclgen/output.py, issue 33): never through a symbolic link, never
blocking on a FIFO, and `ncclgen init DIR` never follows a link below DIR out of the project."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import pytest

from ncclgen.cli import main
from ncclgen.errors import UserError
from ncclgen.output import emit


def test_a_link_to_a_fifo_is_refused_and_nothing_is_written_into_it(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "job.sh").symlink_to(fifo)
    got: list = []

    def read() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()  # a reader waits: had ncclgen written through the link, it would get the script
    proc = subprocess.run(
        [sys.executable, "-m", "ncclgen", "slurm", "-o", str(tmp_path / "job.sh")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "is a symbolic link" in proc.stderr and proc.stdout == ""
    with open(fifo, "wb"):  # release the reader: it must see nothing
        pass
    reader.join(10)
    assert got == [b""]
    assert (tmp_path / "job.sh").is_symlink()


def test_a_link_to_a_file_is_not_followed(tmp_path):
    victim = tmp_path / "bashrc"
    victim.write_text("mine\n")
    (tmp_path / "out.env").symlink_to(victim)
    with pytest.raises(UserError, match="is a symbolic link"):
        emit("x\n", str(tmp_path / "out.env"))
    assert victim.read_text() == "mine\n"


def test_a_fifo_without_reader_is_refused_in_process(tmp_path):
    """In a thread, so a regression (opening the FIFO) fails the test instead of hanging it."""
    os.mkfifo(tmp_path / "r.json")
    got: list = []

    def write() -> None:
        try:
            emit("{}\n", str(tmp_path / "r.json"))
            got.append("written")
        except UserError as exc:
            got.append(str(exc))

    worker = threading.Thread(target=write, daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():  # release the blocked writer before failing
        with open(tmp_path / "r.json", "rb") as fh:
            fh.read()
    assert got and "is a FIFO" in got[0], got


def test_emit_inside_refuses_a_link_below_the_root(tmp_path):
    from ncclgen.output import emit_inside

    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "proj"
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "workflows").symlink_to(outside)
    with pytest.raises(UserError, match="symbolic link"):
        emit_inside(str(root), ".github/workflows/ncclgen.yml", "x")
    assert list(outside.iterdir()) == []


def test_emit_inside_writes_and_creates_folders(tmp_path):
    from ncclgen.output import emit_inside

    path = emit_inside(str(tmp_path), "a/b/c.txt", "hi\n", 0o755)
    with open(path) as fh:
        assert fh.read() == "hi\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755
    assert sorted(os.listdir(tmp_path / "a" / "b")) == ["c.txt"]


@pytest.mark.parametrize("link", ["ci", "clusters", "schema"])
def test_init_never_follows_a_linked_folder_out_of_the_project(capsys, tmp_path, link):
    outside = tmp_path / "outside"
    outside.mkdir()
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / link).symlink_to(outside)
    rc = main(["init", str(proj), "--name", "t"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{proj / link}: is a symbolic link" in err, err
    assert list(outside.iterdir()) == []
    assert sorted(os.listdir(proj)) == [link]  # checked before the first write: nothing written


def test_init_with_force_does_not_write_through_a_linked_file(capsys, tmp_path):
    proj = tmp_path / "proj"
    assert main(["init", str(proj), "--name", "t"]) == 0
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (proj / "ci" / "check.sh").unlink()
    (proj / "ci" / "check.sh").symlink_to(victim)
    capsys.readouterr()
    rc = main(["init", str(proj), "--name", "t", "--force"])
    assert rc == 2 and "is a symbolic link" in capsys.readouterr().err
    assert victim.read_text() == "keep\n"
