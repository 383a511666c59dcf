"""Triage of what stops a job in its setup: images without a program or driver, /dev/shm, foreign connections to
NCCL's sockets, pasted NCCL lines, and a first collective that never completed.

The lines are in the formats their programs print (bash, runc via Go's os/exec, rdma-core's libibverbs, Ray's
services.py, NCCL's socket.cc and net_ib.cc, PyTorch's watchdog: cited in signatures.yaml and classes.yaml).
"""

from __future__ import annotations

import json

from ncclgen.triage import run


def triage(tmp_path, text: str) -> dict:
    log = tmp_path / "job.out"
    log.write_text(text)
    out, code = run.triage([str(log)], fmt="json")
    data = json.loads(out)
    data["_code"] = code
    return data


def test_a_program_run_by_a_path_that_is_not_there_is_the_cause(tmp_path):
    log = "/bin/bash: line 1: /usr/sbin/sshd: No such file or directory\n[ERROR] Job nccl-test failed: no result\n"
    data = triage(tmp_path, log)
    assert data["first"]["signature"] == "command-not-found" and data["first"]["where"].endswith(":1")
    other = triage(tmp_path, "cat: results.txt: No such file or directory\n")  # another program's missing file
    assert not other["notes"] and other["status"] == "clean"


def test_a_container_command_missing_from_its_image_is_a_root(tmp_path):
    line = 'runc create failed: unable to start container process: exec: "sshd": executable file not found in $PATH\n'
    data = triage(tmp_path, line)
    assert data["first"]["signature"] == "container-exec-missing" and "(sshd)" in data["cause"]


def test_rdma_device_without_its_user_space_driver_explains_the_nccl_failure(tmp_path):
    log = (
        "libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs0\n"
        "ip-1: Test NCCL failure common.cu:775 'internal error'\n"
    )
    data = triage(tmp_path, log)
    assert data["first"]["signature"] == "ibverbs-no-provider" and data["first"]["where"].endswith(":1")


def test_ray_s_small_shm_warning_is_the_first_sign_of_nccl_s_shm_failure(tmp_path):
    log = (
        "WARNING services.py:1996 -- WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm "
        "has only 67108864 bytes available. This will harm performance!\n"
        "pod-1:1:1 [0] misc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-H1dBqY to 9637892 bytes\n"
    )
    data = triage(tmp_path, log)
    assert data["first"]["signature"] == "ray-shm-small" and data["first"]["where"].endswith(":1")
    oom = triage(
        tmp_path,
        log.splitlines(keepends=True)[0] + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB\n",
    )
    assert oom["first"]["signature"] == "cuda-oom"  # a small /dev/shm does not explain a GPU out of memory


def test_a_foreign_connection_to_nccl_s_socket_is_decoded(tmp_path):
    line = "h:1:2 [0] misc/socket.cc:484 NCCL WARN socketFinalizeAccept: wrong magic 74656d2f20544547 != 7970663b906d70b9\n"
    data = triage(tmp_path, line + "RuntimeError: NCCL error: remote process exited or there was a network error\n")
    assert data["first"]["signature"] == "socket-foreign-connection" and "'GET /met'" in data["cause"]


def test_a_pasted_warn_line_without_nccl_s_prefix_is_read(tmp_path):
    data = triage(tmp_path, "WARN NET/IB: read failed in ncclIbRoceGetVersionNum: Invalid argument\n")
    assert data["first"]["signature"] == "roce-gid-sysfs"
    assert data["first"]["nccl_source"].startswith("NVIDIA/nccl src/transport/net_ib/")


def test_timeouts_all_at_the_first_collective_say_no_data_ever_passed(tmp_path):
    line = (
        "[rank1]:[E918 23:18:00.308397639 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum={seq}, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600023 "
        "milliseconds before timing out.\n"
    )
    assert "NCCL_P2P_DISABLE=1" in triage(tmp_path, line.format(seq=1))["hang"]["collect_next"]
    assert "SeqNum=1" not in triage(tmp_path, line.format(seq=812))["hang"]["collect_next"]
