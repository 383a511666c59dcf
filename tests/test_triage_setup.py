"""Triage of what stops a job in its setup: images without a program or driver, /dev/shm, foreign connections to
NCCL's sockets, pasted NCCL lines, and a first collective that never completed.

The lines are in the formats their programs print (bash, runc via Go's os/exec, rdma-core's libibverbs, Ray's
services.py, NCCL's socket.cc and net_ib.cc, PyTorch's watchdog: cited in signatures.yaml and classes.yaml).
"""

from __future__ import annotations

import json

from triage_json import triage


def named(tmp_path, cases: dict[str, str], status: str | None = None) -> None:
    """Each log (a line or two) is read as its signature names it, at the given status when one is given."""
    for text, sid in cases.items():
        data = triage(tmp_path, text)
        assert data.get("first", {}).get("signature") == sid, (text, data.get("first"))
        assert status is None or data["status"] == status, (text, data["status"])


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


def test_slurm_and_container_start_failures_name_their_own_line(tmp_path):
    cases = {
        "srun: fatal: Invalid user id: 1046\n": "slurm-fatal",
        "srun: error: Task launch for 1.0 failed on node n1: Job credential expired\n": "slurm-credential",
        "[2015-09-14T06:44:37.084] error: Munge decode failed: Expired credential\n": "slurm-credential",
        "slurmstepd: error: pyxis: container start failed with error code: 1\n"
        "slurmstepd: error: pyxis:     enroot-mount: failed to mount: /home/u/data at /tmp/x/data: Permission denied\n": "enroot-mount-failed",
        "nvidia-container-cli: ldcache error: process /usr/sbin/ldconfig.real failed with error code: 1\n"
        "[ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with return code 1\n": "nvidia-container-cli-error",
        "n1: Test CUDA failure common.cu:1045 'unknown error'\n": "cuda-unknown",
    }
    named(tmp_path, cases, status="cause")


def test_pmix_noise_of_a_job_that_completed_is_no_failure(tmp_path):
    log = "[nid1:82] UNPACK-PMIX-VALUE: UNSUPPORTED TYPE 104\n[nid2:13] PMIX ERROR: OUT-OF-RESOURCE in file base/bfrop_base_unpack.c at line 750\n"
    assert triage(tmp_path, log)["status"] == "clean"


def test_a_net_plugin_s_own_warning_is_no_failure_alone(tmp_path):
    """A WARN from a file NCCL does not have is the plugin's: never credited to NVIDIA/nccl, a suspect."""
    line = "h1:4300:4325 [0] net_fastsocket.cc:785 NCCL WARN Maximum retry reached for accept 3.\n"
    data = triage(tmp_path, line + "h1:4300:4325 [0] NCCL INFO NET/FastSocket : Connected after 1000 retries.\n")
    assert data["status"] == "clean" and data["lines_kept"] == 1
    assert "NVIDIA/nccl" not in json.dumps(data)


def test_ib_asked_for_and_not_found_is_a_slow_run(tmp_path):
    log = (
        "n13:377:388 [0] NCCL INFO NET/IB : No device found.\n"
        "n13:377:388 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.\n"
        "n13:377:388 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
    )
    data = triage(tmp_path, log)
    assert data["status"] == "slow" and data["first"]["signature"] == "net-socket-fallback"
    assert (
        triage(
            tmp_path, log.replace("NCCL_IB_DISABLE set by environment to 0.", "NCCL_DEBUG set by environment to INFO.")
        )["status"]
        != "slow"
    )


def test_mid_run_failures(tmp_path):
    cases = {
        "[ERROR] [launch.py:434:sigkill_handler] ['python', 'train.py'] exits with return code = -9\n": "sigkill",
        "RuntimeError: DataLoader worker (pid 123140) is killed by signal: Killed\n": "dataloader-worker-killed",
        "RuntimeError: write(): fd 29 failed with Input/output error\n": "tensor-write-failed",
        "OSError: [Errno 122] Disk quota exceeded: '/ckpt/step_100'\n": "no-space-left",
    }
    named(tmp_path, cases)
    stack = "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<long>) + 0x1d2 (0x1 in libtorch_cuda.so)\n"
    data = triage(tmp_path, stack)
    assert data["status"] == "unclassified" and data["hang"]["last"] == [
        "rank ? ended by the NCCL watchdog (a collective timed out)"
    ]
    cuda = triage(tmp_path, "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n")
    assert "CUDA call inside NCCL" in cuda["symptom"]["says"]


