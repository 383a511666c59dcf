"""`ncclgen triage` on real logs from public issues (tests/data/triage/*.log, each naming its source).

Each test asserts what a person reading the issue established: the root, not the loudest line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ncclgen.cli import main
from ncclgen.triage import run

DATA = Path(__file__).parent / "data" / "triage"


def triage(*names: str, extra: tuple[str, ...] = ()) -> tuple[dict, int]:
    text, code = run.triage([str(DATA / n) for n in names], *extra, fmt="json")  # type: ignore[misc]
    return json.loads(text), code


def test_every_data_file_names_its_source():
    """A public thread, or a centre's or vendor's published page that quotes the log with its cause."""
    for f in DATA.glob("*.log"):
        assert re.match(r"# source: https://[\w.-]+\.[a-z]+/\S", f.read_text()), f


def test_roce_error_12_is_the_cause_with_gid_fix():
    data, code = triage("nccl-426-roce-gid.log")
    assert code == 0 and data["status"] == "cause"
    assert data["first"]["signature"] == "ib-completion-error-12"
    assert "NCCL_IB_GID_INDEX" in data["fix"]
    assert "https://github.com/NVIDIA/nccl/issues/426" in data["sources"]


def test_repeated_completion_errors_collapse_after_the_first():
    data, code = triage("nccl-1405-roce-completion-error.log")
    assert code == 0
    assert data["first"]["where"].endswith("nccl-1405-roce-completion-error.log:4")
    assert data["first"]["node"] == "kp-ddp-worker-0"
    assert [t["summary"] for t in data["then"]] == [
        "2 more ib-completion-error-12 lines",
        "NCCL error traces from 1 rank",
    ]


def test_link_local_interface_is_the_root_not_the_connect_warnings():
    data, code = triage("oneflow-3586-link-local.log")
    assert code == 0
    assert data["first"]["signature"] == "link-local-bootstrap"
    assert data["first"]["where"].endswith(":4")  # an INFO line, above the louder WARN at line 15
    assert "veth25f2e72" in data["cause"] and "bootstrap_interfaces" in data["fix"]


def test_modify_qp_is_first_and_the_proxy_failures_follow():
    data, code = triage("nccl-tests-185-modify-qp.log")
    assert code == 0 and data["first"]["signature"] == "ibv-modify-qp"
    assert "Network is unreachable" in data["cause"]
    # the rank waiting on its proxy (same node) follows the proxy that failed, not a network socket
    assert any("proxy" in t["summary"] for t in data["then"])


def test_watchdog_timeouts_alone_are_not_a_cause():
    data, code = triage("llamafactory-7396-watchdog-only.log")
    assert code == 1 and data["status"] == "unclassified" and "cause" not in data
    assert data["first"]["rank"] == "0" and data["first"]["time"] == "03-21 02:07:08.408271"
    assert [t["summary"] for t in data["then"]] == [
        "2 ranks timed out in ALLREDUCE SeqNum=1580"
    ]  # ranks 0 and 4, the shown line among them


def test_ray_worker_watchdog_lines_keep_their_rank():
    data, code = triage("verl-597-watchdog-ray.log")
    # SeqNum=1, a one-element ALLREDUCE and no rank's error anywhere: a rank that never reached the barrier
    assert code == 0 and data["first"]["rank"] == "1" and data["first"]["signature"] == "watchdog-start-timeout"
    assert "flight recorder" in data["hang"]["collect_next"]


def test_init_only_log_names_no_failure_and_says_it_ends_in_setup():
    """The excerpt stops after NCCL's bootstrap lines: no failure, but no sign the run got further either."""
    data, code = triage("nccl-621-init-clean.log")
    assert code == 0 and data["status"] == "unfinished" and "first" not in data and "cause" not in data
    assert data["bytes_read"] > 1000


def test_root_in_one_file_wins_over_symptoms_in_another():
    data, code = triage("llamafactory-7396-watchdog-only.log", "nccl-426-roce-gid.log")
    assert code == 0 and data["first"]["signature"] == "ib-completion-error-12"
    assert "2 ranks timed out in ALLREDUCE SeqNum=1580" in [t["summary"] for t in data["then"]]


