"""`ncclgen bench`: real torch.distributed runs on CPU (gloo) under torchrun, arithmetic checked from JSON.

algbw and busbw are recomputed here from each result's size and time with the nccl-tests formulas
(doc/PERFORMANCE.md: algbw = S/t; busbw = algbw x 2(n-1)/n for all_reduce, x (n-1)/n for
all_gather and reduce_scatter), not with ncclgen's functions.
"""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import textwrap

import jsonschema
import pytest

from ncclgen.cli import main
from ncclgen.errors import UserError
from ncclgen.load import descriptor
from ncclgen.node import bench

H100 = descriptor.load_cluster("h100-ib")


def torchrun(tmp_path, nproc: int, *args):
    """`python -m torch.distributed.run --nproc-per-node=N -m ncclgen bench ...` in a subprocess."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "TORCH_"))}
    env.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={nproc}",
        "--standalone",
        "-m",
        "ncclgen",
        "bench",
        "--backend",
        "gloo",
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def table_rows(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines() if line.strip() and not line.startswith(("#", "*"))]


def check_arithmetic(res: dict, rows: list[list[str]], factor: float, bound_GBps=None):
    jsonschema.validate(res, bench.RESULT_SCHEMA)
    assert len(rows) == len(res["results"]) > 0
    for r, cols in zip(res["results"], rows):
        algbw = r["size"] / (r["time_us"] * 1e-6) / 1e9
        assert r["algbw_GBps"] == pytest.approx(algbw, rel=1e-12)
        assert r["busbw_GBps"] == pytest.approx(algbw * factor, rel=1e-12)
        assert r["count"] * 4 == r["size"]
        if bound_GBps:
            assert r["busbw_pct_of_bound"] == pytest.approx(algbw * factor / bound_GBps * 100, rel=1e-12)
        # the printed table shows the same numbers, rounded
        assert [int(cols[0]), int(cols[1]), cols[2]] == [r["size"], r["count"], "float"]
        assert float(cols[3]) == pytest.approx(r["time_us"], abs=0.005)
        assert float(cols[4]) == pytest.approx(r["algbw_GBps"], abs=0.0005)
        assert float(cols[5]) == pytest.approx(r["busbw_GBps"], abs=0.0005)


@pytest.mark.slow
def test_all_reduce_two_ranks_with_a_cluster_has_no_bound_on_cpus(tmp_path):
    """gloo moves CPU tensors over TCP: a share of h100-ib's NVLink bound would mean nothing."""
    proc = torchrun(
        tmp_path, 2, "--sizes", "8:256K", "--iters", "3", "--warmup", "1", "--cluster", "h100-ib", "--json", "out.json"
    )
    res = json.loads((tmp_path / "out.json").read_text())
    assert (res["op"], res["world_size"], res["nodes"]) == ("all_reduce", 2, 1)
    assert [r["size"] for r in res["results"]] == [2**k for k in range(3, 19)]
    assert res["bound"] is None and "apply to nccl only" in res["bound_reason"]
    assert all(r["busbw_pct_of_bound"] is None for r in res["results"])
    check_arithmetic(res, table_rows(proc.stdout), 2 * (2 - 1) / 2)
    assert "# bound: none; gloo runs on CPUs over TCP" in proc.stdout
    assert "bench:" not in proc.stderr  # not a terminal: no progress output


def test_documented_cpu_smoke_test(tmp_path):
    """The command the help and README give, exactly, with its defaults: 2 gloo ranks under torchrun.

    Before the [bench] extra and the small gloo default it ended in `RuntimeError: Numpy is not
    available` (the torch wheel does not pull numpy in), and its 8:1G sweep took 56 s on 2 cores.
    """
    import time

    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "TORCH_"))}
    env.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    start = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node=2",
            "-m",
            "ncclgen",
            "bench",
            "--backend",
            "gloo",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = table_rows(proc.stdout)
    assert [int(r[0]) for r in rows] == [2**k for k in range(3, 21)]  # 8 B .. 1 MiB
    assert "# bound: none; no --cluster given" in proc.stdout and all(float(r[5]) >= 0 for r in rows)
    assert took < 30, f"the smoke test took {took:.1f} s"