def test_hang_and_end_of_run_evidence(tmp_path):
    stall = "[0]<stderr>:W stall_inspector.cc:105] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds.\n"
    assert triage(tmp_path, stall)["status"] == "unclassified"
    old = "h1:1:1 [0] NCCL INFO NCCL version 2.3.5+cuda9.0\nh1:1:1 [0] NCCL INFO Using internal Network Socket\n"
    assert triage(tmp_path, old)["status"] == "clean"  # NCCL before 2.4.2 never prints Init COMPLETE
    assert triage(tmp_path, "h1:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n")["status"] == "unfinished"
    done = triage(
        tmp_path, "  8589934592  2147483648  float  sum  -1  44734  192.02  360.04  0\n# Out of bounds values : 0 OK\n"
    )
    assert done["status"] == "clean" and done["run_end_seen"]
    bench = "#  Rank  0 Group  0 Pid  28329 on   SAIS1020 device  0 [0x01] A100\n#  Rank  1 Group  0 Pid  28329 on   SAIS1020 device  1 [0x41] A100\n"
    assert (
        "NCCL_P2P_DISABLE=1"
        in triage(tmp_path, bench + "SAIS1020:1:1 [0] NCCL INFO Channel 00/02 :    0   1\n")["hang"]["collect_next"]
    )


def test_nccl_lines_joined_into_one_are_read_one_by_one(tmp_path):
    joined = (
        "[0] NCCL INFO NCCL_IB_DISABLE set by environment to 0. [0] NCCL INFO NET/IB : No device found. "
        "[0] NCCL INFO NET/Socket : Using [0]eth0:10.47.14.218<0> [0] NCCL INFO Using network Socket\n"
    )
    data = triage(tmp_path, joined)
    assert data["status"] == "slow" and data["first"]["line"] == "[0] NCCL INFO NET/IB : No device found."


def test_a_cuda_library_nccl_could_not_load_is_a_note(tmp_path):
    line = "h:1:1 [0] misc/cudawrap.cc:90 NCCL WARN Failed to find CUDA library in /usr/local/cuda (NCCL_CUDA_PATH=/usr/local/cuda)\n"
    data = triage(tmp_path, line)
    assert "first" not in data and data["notes"][0]["class"] == "cuda-lib-path"


def test_crash_banners_and_fabric_lines(tmp_path):
    cases = {
        "[rtptest1621:405884] *** Process received signal ***\n": "process-crash",
        "!!!!!!! Segfault encountered !!!!!!!\n": "process-crash",
        "/src/bootstrap_uid.cpp:bootstrap_net_recv:99: Message truncated : received 36 bytes instead of 16\n": "nvshmem-bootstrap-truncated",
        "[Oct 31 2023 21:11:20] [ERROR] [tid 527118] failed to find the GPU handle 1276 in the multicast team request setup 42.\n": "fabric-manager-multicast-team",
        "h: :41367:41367 [1] enqueue.cc:422 NCCL WARN Error : no algorithm/protocol available\n": "algo-unavailable",
        "[rank1]: NET/OFI Unable to insert remote address into address vector for device 1. RC: 0\n": "ofi-completion-error",
    }
    named(tmp_path, cases, status="cause")
    tune = triage(
        tmp_path, "2022-11-15 19:26:36,618\tERROR tune.py:773 -- Trials did not complete: [TorchTrainer_96bfe_00000]\n"
    )
    assert tune["status"] == "unclassified" and "NCCL_SOCKET_IFNAME" in tune["symptom"]["says"]


