"""Failure forms of the stacks beside PyTorch and NCCL that multi-node jobs also run on (Horovod's Gloo, JAX's
coordination service, Open MPI's mapper, oneCCL), each read by the source that prints it (the signature named in
each assertion cites it in ncclgen/data/triage/signatures.yaml)."""

from __future__ import annotations

from triage_json import triage

from ncclgen.triage import events
from ncclgen.triage.reader import Line


def _sig(text: str) -> str | None:
    ev = events.classify(Line("x.log", 1, text), 0)
    return ev.sig.id if ev is not None and ev.sig is not None else None


def test_horovods_gloo_rendezvous_timeout_in_both_releases_forms(tmp_path):
    old = "  what():  [horovod/common/gloo/http_store.cc:53] [horovod/common/gloo/http_store.cc:53] Wait timeout for key(s): 0"
    new = (
        "  what():  [/tmp/pip/horovod/common/gloo/http_store.cc:57] Wait timeout after 30 seconds for key(s): 0. "
        "You may want to increase the timeout via HOROVOD_GLOO_TIMEOUT_SECONDS"
    )
    for line in (old, new):
        assert _sig(line) == "horovod-gloo-rendezvous-timeout", line
    data = triage(tmp_path, "terminate called after throwing an instance of 'gloo::IoException'\n" + new + "\n")
    assert data["first"]["where"].endswith(":2") and "HOROVOD_GLOO_TIMEOUT_SECONDS" in data["fix"]


def test_horovods_gloo_interface_is_horovods_variable_not_gloos():
    horovod = "  what():  [enforce fail at /tmp/pip/horovod/third_party/gloo/gloo/transport/tcp/device.cc:88] ifa != nullptr. Unable to find address for: eth0"
    torch = "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. Unable to find address for: eth0"
    assert _sig(horovod) == "horovod-gloo-iface" and _sig(torch) == "gloo-interface-address"


def test_a_jax_task_that_registered_twice_ends_the_job(tmp_path):
    line = (
        "2025-04-05 18:39:10.837611: E external/xla/xla/tsl/distributed_runtime/coordination/coordination_service.cc:962] "
        "/job:jax_worker/replica:0/task:1 unexpectedly tried to connect with a different incarnation. It has likely restarted."
    )
    data = triage(tmp_path, line + "\n")
    assert data["first"]["signature"] == "jax-task-reincarnated" and "/job:jax_worker/replica:0/task:1" in data["cause"]
    assert (
        _sig(
            "RuntimeError: Unable to initialize backend 'cuda': INTERNAL: no supported devices found for platform CUDA"
        )
        == "jax-no-gpu"
    )


def test_open_mpi_with_no_free_slot_and_oneccl_without_its_provider():
    assert _sig("All nodes which are allocated for this job are already filled.") == "mpi-slots-filled"
    assert _sig("There are not enough slots available in the system to satisfy the 16") == "mpi-slots-filled"
    ccl = "2024:08:21-10:24:26:( 4456) |CCL_ERROR| atl_ofi_helper.cpp:907 atl_ofi_get_prov_list: can't create providers for name shm"
    assert _sig(ccl) == "oneccl-provider"


def test_transformer_engines_one_interface_and_an_older_libnccl_than_torchs():
    """TE's initialize_ub needs one interface name (NCCL's 'eth' prefix is none); the loader's 'undefined symbol:
    ncclX' is a libnccl older than the one torch was built against."""
    assert _sig("[rank1]: OSError: Invalid network interface: eth") == "te-ub-interface"
    line = "ImportError: /x/torch/lib/libtorch_cuda.so: undefined symbol: ncclMemFree"
    ev = events.classify(Line("x.log", 1, line), 0)
    assert (
        ev is not None
        and ev.sig is not None
        and ev.sig.id == "nccl-symbol-missing"
        and ev.groups["sym"] == "ncclMemFree"
    )
    assert _sig("ImportError: libfoo.so: undefined symbol: cudaFoo") != "nccl-symbol-missing"


JAX_REPORT = """ERROR:2026-02-06 17:06:48,122:jax._src.xla_bridge:487: Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda13.initialize()
Traceback (most recent call last):
  File "/opt/jax/jax/_src/xla_bridge.py", line 485, in discover_pjrt_plugins
    plugin_module.initialize()
RuntimeError: jaxlib/cuda/versions_helpers.cc:113: operation cuInit(0) failed: Unknown CUDA error 303; cuGetErrorName failed.
"""


