"""`ncclgen monitor`: NVML sampling to JSONL with a fake NVML, clean stop on signals, and `summary`.

Summary numbers are recomputed here with the statistics module (quantiles, method='inclusive', is
the same linear interpolation numpy uses by default), not with ncclgen's functions.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time

import pytest
from fake_nvml import FakeGpu, FakeNvml

from ncclgen.cli import main
from ncclgen.node import monitor

TESTS = os.path.dirname(os.path.abspath(__file__))
KEYS = [
    "timestamp",
    "hostname",
    "gpu",
    "util_gpu_pct",
    "util_mem_pct",
    "mem_used_bytes",
    "mem_total_bytes",
    "power_w",
    "pcie_tx_kBps",
    "pcie_rx_kBps",
    "nvlink_tx_KiBps",
    "nvlink_rx_KiBps",
]


def two_gpus() -> FakeNvml:
    return FakeNvml(
        [
            FakeGpu(
                name="NVIDIA H100 80GB HBM3",
                bus_id="0000:1b:00.0",
                nvlinks=18,
                util=[90, 40, 100],
                pcie_kBps=(1000, 2000),
            ),
            FakeGpu(name="NVIDIA H100 80GB HBM3", bus_id="0000:43:00.0", util=None, power_mw=None),
        ]
    )


def test_samples_every_gpu_with_nulls_for_unsupported_metrics(tmp_path):
    out = tmp_path / "m.jsonl"
    with open(out, "w") as fh:
        taken = monitor.run(fh, 0.05, 0.25, backend=two_gpus(), hostname="node01")
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert taken == 5 and len(recs) == 10
    assert [r["gpu"] for r in recs] == [0, 1] * 5
    assert all(list(r) == KEYS and r["hostname"] == "node01" and r["timestamp"].endswith("Z") for r in recs)
    g0, g1 = recs[0::2], recs[1::2]
    assert [r["util_gpu_pct"] for r in g0] == [90, 40, 100, 90, 40]
    assert [r["util_mem_pct"] for r in g0] == [45, 20, 50, 45, 20]
    assert (g0[0]["power_w"], g0[0]["pcie_tx_kBps"], g0[0]["pcie_rx_kBps"]) == (700.0, 1000, 2000)
    assert g0[0]["mem_used_bytes"] == 10 << 30 and g0[0]["mem_total_bytes"] == 80 << 30
    # no utilisation, power, PCIe counters or NVLink on GPU 1: recorded as null, not skipped
    assert all(
        r["util_gpu_pct"] is None
        and r["power_w"] is None
        and r["pcie_tx_kBps"] is None
        and r["nvlink_tx_KiBps"] is None
        for r in g1
    )
    # NVLink: a rate needs two readings; 18 links x 1 MiB per sample over about 0.05 s
    assert g0[0]["nvlink_tx_KiBps"] is None
    rates = [r["nvlink_rx_KiBps"] for r in g0[1:]]
    assert all(18 * 1024 / 0.5 < x < 18 * 1024 / 0.02 for x in rates), rates


def test_stop_event_ends_sampling_between_samples(tmp_path):
    import threading

    stop = threading.Event()
    stop.set()
    with open(tmp_path / "m.jsonl", "w") as fh:
        assert monitor.run(fh, 10.0, None, backend=two_gpus(), hostname="h", stop=stop) == 1


SCRIPT = f"""
import sys
sys.path.insert(0, {TESTS!r})
from fake_nvml import FakeGpu, FakeNvml
sys.modules["pynvml"] = FakeNvml([FakeGpu(name="NVIDIA H100", bus_id="0000:1b:00.0", util=[50]),
                                  FakeGpu(name="NVIDIA H100", bus_id="0000:43:00.0", util=[95])])
from ncclgen.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly_with_the_file_flushed(tmp_path, sig):
    """As a background step of a Slurm job: killed at job end, exit 0, every line complete."""
    out = tmp_path / "m.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, "monitor", "--interval", "0.1", "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not out.exists() or out.read_text().count("\n") < 4):
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0 and err == ""
    lines = out.read_text().splitlines()
    assert len(lines) >= 4 and len(lines) % 2 == 0  # whole samples only
    assert [json.loads(line)["gpu"] for line in lines] == [0, 1] * (len(lines) // 2)


def test_no_gpu_is_one_line_exit_1(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([], init_error=True))
    assert main(["monitor", "--duration", "0"]) == 1
    assert capsys.readouterr().err == "ncclgen: error: monitor: no NVIDIA GPU (NVML: NVML Shared Library Not Found)\n"
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([]))
    assert main(["monitor", "--duration", "0"]) == 1
    assert capsys.readouterr().err == "ncclgen: error: monitor: no NVIDIA GPU (NVML reports none)\n"