def test_rl_engines_meshes_and_other_libraries_words(tmp_path):
    cases = {
        "(WorkerDict pid=1) Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::WorkerDict.generate() (pid=1, ip=10.0.0.1)\n": "ray-task-error",
        "(RayWorkerWrapper pid=4183) ERROR 06-03 23:13:39 worker_base.py:148] Error executing method start_worker_execution_loop. This might cause deadlock in distributed execution.\n": "vllm-method-failed",
        "[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp func=cu_mem_create line=103\n": "torch-memory-saver-oom",
        '[2024-01-01T00:00:00.000Z] "- - -" 0 - rbac_access_denied_matched_policy[none] - "-" 0 0 0 - "-"\n': "envoy-rbac-denied",
        "[1700000000.1] [node1:77] ib_iface.c:766 UCX  ERROR ibv_create_ah(dlid=49152 sl=0 port=1 src_path_bits=0 dgid=::ffff:10.0.0.2 flow_label=0xffffffff) failed: Invalid argument\n": "ucx-create-ah-failed",
        "W20250825 11:10:33.595331   331 util_rdma.h:547] NET/IB: read failed in ncclIbRoceGetVersionNum: Invalid argument\n": "roce-gid-sysfs",
        "CQE ERROR wr_id=3 status=12(transport retry counter exceeded) opcode=1 byte_len=0 vendor_err=0xa qp_num=0x2c10\n": "ib-completion-error-12",
        "h:1:2 [0] misc/shmutils.cc:64 NCCL WARN Error: failed to open shared memory /dev/shm/nccl-x : Permission denied\n": "shm-permission",
    }
    named(tmp_path, cases)


def test_pcie_errors_before_a_gpu_fault_are_its_cause_and_alone_are_not(tmp_path):
    aer = "pcieport 0000:00:1b.0: AER: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n"
    lost = "NVRM: Xid (PCI:0000:03:00): 79, GPU has fallen off the bus.\n"
    assert triage(tmp_path, aer + lost)["first"]["signature"] == "pcie-aer-corrected"
    assert triage(tmp_path, aer)["status"] == "clean"
    fatal = "pcieport 0000:00:1b.0: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, (Requester ID)\n"
    assert triage(tmp_path, fatal)["first"]["signature"] == "pcie-aer-uncorrected"


def test_torchrun_ddp_and_launcher_messages(tmp_path):
    wrapper = "RendezvousConnectionError: The connection to the C10d store has failed.\nTCP client failed to connect/validate to host slinky-0:29400 - Name or service not known\n"
    data = triage(tmp_path, wrapper)
    assert data["first"]["signature"] == "tcpstore-client-failed" and data["first"]["where"].endswith(":2")
    cases = {
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one.\n": "ddp-unused-parameters",
        "RuntimeError: Expected to mark a variable ready only once. This error is caused by ...\n": "ddp-ready-twice",
        "RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!\n": "no-gpu-visible",
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 3\n": "ranks-not-joined",
    }
    named(tmp_path, cases)
    hostfile = "[WARNING] [runner.py:178:fetch_hostfile] Unable to find hostfile, will proceed with training with local resources only.\n"
    assert (
        triage(tmp_path, hostfile + "RendezvousConnectionError: The connection to the C10d store has failed.\n")[
            "first"
        ]["signature"]
        == "deepspeed-no-hostfile"
    )
    record = 'ERROR:torch.distributed.elastic.multiprocessing.errors.error_handler:{\n  "message": {\n    "message": "RendezvousClosedError: ",\n'
    assert triage(tmp_path, record)["first"]["where"].endswith(":3")


def test_a_net_that_failed_to_start_before_another_took_over_is_no_failure(tmp_path):
    log = (
        "h:1:1 [0] NCCL INFO Failed to open libibverbs.so[.1]\n"
        "h:1:1 [0] NCCL INFO transport/net_ib/init.cc:370 -> 3\n"
        "h:1:1 [0] NCCL INFO Failed to initialize NET plugin IB\n"
        "h:1:1 [0] NCCL INFO Initialized NET plugin Socket\n"
        "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Destroy COMPLETE\n"
    )
    assert triage(tmp_path, log)["status"] == "clean"
    assert triage(tmp_path, log.replace(" - Destroy COMPLETE", " - Init COMPLETE"))["status"] == "unclassified"
    ecc = "RuntimeError: CUDA error: uncorrectable ECC error encountered (cudaErrorECCUncorrectable)\n"
    assert triage(tmp_path, ecc)["first"]["signature"] == "gpu-hardware"


WRAPPED = (
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any\n"
    "local network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE,\n"
    "message: address already in use\n"
)