def test_an_exception_a_program_logged_and_went_on_from_is_no_failure(tmp_path):
    """logging.exception's message, then the traceback under it (JAX without its GPU plugin, TorchInductor dropping an
    autotuning choice): a note or nothing, unless a failure follows; the same traceback alone is a failure."""
    data = triage(tmp_path, JAX_REPORT + "Epoch 1/5 - Loss: 0.5693\n")
    assert data["status"] == "clean" and "JAX's GPU plugin did not start (jax_plugins.xla_cuda13)" in str(data["notes"])
    later = "jax.errors.JaxRuntimeError: INTERNAL: Unable to initialize backend 'cuda': no supported devices found for platform CUDA\n"
    data = triage(tmp_path, JAX_REPORT + later)
    assert data["first"]["signature"] == "jax-plugin-init" and data["first"]["where"].endswith(":1")
    alone = JAX_REPORT.split("\n", 1)[1]  # no handled report above it: the cuInit failure is the failure
    assert triage(tmp_path, alone)["status"] in ("cause", "unclassified")
    choice = (
        "[rank0]:Exception No valid triton configs. OutOfMemoryError: out of resource: triton_flex_attention "
        "Required: 262144 Hardware limit:232448 for benchmark choice TritonTemplateCaller(x.py)\n"
        "[rank0]:Traceback (most recent call last):\n"
        '[rank0]:  File "/x/torch/_inductor/runtime/triton_heuristics.py", line 608, in _make_launchers\n'
        '[rank0]:    raise RuntimeError(f"No valid triton configs. {type(exc).__name__}: {exc}")\n'
        "[rank0]:RuntimeError: No valid triton configs. OutOfMemoryError: out of resource: triton_flex_attention\n"
        "[rank0]:Runtime error during autotuning: \n"
    )
    assert triage(tmp_path, choice + "[rank0]:step:  1  loss: 12.0\n")["status"] == "clean"
    oom = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    data = triage(tmp_path, choice + oom)
    assert data["first"]["where"].endswith(":7") and data["first"]["signature"] != "inductor-autotune-choice"


def test_gloo_peers_of_two_address_families_and_lightnings_slurm_check():
    """Gloo pairs only addresses of one family (device.cc's GLOO_ENFORCE_EQ, its line number per release, a log
    that made the file a Markdown link); Lightning refuses --ntasks without --ntasks-per-node."""
    linked = "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/[device.cc:276](http://device.cc:276/)] ss1.ss_family == ss2.ss_family. 2 vs 10"
    plain = "[rank1]: **RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:288] ss1.ss_family == ss2.ss_family. 10 vs 2**"
    for line in (linked, plain):
        ev = events.classify(Line("x.log", 1, line), 0)
        assert ev.sig.id == "gloo-address-family" and {ev.groups["a"], ev.groups["b"]} == {"2", "10"}, line
    lightning = (
        "RuntimeError: You set `--ntasks=200` in your SLURM bash script, but this variable is not supported. "
        "HINT: Use `--ntasks-per-node=200` instead."
    )
    assert _sig(lightning) == "lightning-slurm-ntasks"


def test_cuda_errors_of_a_driver_that_does_not_fit_the_program(tmp_path):
    """PyTorch's cudaGetDeviceCount() wrapper names the CUDA error: 803 is a libcuda that does not fit the kernel
    driver (a cuda-compat library shadowing a newer host driver); PTX of a newer toolkit than the driver's."""
    compat = (
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
        "NumCudaDevices() that might have already set an error? Error 803: system has unsupported display driver / cuda driver combination"
    )
    data = triage(tmp_path, compat + "\n")
    assert data["first"]["signature"] == "cuda-driver-mismatch" and "cuda-compat" in data["cause"]
    ptx = "torch.AcceleratorError: CUDA error: the provided PTX was compiled with an unsupported toolchain."
    assert _sig(ptx) == "cuda-ptx-toolchain"
    visible = compat.replace(
        "Error 803: system has unsupported display driver / cuda driver combination",
        "Error 101: invalid device ordinal",
    )
    assert _sig(visible) == "gpu-visibility"


