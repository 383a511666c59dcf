"""The program's own exception (ncclgen/triage/program.py): a Python exception under its traceback, raised in the
job's code or a library's, is named with whose code raised it; exceptions that report the environment stay
unclassified."""

from __future__ import annotations

import pytest
import triage_json

SITE = "/env/lib/python3.11/site-packages"


def traceback(inner: str, exc: str, outer: str = "/home/u/train.py") -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "{outer}", line 40, in <module>\n'
        "    main()\n"
        f'  File "{inner}", line 12, in step\n'
        "    do()\n"
        f"{exc}\n"
    )


def test_a_library_s_exception_names_the_library_and_what_to_check(tmp_path):
    """verl#772: vLLM's code raised on a numpy array verl passed it."""
    log = traceback(f"{SITE}/vllm/v1/request.py", "AttributeError: 'numpy.ndarray' object has no attribute 'append'")
    data = triage_json.triage(tmp_path, log)
    assert (data["status"], data["_code"]) == ("program", 1)
    assert data["program"] == {
        "type": "AttributeError",
        "owner": "vllm",
        "raised_in": f"{SITE}/vllm/v1/request.py:12 in step",
        "called_from": None,
        "named_by": "type",
    }
    assert data["cause"].startswith(f"the program failed on its own: AttributeError raised in vllm's code ({SITE}/")
    assert "the installed vllm is the release" in data["fix"]
    assert data["first"]["where"].endswith(":6")


def test_the_job_s_own_script_is_named_by_its_path(tmp_path):
    data = triage_json.triage(tmp_path, traceback("/home/u/model.py", "KeyError: 'pixel_values'"))
    assert data["status"] == "program" and data["program"]["owner"] is None
    assert "KeyError raised in /home/u/model.py:12 in step;" in data["cause"]
    assert "the installed" not in data["fix"]  # no package to check the release of


def test_an_egg_s_folder_is_not_the_package_name(tmp_path):
    path = f"{SITE}/deep_ep-1.2.1+309785a-py3.12-linux-x86_64.egg/deep_ep/buffer.py"
    assert triage_json.triage(tmp_path, traceback(path, "ValueError: bad"))["program"]["owner"] == "deep_ep"


def test_an_exception_raised_in_pytorch_names_the_caller_s_package(tmp_path):
    log = (
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/deepspeed/runtime/engine.py", line 9, in step\n'
        "    x()\n"
        f'  File "{SITE}/torch/_utils.py", line 571, in _flatten_dense_tensors\n'
        "    y()\n"
        "ValueError: torch.cat(): expected a non-empty list of Tensors\n"
    )
    data = triage_json.triage(tmp_path, log)
    assert data["program"]["owner"] == "deepspeed"
    assert f"on a call from deepspeed's code ({SITE}/deepspeed/runtime/engine.py:9 in step)" in data["cause"]


@pytest.mark.parametrize(
    "inner, exc",
    [
        # the environment, not the program: the OS, the network, memory, TLS, Ray's and PyTorch's runtimes
        ("/home/u/a.py", "ConnectionRefusedError: [Errno 111] Connection refused"),
        ("/usr/lib/python3.11/ssl.py", "ssl.SSLError: [SSL: TLSV1_ALERT_INTERNAL_ERROR] tlsv1 alert internal error"),
        ("/home/u/a.py", "PermissionError: [Errno 13] Permission denied: '/data'"),
        ("/home/u/a.py", "MemoryError"),
        (f"{SITE}/ray/_private/worker.py", "ray.exceptions.RayActorError: The actor died unexpectedly"),
        (f"{SITE}/torch/distributed/rendezvous.py", "torch.distributed.DistNetworkError: failed to connect"),
        # a RuntimeError inside PyTorch or a device back end reports runtime faults as often as wrong arguments
        (f"{SITE}/torch/nn/functional.py", "RuntimeError: Expected all tensors to be on the same device"),
        (f"{SITE}/torch_npu/npu/utils.py", "RuntimeError: SetDevice: NPU function error, error code is 107001"),
        # a message that reports a fault of the run whatever the type
        (f"{SITE}/deep_ep/buffer.py", "RuntimeError: DeepEP error: timeout (dispatch CPU)"),
    ],
)
def test_an_exception_that_reports_the_environment_stays_unclassified(tmp_path, inner, exc):
    data = triage_json.triage(tmp_path, traceback(inner, exc))
    assert data["status"] != "program" and "program" not in data, data.get("cause")


