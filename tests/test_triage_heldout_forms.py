"""Forms the held-out trials of session 35 showed unnamed, each in the form its source prints (cited in
signatures.yaml and classes.yaml): a result code another NCCL release returned, a CUDA stub library, a device plugin
without NVML, SkyPilot's setup and run failures, Paddle's launcher still waiting for its trainers at the log's end."""

from __future__ import annotations

from triage_json import triage


def test_an_unknown_result_code_is_two_nccl_releases(tmp_path):
    line = "Failed, NCCL error /src/plugins/allreducePlugin.cpp:183 'unknown result code'\n"
    data = triage(tmp_path, line)
    assert data["first"]["signature"] == "nccl-unknown-result" and "another NCCL release" in data["cause"]
    other = "Failed, NCCL error /src/plugins/allreducePlugin.cpp:183 'unhandled cuda error'\n"
    assert triage(tmp_path, other)["first"]["signature"] == "nccl-check-exit"


def test_a_cuda_stub_library_is_named_as_such(tmp_path):
    line = "host:1704:1899 [0] init.cc:255 NCCL WARN Cuda failure 'CUDA driver is a stub library'\n"
    data = triage(tmp_path, line)
    assert data["first"]["signature"] == "cuda-stub-library" and "stubs" in data["fix"]


def test_a_device_plugin_without_nvml_is_the_container_runtime(tmp_path):
    for line in (
        "Failed to start nvml with error:  could not load NVML library\n",
        "E0101 00:00:00.000000       1 factory.go:99] Failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND.\n",
    ):
        data = triage(tmp_path, "loading NVML\n" + line)
        assert data["first"]["signature"] == "nvml-library-missing" and "default" in data["cause"], line
    unknown = "Failed to initialize NVML: Unknown Error\n"
    assert triage(tmp_path, unknown)["first"]["signature"] == "nvml-lost-in-container"


def test_skypilot_setup_and_run_failures(tmp_path):
    setup = (
        "(setup pid=2061) I'm a bad worker, failing...\n"
        "ERROR: Job 1's setup failed. Failed workers: (pid=1840, returncode=1), (pid=2061, returncode=1). See error "
        "logs above for more details.\n"
    )
    data = triage(tmp_path, setup)
    assert (data["status"], data["first"]["signature"]) == ("cause", "skypilot-setup-failed")
    assert "pid=1840" in data["cause"] and data["first"]["where"].endswith(":2")
    run = "ERROR: Job 3 failed with return code list: [137, 1, 137] (A Worker failed with return code 1)\n"
    data = triage(tmp_path, run)
    assert data["first"]["signature"] == "skypilot-job-failed" and "not 137" in str(data["symptom"])


def test_paddles_launcher_waiting_at_the_logs_end_is_unfinished_and_harmless_before_the_run(tmp_path):
    wait = "server not ready, wait 3 sec to retry...\nnot ready endpoints:['10.36.10.40:6070']\n"
    data = triage(tmp_path, wait + "server not ready, wait 3 sec to retry...\n")
    assert (data["status"], data["first"]["signature"]) == ("unfinished", "paddle-peers-not-listening")
    assert data["first"]["where"].endswith(":3") and "--ips" in data["fix"]
    going_on = wait + "W0326 17:11:14.573264 179012 device_context.cc:237] Please NOTE: device: 1\nepoch 1 step 10\n"
    assert triage(tmp_path, going_on)["status"] == "clean"


def test_a_store_whose_server_went_away_is_named_in_the_newer_warning(tmp_path):
    """pytorch#153586's recvValue warning ('Failed to recv, got 0 bytes ... Did the remote server shutdown or
    crash?') is the store's process gone, as the older lower-case form was."""
    line = (
        "[W514 18:33:36.536327028 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on SocketImpl(fd=3, "
        "addr=[localhost]:34658, remote=[localhost]:1234): Failed to recv, got 0 bytes. Connection was likely "
        "closed. Did the remote server shutdown or crash?\n"
    )
    data = triage(tmp_path, line)
    assert data["status"] != "clean" and data["first"]["signature"] == "tcpstore-lost"


