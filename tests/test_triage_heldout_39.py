"""Line forms a held-out round (session 39) found unread, each checked on lines shaped as the sources print them:
a rule that regresses makes one of these fail."""

from __future__ import annotations

import pytest
import triage_json

from ncclgen.triage import frames
from ncclgen.triage.events import Event
from ncclgen.triage.reader import Line


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: use_libuv was requested but PyTorch was built without libuv support, run with USE_LIBUV=0 to disable it.",
        "RuntimeError: use_libuv was requested but PyTorch was build without libuv support",
    ],
)
def test_a_store_asked_for_libuv_on_a_build_without_it(tmp_path, text):
    data = triage_json.triage(tmp_path, "Traceback (most recent call last):\n" + text + "\n")
    assert data["first"]["signature"] == "torch-store-libuv-missing"
    assert "USE_LIBUV=0" in data["fix"]


@pytest.mark.parametrize(
    "text, backend, op",
    [
        ("RuntimeError: ProcessGroupNCCL does not support barrier", "NCCL", "barrier"),
        ("RuntimeError: Backend gloo does not support reduce_scatter", "gloo", "reduce_scatter"),
        ("RuntimeError: Backend nccl does not support allreduce sparse", "nccl", "allreduce sparse"),
    ],
)
def test_a_collective_the_backend_lacks(tmp_path, text, backend, op):
    data = triage_json.triage(tmp_path, text + "\n")
    assert data["first"]["signature"] == "backend-op-unsupported"
    assert f"collective ({op}) on a process group whose backend ({backend})" in data["cause"]


TRACEBACK = """Traceback (most recent call last):
  File "/home/u/train.py", line 40, in <module>
    main()
  File "/home/u/DeepSpeed/deepspeed/runtime/zero/stage_1_and_2.py", line 1044, in flatten_dense_tensors_aligned
    return self.flatten(align_dense_tensors(tensor_list, alignment))
  File "/env/lib/python3.12/site-packages/torch/_utils.py", line 571, in _flatten_dense_tensors
    return torch._C._nn.flatten_dense_tensors(tensors)
ValueError: torch.cat(): expected a non-empty list of Tensors
"""


def test_an_unclassified_exception_raised_in_torch_names_its_caller(tmp_path):
    """The innermost frame is PyTorch's; the innermost frame outside PyTorch and the standard library is the
    caller whose arguments led there."""
    data = triage_json.triage(tmp_path, TRACEBACK)
    assert data["status"] == "program" and data["program"]["owner"] is None  # a source checkout: no package name
    assert (
        "raised in /env/lib/python3.12/site-packages/torch/_utils.py:571 in _flatten_dense_tensors on a call from /home/u/DeepSpeed/"
        in data["cause"]
    )
    assert (
        data["first"]["raised_in"] == "/env/lib/python3.12/site-packages/torch/_utils.py:571 in _flatten_dense_tensors"
    )
    assert data["first"]["called_from"] == (
        "/home/u/DeepSpeed/deepspeed/runtime/zero/stage_1_and_2.py:1044 in flatten_dense_tensors_aligned"
    )


def test_a_caller_from_an_earlier_traceback_is_not_named():
    """Frames more than a few lines apart belong to different tracebacks: the caller is the current one's."""
    seen = frames.Frames()
    lines = [
        (1, '  File "/home/u/other.py", line 3, in f'),
        (20, '  File "/env/lib/python3.12/site-packages/torch/_utils.py", line 571, in g'),
    ]
    for n, text in lines:
        seen.add(Line("job.out", n, text))
    ev = Event(Line("job.out", 22, "ValueError: x"), None)
    seen.mark(ev)
    assert ev.groups == {"raised_in": "/env/lib/python3.12/site-packages/torch/_utils.py:571 in g"}


