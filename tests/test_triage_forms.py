"""Failure forms that held-out trials showed missing, each read by the source that prints it (the signature or
class named in each assertion cites it in ncclgen/data/triage/)."""

from __future__ import annotations

from triage_json import triage

from ncclgen.triage import events
from ncclgen.triage.reader import Line


def _event(text: str):
    return events.classify(Line("x.log", 1, text), 0)


def test_cupys_nccl_error_names_read_as_ncclgetErrorString_in_pytorchs_forms():
    """CuPy's NcclError (Ray's collective groups) prefixes ncclGetErrorString with the result's name
    (cupy_backends/cuda/libs/nccl.pyx); the text after it is NCCL's, as PyTorch quotes it."""
    cuda = "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_UNHANDLED_CUDA_ERROR: unhandled cuda error"
    assert _event(cuda).sig.id == "nccl-cuda-error"
    usage = "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_INVALID_USAGE: invalid usage"
    assert _event(usage).sig.id == "nccl-usage-error"
    system = "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_SYSTEM_ERROR: unhandled system error"
    assert _event(system).sig.id == "nccl-error"
    assert _event("NCCL_ERROR_UNHANDLED_CUDA_ERROR") is None  # the name alone, no error text


def test_store_waits_that_timed_out_are_ranks_that_never_came_not_a_store_that_died():
    """TCPStore::doWait times out only after the store answered its cancel (the store is alive): 'Socket Timeout'
    (torch 2.1-2.3) and 'wait timeout after Nms, keys: K' since. A store that went away reads otherwise."""
    old = "torch.distributed.DistStoreError: Socket Timeout"
    new = "torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: /default_pg/0//cuda//0"
    for line in (old, new):
        assert _event(line).sig.id == "store-wait-timeout" and _event(line).sig.role == "root"
    assert _event(new).groups["keys"] == "/default_pg/0//cuda//0"
    assert _event("torch.distributed.DistNetworkError: Connection reset by peer").sig.id == "tcpstore-lost"
    nccl_id = "but store->get('0') got error: Socket Timeout"
    assert (
        _event(
            "[1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', "
            + nccl_id
        ).sig.id
        == "nccl-id-from-rank0"
    )


def test_slurm_and_pmix_launch_failures_are_roots():
    """slurmd refusing a step's tasks (src/api/step_launch.c, src/srun/launch.c) and PMIx's start-up texts."""
    assert _event("srun: StepId=1234.0 aborted before step completely launched.").sig.id == "srun-task-launch"
    launch = _event("srun: error: task 0 launch failed: Unspecified error")
    assert launch.sig.id == "srun-task-launch" and launch.groups["err"] == "Unspecified error"
    mca = "A requested component was not found, or was unable to be opened.  This"
    assert _event(mca).sig.id == "mca-component-missing"
    assert (
        _event("It looks like pmix_init failed for some reason; your parallel process is").sig.id == "pmix-init-failed"
    )
    # an engine's ZeroMQ bind, with no engine prefix on the line
    assert (
        _event("zmq.error.ZMQError: Address already in use (addr='tcp://10.0.0.1:5555')").sig.id == "engine-port-race"
    )


def test_a_ray_node_that_never_registered_is_a_root_and_names_no_node_info():
    """ray/_private/node.py: 'Failed to get node info ...' each try, then 'The current node timed out during startup'."""
    tries = _event(
        "2026-01-24 03:01:33,220 INFO node.py:362 -- Failed to get node info b'RPC error: Deadline Exceeded'"
    )
    assert tries.sig.id == "ray-node-startup-timeout" and tries.node is None  # 'node info' is no node's name
    end = "Exception: The current node timed out during startup. This could happen because some of the raylet failed"
    assert _event(end).sig.id == "ray-node-startup-timeout"


