"""Where a failure's report starts and which lines are error lines at all: forms of programs beside PyTorch and NCCL
(Go tools, Ascend's CANN and MindSpore, Slurm's sbatch, builds), a crash while a failed process tears down, a
wrapper line whose cause is printed under it, and a block of error lines that is one report."""

from __future__ import annotations

from triage_json import triage

from ncclgen.triage import events


def test_error_line_forms_of_go_tools_ascend_and_builds_are_read():
    """logrus's ERRO/FATA and logfmt level=error, MindSpore's [CRITICAL] and [EXCEPTION], CANN's error codes, sbatch's
    own errors, autoconf's 'configure: error:' and a compiler error in an extension-less header are error lines;
    glog's E lines and a logfmt info record are not."""
    for line in (
        "ERRO[0000] Assertion failure: selected configuration not currently applied",
        'time="2025-06-25T20:09:30Z" level=error msg="Encountered a failure."',
        "[CRITICAL] DEVICE(1,f,python):2022-12-01-00:26:58.399.787 [ascend_graph_executor.cc:240] RunGraph] failed",
        "[EXCEPTION] DEVICE(1,f,python):2021-09-13-15:29:07.465.388 [ascend_memory_manager.cc:62] Malloc failed",
        "(EngineCore_DP0 pid=17833) EZ9999: Inner Error!",
        "sbatch: error: Reached jobs per hour limit",
        "configure: error: no OFED nor kernel OpenIB gen2 headers present",
        "/usr/include/c++/6/tuple:502:1: error: body of constexpr function is not a return-statement",
    ):
        assert events.is_error_line(line), line
    for line in (
        "E0131 19:35:42.895933       1 main.go:173] failed to create FS watcher",
        'time="2025-06-25T20:09:25Z" level=info msg="Attempting to connect"',
    ):
        assert not events.is_error_line(line), line


def test_a_heap_corruption_abort_after_an_error_is_its_aftermath(tmp_path):
    """glibc's heap-corruption abort while a failed process tears down gives way to the error line above it."""
    log = "[CRITICAL] DEVICE(1) RunGraph] Run task for graph error! EI0002: The wait execution of the Notify register times out.\nmalloc_consolidate(): invalid chunk size\n"
    data = triage(tmp_path, log)
    assert data["first"]["where"].endswith(":1")


def test_a_ray_actor_constructor_failure_is_the_exception_its_traceback_ends_with(tmp_path):
    """Ray's 'The actor died because of an error raised in its creation task' says the cause is printed under it."""
    p = "(WorkerDict pid=1) "
    log = (
        f"{p}Exception raised in creation task: The actor died because of an error raised in its creation task, ray::WorkerDict.__init__()\n"
        f'{p}  File "/verl/workers/fsdp_workers.py", line 140, in __init__\n'
        f"{p}    self.ulysses_device_mesh = init_device_mesh(\n"
        f"{p}RuntimeError: cannot reshape tensor of 0 elements into shape [-1, 0]\n"
    )
    assert triage(tmp_path, log)["first"]["where"].endswith(":4")


def test_a_root_is_reported_where_its_block_of_error_lines_starts(tmp_path):
    """torch_npu's RuntimeError, then CANN's code lines, then the line that says why: one report, from its first line;
    PyTorch's 'Last error:' is not such a start (the NCCL text it quotes is the report)."""
    p = "(EngineCore_DP0 pid=1) "
    log = (
        f"{p}RuntimeError: npu_moe_distribute_dispatch_v2: call aclnnMoeDistributeDispatchV3 failed, error code is 561002\n"
        f"{p}EZ9999: Inner Error!\n"
        f"{p}EZ9999[PID: 1] 2025-12-23-07:36:19.237.396 (EZ9999):  HCCL_BUFFSIZE is too SMALL, HCCL_BUFFSIZE=200MB.\n"
    )
    data = triage(tmp_path, log)
    assert data["first"]["where"].endswith(":1") and data["first"]["signature"] == "hccl-buffsize-small"


def test_a_pod_the_scheduler_placed_after_all_was_no_failure(tmp_path):
    """kubectl describe pod's Events: FailedScheduling while an autoscaler adds a GPU node, then 'Successfully
    assigned': the wait for capacity, no failure; the same FailedScheduling with no assignment after it is the cause."""
    failed = (
        "  Warning  FailedScheduling  41m  default-scheduler  0/8 nodes are available: 8 Insufficient nvidia.com/gpu. "
        "preemption: 0/8 nodes are available: 8 No preemption victims found for incoming pod.\n"
    )
    placed = "  Normal   Scheduled         40m  default-scheduler  Successfully assigned ns/worker-gpu-85d22 to ip-10-0-1-2\n"
    assert triage(tmp_path, failed + placed)["status"] == "clean"
    data = triage(tmp_path, failed)
    assert data["status"] == "cause" and data["first"]["signature"] == "k8s-unschedulable"