def test_missing_torch_or_numpy_is_a_one_line_hint(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    for missing, words in [
        ({"numpy"}, "bench needs numpy, which is not installed"),
        ({"torch", "numpy"}, "bench needs torch and numpy, which are not installed"),
    ]:
        monkeypatch.setattr(
            importlib.util, "find_spec", lambda name, *a, _m=missing: None if name in _m else real(name, *a)
        )
        assert main(["bench", "--backend", "gloo"]) == 2
        assert capsys.readouterr().err == f"ncclgen: error: {words}: pip install 'ncclgen[bench]'\n"


def test_bench_extra_installs_what_bench_imports():
    import tomllib

    with open(os.path.join(os.path.dirname(__file__), "..", "pyproject.toml"), "rb") as fh:
        extras = tomllib.load(fh)["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[ ]", req)[0] for req in extras["bench"]}
    assert names == {"torch", "numpy"}
    with open(os.path.join(os.path.dirname(__file__), "run.sh")) as fh:
        # CI installs it the way users do
        assert "bench" in re.search(r"-e \".\[([a-z,]+)\]\"", fh.read()).group(1).split(",")


def test_default_sizes_depend_on_the_backend():
    assert bench.parse_sizes(bench.DEFAULT_SIZES["nccl"])[-1] == 1 << 30
    assert bench.parse_sizes(bench.DEFAULT_SIZES["gloo"])[-1] == 1 << 20


def test_bound_only_with_nccl():
    timings = [(1 << 20, 0.001)]
    assert bench.result("all_reduce", "nccl", 2, 1, 20, 5, timings, H100)["bound"]["kind"] == "nvlink"
    res = bench.result("all_reduce", "gloo", 2, 1, 20, 5, timings, H100)
    assert res["bound"] is None and res["results"][0]["busbw_pct_of_bound"] is None
    jsonschema.validate(res, bench.RESULT_SCHEMA)


