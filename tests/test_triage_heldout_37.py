"""Line forms a held-out round (session 37) found unread or misread, each checked on lines shaped as the sources
print them: a rule that regresses makes one of these fail."""

from __future__ import annotations

from pathlib import Path

import triage_json


def triage(tmp_path: Path, text: str) -> tuple[dict, int]:
    data = triage_json.triage(tmp_path, text)
    return data, data["_code"]


def test_ofi_no_provider_alone_is_a_note_not_a_failure(tmp_path):
    data, code = triage(
        tmp_path,
        "NET/OFI No eligible providers were found\n"
        "NET/OFI Selected provider is cxi, fabric is cxi (found 4 nics)\n"
        "NET/OFI Using transport protocol SENDRECV\n",
    )
    assert code == 0 and data["status"] in ("clean", "unfinished") and "first" not in data


def test_ofi_no_provider_is_the_root_when_the_plugin_then_fails(tmp_path):
    data, code = triage(
        tmp_path,
        "NET/OFI Using transport protocol RDMA (platform set)\n"
        "NET/OFI No eligible providers were found\n"
        "NET/OFI aws-ofi-nccl initialization failed\n",
    )
    assert code == 0 and data["status"] == "cause" and data["first"]["signature"] == "ofi-no-provider"
    assert data["first"]["where"].endswith(":2")


def test_a_proxy_wait_follows_the_local_proxy_that_failed(tmp_path):
    # the rank waiting on a proxy (same node) is not a network failure: the proxy's own CUDA failure is the cause
    data, _code = triage(
        tmp_path,
        "n1:10:20 [0] proxy.cc:1143 NCCL WARN Socket recv failed while polling for opId=0x55a51966cc80\n"
        "n1:10:20 [0] NCCL INFO transport/p2p.cc:438 -> 3\n"
        "n1:13:30 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n"
        "n1:13:30 [3] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes\n",
    )
    assert data["first"]["where"].endswith(":3") and "out of memory" in data["cause"]


def test_accelerate_port_check_is_the_port_in_use(tmp_path):
    data, _code = triage(
        tmp_path,
        "ConnectionError: Tried to launch distributed communication on port `29500`, but another process is "
        "utilizing it. Please specify a different port\n",
    )
    assert data["first"]["signature"] == "address-in-use"


def test_torch_without_nccl_names_windows_and_gloo(tmp_path):
    data, _code = triage(
        tmp_path,
        "C:\\Users\\u\\envs\\t\\lib\\site-packages\\torch\\distributed\\distributed_c10d.py:558: UserWarning: "
        "Attempted to get default timeout for nccl backend, but NCCL support is not compiled\n"
        "Traceback (most recent call last):\n",
    )
    assert data["first"]["signature"] == "torch-without-nccl" and data["first"]["where"].endswith(":1")
    assert "Windows" in data["cause"] and "gloo" in data["fix"]


def test_gpus_without_peer_access_are_a_note_in_a_run_that_ends_well(tmp_path):
    data, code = triage(
        tmp_path,
        "[TensorRT-LLM][WARNING] Device 2 peer access Device 5 is not available.\n"
        "[TensorRT-LLM][INFO] Loaded engine size: 3568 MiB\n",
    )
    assert code == 0 and "first" not in data


def test_gpus_without_peer_access_explain_a_failure_that_follows(tmp_path):
    data, _code = triage(
        tmp_path,
        "[TensorRT-LLM][WARNING] Device 2 peer access Device 5 is not available.\n"
        "Traceback (most recent call last):\n"
        '  File "run.py", line 504, in <module>\n'
        "RuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in cudaIpcOpenMemHandle: peer access is not "
        "supported between these two devices\n",
    )
    assert data["first"]["signature"] == "gpu-no-peer-access" and "use_custom_all_reduce" in data["fix"]