def test_cli_writes_to_stdout_and_refuses_a_missing_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pynvml", two_gpus())
    assert main(["monitor", "--interval", "0.05", "--duration", "0.1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and json.loads(lines[0])["gpu"] == 0
    assert main(["monitor", "-o", str(tmp_path / "no/such/m.jsonl"), "--duration", "0"]) == 2
    assert "cannot write: No such file or directory" in capsys.readouterr().err
    assert main(["monitor", "--interval", "0"]) == 2


# -- summary -----------------------------------------------------------------------------------------


def write_jsonl(path, host, series: dict[int, list]):
    with open(path, "w") as fh:
        for i in range(max(len(v) for v in series.values())):
            for gpu, values in series.items():
                if i < len(values):
                    fh.write(
                        json.dumps(
                            {
                                "timestamp": f"2025-01-01T00:00:{i:02d}.000Z",
                                "hostname": host,
                                "gpu": gpu,
                                "util_gpu_pct": values[i],
                            }
                        )
                        + "\n"
                    )


def expected(values):
    known = [v for v in values if v is not None]
    q = statistics.quantiles(known, n=20, method="inclusive")
    return {
        "samples": len(values),
        "with_util": len(known),
        "mean": statistics.fmean(known),
        "p5": q[0],
        "p95": q[18],
        "above_target": sum(v > 85 for v in known) / len(known),
    }


SERIES_A = {0: [100, 97, 85, 86, 12, 0, 99, 93, 88, 91, 100, 84], 1: [50, None, 60, 70, 80, 90, 95]}
SERIES_B = {0: [85, 85, 85, 86]}


def test_summary_arithmetic(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", "node01", SERIES_A)
    write_jsonl(tmp_path / "b.jsonl", "node02", SERIES_B)
    got = monitor.summarize([str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    assert [(r["hostname"], r["gpu"]) for r in got] == [("node01", 0), ("node01", 1), ("node02", 0)]
    for r, values in zip(got, [SERIES_A[0], SERIES_A[1], SERIES_B[0]]):
        want = expected(values)
        assert {k: r[k] for k in want} == pytest.approx(want, rel=1e-12)


def test_summary_cli_prints_the_same_numbers(tmp_path, capsys):
    write_jsonl(tmp_path / "a.jsonl", "node01", SERIES_A)
    assert main(["monitor", "summary", str(tmp_path / "a.jsonl")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["HOST", "GPU", "SAMPLES", "MEAN%", "P5%", "P95%", ">85%"]
    for line, values in zip(out[1:3], [SERIES_A[0], SERIES_A[1]]):
        e = expected(values)
        assert line.split()[2:] == [
            f"{e['with_util']}/{e['samples']}",
            f"{e['mean']:.1f}",
            f"{e['p5']:.1f}",
            f"{e['p95']:.1f}",
            f"{e['above_target'] * 100:.1f}",
        ]
    assert "target: above 85%" in out[-1]


def test_summary_of_a_gpu_without_utilisation(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", "h", {0: [None, None]})
    (row,) = monitor.summarize([str(tmp_path / "a.jsonl")])
    assert (row["samples"], row["with_util"], row["mean"], row["above_target"]) == (2, 0, None, None)
    assert monitor.render_summary([row]).splitlines()[1].split() == ["h", "0", "0/2", "-", "-", "-", "-"]


@pytest.mark.parametrize(
    "content, where, message",
    [
        (
            '{"hostname": "h", "gpu": 0, "util_gpu_pct": 5}\n\n{"hostname": "h", "gpu": 0, "util_gpu_pct": 5\n',
            ":3:",
            "not JSON",
        ),
        ('{"hostname": "h", "util_gpu_pct": 5}\n', ":1:", "expected an object with hostname and gpu"),
        ('{"hostname": "h", "gpu": 0, "util_gpu_pct": "high"}\n', ":1:", "util_gpu_pct is 'high'"),
        ("\n", "", "no samples in"),
    ],
)
def test_summary_bad_input_is_one_line_exit_2(tmp_path, capsys, content, where, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    assert main(["monitor", "summary", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and f"{path}{where}" in err


def test_summary_missing_file(tmp_path, capsys):
    assert main(["monitor", "summary", str(tmp_path / "none.jsonl")]) == 2
    assert "none.jsonl: no such file" in capsys.readouterr().err  # the same words as for a descriptor


@pytest.mark.parametrize("command", ["discover", "doctor", "bench", "monitor", "monitor summary"])
def test_help_has_an_example(command, capsys):
    assert main([*command.split(), "--help"]) == 0
    assert "Example" in capsys.readouterr().out
