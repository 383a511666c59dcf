"""Forms the held-out trials of session 36 showed unnamed, each in the form its source prints (cited in
signatures.yaml and classes.yaml): torchrun's agent told to stop by a signal, Ray Train's worker-group start timeout,
NCCL_COMM_ID on no local subnet, a binary without code for the GPU, and nccl-tests' wrong rows before 2.13."""

from __future__ import annotations

from triage_json import triage

AGENT = "WARNING:torch.distributed.elastic.agent.server.api:Received {} death signal, shutting down workers\n"


def test_a_hangup_of_torchruns_agent_is_the_cause_and_sigterm_only_a_symptom(tmp_path):
    for sig in ("1", "Signals.SIGHUP"):
        data = triage(tmp_path, "epoch 3 loss 1.2\n" + AGENT.format(sig))
        assert data["first"]["signature"] == "elastic-agent-hangup" and "SSH session" in data["cause"], sig
    raised = "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4193 got signal: 1\n"
    assert triage(tmp_path, raised)["first"]["signature"] == "elastic-agent-hangup"
    # SIGTERM: srun ending the step after another node failed; that node's error is the root
    failed = "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    data = triage(tmp_path, failed + AGENT.format("15"))
    assert data["first"]["where"].endswith(":1") and data["first"]["signature"] != "elastic-agent-sigterm"
    alone = triage(tmp_path, AGENT.format("15"))
    assert alone["status"] == "unclassified" and "time limit" in alone["symptom"]["says"]


def test_ray_trains_worker_group_start_timeout_is_not_infeasible(tmp_path):
    line = (
        "The worker group startup timed out after 30.0 seconds waiting for 8 workers. Potential causes include: (1) "
        "temporary insufficient cluster resources while waiting for autoscaling (ignore this warning in this case), "
        "(2) infeasible resource request where the provided `ScalingConfig` cannot be satisfied), and (3) transient "
        "network issues.\n"
    )
    data = triage(tmp_path, line)
    assert data["first"]["signature"] == "ray-train-start-timeout"
    assert "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S" in data["fix"] and "runtime_env" in data["cause"]


def test_nccl_comm_id_on_no_local_subnet_is_the_container_network(tmp_path):
    line = (
        "e82c50601d13:213:213 [0] include/socket.h:197 NCCL WARN Net : No interface found in the same subnet as "
        "remote address 192.168.0.91<27030>\n"
    )
    data = triage(tmp_path, line)
    assert data["first"]["signature"] == "socket-comm-id-subnet" and "--network=host" in data["fix"]


def test_a_binary_without_code_for_the_gpu(tmp_path):
    for line in (
        "host: Test CUDA failure common.cu:732 'no kernel image is available for execution on the device'\n",
        " CuRAND error 204 at test/include/test_utilities.h:112\n",
    ):
        data = triage(tmp_path, line)
        assert data["first"]["signature"] == "cuda-arch-missing" and "NVCC_GENCODE" in data["fix"], line
    # another library's numbered error at a source line is an error line, not a clean run
    other = triage(tmp_path, " cuBLAS error 13 at gemm.cu:40\n")
    assert other["status"] == "unclassified" and other["first"]["where"].endswith(":1")


OLD_HEADER = "       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error\n"


def test_nccl_tests_rows_before_2_13_are_wrong_only_by_a_whole_unit(tmp_path):
    bad = "  4294967296     134217728   float    29122  129.05  129.05  1e+00    29169  128.84  128.84  1e+00\n"
    good = "  1048576     262144   float    120.5  8.70  8.70  2e-07    119.9  8.75  8.75  2e-07\n"
    data = triage(tmp_path, OLD_HEADER + good + bad + " Out of bounds values : 2 FAILED\n")
    assert data["first"]["signature"] == "nccl-tests-wrong-results" and data["first"]["where"].endswith(":3")
    assert "4 GiB" in data["cause"]
    clean = triage(tmp_path, OLD_HEADER + good + " Out of bounds values : 0 OK\n Avg bus bandwidth    : 8.7\n")
    assert clean["status"] == "clean"