def test_a_script_that_refuses_the_launchers_arguments_and_dtensor_faults():
    assert _sig("train.py: error: unrecognized arguments: --local-rank=2") == "script-unrecognized-arguments"
    mixed = (
        "[rank0]: RuntimeError: aten._unsafe_index.Tensor got mixed torch.Tensor and DTensor, need to convert all "
        "torch.Tensor to DTensor before calling distributed operators!"
    )
    assert _sig(mixed) == "dtensor-dispatch"
    assert (
        _sig("  Sharding propagation failed for aten.add.Tensor(Spec(bf16[8, 4096, 256](S(0)S(1)))")
        == "dtensor-dispatch"
    )


def test_a_log_that_ends_at_a_programs_nccl_banner_ends_early(tmp_path):
    """vLLM prints 'vLLM is using nccl==X' as it starts its communicator: nothing after it is no clean run."""
    banner = "(Worker pid=960) INFO 08-12 20:26:09 [pynccl.py:113] vLLM is using nccl==2.28.9\n"
    assert triage(tmp_path, banner)["status"] == "unfinished"
    later = banner + "(Worker pid=960) WARNING 08-12 20:26:12 [custom_all_reduce.py:1] Custom allreduce is disabled\n"
    assert triage(tmp_path, later)["status"] == "clean"


def test_a_ray_command_line_broken_by_click_and_a_raylet_stopped_by_sigterm(tmp_path):
    """click 8.3's Sentinel cannot be deep-copied, which Ray's command line does as it loads; a raylet's SIGTERM
    handler with no drain asked for is a note alone (every cluster's end prints it), the cause of a failure after it."""
    assert _sig("ValueError: <object object at 0x7fa70eca36e0> is not a valid Sentinel") == "click-sentinel-deepcopy"
    sigterm = (
        "[2025-02-11 20:08:00,117 I 4121 4121] main.cc:483: received SIGTERM. Existing local drain request = None\n"
    )
    data = triage(tmp_path, sigterm)
    assert data["status"] == "clean" and "a raylet was stopped by SIGTERM" in data["notes"][0]["says"]
    died = "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
    assert triage(tmp_path, sigterm + died)["first"]["signature"] == "raylet-sigterm"


def test_efas_enomem_abort_is_the_memlock_limit_other_aborts_stay_the_providers(tmp_path):
    """libfabric's EFA abort (efa_base_ep_write_eq_error): the errno line says why; ENOMEM is the locked-memory
    limit, not host RAM (cannot-allocate-memory stays off that line); another errno keeps the provider's cause."""
    block = (
        "Libfabric EFA provider has encountered an internal error:\n\n"
        "Libfabric error: ({err}) {text}\nEFA internal error: (4112) Failure to post internal receive buffers\n\n"
        "Your application will now abort().\n"
    )
    data = triage(tmp_path, block.format(err=-12, text="Cannot allocate memory"))
    assert data["first"]["signature"] == "efa-enomem" and data["first"]["where"].endswith(":3")
    assert "ulimit -l" in data["fix"]
    assert _sig("Libfabric error: (-12) Cannot allocate memory") == "efa-enomem"
    assert _sig("OSError: [Errno 12] Cannot allocate memory") == "cannot-allocate-memory"
    other = triage(tmp_path, block.format(err=-14, text="Bad address"))
    assert other["first"]["signature"] == "efa-provider-abort" and other["first"]["where"].endswith(":1")


def test_device_mesh_and_subgroup_faults_name_the_mesh_not_the_network():
    """torch.distributed's own checks (device_mesh.py get_group; distributed_c10d.py new_subgroups), in the forms
    of the releases that print them with and without the numbers."""
    assert _sig("RuntimeError: ('Found the DeviceMesh have 2 dimensions', 'Optional kwarg `mesh_dim` needs ...") == (
        "mesh-dim-required"
    )
    for line in (
        "ValueError: The arg 'group_size' (8) must not exceed the world size (2)",
        "ValueError: The arg 'group_size' must not exceed the world size",
        "ValueError: The world size (12) must be divisible by 'group_size=8'",
    ):
        assert _sig(line) == "subgroup-larger-than-world", line


def test_the_c10d_store_message_without_its_class_is_the_rendezvous():
    """A launcher that wraps torchrun (colossalai run) prints RendezvousConnectionError's message alone."""
    assert _sig("Error message in training: The connection to the C10d store has failed.") == "rendezvous-connection"