def test_an_exception_raised_in_the_program_itself_names_no_caller(tmp_path):
    data = triage_json.triage(
        tmp_path,
        'Traceback (most recent call last):\n  File "/home/u/train.py", line 4, in main\n    x[1]\nKeyError: 1\n',
    )
    assert data["first"]["raised_in"] == "/home/u/train.py:4 in main" and "called_from" not in data["first"]


@pytest.mark.parametrize(
    "text",
    [
        "  message: Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1,"
        " Available: 0, which is unexpected\n  phase: Failed\n",
        "Warning  UnexpectedAdmissionError  5s  kubelet  Update plugin resources failed due to no healthy devices, which"
        " is unexpected.\n",
        "ray-worker-abc   0/1   UnexpectedAdmissionError   0   12s\n",
    ],
)
def test_a_pod_the_kubelet_refused_at_admission(tmp_path, text):
    data = triage_json.triage(tmp_path, text)
    assert data["first"]["signature"] == "k8s-pod-admission-failed"
    assert "refused the pod at admission (" in data["cause"] and "(?)" not in data["cause"]


PYXIS = "".join(
    f"slurmstepd: error: pyxis: {line}\n"
    for line in [
        "child 52574 failed with error code: 1",
        "failed to import docker image",
        "printing contents of log file ...",
        *[f"    [INFO] step {i}" for i in range(14)],
        "    Write failed because No space left on device",
        "    FATAL ERROR:Failed to write to output filesystem",
    ]
)


def test_pyxis_failed_import_gives_way_to_the_enroot_line_that_says_why(tmp_path):
    """pyxis prints enroot's whole log under its summary: the reason can be a dozen lines and more below it."""
    data = triage_json.triage(tmp_path, PYXIS)
    assert data["first"]["signature"] == "no-space-left" and data["first"]["where"].endswith(":18")
    assert "runtime_path" in data["fix"]


@pytest.mark.parametrize(
    "text, pkg",
    [
        ("RuntimeError: operator torchvision::nms does not exist", "torchvision"),
        ("RuntimeError: No such operator torchvision::nms", "torchvision"),
        ("RuntimeError: operator torchaudio::sox_io_load does not exist", "torchaudio"),
    ],
)
def test_an_extension_built_for_another_torch(tmp_path, text, pkg):
    data = triage_json.triage(tmp_path, text + "\n")
    assert data["first"]["signature"] == "torch-extension-ops-missing"
    assert data["cause"].startswith(f"{pkg}'s compiled operators are not in this PyTorch")


def test_open_mpi_refusing_a_node_name(tmp_path):
    text = (
        "--------------------------------------------------------------------------\n"
        "While trying to create a regular expression of the node names\n"
        "used in this application, the regex parser has detected the\n"
        "presence of an illegal character in the following node name:\n\n"
        "  node:  eval_1736300653_nemo-run-0\n"
    )
    data = triage_json.triage(tmp_path, text)
    assert data["first"]["signature"] == "mpi-node-name-illegal" and data["first"]["where"].endswith(":2")


@pytest.mark.parametrize(
    "text, what",
    [
        (
            'E0114 10:11:11.182069       1 runtime.go:78] Observed a panic: "invalid memory address or nil pointer'
            ' dereference" (runtime error: invalid memory address or nil pointer dereference)',
            "invalid memory address or nil pointer dereference",
        ),
        (
            'E1227 11:57:41.086777 panic.go:262] "Observed a panic" panic="runtime error: index out of range [3] with'
            ' length 3"',
            "runtime error: index out of range [3] with length 3",
        ),
        (
            "panic: runtime error: invalid memory address or nil pointer dereference [recovered]",
            "runtime error: invalid",
        ),
    ],
)
def test_a_go_component_that_panicked(tmp_path, text, what):
    data = triage_json.triage(tmp_path, text + "\ngoroutine 354 [running]:\n")
    assert data["first"]["signature"] == "go-panic"
    assert f"a Go program crashed on a bug of its own ({what}" in data["cause"]


