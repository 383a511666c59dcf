"""Odd files where ncclgen reads or writes: FIFOs, directories named *.yaml, concurrent -o writers.

A FIFO in a sysfs tree (a captured tree, or a hostile NCCLGEN_*/--sysfs-root) used to block `doctor`
forever in open(); every read is now bounded and a non-regular file counts as unreadable.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading

import sysfs_fixtures as sf
from fake_nvml import FakeNvml

from ncclgen.load import descriptor
from ncclgen.node import doctor
from ncclgen.node.sysfs import Sysfs


def _fifo(path) -> None:
    path.unlink()
    os.mkfifo(path)


def _in_thread(fn, timeout: float):
    """fn() in a daemon thread; (finished, result). A blocked open() cannot be interrupted otherwise."""
    box: list = []
    t = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    t.start()
    t.join(timeout)
    return (not t.is_alive(), box[0] if box else None)


def test_sysfs_read_refuses_a_fifo_and_caps_the_size(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big").write_bytes(b"x" * (3 << 20))
    fs = Sysfs(str(tmp_path))
    done, got = _in_thread(lambda: fs.read("/fifo"), 5)
    assert done and got is None
    assert len(fs.read("/big") or "") == 1 << 20


def test_doctor_finishes_when_sysfs_files_are_fifos(tmp_path):
    lay = sf.dgx_h100(tmp_path)
    _fifo(tmp_path / "sys/class/infiniband/mlx5_0/ports/1/state")
    _fifo(tmp_path / "sys/devices/system/node/node1/cpulist")
    _fifo(tmp_path / "proc/net/route")
    desc = descriptor.load_cluster("h100-ib")
    done, checks = _in_thread(
        lambda: doctor.run(
            desc,
            sysfs_root=str(lay.root),
            backend=FakeNvml.from_layout(lay),
            memlock=resource.RLIM_INFINITY,
            environ={},
            shm_path=str(tmp_path),
        ),
        10,
    )
    assert done, "doctor blocked on a FIFO"
    r = {c.check: (c.status, c.detail) for c in checks}
    assert r["hca.mlx5_0:1"][0] == "fail"  # its state could not be read: not a pass
    assert r["numa1"][0] == "fail"
    assert r["hca.mlx5_3:1"][0] == "pass"


def test_six_concurrent_o_writers_leave_exactly_one_complete_file(tmp_path):
    """-o's stated guarantee: one writer's complete file, never a mix of several, no temp file left."""
    target = tmp_path / "out.sh"
    payloads = [(chr(ord("a") + i) * (4 << 20)) + f"\nwriter {i}\n" for i in range(6)]
    go = tmp_path / "go"
    code = (
        "import os, sys, time\n"
        "from ncclgen.output import emit\n"
        "text = sys.stdin.read()\n"
        "while not os.path.exists(sys.argv[2]): time.sleep(0.001)\n"
        "emit(text, sys.argv[1])\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(target), str(go)], stdin=subprocess.PIPE) for _ in payloads
    ]
    for p, text in zip(procs, payloads):
        p.stdin.write(text.encode())
        p.stdin.close()
    go.touch()
    assert [p.wait(60) for p in procs] == [0] * 6
    assert target.read_text() in payloads
    assert sorted(p.name for p in tmp_path.iterdir()) == ["go", "out.sh"]


def test_clusters_list_names_a_fifo_and_a_directory_named_yaml(tmp_path):
    """Neither is skipped silently: each has its row saying what it is (and listing never blocks on the FIFO)."""
    (tmp_path / "d.yaml").mkdir()
    os.mkfifo(tmp_path / "f.yaml")
    env = dict(os.environ, NCCLGEN_CLUSTERS=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-m", "ncclgen", "clusters", "list"], env=env, capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line for line in out.stdout.splitlines()}
    assert f"{tmp_path}/d.yaml (is a directory, expected a YAML file)" in rows["d"]
    assert f"{tmp_path}/f.yaml (is a FIFO, expected a YAML file (a regular file))" in rows["f"]