def test_a_net_plugin_not_found_is_why_the_net_is_missing_and_harmless_alone(tmp_path):
    """NCCL's 'NET/Plugin: Could not find:' (src/plugin/plugin_open.cc) is printed by every run without a plugin;
    it is the cause only when the net the job asked for is then missing."""
    found = "h:1:2 [0] NCCL INFO NET/Plugin: Could not find: ofi libnccl-net-ofi.so. Using internal network plugin.\n"
    missing = "h:1:2 [0] net.cc:626 NCCL WARN Error: network AWS Libfabric not found.\n"
    data = triage(tmp_path, found + "...\n" + missing)
    assert data["first"]["signature"] == "net-plugin-not-found" and data["first"]["where"].endswith(":1")
    assert "libnccl-net-NAME.so" in data["cause"]
    alone = triage(tmp_path, found + "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - Init COMPLETE\n")
    assert alone["status"] != "cause"


def test_ucx_handler_crash_device_plugin_xid_and_pyxis_start_failures(tmp_path):
    """UCX's fatal-signal report (src/ucs/debug/debug.c), the Kubernetes device plugin's Xid line
    (internal/rm/health.go, both releases' forms), and what pyxis prints of enroot's log: the line that says why."""
    assert _sig("640: [nid007306:244443:0:244443] Caught signal 11 (Segmentation fault: address not mapped)") == (
        "ucx-caught-signal"
    )
    assert _sig("srun: error: nid007306: task 640: Segmentation fault") != "ucx-caught-signal"
    for line in (
        "I0624 22:58:05.486697 1 health.go:185] XidCriticalError: Xid=79 on Device=GPU-adb24b25; marking device as unhealthy.",
        "2021/01/01 XidCriticalError: Xid=48 on Device=GPU-1234, the device will go unhealthy.",
    ):
        assert _sig(line) == "gpu-xid-device-plugin", line
    head = "slurmstepd: error: pyxis: container start failed with error code: 1\nslurmstepd: error: pyxis: printing enroot log file:\n"
    user = triage(
        tmp_path,
        head + "slurmstepd: error: pyxis:     id: cannot find name for user ID 42\n"
        "slurmstepd: error: pyxis:     mkdir: cannot create directory '/scratch/42': Permission denied\n",
    )
    assert user["first"]["signature"] == "node-user-unknown" and "getent passwd 42" in user["fix"]
    ld = triage(
        tmp_path,
        head + "slurmstepd: error: pyxis:     [ERROR] Failed to refresh the dynamic linker cache\n"
        "slurmstepd: error: pyxis:     [ERROR] /etc/enroot/hooks.d/87-slurm.sh exited with return code 1\n",
    )
    assert ld["first"]["signature"] == "enroot-ldconfig" and ld["first"]["where"].endswith(":3")


def test_duplicate_gpu_with_its_first_words_cut_and_nccls_own_line():
    assert _sig("Error: rank 27 and rank 19 both on CUDA device 53000 (PCI 53:00.0)") == "duplicate-gpu"
    nccl = events.classify(
        Line(
            "x.log",
            1,
            "h:1:2 [0] init.cc:870 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000",
        ),
        0,
    )
    assert nccl.sig.id == "duplicate-gpu" and nccl.groups.get("nccl_where") == "src/init.cc:870"


def test_pytorch_accelerate_and_trl_own_checks_name_the_diverging_ranks(tmp_path):
    """The checks frameworks run for exactly these faults (ProcessGroupWrapper's shapes, the flight recorder's
    analyser, Accelerate's debug mode, TRL's device check) are the cause, not unclassified errors."""
    assert _sig("RuntimeError: Error when verifying shape tensors for collective ALLREDUCE on rank 0. This") == (
        "collective-shape-mismatch"
    )
    fr = triage(
        tmp_path,
        "$torchfrtrace --prefix trace_ /tmp/\nNot all ranks joining collective 5 at entry 4\nmissing ranks: {1}\n",
    )
    assert fr["first"]["signature"] == "fr-missing-ranks" and fr["first"]["where"].endswith(":2")
    assert _sig("Cannot apply desired operation due to shape mismatches. All shapes across devices must be valid.") == (
        "accelerate-shape-mismatch"
    )
    assert (
        _sig("RuntimeError: Attempting to use the same CUDA device for multiple distinct roles/ranks")
        == "trl-same-device"
    )
    barrier = triage(tmp_path, "RuntimeError: Rank 1 failed to pass monitoredBarrier in 2000 ms\n")
    assert barrier["status"] == "cause" and barrier["first"]["signature"] == "monitored-barrier"