def test_store_socket_wait_warning_is_the_store_wait(tmp_path):
    data, _code = triage(
        tmp_path,
        "[rank1]:[W516 14:34:56.853490829 socket.cpp:464] [c10d] waitForInput: poll for socket SocketImpl(fd=79, "
        "addr=[localhost]:41170, remote=[localhost]:29500) returned 0, likely a timeout\n",
    )
    assert data["first"]["signature"] == "store-wait-timeout"


def test_a_word_after_node_in_a_sentence_is_no_host_name(tmp_path):
    data, _code = triage(
        tmp_path,
        "(EngineCore pid=84) INFO 06-07 18:13:55 [ray_utils.py:464] Waiting for creating a placement group of specs "
        "for 150 seconds. specs=[{'GPU': 1.0}, {'GPU': 1.0}]. Check `ray status` and `ray list nodes` to see if you "
        "have enough resources, and make sure the IP addresses used by ray cluster are the same as VLLM_HOST_IP "
        "environment variable set in each node if you are running on a multi-node.\n"
        "ValueError: Cannot provide a placement group of placement_group_specs on node gpu-07.\n",
    )
    assert data["first"]["node"] in (None, "gpu-07"), data["first"]


def test_ray_unhandled_error_gives_way_to_the_exception_it_wraps(tmp_path):
    p = "(ActorModelRayActor pid=700388) "
    data, _code = triage(
        tmp_path,
        f"{p}Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::LLMRayActor.init_process_group() "
        "(pid=700386, ip=0.0.0.0, actor_id=fee8a2f8a218213cf461587c02000000)\n"
        f'{p}File "/venv/lib/python3.12/site-packages/vllm/entrypoints/llm.py", line 495, in collective_rpc\n'
        f"{p}executor = self.llm_engine.model_executor\n"
        f"{p}KeyError: 'some key'\n",
    )
    assert data["first"]["where"].endswith(":4"), data["first"]


def test_vllm_v1_without_model_executor_is_a_release_mismatch(tmp_path):
    data, _code = triage(tmp_path, "AttributeError: 'LLMEngine' object has no attribute 'model_executor'\n")
    assert data["first"]["signature"] == "vllm-v1-no-model-executor" and "15444" in data["fix"]


def test_nemo_rl_gpu_shortage_is_ray_infeasible(tmp_path):
    data, _code = triage(
        tmp_path, "ValueError: Not enough GPUs available. Requested 16 GPUs, but only 8 are available in the cluster.\n"
    )
    assert data["first"]["signature"] == "ray-infeasible"


def test_sglang_weight_update_failure_is_a_failure(tmp_path):
    data, _code = triage(
        tmp_path,
        "Failed to update parameter online: start (256) + length (256) exceeds dimension size (256)..\n"
        "The full weights of the ModelRunner are partially updated. Please discard the whole weights.\n",
    )
    assert data["first"]["signature"] == "sglang-weight-update-failed"
    assert "(start (256) + length (256) exceeds dimension size (256))" in data["cause"]


def test_nvshmem_null_value_line_is_read_and_named(tmp_path):
    data, _code = triage(
        tmp_path,
        "/build/nvshmem/src/modules/transport/ibgda/ibgda.cpp:2234: NULL value Unable to create ah.\n"
        "/build/nvshmem/src/modules/transport/ibgda/ibgda.cpp:2966: non-zero status: 7 create DCT share err.\n",
    )
    assert data["first"]["signature"] == "nvshmem-ibgda-create-ah" and data["first"]["where"].endswith(":1")


def test_nvshmem_uid_bootstrap_without_interface(tmp_path):
    data, _code = triage(
        tmp_path,
        "/build/nvshmem/src/modules/bootstrap/uid/bootstrap_uid.cpp:bootstrap_net_init:160: No socket interface found\n"
        "/build/nvshmem/src/host/init/init.cu:269: non-zero status: 7 bootstrap pre-initialization failed\n",
    )
    assert data["first"]["signature"] == "nvshmem-bootstrap-no-interface"
    assert "NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME" in data["fix"]