def test_program_errors_of_a_distributed_run_name_their_cause():
    """A CPU tensor on an NCCL-only group, tensors on two devices, a launcher variable never set, a kernel's
    device-side assert, the torch 1.x spelling of a missing default group."""
    assert _event("RuntimeError: Tensors must be CUDA and dense").sig.id == "collective-cpu-tensor"
    cpu = _event("RuntimeError: No backend type associated with device type cpu")
    assert cpu.sig.id == "collective-cpu-tensor" and cpu.groups["dev"] == "cpu"
    two = _event(
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1!"
    )
    assert two.sig.id == "tensor-device-mismatch" and two.groups["devs"] == "cuda:0 and cuda:1"
    assert _event("KeyError: 'LOCAL_RANK'").sig.id == "launcher-env-missing"
    assert _event("KeyError: 'input_ids'") is None or _event("KeyError: 'input_ids'").sig is None  # a program's own key
    kernel = '../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` failed.'
    assert _event(kernel).sig.id == "cuda-device-assert"
    assert _event("RuntimeError: CUDA error: device-side assert triggered").sig.id == "cuda-device-assert"
    assert _event("AssertionError: Default process group is not initialized").sig.id == "pg-not-initialized"
    assert _event("ncclInternalError: Internal check failed.").sig.id == "nccl-error"


def test_ibv_reg_mr_by_its_errno():
    """ibvwrap.cc prints strerror(errno): EFAULT is memory the kernel cannot pin (GPU memory without peer memory),
    ENOMEM the locked-memory limit."""
    prefix = "gpu1:123:456 [0] misc/ibvwrap.cc:197 NCCL WARN Call to ibv_reg_mr failed with error "
    assert _event(prefix + "Bad address").sig.id == "ib-gdr-register"
    assert _event(prefix + "Cannot allocate memory").sig.id == "memlock"


def test_engine_and_logger_start_up_failures():
    """vLLM's KV cache check (both wordings), wandb without a key on a worker, FlashAttention on an older GPU."""
    v1 = "ValueError: To serve at least one request with the models's max seq len (262144), (24.00 GiB KV cache is needed, which is larger than the available KV cache memory (8.68 GiB)."
    v0 = "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (16384)."
    assert _event(v1).sig.id == "vllm-kv-too-small" and _event(v0).sig.id == "vllm-kv-too-small"
    assert (
        _event("wandb: ERROR api_key not configured (no-tty). call wandb.login(key=[your_api_key])").sig.id
        == "wandb-no-key"
    )
    assert _event("RuntimeError: FlashAttention only supports Ampere GPUs or newer.").sig.id == "flash-attn-arch"


def test_slurm_refusals_pyxis_and_sruns_oom_report():
    """sbatch/srun refusing the request, pyxis's own summary lines, srun's 'task N: Out Of Memory'."""
    assert (
        _event("sbatch: error: Batch job submission failed: Requested GRES option unsupported").sig.id
        == "slurm-submit-refused"
    )
    assert (
        _event("srun: error: Unable to allocate resources: Requested node configuration is not available").sig.id
        == "slurm-submit-refused"
    )
    assert _event("slurmstepd: error: pyxis: failed to import docker image").sig.id == "pyxis-container-failed"
    assert _event("slurmstepd: error: pyxis: child 636413 failed with error code: 1").sig.id == "pyxis-container-failed"
    assert _event("srun: error: node3: task 2: Out Of Memory").sig.id == "host-oom-kill"


def test_container_runtimes_that_cannot_start_the_job():
    """enroot without unprivileged user namespaces; a kubelet that cannot mount a pod's volume."""
    assert _event("enroot-nsenter: failed to create user namespace: Operation not permitted").sig.id == "enroot-userns"
    mount = _event('MountVolume.SetUp failed for volume "ncclgen" : configmap "job-ncclgen" not found')
    assert mount.sig.id == "k8s-mount-failed" and mount.groups["volume"] == "ncclgen"
    assert (
        _event("Unable to attach or mount volumes: unmounted volumes=[dshm], unattached volumes=[]: timed out").groups[
            "volume"
        ]
        == "dshm"
    )


RAY_WRAPPER = (
    "ray.exceptions.RayTaskError({exc}): ray::Worker.update_weights() (pid=238850, ip=10.0.135.49)\n"
    '  File "/opt/fw/workers/sync.py", line 256, in update_weights\n'
    "    await self.sender.send_chunks(\n"
    "          ^^^^^^^^^^^^^^^^^^^^^^^^\n"
)


