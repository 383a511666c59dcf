"""Line forms a held-out round (session 38) found unread or misread, each checked on lines shaped as the sources
print them: a rule that regresses makes one of these fail."""

from __future__ import annotations

from pathlib import Path

import triage_json

from ncclgen.triage import run

TABLE = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-08-20_{when}
  host      : gpu8
  rank      : 4 (local_rank: 0)
  exitcode  : 1 (pid: 793062)
  error_file: <N/A>
============================================================
"""
TIMEOUT = (
    "[rank0]:[E820 11:47:24.069865760 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=2, OpType=_ALLGATHER_BASE, NumelIn=1, NumelOut=2, Timeout(ms)=600000) ran for 600001 "
    "milliseconds before timing out.\n"
)


def triage(tmp_path: Path, text: str) -> tuple[dict, int]:
    data = triage_json.triage(tmp_path, text)
    return data, data["_code"]


def test_a_rank_torchrun_saw_fail_before_the_timeouts_comes_first(tmp_path):
    # the table's time (11:37:36) is ten minutes before rank 0's watchdog line: that rank failed first
    data, _code = triage(tmp_path, TABLE.format(when="11:37:36") + TIMEOUT)
    assert data["first"]["signature"] == "elastic-child-failed" and data["first"]["where"].endswith(":1")


def test_a_table_after_the_timeouts_leaves_the_timeout_first(tmp_path):
    # the rank ended at 11:48, after the timeout: the table reports the timeout's aftermath
    data, _code = triage(tmp_path, TABLE.format(when="11:48:02") + TIMEOUT)
    assert data["first"]["signature"] == "watchdog-timeout"


def test_the_default_timeout_is_named_with_the_groups_that_keep_it(tmp_path):
    data, _code = triage(tmp_path, TIMEOUT)
    says = data["symptom"]["says"]
    assert "600000, the default" in says and "new_group" in says


MIXED = (
    "n7:7240:7240 [0] NCCL INFO NET/IB : Using [0]mlx5_3:1/IB [1]mlx5_0:1/IB [2]mlx5_2:1/RoCE [3]mlx5_4:1/IB ; "
    "OOB eth0:10.100.72.18<0>\n"
    "n7:7240:7401 [0] NCCL INFO Ring 00 : 51[3d000] -> 56[1a000] [receive] via NET/IB/2\n"
)


def test_a_qp_that_cannot_come_up_between_link_layers_is_the_mixed_hca_list(tmp_path):
    data, _code = triage(
        tmp_path,
        MIXED
        + "n7:7240:7401 [0] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error Invalid argument\n",
    )
    assert data["status"] == "cause" and data["first"]["signature"] == "hca-mixed-links"
    assert data["first"]["where"].endswith(":1")


def test_the_mixed_hca_list_does_not_explain_other_failures(tmp_path):
    data, _code = triage(tmp_path, MIXED + "RuntimeError: CUDA error: out of memory\n")
    assert data["first"]["signature"] != "hca-mixed-links"


def test_grpc_accept_failure_cut_after_its_first_word(tmp_path):
    data, _code = triage(
        tmp_path, "E1016 17:14:42.006647171   33721 tcp_server_posix.cc:213]    Failed accept4: Too\n many open files\n"
    )
    assert data["first"]["signature"] == "grpc-accept-failed" and "open-file limit" in data["cause"]


def test_a_raylet_stopped_before_it_registered(tmp_path):
    data, _code = triage(
        tmp_path,
        "F0528 14:53:04.237076   138 service_based_accessor.cc:320]  Check failed: !local_node_id_.IsNil() This node "
        "is disconnected.\n*** Check failure stack trace: ***\n",
    )
    assert data["status"] == "cause" and data["first"]["signature"] == "ray-raylet-never-registered"


def test_open_mpi_abort_block_is_a_failure(tmp_path):
    data, code = triage(
        tmp_path,
        "-------------------------------------------------------\n"
        "Primary job  terminated normally, but 1 process returned\n"
        "a non-zero exit code.. Per user-direction, the job has been aborted.\n"
        "-------------------------------------------------------\n"
        "mpirun noticed that process rank 2 with PID 0 on node gpu-07 exited on signal 9 (Killed).\n",
    )
    assert code == 1 and data["status"] == "unclassified" and data["first"]["signature"] == "mpirun-rank-exit"
    assert data["first"]["where"].endswith(":2")


PYSPY = (
    'Thread 0x7F81445A8440 (active): "MainThread"\n'
    "    destroy_process_group (torch/distributed/distributed_c10d.py:2184)\n"
    "    <module> (torchtitan/train.py:554)\n"
    'Thread 0x7F7D9CFF9640 (idle): "Thread-2"\n'
    "    wait (threading.py:324)\n"
)


def test_a_py_spy_dump_without_its_process_header_is_a_hang_where_the_first_thread_waits(tmp_path):
    data, code = triage(tmp_path, PYSPY)
    assert code == 1 and data["status"] == "hang"
    text, _code = run.triage([str(tmp_path / "job.out")])
    assert "(py-spy dump)" in text and "destroy_process_group (distributed_c10d.py:2184)" in text


def test_logger_lines_that_name_a_python_file_are_no_stack_dump(tmp_path):
    # vLLM's and Ray's log lines name FILE.py:LINE too; with no thread header they are no dump
    data, _code = triage(
        tmp_path,
        "INFO 06-01 10:00:00 [gpu_worker.py:123] model loaded (worker_main.py:88)\n    step (trainer.py:77)\n",
    )
    assert data["status"] == "clean"
