"""Line forms the held-out rounds (sessions 39 to 41) found unread, one table each: a line or a few, as the sources
print them, and the entry that names its cause (or, for a line that only shares a root's words, the one it is not).
A rule that regresses makes a row fail."""

from __future__ import annotations

import pytest
import triage_json

# a root line each, as its source prints it
ROOTS = [
    ("RuntimeError: No CUDA GPUs are available", "no-cuda-gpus"),
    (
        "ConnectionError: Could not find any running Ray instance. Please specify the one to connect to by setting"
        " `--address` flag or `RAY_ADDRESS` environment variable.",
        "ray-no-running-instance",
    ),
    (
        "NotImplementedError: Could not run 'aten::empty_strided' with arguments from the 'CUDA' backend. This could"
        " be because the operator doesn't exist for this backend",
        "aten-op-no-backend-kernel",
    ),
    ("RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.", "cuda-driver-init-failed"),
    (
        "ImportError: /usr/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by"
        " /opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_python.so)",
        "shared-library-version-missing",
    ),
    (
        "ImportError: /opt/conda/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so:"
        " undefined symbol: _ZN3c104cuda9SetDeviceEi",
        "extension-undefined-symbol",
    ),
    (
        "ImportError: /env/lib/python3.9/site-packages/deep_ep_cpp.cpython-39-x86_64-linux-gnu.so: undefined symbol:"
        " _ZNSt15__exception_ptr13exception_ptr9_M_addrefEv",
        "libstdcxx-symbol-missing",
    ),
    ("RuntimeError: Tensors must be contiguous", "collective-noncontiguous"),
    ("ImportError: /x/libtorch_cuda.so: undefined symbol: ncclMemFree", "nccl-symbol-missing"),
    (
        "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (8).",
        "vllm-heads-not-divisible-by-tp",
    ),
    (
        "ValueError: The checkpoint you are trying to load has model type `qwen3` but Transformers does not"
        " recognize this architecture.",
        "transformers-model-type-unknown",
    ),
    (
        "ValueError: Model architectures ['Qwen3ForCausalLM'] are not supported for now. Supported architectures:",
        "vllm-architecture-unsupported",
    ),
    ("ray.exceptions.RuntimeEnvSetupError: Failed to set up runtime environment.", "ray-runtime-env-failed"),
    (
        "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
        "safetensors-bad-header",
    ),
    (
        'error: resource mapping not found for name: "grpo" namespace: "" from "STDIN": no matches for kind'
        ' "PyTorchJob" in version "kubeflow.org/v1"',
        "k8s-kind-not-served",
    ),
    (
        'Error from server (BadRequest): error when creating "dcgm-exporter.yaml": DaemonSet in version "v1" cannot'
        " be handled as a DaemonSet: json: cannot unmarshal bool into Go struct field EnvVar.value of type string",
        "k8s-apply-refused",
    ),
    (
        "Error response from daemon: client version 1.40 is too new. Maximum supported API version is 1.39",
        "docker-client-too-new",
    ),
    ("enroot-aufs2ovlfs: failed to set capabilities: Operation not permitted", "enroot-capabilities"),
    ('Error: could not select device driver "" with capabilities: [[gpu]]', "docker-no-gpu-driver"),
    ("RuntimeError: Error building extension 'fused_adam'", "torch-extension-build-failed"),
    ("nvcc fatal   : Unsupported gpu architecture 'compute_90'", "nvcc-arch-unsupported"),
    (
        "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
        "torch-extension-no-cuda-home",
    ),
    (
        "RuntimeError: The detected CUDA version (12.4) mismatches the version that was used to compile PyTorch (11.8)."
        " Please make sure to use the same CUDA versions.",
        "torch-extension-cuda-mismatch",
    ),
    ("socket.gaierror: [Errno -2] Name or service not known", "host-unresolved"),
    ("numactl: This system does not support NUMA policy", "numactl-no-numa-policy"),
    ("libnuma: Warning: cpu argument 64-127 is out of range", "numactl-cpus-not-allowed"),
    # folly's signal handler puts the fault address after the signal's name; glog's puts it after '@'
    (
        " *** Signal 11 (SIGSEGV) (0x4) received by PID 656680 (pthread TID 0x7f46) (linux TID 660884) (code: address"
        " not mapped to object), stack trace: ***",
        "process-crash",
    ),
    ("*** SIGSEGV (@0x0) received by PID 1234 (TID 0x7f00) from PID 0; stack trace: ***", "process-crash"),
    # a bind that ended the program: libuv's TCPStore, NCCL's SYSCHECK, a Rust program's io error
    (
        "torch.distributed.DistNetworkError: The server socket has failed to bind. useIpv6: false, code: -99, name:"
        " EADDRNOTAVAIL, message: address not available",
        "bind-address-not-local",
    ),
    (
        "node1:123:456 [0] misc/socket.cc:445 NCCL WARN Call to bind failed : Cannot assign requested address",
        "bind-address-not-local",
    ),
    (
        "[-]E0924 09:15:29.915414 373140 hyperactor/src/channel.rs:620] error:listen: tcp:[2401:db00::1]:0 Cannot"
        " assign requested address (os error 99)",
        "bind-address-not-local",
    ),
    (
        "RuntimeError: The server socket has failed to listen on any local network address. The server socket has"
        " failed to bind to [fe80::1]:29500 (errno: 99 - Cannot assign requested address).",
        "bind-address-not-local",
    ),
    # NVML's 'Driver Not Loaded' as the container runtime, pynvml and nvidia-smi say it; libnvidia-container's own line
    ("create failed: ... failed to initialize NVML: Driver Not Loaded", "nvml-driver-not-loaded"),
    ("pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded", "nvml-driver-not-loaded"),
    (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest"
        " NVIDIA driver is installed and running.",
        "nvml-driver-not-loaded",
    ),
    (
        "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown",
        "nvidia-container-cli-error",
    ),
    # the loader's message for a program, cut before '(required by' (the GPU Operator's release notes)
    (
        "/usr/local/nvidia/mig-manager/nvidia-mig-parted: /lib64/libc.so.6: version `GLIBC_2.32' not found",
        "shared-library-version-missing",
    ),
    # session 41: a CUDA math library's status in its caller's words (CSCS's CP2K page), cudaGetErrorString's text
    # in the CUDA samples' check (CSCS's container-engine page), Kueue's reason a Workload holds no quota
    (
        "created exception: cuSOLVER function returned error code 7 (CUSOLVER_STATUS_INTERNAL_ERROR):"
        " pika(bad_function_call)",
        "cuda-library-status",
    ),
    (
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous input.",
        "cuda-library-status",
    ),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "gpu-oom"),
    (
        "Failed to allocate device vector A (error code CUDA-capable device(s) is/are busy or unavailable)!",
        "gpu-unavailable",
    ),
    ("GPU kernel failed: an illegal memory access was encountered", "cuda-kernel-launch"),
    (
        "  Message:               couldn't assign flavors to pod set main: insufficient unused quota for memory in"
        " flavor default-flavor, 4396Mi more needed",
        "kueue-quota-pending",
    ),
    ("content-sqlite.err[0]: store: executing stmt: database or disk is full(13)", "no-space-left"),
    (
        "ray.exceptions.RaySystemError: System error: Attempting to deserialize object on a CUDA device but"
        " torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use torch.load with"
        " map_location=torch.device('cpu') to map your storages to the CPU.",
        "cuda-object-in-cpu-process",
    ),
    # PyTorch's expandable segments shared over CUDA IPC: no pidfd_getfd in the kernel, or no ptrace access to it
    (
        "RuntimeError: The kernel on this machine does not support the pidfd_getfd syscall needed to use IPC for CUDA"
        " tensors when expandable_segments:True is set.",
        "cuda-ipc-pidfd",
    ),
    ("(MegatronPolicyWorkerBase pid=51155) RuntimeError: pidfd_getfd: Operation not permitted", "cuda-ipc-pidfd"),
    # NCCL 2.32's RAS diagnostics (texts of its released libnccl.so.2, values filled in)
    (
        "n1:1234 NCCL DIAG Xid 79 detected on GPU 0000:18:00.0 on host n1. The NVIDIA Xid catalog recommends"
        " resetting the affected GPU.",
        "gpu-hardware",
    ),
    (
        "n1:1234 NCCL DIAG ECC: uncorrected volatile errors on rank(s) 5 (worst=2) across 8 ranks in comm 0x1",
        "gpu-hardware",
    ),
    ("n1:1234 NCCL DIAG NVLink: inactive link(s) on rank(s) 3 across 8 ranks in comm 0x1", "fabric-manager"),
    # Ascend's HCCL at communicator set-up (hicann/hccl's fault-diagnosis pages)
    (
        "[ERROR] HCCL(925892,alltoall_test):2025-10-28-16:34:59.634.432 [sal.cc:501] [925892][InitGroupStage][EnvConfig]"
        "set ifname to [abc] by HCCL_SOCKET_IFNAME, but not found in the environment, ifnames in the environment is as follows",
        "hccl-ifname-missing",
    ),
    (
        "[ERROR] HCCL(3626636,t):2025-11-21-13:18:47.639.860 [hccl_socket.cc:110] [3626636][InitChannelStage][RanktableDetect]"
        " socket type[2], listen on ip[192.168.1.100%enp53s0f2] and specific port[60000] fail.",
        "hccl-root-port-bind",
    ),
    (
        "[ERROR] HCCL(1041081,t):2025-11-21-01:20:01.624.966 [topoinfo_exchange_server.cc:314] [1041362][InitGroupStage]"
        "[RanktableDetect]topo exchange server get socket timeout! timeout[120 s]",
        "hccl-ranks-missing-at-init",
    ),
    (
        "EI0005: 2024-04-24-06:32:27.781.599 The arguments for collective communication are inconsistent between"
        " ranks:parameter count, local end 16512, remote end 8320",
        "hccl-arguments-differ",
    ),
    ("CSAN detected a possible data race on tensor with data pointer 139719969079296", "cuda-stream-data-race"),
    # GPU health reports (stas00/ml-engineering's debug page): nvidia-smi -q's counts, dcgmi diag's table
    ("        SRAM Uncorrectable            : 1", "gpu-ecc-uncorrectable-count"),
    ("        Pending                           : Yes", "gpu-ecc-uncorrectable-count"),
    ("        Remapping Failure Occurred        : Yes", "gpu-ecc-uncorrectable-count"),
    ("|                           | Fail - GPU: 0                                  |", "dcgm-diag-failed"),
    ("| Error                     | GPU 3 has uncorrectable memory errors and row  |", "dcgm-diag-error"),
    ("    message: 'couldn''t assign flavors to pod set main: insufficient quota for cpu", "kueue-quota-pending"),
]