def test_a_message_split_over_string_literals_in_quoted_source_is_no_error(tmp_path):
    """pytest quotes the failing code: a literal that reads like a failure is code, the 'E   ' line is the error."""
    text = (
        ">               raise RuntimeError(\n"
        '                    "Engine core initialization failed. "\n'
        '                    "See root cause above. "\n'
        "                )\n"
        "E               RuntimeError: Engine core initialization failed. See root cause above.\n"
    )
    data = triage_json.triage(tmp_path, text)
    assert data["first"]["where"].endswith(":5")


LINK_LOCAL = (
    "h1:1:1 [0] NCCL INFO Bootstrap : Using [0]ens5:172.31.0.137<0> [1]veth75fa783:fe80::14ad:64ff:fe64:b31e%veth75fa783<0>\n"
    "NCCL version 2.7.8+cuda11.1\n"
    "h1:1:2 [0] NCCL INFO Channel 00/02 :    0   1\n"
)


def test_a_link_local_interface_is_where_a_multi_node_log_that_ends_early_stalled(tmp_path):
    """pytorch#68893: a container's veth with only an fe80:: address in NCCL's list; the log ends in setup."""
    data = triage_json.triage(
        tmp_path, LINK_LOCAL + "h1:1:2 [0] NCCL INFO Channel 00 : 1[1e0] -> 0[1e0] [receive] via NET/Socket/0\n"
    )
    assert data["status"] == "unfinished" and data["first"]["signature"] == "link-local-bootstrap"
    assert data["first"]["where"].endswith(":1")


def test_a_link_local_interface_on_one_host_is_not_where_it_stalled(tmp_path):
    """On one host every rank reaches the address (nccl-tests#115: a hang from the IOMMU, a veth listed too)."""
    data = triage_json.triage(tmp_path, LINK_LOCAL + "h1:1:2 [0] NCCL INFO Channel 00 : 0[1e0] -> 1[1f0] via P2P/IPC\n")
    assert (data.get("first") or {}).get("signature") != "link-local-bootstrap"


RAY_OOM = "ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=508648, ip=10.1.200.6)\n"


def test_ray_wrapping_a_gpu_oom_names_it_when_the_inner_line_was_cut(tmp_path):
    data = triage_json.triage(tmp_path, "Traceback (most recent call last):\n" + RAY_OOM)
    assert data["status"] == "cause" and data["first"]["signature"] == "ray-task-gpu-oom"
    assert "(main_task) ran out of GPU memory" in data["cause"]


def test_ray_wrapping_a_gpu_oom_gives_way_to_the_line_with_the_sizes(tmp_path):
    inner = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 520.00 MiB. GPU 0 has a total capacity of 21.95 GiB\n"
    data = triage_json.triage(tmp_path, RAY_OOM + '  File "/x/worker.py", line 3, in f\n' + inner)
    assert data["first"]["where"].endswith(":3") and data["first"]["signature"].startswith("cuda-oom")


def test_a_ray_wrapper_over_a_named_exception_gives_way_to_it(tmp_path):
    text = (
        "ray.exceptions.RayTaskError(RuntimeError): ray::Worker.init() (pid=1, ip=10.0.0.1)\n"
        "RuntimeError: use_libuv was requested but PyTorch was built without libuv support\n"
    )
    data = triage_json.triage(tmp_path, text)
    assert data["first"]["signature"] == "torch-store-libuv-missing" and data["first"]["where"].endswith(":2")


def test_a_py_spy_dump_names_the_log_line_of_its_innermost_frame(tmp_path):
    text = (
        'Thread 0x7F81445A8440 (active): "MainThread"\n'
        "    destroy_process_group (torch/distributed/distributed_c10d.py:2184)\n"
        "    <module> (torchtitan/train.py:554)\n"
    )
    data = triage_json.triage(tmp_path, text)
    last = " ".join(data["hang"]["last"])
    assert "innermost frame: destroy_process_group (distributed_c10d.py:2184) at " in last and last.endswith(":2")