def test_nvshmem_nvls_mapping_failure_is_the_fabric_class(tmp_path):
    data, _code = triage(
        tmp_path,
        "/src/host/team/team_internal_nvls.cpp:254: non-zero status: 401 cuMemMap failed to map 274877906944 bytes\n"
        "/src/host/team/team_internal.cpp:786: non-zero status: 7 Mapping multicast groups for UC heap failed\n",
    )
    assert data["first"]["signature"] == "fabric-manager" and "NVSHMEM_DISABLE_NVLS=1" in data["fix"]


def test_nvidia_driver_refusing_dmabuf_attach_is_a_failure(tmp_path):
    data, code = triage(tmp_path, "NVRM: dma-buf attach failed: topology not supported for mapping type FORCE_PCIE\n")
    assert code == 0 and data["first"]["signature"] == "nvrm-dmabuf-attach"
    assert "NVreg_GrdmaPciTopoCheckOverride" in data["fix"]


def test_a_log_that_ends_waiting_for_a_peer_is_unfinished_and_names_it(tmp_path):
    data, code = triage(tmp_path, "waiting for sshd on worker-1.job.default.svc\n" * 3)
    assert code == 0 and data["status"] == "unfinished"
    assert data["first"]["signature"] == "launcher-peer-wait-at-end" and data["first"]["where"].endswith(":3")


def test_a_peer_wait_that_ends_is_no_finding(tmp_path):
    data, code = triage(
        tmp_path,
        "waiting for master\n"
        "host:1:2 [0] NCCL INFO Init COMPLETE\n"
        "host:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Destroy COMPLETE\n",
    )
    assert code == 0 and "first" not in data


def test_slurm_plugin_dlopen_is_the_root_not_the_fatal_line(tmp_path):
    data, _code = triage(
        tmp_path,
        "srun: error: plugin_load_from_file: dlopen(/usr/lib64/slurm/switch_hpe_slingshot.so): libjson-c.so.3: "
        "cannot open shared object file: No such file or directory\n"
        "srun: error: Couldn't load specified plugin name for switch/hpe_slingshot: Dlopen of plugin file failed\n"
        "srun: fatal: Can't find plugin for switch/hpe_slingshot\n",
    )
    assert data["first"]["signature"] == "slurm-plugin-load" and data["first"]["where"].endswith(":1")


def test_prolog_failure_gives_way_to_the_cloud_quota_below_it(tmp_path):
    data, _code = triage(
        tmp_path,
        "srun: PrologSlurmctld failed, job killed\n"
        "srun: error: Job allocation 2 has been revoked\n"
        "resume.py ERROR: \"Quota 'C2_CPUS' exceeded. Limit: 300.0 in region europe-west4.\"\n",
    )
    assert data["first"]["signature"] == "cloud-capacity" and "C2_CPUS" in data["cause"]


def test_ofi_tuner_refusing_a_chosen_protocol(tmp_path):
    data, _code = triage(
        tmp_path,
        "h:1:2 [6] ncclResult_t nccl_ofi_tuner_init_v1(size_t, size_t, ncclDebugLogger_t):270 NCCL WARN NET/OFI The "
        "tuner plugin can not be loaded when explicitly choosing an algorithm or protocol with NCCL_ALGO/NCCL_PROTO\n",
    )
    assert data["first"]["signature"] == "ofi-tuner-refused" and "1.17.0" in data["fix"]


def test_unsloth_warning_that_drops_gpus_is_a_cause(tmp_path):
    data, code = triage(
        tmp_path,
        "/env/unsloth/__init__.py:47: UserWarning: Unsloth: 'CUDA_VISIBLE_DEVICES' is currently 0,1\n"
        "Unsloth currently does not support multi GPU setups - but we are working on it!\n",
    )
    assert code == 0 and data["first"]["signature"] == "unsloth-single-gpu"