def test_a_ray_task_error_gives_way_to_the_exception_it_wraps(tmp_path):
    """RayTaskError(Exc) (python/ray/exceptions.py) prints the task's traceback, which 'Exc: message' closes: that line
    is the first failure even when no signature knows it; an API mismatch is named."""
    plain = triage(tmp_path, RAY_WRAPPER.format(exc="ValueError") + "ValueError: the batch is empty\n")
    assert plain["first"]["where"].endswith(":5") and plain["first"]["line"] == "ValueError: the batch is empty"
    api = "TypeError: Sender.send_chunks() got an unexpected keyword argument 'weight_metadata'\n"
    named = triage(tmp_path, RAY_WRAPPER.format(exc="TypeError") + api)
    assert named["first"]["signature"] == "python-api-mismatch" and named["first"]["where"].endswith(":5")
    # another exception's line is not the wrapped one
    other = triage(tmp_path, RAY_WRAPPER.format(exc="ValueError") + "KeyError: 'x' raised elsewhere\n")
    assert other["first"]["where"].endswith(":1")
    for text in ("f() takes 1 positional argument but 2 were given", "cannot import name 'a' from 'b'"):
        assert _event(f"{'ImportError' if 'import' in text else 'TypeError'}: {text}").sig.id == "python-api-mismatch"
    assert _event("AttributeError: 'NoneType' object has no attribute 'x'").sig is None  # a program's own bug


def test_a_flushed_rdma_completion_is_the_peers_failure_not_the_wire(tmp_path):
    """IBV_WC_WR_FLUSH_ERR (5, rdma-core verbs.h) is a queue pair already in error: named a consequence, with the
    peer to read next, in NCCL's newer form too; PyTorch's quote of it under its exception, 'Last error:' left out."""
    new = "gpu1:1:2 [0] NCCL WARN NET/IB: Got completion from peer 10.1.1.1<4242> with status=IBV_WC_WR_FLUSH_ERR(5) opcode=IBV_WC_RECV(128) vendor_err=249 localGid fe80::1 remoteGids fe80::2 hca mlx5_0"
    assert (
        _event(new).sig.id == "ib-flush"
        and _event(new.replace("FLUSH_ERR(5)", "RETRY_EXC_ERR(12)")).sig.id != "ib-flush"
    )
    pasted = (
        "(model_worker/12 pid=43581, ip=10.0.0.2) [rank12]:[E227 06:13:07.855233166 ProcessGroupNCCL.cpp:1534] [PG 1 Rank 1] "
        "Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.22.3\n"
        "(model_worker/12 pid=43581, ip=10.0.0.2) ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
        "(model_worker/12 pid=43581, ip=10.0.0.2) NET/IB : Got completion from peer 10.0.0.9<51354> with status=5 opcode=0 len=0 vendor err 249 (Recv)\n"
    )
    data = triage(tmp_path, pasted)
    assert data["status"] == "cause" and data["first"]["signature"] == "ib-flush"
    assert data["first"]["where"].endswith(":3") and data["first"]["node"] == "10.0.0.2"


def test_a_placement_group_waited_for_to_the_end_of_the_log_is_the_cause(tmp_path):
    """pg.ready() never resolves for a bundle no node can hold (ray/util/placement_group.py), and nothing errs: a file
    whose last placement-group line is a wait names the bundle list just above it; a wait that a 'ready' line
    follows is a job that got its resources."""
    wait = "[{'GPU': 6, 'CPU': 60}]\nINFO 12:00:01 Waiting for placement group to be scheduled\n"
    data = triage(tmp_path, wait)
    assert data["status"] == "cause" and data["first"]["signature"] == "ray-pg-pending"
    assert data["first"]["where"].endswith(":1") and "'CPU': 60" in data["cause"]
    alone = triage(tmp_path, "Waiting for placement group to be ready...\n")
    assert alone["first"]["signature"] == "ray-pg-pending" and alone["first"]["where"].endswith(":1")
    placed = triage(tmp_path, wait + "Placement group is ready.\nstep 1 done\n")
    assert placed["status"] == "clean", placed.get("first")