def test_a_wrapped_exception_message_is_reported_at_its_header(tmp_path):
    """c10d's socket.cpp message wrapped by a terminal: the signature matches the second line, the error starts at
    the first (the header's message stops mid-sentence, the next line goes on in lower case)."""
    data = triage(tmp_path, WRAPPED)
    assert data["first"]["signature"] == "address-in-use" and data["first"]["where"].endswith(":1")
    assert "DistNetworkError" in data["first"]["line"]
    assert not any("more error line" in g.get("says", "") for g in data.get("then", []))
    ended = WRAPPED.replace("listen on any\n", "listen on any.\n", 1)  # a finished sentence: two messages,
    data = triage(tmp_path, ended)  # one block of error lines, reported where it starts (aftermath.lead)
    assert data["first"]["where"].endswith(":1") and data["first"]["signature"] == "address-in-use"
    apart = WRAPPED.replace("\n", "\n\n", 1)  # not the next line
    assert triage(tmp_path, apart)["first"]["where"].endswith(":3")


def test_launchers_and_schedulers_stopping_a_job_are_named(tmp_path):
    """Open MPI's help texts, srun's step refusal, the Kubernetes scheduler's and kubelet's events, and the Python,
    glibc and CUDA texts a job that never ran its ranks leaves (sources in signatures.yaml)."""
    named(
        tmp_path,
        {
            "ORTE was unable to reliably start one or more daemons.\n": "mpi-daemon-launch",
            "ORTE has lost communication with its daemon located on node:\n": "mpi-daemon-lost",
            "srun: error: Unable to create step for job 123: Invalid generic resource (gres) specification\n": "slurm-step-create",
            "  0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available\n": "k8s-unschedulable",
            "ValueError: Default process group has not been initialized, please make sure to call init_process_group.\n": "pg-not-initialized",
            "FileNotFoundError: [Errno 2] No such file or directory: '/ckpt/model.pt'\n": "file-not-found",
            "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n": "shared-library-missing",
            "RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n": "cuda-init",
            "RuntimeError: Distributed package doesn't have NCCL built in\n": "torch-without-nccl",
        },
        status="cause",
    )
    crash = triage(tmp_path, "Warning  BackOff  2m  kubelet  Back-off restarting failed container pytorch in pod w-0\n")
    assert crash["status"] == "unclassified" and crash["first"]["signature"] == "k8s-crashloop"
    assert "--previous" in crash["symptom"]["collect_next"]


def test_a_library_nccl_or_libibverbs_goes_on_without_is_no_failure(tmp_path):
    for line in (
        "gpu1:1:2 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file",
        "libibverbs: Warning: couldn't load driver 'libvmw_pvrdma-rdmav34.so': libvmw_pvrdma-rdmav34.so: cannot open shared object file",
    ):
        assert triage(tmp_path, line + "\n").get("first", {}).get("signature") != "shared-library-missing", line


def test_rl_stacks_and_slurm_steps_that_end_a_job_are_named(tmp_path):
    """vLLM's start-up memory check, Hydra refusing an override, a fork after CUDA, Slurm losing a node and an image
    that cannot be pulled: roots; the summaries that point above them are symptoms."""
    named(
        tmp_path,
        {
            "ValueError: Free memory on device (10.1/79.1 GiB) on startup is less than desired GPU memory utilization (0.9, 71.2 GiB).\n": "vllm-startup-memory",
            "hydra.errors.ConfigCompositionException: Could not override 'actor_rollout_ref.rollout.mode'.\n": "hydra-override",
            "omegaconf.errors.ConfigAttributeError: Key 'foo' is not in struct\n": "hydra-override",
            "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method\n": "cuda-fork",
            "srun: error: Node failure on node3\n": "slurm-node-failure",
            'Failed to pull image "nvcr.io/nvidia/pytorch:24.05-py3": rpc error: code = Unknown\n': "image-pull-failed",
        },
        status="cause",
    )
    for line, sid in {
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}": "vllm-engine-init-failed",
        "ray.exceptions.RayActorError: The actor died because of an error raised in its creation task": "ray-actor-creation-failed",
        "torch.distributed.DistNetworkError: Connection reset by peer": "tcpstore-lost",
        "slurmstepd: error: *** STEP 123.0 ON node1 CANCELLED AT 2024-05-01T10:00:00 ***": "slurm-cancelled",
    }.items():
        data = triage(tmp_path, line + "\n")
        assert (data["status"], data["first"]["signature"]) == ("unclassified", sid), line
    root_first = "ValueError: Free memory on device (1.0/79.1 GiB) on startup is less than desired GPU memory utilization (0.9, 71.2 GiB).\nRuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
    assert triage(tmp_path, root_first)["first"]["signature"] == "vllm-startup-memory"


