"""What a real GPU machine printed (tools/device/check.sh on one H200, torch 2.11.0+cu130, NCCL 2.28.9),
read back by the programs that run on the nodes: NCCL's own INIT lines through the transport check, and
a real flight-recorder dump through PyTorch's fr_trace loader. The files are in tests/data/device/."""

import json
import pickle
from pathlib import Path

from ncclgen.jobside import nccllines, transport

DATA = Path(__file__).parent / "data" / "device"


def _check(log: Path, spec: dict) -> tuple[transport.Check, list[str]]:
    out: list[str] = []
    check = transport.Check(spec, "vm", "vm", emit=out.append, start=0)
    proc = transport.Proc(str(log), 613)
    check.procs[log.name] = proc
    for text in log.read_text().splitlines():
        check.line(proc, text)
    check.summary()
    return check, out


def test_real_init_lines_give_the_summary_the_device_printed():
    spec = json.loads((DATA / "transport-h200.json").read_text())
    check, out = _check(DATA / "nccl-init-h200.log", spec)
    printed = [ln for ln in (DATA / "check-h200.log").read_text().splitlines() if ln.startswith("ncclgen: transport")]
    assert (
        out
        == printed
        == [
            "ncclgen: transport: node vm: NCCL 2.28.9, net Socket, plugin -, HCAs -, NET channels 0 GDRDMA / 0 "
            "without, P2P 0, SHM 0, 1 processes"
        ]
    )
    assert check.problems == []
    assert check._initialised()


def test_real_init_lines_against_an_ib_plan_name_net_and_version():
    # "NET/IB : Using [RO]; OOB eth0" follows "No device found": no HCA, and the IB plan fails on the net
    spec = {"v": 1, "mode": "on", "debug_file": "/tmp/x/%h.%p.log", "net": "IB", "nccl": "2.30.7", "hcas": ["mlx5_0:1"]}
    check, out = _check(DATA / "nccl-init-h200.log", spec)
    items = {p[0]: (p[1], p[2]) for p in check.problems}
    assert items["net"][0] == "IB" and items["net"][1].startswith("Socket")
    assert items["NCCL version"][1] == "2.28.9"
    assert items["HCAs"] == ("mlx5_0:1", "none (not opened: mlx5_0:1)")
    assert "HCAs - (0 of 1 planned)" in out[-1]


def test_every_subsystem_log_parses_line_by_line():
    lines = (DATA / "nccl-all-h200.log").read_text().splitlines()
    parsed = [nccllines.split(t) for t in lines]
    assert sum(p is not None for p in parsed) >= len(lines) - 5
    kinds = {m[0] for p in parsed if p is not None and (m := nccllines.message(p[3])) is not None}
    assert {"version", "net", "complete"} <= kinds


def test_real_flight_recorder_dump_is_read_by_fr_trace_loader():
    """The dump a real NCCL collective timeout wrote to TORCH_FR_DUMP_TEMP_FILE<rank> (the plan's name):
    torch's own loader reads it and the timed-out all_reduce is the last entry, still 'scheduled'."""
    loader = __import__("torch.distributed.flight_recorder.components.loader", fromlist=["read_dump"])
    folder = DATA / "fr-timeout-h200"
    dump = loader.read_dump("nccl_trace_rank_", str(folder / "nccl_trace_rank_0"))
    assert dump["rank"] == 0
    states = [(e["profiling_name"], e["state"]) for e in dump["entries"]]
    assert states[-1] == ("nccl:all_reduce", "scheduled")
    assert states.count(("nccl:all_reduce", "completed")) == 4
    raw = pickle.loads((folder / "nccl_trace_rank_0").read_bytes())
    assert raw["entries"][-1]["timeout_ms"] == 8000
    log = (DATA / "fr-timeout-h200.log").read_text()
    assert "comm_lib_trace_rank_0" in log  # torch 2.11's default: $HOME/.cache/torch, shared by every job
