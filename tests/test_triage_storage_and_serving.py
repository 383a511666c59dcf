"""Failure forms around the training loop and the serving stacks that held-out trials showed missing: checkpoint
folders and renames, NCCL's shared memory removed under it, net plugins that cannot load, UCX without CUDA under
NIXL, NVSHMEM's host grouping; each read by the source that prints it (the signature named in each assertion
cites it in ncclgen/data/triage/signatures.yaml)."""

from __future__ import annotations

from triage_json import triage

from ncclgen.triage import events
from ncclgen.triage.reader import Line


def _event(text: str):
    return events.classify(Line("x.log", 1, text), 0)


def test_the_trainers_checkpoint_rename_race_and_folders_made_by_one_rank():
    rename = (
        "FileNotFoundError: [Errno 2] No such file or directory: 'model/tmp-checkpoint-49' -> 'model/checkpoint-49'"
    )
    ev = _event(rename)
    assert ev.sig.id == "hf-checkpoint-rename-race" and ev.groups["src"] == "model/tmp-checkpoint-49"
    assert "4.37" in ev.sig.fix
    cut = ": [Errno 2] No such file or directory: 'saves/x/tmp-checkpoint-1000' -> 'saves/Yi-34B/lo"  # a wrapped line
    assert _event(cut).sig.id == "hf-checkpoint-rename-race"
    parent = _event("RuntimeError: Parent directory /data/ckpt/d20 does not exist.")
    assert parent.sig.id == "torch-save-parent-missing" and parent.groups["dir"] == "/data/ckpt/d20"
    assert _event("FileExistsError: [Errno 17] File exists: '/out/run1'").sig.id == "makedirs-race"


def test_shared_memory_removed_under_nccl_is_not_a_small_dev_shm(tmp_path):
    line = "h:1:2 [0] NCCL WARN unlink shared memory /dev/shm/nccl-d5rTd0 failed, error: No such file or directory\n"
    data = triage(tmp_path, line)
    assert data["first"]["signature"] == "nccl-shm-unlinked" and "RemoveIPC" in data["fix"]
    full = "h:1:2 [0] NCCL WARN unlink shared memory /dev/shm/nccl-x failed, error: Permission denied\n"
    assert triage(tmp_path, full)["first"]["signature"] != "nccl-shm-unlinked"


def test_a_net_plugin_that_cannot_load_is_why_its_network_is_not_found(tmp_path):
    """NCCL 2.19-2.21's 'Plugin load returned N : <dlerror> when loading LIB' (src/net.cc): the loader's error
    a few lines below 'network X not found' is the cause; the plugin's own file missing is no plugin at all."""
    warn = "h:562:562 [5] net.cc:579 NCCL WARN Error: network gIB not found.\n"
    info = "h:565:565 [7] NCCL INFO NET/Plugin: Plugin load returned 2 : /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found (required by /usr/local/nvidia/lib64/libnccl-net.so) : when loading libnccl-net-gib.so\n"
    data = triage(tmp_path, warn + "h:1:1 [7] NCCL INFO cudaDriverVersion 12080\n" + info)
    assert data["first"]["signature"] == "net-plugin-load-returned" and data["first"]["where"].endswith(":3")
    assert "GLIBC_2.32" in data["cause"]
    missing = "h:1:1 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net-gib.so: cannot open shared object file: No such file or directory : when loading libnccl-net-gib.so"
    assert (
        _event(missing) is None or _event(missing).sig is None or _event(missing).sig.id != "net-plugin-load-returned"
    )


def test_ucx_without_cuda_under_nixl_and_nvshmems_host_grouping():
    assert _event("E ucx_utils.cpp:585] VRAM memory is detected as host by UCX.").sig.id == "ucx-no-cuda"
    assert (
        _event("W ucx_utils.cpp:631] 4 NVIDIA GPU(s) were detected, but UCX CUDA support was not found!").sig.id
        == "ucx-no-cuda"
    )
    ipc = "IPC failure: Sending data over socket failed: No such file or directory"
    assert _event(ipc).sig.id == "nvshmem-ipc" and "host name" in _event(ipc).sig.cause
    fatal = "/dvs/p4/build/src/host/mem/mem_heap.cpp:exchange_heap_memory_handle:775: Fatal IPC Failure"
    assert _event(fatal).sig.id == "nvshmem-ipc"


def test_rollout_engines_that_cannot_take_the_trainers_weights_or_requests(tmp_path):
    """An RL job's weight update into vLLM (refit) and its SGLang router: the driver's 'failed during refit' is a
    symptom of the worker's own line; a MoE layout the engine rewrote, vLLM code outside its config context (a note
    alone: older vLLM releases only warn), a router with no healthy worker."""
    moe = "Error in VllmInternalWorkerExtension.update_weights_via_ipc_zmq: shard_dim=0 is not a valid data dimension for a 3D tensor (expected 1 or 2)."
    refit = "(VllmGenerationWorker pid=2616579, ip=10.66.4.71) Error: Worker failed to update weights. Result: False"
    data = triage(tmp_path, refit + "\n" + moe + "\n")
    assert data["first"]["signature"] == "vllm-moe-weight-layout" and data["first"]["where"].endswith(":2")
    assert "moe_backend=triton" in data["fix"]
    refit = "❌ Error: Updating weights for the generation policy failed during refit."
    assert _event(refit).sig.id == "rl-refit-failed"
    data = triage(tmp_path, "Current vLLM config is not set.\n" + refit + "\nRuntimeError: refit\n")
    assert data["first"]["signature"] == "vllm-config-not-set" and data["first"]["where"].endswith(":1")
    assert triage(tmp_path, "WARNING 01-02 config.py:1 Current vLLM config is not set.\n")["status"] == "clean"
    router = (
        "(RolloutManager pid=519445) For more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/503, "
        "retrying... (attempt 60/60, url=http://10.0.0.1:4674/generate, response=No available workers (all circuits open or unhealthy))"
    )
    assert _event(router).sig.id == "sglang-router-no-workers"


def test_the_transfer_layers_of_disaggregated_serving(tmp_path):
    """UCX indents a nested message ('UCX  ERROR   connect(...)'), NIXL without its backend plugin, a program built
    for a newer UCX (a note alone: printed at WARN), NVSHMEM's IBGDA without DEVX access to the NIC."""
    nested = "[1745480768.774628] [host:4112 :0]  sock.c:334  UCX  ERROR   connect(fd=208, dest_addr=10.25.117.11:64468) failed: Network is unreachable"
    assert _event(nested).sig.id == "ucx-connect-failed"
    plugin = _event("E0421 11:56:59.774282  709103 nixl_agent.cpp:259] getPluginParams: backend 'UCX' not found")
    assert plugin.sig.id == "nixl-backend-plugin-missing" and plugin.groups["b"] == "UCX"
    old = "UCP API version is incompatible: required >= 1.19, actual 1.16.0\n"
    data = triage(tmp_path, old)
    assert data["status"] == "clean" and "UCX 1.19 or later loaded libucp 1.16.0" in data["notes"][0]["says"]
    failed = old + "nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND\n"
    assert triage(tmp_path, failed)["first"]["signature"] == "ucx-api-version"
    uar = "/opt/nvshmem/src/modules/transport/ibgda/ibgda.cpp:1889: NULL value cannot allocate mlx5dv_devx_uar"
    assert _event(uar).sig.id == "nvshmem-devx-uar"