@pytest.mark.parametrize("text, sig", ROOTS)
def test_a_root_line_names_its_cause(tmp_path, text, sig):
    data = triage_json.triage(tmp_path, text + "\n")
    assert data["status"] == "cause" and data["first"]["signature"] == sig


# lines that share a root's key words but not its cause: a device feature (not a backend's collective), a store key
# (not an operator), an object that is not there (not a refused request)
NOT_ROOTS = [
    ("RuntimeError: backend 'cuda' does not support precision 'bf16'", "backend-op-unsupported"),
    ("RuntimeError: key rank3 does not exist in the store", "torch-extension-ops-missing"),
    ('Error from server (NotFound): pods "grpo-worker-0" not found', "k8s-apply-refused"),
    # a status that reports success, a CUDA error text in a run's own report of what it checks for
    ("cublas returned CUBLAS_STATUS_SUCCESS", "cuda-library-status"),
    ("checking that no illegal memory access was encountered", "cuda-error-text"),
    # the diagnostics' healthy reports
    (
        "n1:1234 NCCL DIAG Xid 43 detected on GPU 0000:18:00.0 on host n1. No user action or further investigation is"
        " required for this Xid.",
        "gpu-hardware",
    ),
    (
        "n1:1:1 [0] NCCL INFO NVLink: 18 links per GPU, all active at consistent speed across 8 ranks in comm 0x1",
        "fabric-manager",
    ),
    # a healthy GPU's report: zero counts, nothing pending
    ("        DRAM Uncorrectable            : 0", "gpu-ecc-uncorrectable-count"),
    ("        Pending                           : No", "gpu-ecc-uncorrectable-count"),
    ("        Remapping Failure Occurred        : No", "gpu-ecc-uncorrectable-count"),
    ("| GPU Memory                | Pass - GPUs: 0, 1, 2, 3                        |", "dcgm-diag-failed"),
    ("| Error          | 0              |", "dcgm-diag-error"),  # another tool's table of counts
]


