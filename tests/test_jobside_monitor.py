"""The in-job monitor (ncclgen/jobside/monitor.py) run as the job runs it: `python3 -c "$PROGRAM"`,
with nothing from ncclgen importable. NVML is the fake tests/fake_pynvml (no GPU on this machine)."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ncclgen import jobside
from ncclgen.node import monitor as node_monitor

TESTS = Path(__file__).resolve().parent
SOURCE = jobside.source("monitor")
STDLIB = set(sys.stdlib_module_names)


def _run(args, env_extra=None, python_flags=(), **kw):
    env = {"PATH": os.environ["PATH"], "SLURMD_NODENAME": "node7", **(env_extra or {})}
    return subprocess.Popen(
        [sys.executable, *python_flags, "-c", SOURCE, *args],
        env=env,
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_imports_only_the_standard_library_and_pynvml():
    tree = ast.parse(SOURCE)
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert names - STDLIB == {"pynvml"}


def test_samples_fake_nvml_until_sigterm_into_records_ncclgen_monitor_reads(tmp_path):
    out = tmp_path / "mon-{node}.jsonl"
    p = _run(
        [str(out), "0.2"], {"PYTHONPATH": f"{TESTS / 'fake_pynvml'}:{TESTS}:{TESTS.parent}", "FAKE_NVML_GPUS": "2"}
    )
    path = tmp_path / "mon-node7.jsonl"
    deadline = time.monotonic() + 30
    while (not path.exists() or path.read_text().count("\n") < 6) and time.monotonic() < deadline:
        assert p.poll() is None, p.communicate()
        time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    _stdout, stderr = p.communicate(timeout=10)
    assert p.returncode == 0, stderr
    assert f"2 GPU(s) every 0.2 s -> {path}" in stderr
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert {(r["hostname"], r["gpu"]) for r in records} == {("node7", 0), ("node7", 1)}
    assert {r["util_gpu_pct"] for r in records} == {40, 90}
    rows = node_monitor.summarize([str(path)])
    assert [(r["hostname"], r["gpu"]) for r in rows] == [("node7", 0), ("node7", 1)]


def test_without_nvml_one_clear_line_and_no_file(tmp_path):
    # -S: no site-packages, so no pynvml; and no NVIDIA driver here, so no libnvidia-ml.so.1 either.
    p = _run([str(tmp_path / "m.jsonl"), "1"], python_flags=("-S",))
    _stdout, stderr = p.communicate(timeout=30)
    assert p.returncode == 1
    assert stderr.count("\n") == 1, stderr
    assert (
        stderr.startswith("ncclgen-monitor: node7: cannot sample GPUs, no monitor file written: no pynvml module")
        and "libnvidia-ml.so.1" in stderr
    ), stderr
    assert list(tmp_path.iterdir()) == []


def test_nvml_that_fails_to_start_is_one_line(tmp_path):
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "pynvml.py").write_text(
        "from fake_nvml import FakeNvml\n_f = FakeNvml([], init_error=True)\n"
        "NVMLError = _f.NVMLError\ndef __getattr__(n):\n    return getattr(_f, n)\n"
    )
    p = _run([str(tmp_path / "m.jsonl"), "1"], {"PYTHONPATH": f"{shim}:{TESTS}:{TESTS.parent}"})
    _stdout, stderr = p.communicate(timeout=30)
    assert (p.returncode, stderr) == (
        1,
        "ncclgen-monitor: node7: cannot sample GPUs, no monitor file written: "
        "NVML did not start (NVML Shared Library Not Found)\n",
    )


def test_relative_output_path_refused():
    p = _run(["m.jsonl", "1"], python_flags=("-S",))
    _stdout, stderr = p.communicate(timeout=30)
    assert p.returncode == 2 and "is not absolute" in stderr