def test_signals_torchrun_reports_are_read_by_signal(tmp_path):
    """torchrun's 'Signal N (SIGxxx) received by PID': SIGBUS is /dev/shm (a root), SIGTERM the agent stopping the
    others (a symptom that gives way to the failure before it)."""
    sigbus = "message='Signal 7 (SIGBUS) received by PID 54', exitcode=-7\n"
    assert triage(tmp_path, sigbus)["first"]["signature"] == "bus-error-shm"
    term = "Signal 15 (SIGTERM) received by PID 77\n"
    data = triage(tmp_path, term)
    assert (data["status"], data["first"]["signature"]) == ("unclassified", "signal-received") and "SIGTERM" in data[
        "symptom"
    ]["says"]
    assert triage(tmp_path, sigbus + term)["first"]["signature"] == "bus-error-shm"


def test_other_stacks_launch_failures_are_named(tmp_path):
    """UCX's unreachable status and missing listener, TensorRT-LLM's world size, Open MPI's fatal block, CPython's
    spawn guard and Transformer Engine's multicast check (sources in signatures.yaml)."""
    named(
        tmp_path,
        {
            "[1638576087.22] [nid001:7382] UCXPY  DEBUG Error callback for endpoint 0x7fc1 called with status -6: Destination is unreachable\n": "ucx-unreachable",
            "[n188:468  :0]      sockcm_ep.c:151  UCX  ERROR failed to connect to 10.188.182.17:9001\n": "ucx-no-listener",
            "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp (worldConfig.cpp:90)\n": "trtllm-world-size",
            "*** An error occurred in MPI_Init_thread\n*** on a NULL communicator\n": "mpi-init-failed",
            "RuntimeError: An attempt has been made to start a new process before the current process has finished its bootstrapping phase.\n": "spawn-main-guard",
            "[rank0]: AssertionError: CUDA device, driver and/or toolkit version does not support comm+GEMM overlap with CUDA Multicast. Launch app with UB_SKIPMC=1 to try CUDA IPC instead.\n": "te-userbuffers-multicast",
        },
        status="cause",
    )


def test_an_exception_raised_without_a_message_is_an_error_line(tmp_path):
    """Lib/traceback.py prints the type alone ('[rank2]: EOFError'): a failure, not a clean log; a sentence that
    ends in a word like 'Error' elsewhere in a line is not."""
    data = triage(tmp_path, '[rank2]:   File "x.py", line 3, in f\n[rank2]:     raise EOFError\n[rank2]: EOFError\n')
    assert data["status"] == "program" and data["first"]["where"].endswith(":3")
    assert triage(tmp_path, "INFO saved 3 checkpoints without an Error\n")["status"] == "clean"


def test_nccl_cuda_text_quoted_without_its_warn_line_is_refined(tmp_path):
    """NCCL's "Cuda failure 'out of memory'" in a framework's own message: its CUDA text names the class; a library's
    line with its own source location is left to the entries that read that library."""
    named(
        tmp_path,
        {
            "ncclCommInitRank failed: Cuda failure 'out of memory'\n": "gpu-oom",
            "RuntimeError: init failed: Cuda failure 217 'peer access is not supported between these two devices'\n": "p2p-ipc",
            "ray.exceptions.OutOfDiskError: Local disk is full\n": "no-space-left",
        },
        status="cause",
    )