@pytest.mark.slow
def test_all_gather_three_ranks_splits_sizes_into_equal_parts(tmp_path):
    proc = torchrun(
        tmp_path, 3, "--op", "all_gather", "--sizes", "8:64K", "--iters", "2", "--warmup", "1", "--json", "out.json"
    )
    res = json.loads((tmp_path / "out.json").read_text())
    assert res["world_size"] == 3 and res["bound"] is None and res["bound_reason"] == "no --cluster given"
    # S = (count per rank) x 3 x 4 bytes; 8 bytes (2 floats) cannot be split over 3 ranks
    expected = [(s // 4) // 3 * 3 * 4 for s in (2**k for k in range(3, 17))]
    assert [r["size"] for r in res["results"]] == [s for s in expected if s]
    check_arithmetic(res, table_rows(proc.stdout), (3 - 1) / 3)


def test_every_op_in_process_on_one_rank(monkeypatch):
    """Each collective's code path with torch.distributed for real (world size 1, gloo)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(port))
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    for op in bench.OPS:
        seen = []
        rank, n, nodes, timings = bench.measure(
            op, "gloo", [64, 128], 2, 1, lambda d, t, seen=seen: seen.append((d, t))
        )
        assert (rank, n, nodes) == (0, 1, 1)
        assert [size for size, _ in timings] == [64, 128] and all(t > 0 for _, t in timings)
        assert seen == [(1, 2), (2, 2)]
        res = bench.result(op, "gloo", n, nodes, 2, 1, timings, None)
        assert res["busbw_factor"] == 0 and all(r["busbw_GBps"] == 0 for r in res["results"])


@pytest.mark.parametrize(
    "spec, sizes",
    [
        ("8:64", [8, 16, 32, 64]),
        ("1M", [1 << 20]),
        ("5:100", [8, 16, 32, 64]),
        ("1k:4K", [1024, 2048, 4096]),
        ("8:1G", [2**k for k in range(3, 31)]),
    ],
)
def test_sizes(spec, sizes):
    assert bench.parse_sizes(spec) == sizes


@pytest.mark.parametrize(
    "spec, message",
    [
        ("1:x", "'x' is not a size"),
        ("2:8", "starts below one float32 element"),
        ("64:8", "ends before it starts"),
        ("5:7", "no power of two between 5 and 7"),
        ("-1", "is not a size"),
    ],
)
def test_bad_sizes(spec, message):
    with pytest.raises(UserError, match=message):
        bench.parse_sizes(spec)


def test_bus_factors_and_counts():
    assert [bench.bus_factor("all_reduce", n) for n in (2, 4, 8)] == [1.0, 1.5, 1.75]
    assert bench.bus_factor("all_gather", 4) == bench.bus_factor("reduce_scatter", 4) == 0.75
    assert bench.element_count("all_reduce", 100, 3) == 25
    assert bench.element_count("reduce_scatter", 100, 3) == 24


def load(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(text))
    return descriptor.load(str(path))


BASE = """\
    name: t
    description: t
    sources: {s: test}
    software: {nccl: "2.21.5", torch: "2.6.0", cuda: "12.4"}
    node:
      gpu_model: H100
      gpus_per_node: 2
      numa_nodes: [{id: 0, cpus: "0-7"}]
      gpus: [{index: 0, numa: 0}, {index: 1, numa: 0}]
"""


def test_bounds(tmp_path):
    b, why = bench.bound_for(H100, 1)
    assert (b.kind, b.gbps) == ("nvlink", 3600) and "one node" in why
    b, why = bench.bound_for(H100, 2)
    assert (b.kind, b.gbps) == ("rails", 400) and why.startswith("2 nodes: network rails")
    shared = load(
        tmp_path,
        BASE
        + """\
    network:
      fabric: infiniband
      bootstrap_interfaces: [eth0]
      compute:
        - {hca: mlx5_0, gbps: 400, gpus: [0, 1], numa: 0}
        - {hca: mlx5_1, gbps: 200, gpus: [1], numa: 0}
    """,
    )
    assert bench.bound_for(shared, 4)[0].gbps == 200  # GPU 0: half of mlx5_0; GPU 1: 200 + 200
    assert bench.bound_for(shared, 1) == (None, "all ranks on one node and t declares no node.nvlink_gbps")
    efa = load(
        tmp_path,
        BASE
        + """\
    network:
      fabric: efa
      bootstrap_interfaces: [eth0]
      efa: {devices_per_node: 4, gbps_per_device: 100}
    """,
    )
    assert (bench.bound_for(efa, 2)[0].kind, bench.bound_for(efa, 2)[0].gbps) == ("efa", 200)


def test_table_has_the_bound_column_only_with_a_bound():
    timings = [(1 << 20, 0.001)]
    with_bound = bench.table(bench.result("all_reduce", "nccl", 8, 1, 20, 5, timings, H100))
    row = table_rows(with_bound)[0]
    algbw = (1 << 20) / 0.001 / 1e9
    assert row == [
        "1048576",
        "262144",
        "float",
        "1000.00",
        f"{algbw:.3f}",
        f"{algbw * 1.75:.3f}",
        f"{algbw * 1.75 / 450 * 100:.1f}",
    ]
    without = bench.table(bench.result("all_reduce", "nccl", 8, 1, 20, 5, timings, None))
    assert len(table_rows(without)[0]) == 6 and "# bound: none; no --cluster given" in without


def test_progress_only_on_a_terminal(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty, pipe = Tty(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", tty)
    bench.terminal_progress(1, 2)
    bench.terminal_progress(2, 2)
    monkeypatch.setattr(sys, "stderr", pipe)
    bench.terminal_progress(1, 2)
    assert tty.getvalue() == "\rbench: 1/2 sizes\rbench: 2/2 sizes\n" and pipe.getvalue() == ""


def test_plot_without_matplotlib_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    assert main(["bench", "--backend", "gloo", "--plot", str(tmp_path / "p.png")]) == 2
    err = capsys.readouterr().err
    assert err == "ncclgen: error: --plot needs matplotlib, which is not installed: pip install 'ncclgen[plot]'\n"
    assert not (tmp_path / "p.png").exists()


def test_plot_draws_a_png(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is the optional [plot] extra")
    res = bench.result("all_reduce", "nccl", 8, 1, 20, 5, [(1 << k, 1e-5 * k) for k in range(10, 20)], H100)
    bench.plot(res, str(tmp_path / "busbw.png"))
    assert (tmp_path / "busbw.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["busbw.png"]  # no temp file left behind
    assert (tmp_path / "busbw.png").stat().st_mode & 0o777 == 0o644  # as every other output file


def test_outside_torchrun_and_bad_flags_are_one_line_exit_2(tmp_path, monkeypatch, capsys):
    for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(v, raising=False)
    assert main(["bench", "--backend", "gloo"]) == 2
    assert "bench runs one process per GPU under torchrun (RANK, WORLD_SIZE" in capsys.readouterr().err
    assert main(["bench", "--sizes", "1:2x"]) == 2
    assert main(["bench", "--json", str(tmp_path / "no/such/dir/x.json")]) == 2
    assert "output folder does not exist" in capsys.readouterr().err
    assert main(["bench", "--op", "broadcast"]) == 2
    assert main(["bench", "--cluster", "nope-cluster"]) == 2


def test_bench_module_does_not_import_torch_until_measuring():
    code = "import sys, ncclgen.cli.node, ncclgen.node.bench; print('torch' in sys.modules, 'pynvml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
