"""A log that ends while c10d still retries its store's host (ncclgen/triage/lastline.py): unfinished at that line,
with the cause it would be; the same warning with the run going on after it is c10d's normal wait (jobset#93)."""

from __future__ import annotations

from triage_json import triage

WARN = (
    "[W726 02:14:09.077658670 socket.cpp:697] [c10d] The IPv6 network addresses of (job-worker-0, 43913) cannot be "
    "retrieved (gai error: -2 - Name or service not known).\n"
)


def test_a_log_that_ends_at_the_store_warning_stopped_there(tmp_path):
    data = triage(tmp_path, "rank 0 starting\n" + WARN)
    assert data["status"] == "unfinished" and data["first"]["signature"] == "store-unresolved-at-end"
    assert data["first"]["where"].endswith(":2") and "--local-addr" in data["fix"] and "job-worker-0" in data["cause"]
    assert "not a log cut short" in data["cause"]  # the report says it may be an excerpt


def test_the_warning_with_the_run_going_on_after_it_is_clean(tmp_path):
    """The lines after it hold no word the reader keeps: the file's own last line is what is compared."""
    data = triage(tmp_path, WARN + WARN + "Train Epoch: 1 [0/60000 (0%)]\tLoss: 2.3\nTraining is finished\n")
    assert data["status"] == "clean" and "first" not in data


def test_the_warning_before_a_failed_connect_is_the_cause(tmp_path):
    """What it was before: a suspect that explains the store's failure."""
    fail = "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed.\n"
    data = triage(tmp_path, WARN + fail)
    assert data["status"] == "cause" and data["first"]["signature"] == "store-name-not-yet-resolved"


def test_an_empty_zmq_host_is_the_launch_scripts_empty_address(tmp_path):
    """vLLM's split_zmq_path refuses 'tcp://:PORT' (vllm/utils/network_utils.py): the address passed was empty."""
    data = triage(tmp_path, "[dp1/worker] LEADER_IP= MY_IP=10.1.120.49\nValueError: Invalid zmq path: tcp://:29550\n")
    assert data["first"]["signature"] == "zmq-empty-host" and "getent hosts" in data["fix"]


def test_a_log_that_ends_early_after_a_foreign_connection_stalled_there(tmp_path):
    """NCCL's 'wrong magic' from a connection that was not NCCL's (nccl#1808: the proxy thread could wait in place
    before 2.30.7): where a log that ends in NCCL's setup may have hung; after a run that ended, a note only."""
    warn = "h:1:2 [0] misc/socket.cc:484 NCCL WARN socketFinalizeAccept: wrong magic 74656d2f20544547 != 7970663b906d70b9\n"
    init = "h:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\nh:1:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    hung = triage(tmp_path, init + warn + "h:1:3 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n")
    assert hung["status"] == "unfinished" and hung["first"]["signature"] == "socket-foreign-connection"
    done = "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Destroy COMPLETE\n"
    assert "first" not in triage(tmp_path, init + warn + done)


def test_a_log_that_ends_where_a_frameworks_distributed_setup_begins_ended_early(tmp_path):
    """Each framework's 'setup began' line (startline.STARTS, in the form its source prints) as a file's last line:
    unfinished, naming it; the same line with the run's progress after it (lines the reader does not keep) is
    clean, as is one with any later line the reader keeps."""
    starts = {
        "I0302 02:01:36.274989 31267 nccl_context.cc:83] init nccl context nranks: 4 local rank: 0 gpu id: 0 ring id: 0": "Paddle",
        "[2025-01-02 10:00:00,000] [INFO] [comm.py:856:init_distributed] Initializing TorchBackend in DeepSpeed with backend nccl": "DeepSpeed",
        "> initializing torch distributed ...": "Megatron",
        "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous'ing worker group": "torchrun",
        "INFO:tensorflow:batch_all_reduce: 4 all-reduces with algorithm = nccl, num_packs = 1": "TensorFlow",
        "INFO:tensorflow:Reduce to /job:localhost/replica:0/task:0/device:CPU:0 then broadcast to ('/job:localhost/replica:0/task:0/device:CPU:0',).": "TensorFlow",
        "(Worker pid=1889) INFO 08-27 02:41:51 [parallel_state.py:1638] world_size=16 rank=3 local_rank=3 distributed_init_method=tcp://192.168.181.24:29501 backend=nccl": "vLLM",
        "(TrainController pid=1) Attempting to start training worker group of size 2 with the following resources: [{'GPU': 1}] * 2": "Ray Train",
        "2022-03-22 11:11:18,857\tINFO trainer.py:199 -- Trainer logs will be logged in: /home/u/ray_results/train_2022-03-22": "Ray Train",
    }
    for line, who in starts.items():
        data = triage(tmp_path, "starting\n" + line + "\n\n")
        assert data["status"] == "unfinished" and who in data["hang"]["ends_early"][0], line
        assert triage(tmp_path, line + "\nstep 1 loss 2.3\n")["status"] == "clean", line
        assert triage(tmp_path, line + "\nNCCL version 2.21.5+cuda12.4\ndone\n")["status"] == "clean", line