def test_a_crash_right_after_an_error_line_is_that_errors_aftermath(tmp_path):
    """A segmentation fault a few lines under NCCL's WARN (its error path crashed) or a preloaded library's own
    ERROR line: the earlier line is the first failure; a crash with no error above it stays the root."""
    warn = (
        "w0:5665:5811 [2] NCCL INFO transport.cc:166 -> 2\n"
        "w0:5665:5801 [2] proxy.cc:1487 NCCL WARN [Service thread] Error encountered progressing operation=Connect, res=3, closing connection\n"
        "[w0:5665 :0:5665] Caught signal 11 (Segmentation fault: address not mapped to object at address (nil))\n"
    )
    data = triage(tmp_path, warn)
    assert data["first"]["where"].endswith(":2")  # the WARN, not the bare error trace above it
    hami = "[HAMI-core ERROR (pid:565 thread=1 multiprocess_memory_limit.c:831)]: Illegal device id: 850725928\n"
    data = triage(tmp_path, hami + "!!!!!!! Segfault encountered !!!!!!!\n")
    assert data["first"]["signature"] == "gpu-interposer-error" and data["first"]["where"].endswith(":1")
    alone = triage(tmp_path, "step 10 loss 1.2\n!!!!!!! Segfault encountered !!!!!!!\n")
    assert alone["first"]["signature"] == "process-crash"
    far = triage(tmp_path, "RuntimeError: boom\n" + "step\n" * 30 + "!!!!!!! Segfault encountered !!!!!!!\n")
    assert far["first"]["signature"] == "process-crash"


def test_cloud_net_plugins_and_libfabrics_efa_provider_name_themselves():
    """Google's TCPX/TCPXO plugin lines, libfabric's EFA provider aborting, its numbered handshake errors."""
    fastrak = _event(
        "NCCL WARN NET/FasTrak ...: INVALID_ARGUMENT: Buffer registration request does not have a valid fd set."
    )
    assert fastrak.sig.id == "tcpxo-buffer-registration"
    eq = "Unable to write to EQ: Missing or unavailable event queue. err: Input/output error (5) prov_errno: Unknown error -114 (-114) prov/rxr/src/rxr.h:1042"
    assert _event(eq).sig.id == "efa-provider-abort"
    assert _event("Libfabric EFA provider has encountered an internal error:").sig.id == "efa-provider-abort"
    shake = _event("Error 4126: Unresponsive receiver (reachable by EFA device but handshake failed)")
    assert shake.sig.id == "efa-handshake-failed"
    assert (
        _event("EFA internal error: (4124) Unresponsive receiver (connection previously established)").sig.role
        == "symptom"
    )
    assert _event("Error 7: something a library said") is not None  # a numbered error is an error line


def test_checkpoint_shards_an_image_without_a_shell_and_err_style_tool_lines():
    """DeepSpeed resuming without some ranks' ZeRO shards; enroot-switchroot's exec of the image's shell; a tool's
    'PROG: failed to WHAT: strerror' line (err(3)) is an error line even when no signature knows it."""
    ds = "main: [WARNING] [engine.py:1656:_get_all_zero_checkpoints] The following zero checkpoints paths are missing: ['a/zero_pp_rank_8_mp_rank_00_optim_states.pt']"
    assert _event(ds).sig.id == "zero-checkpoint-missing"
    shell = _event("enroot-switchroot: failed to execute: /bin/sh: No such file or directory")
    assert shell.sig.id == "enroot-no-shell" and shell.groups["shell"] == "/bin/sh"
    tool = _event("mount: failed to mount /data: Permission denied")
    assert tool is not None and tool.sig is None
    assert _event("retrying: failed to reach the mirror") is None  # no errno text: not err(3)'s form


def test_an_ipv6_address_joined_to_its_port_without_brackets():
    """urllib.parse's port property fails on 'ADDR:PORT' with an IPv6 ADDR (CPython Lib/urllib/parse.py)."""
    import urllib.parse

    line = ""
    try:
        line = str(urllib.parse.urlparse("tcp://2605:340:cd51::1:35825").port)
    except ValueError as e:
        line = f"ValueError: {e}"
    assert _event(line).sig.id == "ipv6-address-unbracketed" and _event(line).groups["port"] == "'340:cd51::1:35825'"