@pytest.mark.parametrize("text, sig", NOT_ROOTS)
def test_a_line_that_shares_a_roots_words_is_not_that_root(tmp_path, text, sig):
    data = triage_json.triage(tmp_path, text + "\n")
    assert (data.get("first") or {}).get("signature") != sig


# logs of a few lines, the entry that names the cause and the line it names
FORMS = [
    # CPython's message is a triple-quoted string: 'RuntimeError:' alone, then the sentence over several lines
    (
        "RuntimeError:\n"
        "        An attempt has been made to start a new process before the\n"
        "        current process has finished its bootstrapping phase.\n",
        "spawn-main-guard",
        1,
    ),
    # vLLM's troubleshooting page: pdb in its engine's subprocess quits at once; bdb raises BdbQuit with no message
    (
        '  File "/usr/lib/python3.12/bdb.py", line 125, in dispatch_line\n'
        "    if self.quitting: raise BdbQuit\n"
        "bdb.BdbQuit\n",
        "debugger-breakpoint",
        3,
    ),
    # NCSA Delta's preemption page: slurmstepd cancels the step, signals its tasks and kills them after KillWait;
    # srun's 'task 0: Killed' is the cancel's aftermath, not a kill of its own (an OOM kill, a person's kill -9)
    (
        "step 1\n"
        "slurmstepd: error: *** STEP 608.0 ON gpub003 CANCELLED AT 2023-09-15T12:22:07 ***\n"
        "The script received SIGTERM\n"
        "srun: error: gpub003: task 0: Killed\n",
        "slurm-cancelled",
        2,
    ),
    ("step 1\nsrun: error: gpub003: task 0: Killed\n", "sigkill", 2),
    # vLLM's engine died, then its client failed on what it left (an empty progress bar): the engine is the cause
    (
        "ERROR 05-12 11:36:01 [core_client.py:704] Engine core proc EngineCore_DP0 died unexpectedly, shutting down"
        " client.\n"
        "Traceback (most recent call last):\n"
        '  File "/home/u/run.py", line 9, in <module>\n'
        "    llm.generate(p)\n"
        "ZeroDivisionError: division by zero\n",
        "vllm-engine-core-died",
        1,
    ),
    # NCCL's INFO line that the ranks' NIC counts differ comes before the WARN it leads to (v2.30.7-1 init.cc:1319)
    (
        "n1:1:1 [0] NCCL INFO Local Net device counts across ranks: min 1 max 2\n"
        "n1:1:1 [0] NCCL INFO Rank 1 has 1 local Net devices (max 2).\n"
        "n1:1:1 [0] init.cc:1339 NCCL WARN Detected mixed local Net device counts across ranks (min 1, max 2). Set"
        " NCCL_IGNORE_NET_MISMATCH=1 to continue.\n",
        "nccl-net-counts-differ",
        1,
    ),
]