def test_an_nccl_call_a_program_checks_itself(tmp_path):
    """'ncclAllReduce failed: ' + ncclGetErrorString (Horovod's ErrorCheck): an error line, not a clean log;
    NCCL 1's 'invalid data type' is another NCCL library than the one the program was built with."""
    old = triage(tmp_path, "UnknownError (see above for traceback): ncclAllReduce failed: invalid data type\n")
    assert old["first"]["signature"] == "nccl-invalid-data-type" and "conda remove nccl" in old["fix"]
    other = triage(tmp_path, "horovod: ncclGroupEnd failed: unhandled system error\n")
    assert other["status"] != "clean" and other["first"]["signature"] in ("nccl-error", "nccl-call-failed")


def test_a_vllm_method_failure_gives_way_to_the_nccl_error_in_its_traceback(tmp_path):
    log = (
        "Error executing method 'init_device'. This might cause deadlock in distributed execution.\n"
        "Traceback (most recent call last):\n"
        '  File "/x/vllm/distributed/device_communicators/pynccl_wrapper.py", line 256, in NCCL_CHECK\n'
        '    raise RuntimeError(f"NCCL error: {error_str}")\n'
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
    )
    data = triage(tmp_path, log)
    assert data["first"]["where"].endswith(":5") and "IPC_LOCK" in data["symptom"]["collect_next"]


def test_hpc_centre_and_vendor_forms_each_by_its_source(tmp_path):
    """Lines HPC centres and cloud vendors document with their cause, each read by the program that prints it
    (the signature named cites it)."""
    lines = {
        "[h35n05:113506] *** An error occurred in MPI_Allreduce": "mpi-call-error",
        ":1:hip_code_object.cpp :460 : 43966602806 us: hipErrorNoBinaryForGpu: Unable to find code object": (
            "hip-no-binary-for-gpu"
        ),
        "libfabric:16642:1701636928::cxi:core:cxip_cq_eq_progress():531<warn> x4204c1s3b0n0: Cassini Event Queue "
        "overflow detected.": "cxi-event-queue-overflow",
        "FATAL:   container creation failed: mount hook function failure: mount /opt/cray->/opt/cray error: while "
        "mounting /opt/cray: destination /opt/cray doesn't exist in container": "apptainer-bind-destination",
        "x3202c0s31b0n0: AssertionError: Micro batch size per gpu: 0 has to be greater than 0": (
            "deepspeed-micro-batch-zero"
        ),
        "AssertionError: NVTE_FUSED_ATTN set to 0, but expected 1 for attention": "te-attention-backend-env",
        "makeXferReq: local index out of range at index 192 with value 26357617": "nixl-index-out-of-range",
        "MPICH ERROR: Unable to use a NIC_POLICY of 'NUMA'. Rank 4 is not confined to a single NUMA node.": (
            "mpich-nic-policy-numa"
        ),
        "[0]Error opening IPC Memhandle from peer:1, invalid argument": "p2p-ipc",
    }
    for line, sid in lines.items():
        assert _sig(line) == sid, line
    assert _sig("[x:1] *** An error occurred in MPI_Init_thread") == "mpi-init-failed"
    pull = triage(
        tmp_path,
        "URL https://registry-1.docker.io/v2/public.ecr.aws/hpc-cloud/nccl-tests/manifests/latest returned error code: "
        "401 Unauthorized\npyxis: failed to import docker image\n",
    )
    assert pull["first"]["signature"] == "enroot-registry-as-path" and "public.ecr.aws#" in pull["fix"]
    wrapped = triage(
        tmp_path,
        "ValueError: Free memory on device cuda:3 (173.8/178.35 GiB) on startup\n"
        "is less than desired GPU memory utilization (0.98, 174.78 GiB).\n",
    )
    assert wrapped["first"]["signature"] == "vllm-startup-memory-wrapped" and wrapped["first"]["where"].endswith(":1")