def test_a_ray_port_taken_is_rays_not_the_rendezvous_port():
    """Ray's GrpcServer::Run checks its server started ('Failed to start the grpc server. The specified port is N');
    gRPC core's listener error before it names the same port. Neither is MASTER_PORT's store."""
    ray = "[2025-01-01 10:00:00,000 C 1 1] grpc_server.cc:120: Check failed: server_ Failed to start the grpc server. The specified port is 6379. This means that Ray's core components will not be able to function correctly."
    grpc = "E0101 10:00:00.000 1 chttp2_server.cc:1051] UNKNOWN:No address added out of total 1 resolved for '0.0.0.0:6379' {created_time:\"x\", children:[UNKNOWN:Failed to add any wildcard listeners {children:[UNKNOWN:Address already in use]}]}"
    for line in (ray, grpc):
        assert _event(line).sig.id == "ray-port-in-use" and _event(line).groups["port"] == "6379"
    bare = "RuntimeError: The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use)."
    assert _event(bare).sig.id == "address-in-use"


def test_a_runtime_env_that_carries_rays_own_setup_hook_variable():
    """Ray's export_setup_func_module assertion (python/ray/_private/runtime_env/setup_hook.py), as a worker's
    traceback ends with it (ray#59522), and Ray 2.60.0's consistency check that replaced it for a variable already set."""
    line = "(EngineCore_DP0 pid=20980) AssertionError: The env var, __RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR, is not permitted because it is reserved for the internal use."
    assert _event(line).sig.id == "ray-setup-hook-reserved" and _event(line).sig.role == "root"
    new = "RuntimeError: Conflicting worker_process_setup_hook: the setup hook env var is already set to 'ncclgen_raybind.hook', but runtime_env specifies module 'mine.setup'."
    assert _event(new).sig.id == "ray-setup-hook-reserved" and _event(new).groups["hook"] == "ncclgen_raybind.hook"


def test_a_net_plugin_that_exists_but_cannot_load_is_not_no_plugin():
    """NCCL's src/net.cc before 2.19 prints dlopen's error in both of its forms; only the plugin's own file missing is
    'no plugin' (a dependency missing gives ENOENT too)."""
    dep = " [0] NCCL INFO NET/Plugin : dlerror=/opt/amazon/efa/lib/libfabric.so.1: version `FABRIC_1.7' not found (required by /env/lib/libnccl-net.so) No plugin found (libnccl-net.so), using internal implementation"
    ev = _event(dep)
    assert ev.sig.id == "net-plugin-dependency" and ev.groups["lib"] == "libnccl-net.so"
    assert "FABRIC_1.7" in ev.groups["err"]
    other = "host:1:1 [0] NCCL INFO NET/Plugin : Plugin load returned 22 : /opt/nccl/libnccl-net.so: undefined symbol: fi_getinfo."
    assert _event(other).sig.id == "net-plugin-dependency"
    for none in (
        "host:1:1 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory No plugin found (libnccl-net.so), using internal implementation",
        "host:1:1 [0] NCCL INFO NET/Plugin : Plugin load returned 2 : libnccl-net-ofi.so: cannot open shared object file: No such file or directory.",
    ):
        assert _event(none) is None or _event(none).sig.id != "net-plugin-dependency"


def test_a_peer_name_a_network_tool_cannot_resolve():
    """iputils ping (as the Debian 12 binary prints it) on a pod or node name DNS does not serve."""
    for line in (
        "ping: hpc-gpu-1-12: Name or service not known",
        "/usr/bin/ping: worker-3.svc: Temporary failure in name resolution",
    ):
        assert _event(line).sig.id == "host-unresolved"
    assert _event("lookup: the cache entry: Name or service not known") is None or (
        _event("lookup: the cache entry: Name or service not known").sig.id != "host-unresolved"
    )