def test_plan_check_names_the_missing_libibverbs():
    data, code = triage("pytorch-39388-no-libibverbs.log", extra=("h100-ib", None, None))
    # the plan pins NCCL_SOCKET_IFNAME; NCCL bootstrapped on eno1: that is the first thing the plan contradicts
    assert code == 0 and data["first"]["signature"] == "plan-iface" and "eno1" in data["cause"]
    (note,) = data["plan"]["notes"]
    assert note.startswith("NCCL could not load libibverbs; the plan pinned IB on =mlx5_0:1")


def test_plan_from_regenerate_line(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/bash\n# Regenerate: ncclgen slurm --cluster h100-ib --tier 3 --workload verl-sft --nodes 2\n"
    )
    log = tmp_path / "slurm-1.out"
    log.write_text((DATA / "nccl-426-roce-gid.log").read_text())
    text, code = run.triage([str(tmp_path)], fmt="json")
    data = json.loads(text)
    assert code == 0 and data["plan"]["from"].startswith("the job script's Regenerate: line")


def test_sigkill_beats_the_timeouts_that_follow(tmp_path):
    log = tmp_path / "slurm-9.out"
    log.write_text(
        "[rank1]:[E1203 10:00:05.000000000 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1000) ran for 1001 milliseconds before timing out.\n"
        "[rank2]:[E1203 10:00:05.100000000 ProcessGroupNCCL.cpp:607] [Rank 2] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1000) ran for 1001 milliseconds before timing out.\n"
        "srun: error: node3: task 0: Killed\n"
    )
    text, code = run.triage([str(log)], fmt="json")
    data = json.loads(text)
    assert code == 0
    assert data["first"]["signature"] == "sigkill" and data["first"]["node"] == "node3"
    assert [t["summary"] for t in data["then"]] == ["2 ranks timed out in ALLREDUCE SeqNum=812"]


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    assert main(["triage", str(tmp_path / "missing.log")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ncclgen: error: {tmp_path / 'missing.log'}: no such file or folder"] or len(err) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["triage", str(empty)]) == 2


def test_cli_text_and_exit_codes():
    r = CliRunner().invoke(main_group(), ["triage", str(DATA / "nccl-426-roce-gid.log")])
    assert r.exit_code == 0 and r.output.startswith("first failure: ")
    r = CliRunner().invoke(main_group(), ["triage", str(DATA / "llamafactory-7396-watchdog-only.log")])
    assert r.exit_code == 1 and "not classified" in r.output
    r = CliRunner().invoke(main_group(), ["triage", str(DATA / "nccl-1706-allreduce-clean.log")])
    assert r.exit_code == 0 and r.output.startswith("no failure found")


def main_group():
    from ncclgen.cli import cli

    return cli


@pytest.mark.parametrize("chunk", [7, 64, 4096])
def test_streaming_gives_the_same_lines_at_any_chunk_size(monkeypatch, chunk):
    from ncclgen.triage import reader

    files = [DATA / "nccl-tests-185-modify-qp.log"]
    whole = [(ln.lineno, ln.text) for ln in reader.scan(files)]
    monkeypatch.setattr(reader, "CHUNK", chunk)
    assert [(ln.lineno, ln.text) for ln in reader.scan(files)] == whole
    text = files[0].read_text().splitlines()
    assert all(text[n - 1] == t for n, t in whole)


def test_lines_that_name_no_rank_are_counted_as_lines(tmp_path):
    """Two symptom lines with no node or rank may be one rank, or two runs pasted together: not '2 ranks'."""
    log = tmp_path / "x.log"
    log.write_text(
        "x:1:2 [0] misc/shmutils.cc:70 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-a (size 9)\n"
        "RuntimeError: NCCL error: unhandled system error\nRuntimeError: NCCL error: unhandled system error\n"
    )
    data = json.loads(run.triage([str(log)], fmt="json")[0])
    assert data["then"][0]["summary"] == "ranks reported an NCCL error (2 lines, no node or rank named)"


def test_the_exception_that_quotes_the_root_is_the_same_error():
    """PyTorch's DistBackendError just above the NCCL text it quotes after 'Last error:' is one error, not an
    earlier event (vllm#1726)."""
    data, _code = triage("vllm-1726-two-nccl-libraries.log")
    assert data["first"]["where"].endswith(":7")
    assert [t["quotes_first"] for t in data["then"]] == [True, True]