def test_nvidia_documented_forms(tmp_path):
    """NCCL's RAS report, Open MPI's PMI2 refusal, NVSHMEM's IB completion, UCX's CMA on GPU memory, Transformer
    Engine's FP8 recipe check: each the cause where NVIDIA's documentation shows it."""
    ras = triage(
        tmp_path,
        "Errors\n======\n\nINCOMPLETE\n  Missing communicator data from 1 job process\n"
        "  Process 3487984 on node 172.16.64.213 managing GPU 5\n",
    )
    assert ras["first"]["signature"] == "nccl-ras-missing" and ras["first"]["where"].endswith(":5")
    lines = {
        "PMI2_Init failed to intialize.  Return code: 14": "ompi-pmi2-init",
        "src/comm/transports/ibrc/ibrc.cpp:962: non-zero status: 10 ibv_poll_cq failed, status: 10": (
            "nvshmem-ibv-completion"
        ),
        "cma_ep.c:97   process_vm_readv(pid=434391 length=524288) returned -1: Bad address": "ucx-cma-bad-address",
        "AssertionError: FP8 block scaled GEMM requires Hopper and CUDA >= 12.9.": "te-fp8-recipe-unsupported",
        "  1 job process is considered dead (unreachable via the RAS network)": "nccl-ras-missing",
    }
    for line, sid in lines.items():
        assert _sig(line) == sid, line


def test_scheduler_and_container_runtime_documented_forms(tmp_path):
    """pyxis's enroot block names its own cause (the nvidia-container-cli stage before the hook's exit line, a leftover
    container of a requeued step); slurmd's GPU core check; a performance test's memory registration; UCX's address
    exchange in Open MPI; a framework's own 'invalid device ordinal'."""
    head = "slurmstepd: error: pyxis: container start failed with error code: 1\nslurmstepd: error: pyxis: printing enroot log file:\n"
    cli = triage(
        tmp_path,
        head
        + "slurmstepd: error: pyxis:     nvidia-container-cli: container error: file lookup failed: /x: permission denied\n"
        "slurmstepd: error: pyxis:     [ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with return code 1\n",
    )
    assert cli["first"]["signature"] == "nvidia-container-cli-error" and cli["first"]["where"].endswith(":3")
    assert "1.17.6" in cli["fix"]
    lines = {
        "pyxis: ERROR File already exists: /opt/tmp/enroot-data/user-1000/pyxis_123.0": "enroot-file-exists",
        "error: _check_core_range_matches_sock: gres/gpu GRES autodetected core affinity 0-7 on node node0 doesn't "
        "match socket boundaries. (Socket 0 is cores 0-1)": "slurm-gres-core-affinity",
        "Couldn't allocate MR": "memlock",
        "pml_ucx.c:175 Error: Failed to receive UCX worker address: Not found (-13)": "ucx-unreachable",
        "pml_ucx.c:452 Error: Failed to resolve UCX endpoint for rank X": "ucx-unreachable",
        "[ERROR] DEVICE [cuda_driver.cc:245] SetDevice] SetDevice for id:7 failed, ret[101], invalid device ordinal.": (
            "gpu-visibility"
        ),
    }
    for line, sid in lines.items():
        assert _sig(line) == sid, line


def test_a_finished_run_without_gdrdma_and_no_figure_is_not_called_slow(tmp_path):
    """Channels without GDRDMA where nothing says GPUDirect RDMA could run: slow only where the run did not finish or
    its bandwidth shows (compare._slowness_shown)."""
    init = "".join(f"h{n}:1:2 [0] NCCL INFO Channel 00/0 : {n}[0] -> {1 - n}[0] [send] via NET/IB/1\n" for n in (0, 1))
    done = "".join(
        f"h{n}:1:1 [0] NCCL INFO comm 0x1 rank {n} nranks 2 cudaDev 0 busId 3b000 - Destroy COMPLETE\n" for n in (0, 1)
    )
    assert triage(tmp_path, init + "Train Epoch: 10 [29440/30000 (98%)] Loss: 0.09\n" + done)["status"] == "clean"
    assert triage(tmp_path, init + done + "# Avg bus bandwidth    : 33.3227 \n")["status"] == "slow"