def test_a_python_stack_dump_with_no_error_line_is_a_hang(tmp_path):
    """faulthandler's dump (CPython Python/traceback.c: a '(most recent call first):' header, frames without the
    comma a traceback's have, innermost first) and py-spy dump's header: the process was waiting there."""
    fh = (
        "step 10 loss 1.2\n"
        "Current thread 0x00007f2b1c9ff740 (most recent call first):\n"
        '  File "/usr/lib/python3/torch/distributed/distributed_c10d.py", line 2050 in all_reduce\n'
        '  File "/job/train.py", line 88 in <module>\n'
    )
    data = triage(tmp_path, fh)
    assert (data["status"], data["_code"]) == ("hang", 1) and data["hang"]["certain"]
    assert any("faulthandler" in x and "all_reduce (distributed_c10d.py:2050)" in x for x in data["hang"]["last"])
    spy = 'Process 4242: python train.py\nPython v3.11.7 (/usr/bin/python3.11)\n\nThread 4242 (idle): "MainThread"\n'
    assert triage(tmp_path, spy)["status"] == "hang"
    tb = (
        'step 10 loss 1.2\n  File "/job/train.py", line 88, in <module>\nstep 11 loss 1.1\n'  # a traceback's frame form
    )
    assert triage(tmp_path, tb)["status"] == "clean"


def test_a_rollout_server_that_still_holds_a_crashed_trainers_weight_group(tmp_path):
    """TRL's vllm-serve (trl/scripts/vllm_serve.py init_communicator) refuses a second weight-sync group; vLLM's
    'Invocation of collective_rpc method failed' above it gives way to that line."""
    log = (
        "ERROR 05-02 21:36:34 [core.py:459] Invocation of collective_rpc method failed\n"
        "ERROR 05-02 21:36:34 [core.py:459] Traceback (most recent call last):\n"
        "ERROR 05-02 21:36:34 [core.py:459] RuntimeError: Weight update group already initialized. Call close_communicator first.\n"
    )
    data = triage(tmp_path, log)
    assert data["first"]["signature"] == "weight-sync-group-stale" and data["first"]["where"].endswith(":3")


def test_nccl_check_macros_that_exit_on_a_failed_call():
    """NCCL's user-guide NCCLCHECK ('Failed, NCCL error %s:%d '%s''), copied widely; Transformer Engine's Userbuffers
    prints it with the error text left out, and is named as such."""
    plain = _event("Failed, NCCL error src/main.cu:88 'unhandled system error'")
    assert (
        plain.sig.id == "nccl-check-exit" and plain.sig.role == "symptom" and plain.groups["where"] == "src/main.cu:88"
    )
    te = _event("Failed, NCCL error TE/transformer_engine/pytorch/csrc/userbuffers/userbuffers-host.cpp:223 ''")
    assert te.sig.id == "te-userbuffers-failed" and te.sig.role == "root"
    assert (
        _event("Failed: Cuda error /te/userbuffers/userbuffers.cu:90 'invalid argument'").sig.id
        == "te-userbuffers-failed"
    )


def test_nccls_own_unix_socket_is_not_the_rendezvous_port():
    """NCCL's proxy binds an abstract Unix-domain socket per rank ('UDS: Binding to socket ... failed', NCCL
    2.20.3 src/misc/ipcsocket.cc): 'Address already in use' there is not MASTER_PORT."""
    line = "h:33:10589 [2] misc/ipcsocket.cc:57 NCCL WARN UDS: Binding to socket /tmp/nccl-socket-2-e647f8d8e15809a1 failed : Address already in use (98)"
    ev = _event(line)
    assert ev.sig.id == "nccl-uds-bind" and ev.groups["path"] == "/tmp/nccl-socket-2-e647f8d8e15809a1"
    assert "2.20.5" in ev.sig.fix and "MASTER_PORT" not in ev.sig.fix
    assert (
        _event(
            "RuntimeError: The server socket has failed to listen on any local network address. "
            "port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use"
        ).sig.id
        != "nccl-uds-bind"
    )


def test_a_worker_that_cannot_register_with_its_own_raylet_is_node_local():
    """core_worker's registration with the raylet on its own node (a local socket): not the head's address."""
    old = "core_worker.cc:201: Failed to register worker 01000000ffffffff to Raylet. IOError: [RayletClient] Unable to register worker with raylet. No such file or directory"
    new = "core_worker.cc:514: Failed to register worker to Raylet: IOError: [RayletClient] Unable to register worker with raylet. Failed to read data from the socket: End of file worker_id=01000000ffff"
    for line in (old, new):
        ev = _event(line)
        assert ev.sig.id == "ray-raylet-unreachable" and "num-cpus" in ev.sig.fix, line
    assert _event("Failed to connect to GCS at address 10.0.0.1:6379 within 5 seconds.").sig.id == "ray-join-failed"