def test_a_path_the_job_was_given_that_is_not_there_is_the_program_s(tmp_path):
    """FileNotFoundError is OSError's, but names the job's input: a relative path on another node (verl#4029)."""
    data = triage_json.triage(
        tmp_path, traceback("/home/u/a.py", "FileNotFoundError: [Errno 2] No such file: 'x.yaml'")
    )
    assert data["status"] == "program" and data["program"]["type"] == "FileNotFoundError"


def test_with_no_frame_only_the_types_of_the_program_s_own_logic(tmp_path):
    """A traceback cut from the excerpt leaves the exception line alone: a KeyError or a ValueError is still the
    program's, a RuntimeError says nothing of whose it is, and prose that names an exception is no exception line."""
    data = triage_json.triage(tmp_path, "step 3\n[rank0]: ValueError: bad value\n")
    assert data["status"] == "program" and data["program"]["raised_in"] is None
    assert "none of its traceback's frames" in data["cause"] and data["fix"].startswith(
        "find the exception's traceback"
    )
    assert triage_json.triage(tmp_path, "step 3\nRuntimeError: bad value\n")["status"] == "unclassified"
    assert triage_json.triage(tmp_path, "ERROR: the step raised ValueError: bad\n").get("program") is None


def test_the_text_report_says_the_cause_not_unclassified(tmp_path):
    from ncclgen.triage import run

    log = tmp_path / "job.out"
    log.write_text(traceback(f"{SITE}/vllm/v1/request.py", "AttributeError: x"))
    text, code = run.triage([str(log)])
    assert text.startswith("the program's own exception: ") and code == 1
    assert "cause: the program failed on its own: AttributeError raised in vllm's code" in text
    assert "not classified" not in text


def test_frames_a_paste_left_without_indentation_or_with_ray_s_colour_codes(tmp_path):
    """A paste may drop a frame's indentation (torchtitan#1541) or keep Ray's colour codes around its prefix with
    or without the escape (SkyRL#1016): the frame still places the exception."""
    bare = 'File "/app/torchtitan/distributed/utils.py", line 423, in _clip_grad_norm_with_ep\n    ).full_tensor()\n'
    data = triage_json.triage(tmp_path, bare + "AttributeError: 'Tensor' object has no attribute 'full_tensor'\n")
    assert data["first"]["raised_in"] == "/app/torchtitan/distributed/utils.py:423 in _clip_grad_norm_with_ep"
    for esc in ("\x1b", ""):
        pre = f"{esc}[36m(skyrl_entrypoint pid=3675949){esc}[0m "
        log = f'{pre}  File "{SITE}/vllm/api_server.py", line 9, in build_app\n{pre}    x\n{pre}AttributeError: no\n'
        assert triage_json.triage(tmp_path, log)["program"]["owner"] == "vllm"


@pytest.mark.parametrize(
    "line, exc",
    [
        # verl#3891: a tool's failure logged as str(exc), the type left out (Python 3.10's wording, then 3.11's)
        (
            "ERROR:2025-10-23 06:22:11,371:[MCPBaseTool] Execution failed: local variable 'call_tool_result'"
            " referenced before assignment",
            "UnboundLocalError",
        ),
        (
            "ERROR tool failed: cannot access local variable 'result' where it is not associated with a value",
            "UnboundLocalError",
        ),
        ("ERROR worker step failed: 'NoneType' object has no attribute 'generate'", "AttributeError"),
        ("ERROR reward failed: name 'np' is not defined", "NameError"),
        ("ERROR rollout failed: generate() got an unexpected keyword argument 'sampling_params'", "TypeError"),
    ],
)
def test_an_error_line_with_cpython_s_message_but_not_its_type_is_the_program_s(tmp_path, line, exc):
    data = triage_json.triage(tmp_path, line + "\n")
    assert data["status"] == "program" and data["program"]["type"] == exc
    assert data["program"]["named_by"] == "message" and "named by its message" in data["cause"]
    assert any("Python/ceval.c" in s for s in data["sources"])


def test_a_message_form_is_no_failure_alone_and_no_program_s_in_a_fault(tmp_path):
    """An INFO line quoting the message is no error line; an error about a connection stays unclassified."""
    assert triage_json.triage(tmp_path, "INFO retrying: name 'np' is not defined\n")["status"] == "clean"
    fault = "ERROR connection to peer failed: 'NoneType' object has no attribute 'recv'\n"
    assert triage_json.triage(tmp_path, fault)["status"] == "unclassified"