# suspects that are only a note on a run that went on: equal counts are no note at all
@pytest.mark.parametrize(
    "log, note",
    [
        ("n1:1:1 [0] NCCL INFO Local Net device counts across ranks: min 1 max 2\n", "nccl-net-counts-differ"),
        ("srun: Job step creation still disabled, retrying\nsrun: Job step created\n", "slurm-step-waits"),
        (
            "Demands:\n {'CPU': 1.0} * 1, {'GPU': 2.0} * 1 (PACK): 1+ pending placement groups\n",
            "ray-status-pending-pg",
        ),
        # vllm-ascend's install page: the engine's own shutdown, then its client's line, after a run that worked
        (
            "(EngineCore pid=970) INFO 05-12 11:36:00 [core.py:1224] Shutdown complete\n"
            "ERROR 05-12 11:36:01 [core_client.py:704] Engine core proc EngineCore died unexpectedly, shutting down"
            " client.\n",
            "vllm-engine-core-died",
        ),
        ("n1:1:1 [0] NCCL INFO Local Net device counts across ranks: min 2 max 2\n", None),
    ],
)
def test_a_suspect_alone_is_a_note(tmp_path, log, note):
    data = triage_json.triage(tmp_path, log)
    assert data["status"] == "clean"
    assert [n["class"] for n in data["notes"]] == ([note] if note else [])


@pytest.mark.parametrize("log, sig, line", FORMS)
def test_a_form_of_a_few_lines_names_its_cause_at_its_line(tmp_path, log, sig, line):
    data = triage_json.triage(tmp_path, log)
    assert data["first"]["signature"] == sig and data["first"]["where"].endswith(f":{line}")


def test_a_log_that_ends_while_a_pytorch_extension_waits_for_its_lock(tmp_path):
    """MindSpeed's FAQ: every rank's last line is cpp_extension's 'Using ... as PyTorch extensions root...' (a stale
    lock left by a killed build); a run that goes on to build or load the extension is clean."""
    using = "Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n"
    data = triage_json.triage(tmp_path, "step 0\n" + using * 4)
    assert data["status"] == "unfinished" and data["first"]["signature"] == "torch-extension-lock-wait"
    assert "/root/.cache/torch_extensions/py310_cu121" in data["cause"] and "TORCH_EXTENSIONS_DIR" in data["fix"]
    went_on = using + "Loading extension module fused_adam...\nstep 1 loss 2.0\n"
    assert triage_json.triage(tmp_path, went_on)["status"] == "clean"


def test_an_openmp_runtime_s_oversubscription_warning_is_a_slow_run(tmp_path):
    """OLCF's Crusher guide: two OpenMP threads per rank on srun's default one CPU per task; no error, a slow run."""
    warn = (
        "WARNING: Requested total thread count and/or thread affinity may result in\n"
        "oversubscription of available CPU resources!  Performance may be degraded.\n"
        "Explicitly set OMP_WAIT_POLICY=PASSIVE or ACTIVE to suppress this message.\n"
    )
    data = triage_json.triage(tmp_path, "$ srun -N1 -n2 ./hello_mpi_omp\n" + warn + "MPI 000 - OMP 000 - HWT 001\n")
    assert data["status"] == "slow" and data["_code"] == 0
    assert data["first"]["signature"] == "cpu-oversubscribed" and data["first"]["where"].endswith(":2")
    assert "--cpus-per-task" in data["fix"]