def test_megatrons_parallel_sizes_that_do_not_divide_the_world():
    """Megatron-LM parallel_state.initialize_model_parallel's RuntimeErrors, plain and for experts."""
    for line, size in (
        ("RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)", "16"),
        (
            "RuntimeError: decoder world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)",
            "16",
        ),
        ("RuntimeError: world_size (12) is not divisible by 8", "8"),
    ):
        ev = _event(line)
        assert ev.sig.id == "megatron-parallel-sizes" and ev.groups["size"] == size, line


def test_dashs_command_not_found_and_a_kubernetes_variable_left_unresolved(tmp_path):
    """dash (Debian's sh) prints 'sh: 1: NAME: not found' (run here: `dash -c foo`); a Kubernetes $(NAME) of an
    undefined variable reaches the shell as written, so NAME runs as a command."""
    data = triage(tmp_path, "sh: 1: Leader_Node_Address: not found\nError: Missing argument --ray_address\n")
    assert data["first"]["signature"] == "command-not-found" and "(Leader_Node_Address)" in data["cause"]
    assert "$(NAME)" in data["cause"]
    assert _event("/tmp/d.sh: 12: torchrun: not found").groups["cmd"] == "torchrun"
    assert _event("Error: model: not found").sig is None  # no shell and line number: an error line, no more


ROW = "{size:>12}  {count:>12}  float  sum  -1  {t}  0.79  0.79  {w1}  {t}  0.92  0.92  {w2}"


def test_nccl_tests_rows_that_count_wrong_elements_are_the_cause(tmp_path):
    """nccl-tests' '#wrong' (a count since 2.13, '%6g') above zero: a collective returned wrong data and no error
    line says so. Earlier releases' maximum error ('2e-07') and 'N/A' (no check) are not counts."""
    good = ROW.format(size=8, count=2, t="130.1", w1=0, w2=0)
    bad = ROW.format(size=524288, count=131072, t="663.1", w1=237858, w2="2.37858e+06")
    data = triage(tmp_path, good + "\n" + bad + "\n")
    assert data["first"]["signature"] == "nccl-tests-wrong-results" and data["first"]["where"].endswith(":2")
    old = ROW.format(size=8, count=2, t="130.10", w1="2e-07", w2="1e-07").replace("  -1  ", "  ")
    # ... whose times of 10 ms or more print as whole numbers (nccl-tests#128): not a count in the #wrong place either
    slow = ROW.format(size=268435456, count=8388608, t="13470", w1="2e-07", w2="2e-07").replace("  -1  ", "  ")
    na = ROW.format(size=8, count=2, t="13.00", w1="N/A", w2="N/A")
    for rows in (old, slow, na, good):
        assert triage(tmp_path, rows + "\n")["status"] != "cause", rows
    verdict = triage(tmp_path, good + "\n# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 0.8\n")
    assert verdict["first"]["signature"] == "nccl-tests-wrong-results" and verdict["first"]["where"].endswith(":2")


def test_lightning_ranks_that_never_all_joined_end_early(tmp_path):
    """Lightning's 'MEMBER: m/N' join lines of fewer than N ranks, and no rank 0 'All distributed processes
    registered': a batch script that ran python without srun started the batch host's ranks only."""
    joins = "".join(f"initializing ddp: GLOBAL_RANK: {r}, MEMBER: {r + 1}/8\n" for r in (1, 2, 0, 3))
    data = triage(tmp_path, joins)
    assert data["status"] == "unfinished" and any("4 of 8 ranks joined" in e for e in data["hang"]["ends_early"])
    done = joins + "All distributed processes registered. Starting with 8 processes\n"
    assert triage(tmp_path, done)["status"] == "clean"
    every = "".join(f"initializing ddp: GLOBAL_RANK: {r}, MEMBER: {r + 1}/2\n" for r in (0, 1))
    assert triage(tmp_path, every)["status"] == "clean"