def test_rendezvous_waits_and_torchrun_success(tmp_path):
    """c10d's 'No socket on (HOST, PORT) is listening yet': port 0 is a root; another port a suspect (normal for a
    moment); torchrun's agent reporting its workers SUCCEEDED is the run's end."""
    wait = "[default7]:[I715 22:47:11.29 socket.cpp:872] [c10d] No socket on ({}, {}) is listening yet, will retry.\n"
    assert triage(tmp_path, wait.format("localhost", 0))["first"]["signature"] == "rdzv-port-zero"
    alone = triage(tmp_path, wait.format("node1", 29500))
    assert alone["status"] == "clean" and "node1:29500" in alone["notes"][0]["says"]
    then = (
        wait.format("node1", 29500)
        + "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.\n"
    )
    assert triage(tmp_path, then)["first"]["signature"] == "store-not-listening"
    nccl = (
        wait.format("node1", 29500)
        + "node2:1:2 [0] NCCL WARN socketStartConnect: Connect to 10.0.0.2<45123> failed : Connection refused\n"
    )
    assert triage(tmp_path, nccl)["first"]["signature"] == "socket-connect"
    done = (
        "INFO:torch.distributed.elastic.agent.server.api:Local worker group finished (SUCCEEDED). Waiting 300 seconds\n"
    )
    assert triage(tmp_path, done)["run_end_seen"] is True


def test_rollout_engines_and_hub_failures_are_named(tmp_path):
    """vLLM's prompt-length check, SGLang's CUDA graph capture, a Ray worker without the job's code, Triton's CUDA
    errors (refined by their text), the Hugging Face Hub out of reach; SGLang's sigquit summary is a symptom."""
    named(
        tmp_path,
        {
            "ValueError: The decoder prompt (length 9000) is longer than the maximum model length of 8192.\n": "vllm-prompt-too-long",
            "Exception: Capture cuda graph failed: Ninja build failed.\n": "sglang-cuda-graph",
            "Exception: Capture cuda graph failed: CUDA error: out of memory\n": "gpu-oom",
            "ray.exceptions.RaySystemError: System error: No module named 'verl'\n": "module-missing",
            "RuntimeError: Triton Error [CUDA]: device kernel image is invalid\n": "cuda-kernel-launch",
            "OSError: We couldn't connect to 'https://huggingface.co' to load this file\n": "hf-hub-unreachable",
        },
        status="cause",
    )
    data = triage(
        tmp_path, "[2025-01-01 00:00:00] Received sigquit from a child process. It usually means the child failed.\n"
    )
    assert (data["status"], data["first"]["signature"]) == ("unclassified", "sglang-child-failed")


def test_a_port_taken_inside_a_rollout_engine_is_the_engines_race(tmp_path):
    """EADDRINUSE in a vLLM worker (its executor's prefix) is engines racing for one port; elsewhere the rendezvous
    port taken (address-in-use)."""
    line = "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 32847, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n"
    worker = "(vLLMHttpServer pid=6840) (Worker pid=7181) ERROR 06-09 17:58:55 [multiproc_executor.py:852] "
    assert triage(tmp_path, worker + line)["first"]["signature"] == "engine-port-race"
    assert triage(tmp_path, line)["first"]["signature"] == "address-in-use"


def test_rocm_spellings_of_cuda_errors_are_refined_alike(tmp_path):
    """PyTorch's ROCm build says 'HIP error:' and RCCL '[FATAL ERROR]: HIP failure:' where CUDA's words stand; HIP's
    error texts are CUDA's, so the same classes apply."""
    named(
        tmp_path,
        {
            "RuntimeError: HIP error: invalid device ordinal\n": "gpu-visibility",
            "[FATAL ERROR]: HIP failure: 'invalid device function'\n": "cuda-kernel-launch",
        },
        status="cause",
    )


def test_an_ssh_login_that_fails_is_the_root_and_a_queue_pair_not_created_is_memlock(tmp_path):
    """openssh's own lines before anything of the job ran on a node; NCCL's 'Call to ibv_create_qp failed' (creating
    a queue pair pins memory)."""
    named(
        tmp_path,
        {
            "ssh: connect to host node2 port 22: Connection refused\n": "ssh-launch-failed",
            "Permission denied (publickey,password).\n": "ssh-launch-failed",
            "Host key verification failed.\n": "ssh-launch-failed",
            "machine [0] misc/ibvwrap.cu:269 WARN Call to ibv_create_qp failed\n": "ib-memreg",
        },
        status="cause",
    )