@pytest.mark.parametrize(
    "text",
    [
        "torch._dynamo.exc.UserError: Could not guard on data-dependent expression Eq(u0, 1) (unhinted: Eq(u0, 1)).",
        "Tried to use data-dependent value in the subsequent computation. This can happen when we encounter unbounded",
        "torch._dynamo.exc.UserError: Constraints violated (vlen5)! For more information, run with TORCH_LOGS=dynamic",
    ],
)
def test_a_trace_that_cannot_keep_a_size_dynamic(tmp_path, text):
    assert triage_json.triage(tmp_path, text + "\n")["first"]["signature"] == "torch-compile-dynamic-shape"


def test_a_bare_exception_after_a_process_prefix_is_an_error_line(tmp_path):
    data = triage_json.triage(
        tmp_path, "(EngineCore_DP3 pid=34912)     assert x\n(EngineCore_DP3 pid=34912) AssertionError\n"
    )
    assert data["first"]["where"].endswith(":2")


def test_pytorchs_cuda_initialization_warning_is_no_failure(tmp_path):
    """torch.cuda.is_available() on a machine without a usable GPU warns and the program goes on."""
    text = (
        "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:118: UserWarning: CUDA initialization: CUDA driver"
        " initialization failed, you might not have a CUDA gpu. (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)\n"
    )
    assert triage_json.triage(tmp_path, text)["status"] == "clean"


def test_a_dead_vllm_engine_gives_way_to_the_error_that_ended_it(tmp_path):
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.\n"
    )
    data = triage_json.triage(tmp_path, text)
    assert data["first"]["signature"] == "cuda-oom" and any("loop dead" in t["summary"] for t in data["then"])


def test_an_exit_barrier_wait_alone_is_a_symptom(tmp_path):
    text = "torch.distributed.DistBackendError: Error waiting on exit barrier. Elapsed: 300.0 seconds\n"
    data = triage_json.triage(tmp_path, text)
    assert data["status"] == "unclassified" and data["first"]["signature"] == "elastic-exit-barrier"


def test_a_timeout_by_nccl_work_numbers_alone_is_the_watchdogs_timeout(tmp_path):
    text = (
        "[rank3]:[E1203 10:00:00.000 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 3] Timeout at NCCL"
        " work: 1234, last enqueued NCCL work: 1235, last completed NCCL work: 1233.\n"
    )
    data = triage_json.triage(tmp_path, text)
    assert data["status"] == "unclassified" and data["first"]["signature"] == "watchdog-timeout-work"
    assert "NCCL work 1234" in data["symptom"]["says"]


def test_a_compilers_error_line_is_an_error_line(tmp_path):
    data = triage_json.triage(
        tmp_path, "csrc/adam/multi_tensor_adam.cu:42:5: error: use of undeclared identifier 'free'\n"
    )
    assert data["status"] == "unclassified" and data["first"]["where"].endswith(":1")


def test_hydras_failed_job_line_alone_is_a_failure_not_a_clean_run(tmp_path):
    text = (
        "Error executing job with overrides: ['algorithm.adv_estimator=grpo', 'trainer.nnodes=2']\n"
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n"
    )
    data = triage_json.triage(tmp_path, text)
    assert data["status"] == "unclassified" and data["first"]["signature"] == "hydra-job-failed"


def test_hydras_failed_job_line_gives_way_to_the_exception_after_it(tmp_path):
    text = (
        "Error executing job with overrides: ['trainer.nnodes=2']\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    assert triage_json.triage(tmp_path, text)["first"]["signature"] == "cuda-oom"


def test_pythons_lower_case_socket_exceptions_are_error_lines(tmp_path):
    data = triage_json.triage(tmp_path, "socket.timeout: timed out\n")
    assert data["status"] == "unclassified" and data["first"]["where"].endswith(":1")