def test_a_tool_given_an_option_it_does_not_know_is_the_cause_of_what_follows(tmp_path):
    """glibc getopt's "%s: invalid option -- '%c'" (DeepSpeed's `hostname -I` on a hostname without -I), a note alone."""
    line = "hostname: invalid option -- 'I'\n"
    data = triage(tmp_path, line + "Traceback (most recent call last):\nsubprocess.CalledProcessError: boom\n")
    assert data["first"]["signature"] == "tool-invalid-option" and data["first"]["where"].endswith(":1")
    assert "(-I)" in data["cause"] or "-I " in data["cause"]
    assert triage(tmp_path, line)["status"] == "clean"


def test_gloos_pair_closure_is_this_processs_own_timeout_a_symptom(tmp_path):
    """gloo unbound_buffer.cc signals every pair with 'Application timeout caused pair closure' when one of the
    process's own receives timed out: a peer that never joined, so a symptom; a root before it stays the cause."""
    data = triage(tmp_path, "RuntimeError: Application timeout caused pair closure\n")
    assert data["status"] == "unclassified" and data["first"]["signature"] == "gloo-pair-closed-by-timeout"
    assert "never joined" in data["symptom"]["says"]
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert triage(tmp_path, oom + "RuntimeError: Application timeout caused pair closure\n")["first"]["where"].endswith(
        ":1"
    )


def test_the_kernels_oom_report_memory_cgroups_and_the_drivers_lost_gpu_probe(tmp_path):
    """mm/oom_kill.c opens with '<comm> invoked oom-killer:' (the call trace's frames are no line to name) and says
    'Memory cgroup out of memory' for a container's limit; the driver's probe says a GPU fell off the bus, no Xid."""
    report = "[2612362.231458] python invoked oom-killer: gfp_mask=0x14000c0(GFP_KERNEL), order=0, oom_score_adj=829\n"
    trace = "[2612362.231483]  oom_kill_process+0x21c/0x430\n[2612362.231487]  mem_cgroup_out_of_memory+0x4b/0x80\n"
    data = triage(tmp_path, report + trace)
    assert data["first"]["signature"] == "host-oom-kill" and data["first"]["where"].endswith(":1")
    assert "memory cgroup" in data["cause"]
    assert _event("Memory cgroup out of memory: Killed process 208253 (python)").sig.id == "host-oom-kill"
    frame = _event("[2612362.231483]  oom_kill_process+0x21c/0x430")  # a frame of the call trace: no root line
    assert frame is None or frame.sig is None or frame.sig.id != "host-oom-kill"
    lost = "               NVRM: fallen off the bus and is not responding to commands."
    assert _event(lost).sig.id == "gpu-nvrm-fatal"
    evicted = '  Warning  Evicted  9m38s  kubelet, x  Usage of EmptyDir volume "dshm" exceeds the limit "1Gi".'
    ev = _event(evicted)
    assert ev.sig.id == "pod-evicted-emptydir" and (ev.groups["volume"], ev.groups["limit"]) == ("dshm", "1Gi")


def test_slurms_cancel_lines_of_2505_and_a_requeue():
    """slurmstepd's 'DUE to SIGNAL Terminated' (lowercase 'to', Slurm 25.05) is a cancel like the bare form; a
    requeue is context (the job runs again; what failed before it is the cause), a time limit a cause."""
    assert (
        _event(
            "slurmstepd: error: *** STEP 42.0 ON n1 CANCELLED AT 2026-01-01T00:00:00 DUE to SIGNAL Terminated ***"
        ).sig.id
        == "slurm-cancelled"
    )
    requeue = _event("slurmstepd: error: *** JOB 42 ON n1 CANCELLED AT 2026-01-01T00:00:00 DUE TO JOB REQUEUE ***")
    assert requeue.sig.id == "slurm-job-requeued" and requeue.sig.role == "context"
    limit = _event("slurmstepd: error: *** JOB 42 ON n1 CANCELLED AT 2026-01-01T00:00:00 DUE TO TIME LIMIT ***")
    assert limit.sig.id == "slurm-cancelled-reason" and limit.groups["reason"] == "TIME LIMIT"