def test_launch_and_runtime_forms_of_the_last_trials(tmp_path):
    """A requeue is context and the task exit before it the first failure; HCOLL turning itself off is no failure;
    Ray's coloured, chained RayTaskError lines give way to the exception they wrap."""
    requeue = triage(
        tmp_path,
        "srun: error: node1: task 0: Exited with exit code 1\nsrun: Terminating job step 2593.1\n"
        "slurmstepd: error: *** JOB 2593 ON node1 CANCELLED AT 2022-05-20T21:52:32 DUE TO JOB REQUEUE ***\n",
    )
    assert requeue["first"]["signature"] == "srun-task-exit" and requeue["first"]["where"].endswith(":1")
    hcoll = triage(
        tmp_path,
        "[LOG_CAT_ML] You must specify a valid HCA device by setting:\n"
        "[gpu-1:9] Error: ../ompi/mca/coll/hcoll/coll_hcoll_module.c:310 - mca_coll_hcoll_comm_query() Hcol library "
        "init failed\nFinished\n",
    )
    assert hcoll["status"] == "clean"
    wrapper = "ray.exceptions.RayTaskError(RuntimeError): \x1b[36mray::{}()\x1b[39m (pid=1, ip=10.0.0.1)\n"
    chain = triage(
        tmp_path,
        wrapper.format("TaskRunner.run")
        + '  File "main_ppo.py", line 314, in run\n'
        + wrapper.format("WorkerDict.init_model")
        + '  File "uvloop/__init__.py", line 206, in get_event_loop\n'
        + "RuntimeError: There is no current event loop in thread 'MainThread'.\n",
    )
    assert chain["first"]["signature"] == "asyncio-no-event-loop" and chain["first"]["where"].endswith(":5")
    lines = {
        "[node140:12429] PMIX ERROR: NOT-FOUND in file client/pmix_client.c at line 562": "pmix-client-init",
        "[1613401128.44] [nid001192:11838:0] ib_md.c:325 UCX ERROR ibv_reg_mr(address=0xabcf12c0, length=26400, "
        "access=0xf) failed: Cannot allocate memory": "memlock",
        "server22: bash: -c: line 0: syntax error near unexpected token `('": "remote-shell-syntax",
        "[W610 20:53:05.8 socket.cpp:755] [c10d] The client socket has failed to connect to [::]:60533 (errno: 99 - "
        "Cannot assign requested address).": "tcpstore-wildcard",
        "[2025-08-12 02:48:39,449 C 1 1] actor_manager.cc:55:  Check failed: it != actor_handles_.end() Cannot find "
        "an actor handle of id": "native-check-failed",
    }
    for line, sid in lines.items():
        assert _sig(line) == sid, line


def test_an_out_of_memory_whose_figures_show_another_process():
    """The allocator's own figures (triage/oom.py): most of the GPU held outside this process is another process's,
    in both the old and the current message; a full GPU this process holds stays a plain out-of-memory."""
    old = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB (GPU 0; 79.33 GiB total capacity; "
        "27.16 GiB already allocated; 244.44 MiB free; 31.59 GiB reserved in total by PyTorch) If reserved memory"
    )
    ev = events.classify(Line("x.log", 1, old), 0)
    assert ev.sig.id == "cuda-oom-elsewhere" and ev.groups["other"] == "47.5 GiB"
    new = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB "
        "of which {free} is free. Including non-PyTorch memory, this process has {mine} memory in use. Of the"
    )
    assert _sig(new.format(free="20.00 MiB", mine="31.00 GiB")) == "cuda-oom-elsewhere"
    assert _sig(new.format(free="20.00 MiB", mine="78.90 GiB")) == "cuda-oom"
    assert _sig(old.replace("31.59 GiB reserved", "76.59 GiB reserved")) == "cuda-oom"


def test_an_exception_whose_message_wrapped_whole_and_the_last_trials_forms(tmp_path):
    """'AssertionError:' alone at the end of a Ray-prefixed line, its message on the next: one error, at the first
    line; FSDP's compute-device check, all_to_all's split sizes, aws-ofi-nccl's GIN without GDRCopy 2.5."""
    data = triage(
        tmp_path,
        "(WorkerDict pid=42417, ip=10.0.0.1) AssertionError:\n"
        "Expects tensor to be on the compute device cuda:0, was on cpu\n",
    )
    assert data["first"]["signature"] == "fsdp-params-on-cpu" and data["first"]["where"].endswith(":1")
    assert _sig("RuntimeError: Split sizes doesn't match total dim 0 size") == "alltoall-split-sizes"
    assert _sig("NET/OFI GIN requires GDRCopy 2.5+ for forced PCIe copy support") == "ofi-gin-gdrcopy"