def test_torchruns_agent_line_with_sigbus_is_the_first_line_of_the_shm_cause(tmp_path):
    agent = "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: 0 (pid: 3111) of binary: /usr/bin/python\n"
    table = "  exitcode  : -7 (pid: 3112)\n  traceback : Signal 7 (SIGBUS) received by PID 3112\n"
    data = triage(tmp_path, agent + table)
    assert (data["first"]["signature"], data["first"]["where"][-2:]) == ("bus-error-shm", ":1")
    other = agent.replace("-7", "-9")
    assert triage(tmp_path, other)["first"]["signature"] != "bus-error-shm"


def test_rings_that_do_not_close_are_ranks_that_disagree(tmp_path):
    line = "[7] graph/rings.cc:38 NCCL WARN Error : ring 0 does not loop back to start (13 != 15).\n"
    data = triage(tmp_path, line)
    assert data["first"]["signature"] == "rings-disagree" and "2.20.3" in data["fix"]
    other = "host:1:2 [0] graph/topo.cc:500 NCCL WARN Could not find real path of /sys/class/pci_bus/0000:00\n"
    assert triage(tmp_path, other)["first"]["signature"] != "rings-disagree"


def test_container_start_failures_name_their_stage(tmp_path):
    """pyxis' seccomp filter on an old kernel, a bare NAME.sqsh taken for a registry image, libnvidia-container's
    requirement check, TaskProlog missing in the container, a step without GPUs (forms cited in signatures.yaml)."""
    cases = {
        "slurmstepd: error: pyxis: seccomp filter failed: Invalid argument:22\n": "pyxis-seccomp",
        "pyxis: importing docker image: hello-world.sqsh\nslurmstepd: error: pyxis: failed to import docker image\n": "pyxis-sqsh-as-registry",
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=11.0, please update your driver\n": "nvidia-container-requirement",
        "slurmstepd-x: error: Could not run slurm task_prolog [/opt/slurm/task-prolog.sh]: No such file or directory\n": "slurm-task-prolog",
        "No devices were found\nsrun: error: gpu101: task 0: Exited with exit code 6\n": "nvidia-smi-no-devices",
        "RuntimeError: /te/userbuffers/userbuffers-host.cpp:208 in function create_communicator_grouped2: CUDA Error: operation not supported\n": "te-userbuffers-cuda",
        "ValueError: Only able to place 0 replicas, but 2 replicas were requested.\n": "mii-replica-placement",
    }
    for log, sig in cases.items():
        assert triage(tmp_path, log)["first"]["signature"] == sig, log
    path = (
        "pyxis: importing docker image: ./hello-world.sqsh\nslurmstepd: error: pyxis: failed to import docker image\n"
    )
    assert triage(tmp_path, path)["first"]["signature"] != "pyxis-sqsh-as-registry"


def test_round_five_forms(tmp_path):
    """UCX without its GPU transports (a note alone, the cause of a GPU transfer failing after it), UCX's ibv_reg_mr
    EFAULT (GPU memory it cannot pin, not memlock), a libvirt bridge address in Open MPI's TCP path, LeaderWorkerSet
    on a cluster without StatefulSetStartOrdinal, and the NCCL path settings a troubled run forced."""
    warn = "ucp_context.c:1321 UCX  WARN  transports 'cuda_ipc','cuda_copy' are not available, please use one or more of: mm, tcp\n"
    alone = triage(tmp_path, warn)
    assert alone["status"] == "clean" and alone["notes"]
    assert triage(tmp_path, warn + "RuntimeError: NIXL_ERR_BACKEND\n")["first"]["signature"] == "ucx-cuda-unavailable"
    efault = " ib_md.c:287  UCX  ERROR ibv_reg_mr(address=0x4002a0000000, length=536870912, access=0xf) failed: Bad address\n"
    assert triage(tmp_path, efault)["first"]["signature"] == "ib-gdr-register"
    nomem = efault.replace("Bad address", "Cannot allocate memory")
    assert triage(tmp_path, nomem)["first"]["signature"] == "memlock"
    path = "[node1:40348] btl:tcp: path from 172.17.0.1 to 192.168.122.1: IPV4 PRIVATE DIFFERENT NETWORK\n"
    assert triage(tmp_path, path)["first"]["signature"] == "container-bridge-address"
    lws = "E1101 pod_controller.go:107] leader pod default/vllm-0-0 contains mistake annotation 'leaderworkerset.sigs.k8s.io/leader-name': requires Kubernetes ≥v1.27\n"
    assert triage(tmp_path, lws)["first"]["signature"] == "lws-start-ordinal"
    gdr = "h1:1:2 [0] NCCL INFO NCCL_NET_GDR_LEVEL set by environment to PHB\n"
    timeout = "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=BROADCAST, NumelIn=800, NumelOut=800, Timeout(ms)=300000) ran for 300000 milliseconds before timing out.\n"
    assert triage(tmp_path, gdr + timeout)["overrides"] == ["NCCL_NET_GDR_LEVEL=PHB"]
    done = gdr + "h1:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Destroy COMPLETE\n"
    assert triage(tmp_path, done)["overrides"] == []


def test_round_six_forms(tmp_path):
    """Slurm's task/affinity refusing a --cpu-bind outside the step's CPUs; a program's own check naming the HIP or
    CUDA runtime error (refined by the name: no device is GPU visibility); Socket where the plan's fabric is EFA."""
    bind = (
        "srun: error: CPU binding outside of job step allocation, allocated CPUs are: 0x01FFFFFFFFFFFFFE.\n"
        "srun: error: Task launch for StepId=3372350.2 failed on node nid007281: Unable to satisfy cpu bind request\n"
    )
    data = triage(tmp_path, bind)
    assert (data["first"]["signature"], data["first"]["where"][-2:]) == ("srun-cpu-bind-outside", ":1")
    assert "SRUN_CPUS_PER_TASK" in data["fix"]
    hip = "HIP Error - hello_jobstep.cpp:54: 'hipErrorNoDevice'\n"
    assert triage(tmp_path, hip)["first"]["signature"] == "gpu-visibility"
    other = "CUDA check failed at main.cu:10: cudaErrorLaunchTimeout\n"
    assert triage(tmp_path, other)["first"]["signature"] == "gpu-runtime-error-name"
    info = "h:1:2 [0] NCCL INFO cudaErrorPeerAccessAlreadyEnabled failed, ignored\n"
    assert triage(tmp_path, info)["status"] == "clean"


def test_socket_where_the_plan_is_efa_is_a_slow_run(tmp_path):
    """NCCL's Socket net on a job whose descriptor plans EFA (aws-ofi-nccl): not the plan; without a plan, Socket
    alone is no finding (some fabrics run on it by design)."""
    log = "worker-0:22:22 [0] NCCL INFO Using network Socket\n# Avg bus bandwidth    : 2.00\n"
    data = triage(tmp_path, log, "aws-p5", 2)
    assert (data["status"], data["first"]["signature"]) == ("slow", "plan-net") and "efa" in data["cause"]
    assert triage(tmp_path, log)["status"] == "clean"


def test_hcas_of_two_link_layers_and_a_view_on_strided_memory(tmp_path):
    """NET/IB using InfiniBand rails and a RoCE bond port with NCCL_IB_HCA unset, in a run that did not finish: slow;
    with NCCL_IB_HCA set, or one link layer, no finding. PyTorch's .view() on non-contiguous memory names the call."""
    hcas = "h1:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_bond_0:1/RoCE [RO]; OOB ib0:10.0.0.1<0>\n"
    data = triage(tmp_path, hcas)
    assert (data["status"], data["first"]["signature"]) == ("slow", "hca-mixed-links")
    chosen = "h1:1:2 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0,mlx5_1,mlx5_bond_0\n" + hcas
    assert triage(tmp_path, chosen)["status"] != "slow"
    assert triage(tmp_path, hcas.replace("/RoCE", "/IB"))["status"] != "slow"
    view = "RuntimeError: view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.\n"
    assert triage(tmp_path, view)["first"]["signature"] == "torch-view-noncontiguous"
    arch = "NVIDIA H800 with CUDA capability sm_90 is not compatible with the current PyTorch installation.\n"
    data = triage(tmp_path, arch)
    assert data["first"]["signature"] == "torch-gpu-arch-unsupported" and "sm_90" in data["fix"]


def test_omni_path_hfis_are_not_read_as_infiniband(tmp_path):
    """NCCL's IB verbs net labels Omni-Path's hfi1_* HFIs /IB (the port's link layer): no InfiniBand fabric, so none of
    its fixes; Mellanox HCAs on the same line form stay InfiniBand."""
    opa = "h1:1:2 [0] NCCL INFO NET/IB : Using [0]hfi1_2:1/IB ; OOB ib0:10.0.0.1<0>\n"
    assert triage(tmp_path, opa)["fabric"]["name"] is None
    assert triage(tmp_path, opa.replace("hfi1_2", "mlx5_0"))["fabric"]["name"] == "infiniband"
