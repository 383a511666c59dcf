"""Triage compares nodes (NCCL INFO facts per node), reads hangs, and attributes torchrun's failure table.

The lines are in the formats NCCL, torchrun and srun print (cited in ncclgen/triage/nodes.py and
signatures.yaml); each test builds the smallest log that shows one behaviour.
"""

from __future__ import annotations

from triage_json import triage

from ncclgen.triage import run


def info(host: str, pid: int, text: str) -> str:
    return f"{host}:{pid}:{pid + 1} [0] NCCL INFO {text}\n"


FAIL = "gpu2:20:21 [0] NCCL WARN socketProgress: Connection closed by remote peer gpu1<51234>\n" + (
    "[rank1]:[E1203 10:00:05.000000000 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1000) ran for 1001 ms.\n"
)


def test_two_nccl_releases_are_the_cause_of_the_closed_connection(tmp_path):
    log = info("gpu1", 10, "NCCL version 2.18.1+cuda12.1") + info("gpu2", 20, "NCCL version 2.19.3+cuda12.2") + FAIL
    data = triage(tmp_path, log)
    assert data["status"] == "cause" and data["first"]["signature"] == "nodes-differ-version"
    assert "2.18.1 on gpu1" in data["cause"] and "2.19.3 on gpu2" in data["cause"]
    assert data["first"]["where"].endswith(":1") or data["first"]["where"].endswith(":2")


def test_bridge_bootstrap_address_on_two_hosts(tmp_path):
    log = (
        info("gpu1", 10, "Bootstrap : Using docker0:172.17.0.1<0>")
        + info("gpu2", 20, "Bootstrap : Using docker0:172.17.0.1<0>")
        + FAIL
    )
    data = triage(tmp_path, log)
    assert data["first"]["signature"] in ("bootstrap-unroutable", "bootstrap-same-address")
    assert data["first"]["where"].endswith(":1")
    assert "docker0" in data["cause"] or "172.17.0.1" in data["cause"]


def test_bootstrap_interfaces_that_differ_between_hosts(tmp_path):
    log = info("gpu1", 10, "Bootstrap : Using eth0:10.0.0.1<0>") + info("gpu2", 20, "Bootstrap : Using ib0:10.1.0.2<0>")
    data = triage(tmp_path, log + FAIL)
    assert data["first"]["signature"] == "nodes-differ-iface" and "IPoIB (ib0) on gpu2" in data["cause"]


def test_ethernet_nics_named_differently_do_not_differ(tmp_path):
    """Hosts of different hardware name their NICs differently (eno2, enp3s0) under one NCCL_SOCKET_IFNAME
    prefix: the same kind of interface, no finding (nccl-tests#284's clean start)."""
    log = info("gpu1", 10, "Bootstrap : Using enp3s0:10.42.0.4<0>") + info(
        "gpu2", 20, "Bootstrap : Using eno2:10.42.0.2<0>"
    )
    data = triage(tmp_path, log)
    assert "nodes-differ-iface" not in [f["class"] for f in data["findings"]]


def test_a_setting_not_yet_printed_by_a_starting_host_is_not_unset(tmp_path):
    """NCCL prints a setting when it first reads it: a host that has not finished init may not have read it."""
    ifname = "NCCL_SOCKET_IFNAME set by environment to en"
    log = info("gpu1", 10, ifname) + info("gpu1", 10, "NCCL_IB_DISABLE set by environment to 1.")
    log += info("gpu2", 20, ifname) + info("gpu2", 20, "NCCL version 2.25.1+cuda12.4")
    data = triage(tmp_path, log)
    assert "nodes-differ-env" not in [f["class"] for f in data["findings"]]


def test_nodes_that_cannot_talk_are_named_without_an_error_line_unless_the_run_got_through(tmp_path):
    """Two NCCL releases (or nets, or net plugins) on the nodes of one job and no error line: a hang or a log cut
    short (nccl#1634 hung with no error); the difference is what to fix. A run that got through stays clean."""
    log = info("gpu1", 10, "NCCL version 2.18.1+cuda12.1") + info("gpu2", 20, "NCCL version 2.19.3+cuda12.2")
    data = triage(tmp_path, log)
    assert data["status"] == "mismatch" and data["_code"] == 0
    assert data["first"]["signature"] == "nodes-differ-version" and "2.18.1 on gpu1" in data["cause"]
    done = triage(tmp_path, log + "#  Avg bus bandwidth    : 21.5\n")
    assert done["status"] == "clean" and [f["class"] for f in done["findings"]] == ["nodes-differ-version"]


def test_a_net_plugin_on_some_nodes_only(tmp_path):
    """nccl#1634: HPC-X's plugin found on one node, not on the other (each release's own line for it)."""
    log = info("h11", 10, "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.")
    log += info("h04", 20, "Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so")
    data = triage(tmp_path, log)
    assert data["status"] == "mismatch" and data["first"]["signature"] == "nodes-differ-plugin"
    assert "libnccl-net.so on h04; none (NCCL's internal nets) on h11" in data["cause"]
    # one node names the library, the other the plugin it loaded: both loaded one, no difference
    same = info("h11", 10, "NET/Plugin: Could not find: libnccl-net-ofi.so.") + info(
        "h11", 10, "NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)"
    )
    same += info("h04", 20, "Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so")
    data = triage(tmp_path, same)
    assert data["status"] == "clean" and not data["findings"]
    assert {n["node"]: n["plugin"] for n in data["nodes"]}["h11"] == "NCCL RDMA Plugin v8"


def test_slow_run_network_channels_without_gdrdma(tmp_path):
    chan = "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0"
    log = (
        info("gpu1", 10, "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>")
        + info("gpu1", 10, chan + "/GDRDMA")
        + info("gpu2", 20, "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.2<0>")
        + info("gpu2", 20, chan)
    )
    data = triage(tmp_path, log)
    assert data["status"] == "slow" and data["first"]["signature"] == "no-gdrdma"
    assert "gpu2" in data["cause"] and data["first"]["node"] == "gpu2"
    assert data["fabric"]["name"] == "infiniband"


def test_no_node_with_gdrdma_on_ib_is_a_slow_run(tmp_path):
    """Every IB channel without /GDRDMA and nothing to compare with (nvidia-peermem missing on every node,
    nccl#1412): still a slow run, saying NCCL also leaves GDR off across the CPU; Socket channels are not."""
    ib = info("gpu1", 10, "Channel 03/0 : 5[5] -> 12[4] [send] via NET/IB/3")
    data = triage(tmp_path, ib)
    assert data["status"] == "slow" and data["first"]["signature"] == "no-gdrdma"
    assert "GPU-NIC path crosses the CPU" in data["cause"]
    sock = info("gpu1", 10, "Channel 03/0 : 5[5] -> 12[4] [send] via NET/Socket/0")
    assert "no-gdrdma" not in [f["class"] for f in triage(tmp_path, sock)["findings"]]


def test_all_gdrdma_is_clean(tmp_path):
    log = info("gpu1", 10, "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA")
    log += info("gpu1", 10, "comm 0x5501 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x1 - Init COMPLETE")
    assert triage(tmp_path, log)["status"] == "clean"


def test_hang_in_init_names_the_ranks_without_init_complete(tmp_path):
    log = (
        info("gpu1", 10, "comm 0x5501 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0 - Init START")
        + info("gpu2", 20, "comm 0x5502 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0 - Init START")
        + info(
            "gpu1", 10, "ncclCommInitRank comm 0x5501 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 - Init COMPLETE"
        )
    )
    data = triage(tmp_path, log)
    assert data["status"] == "hang"
    assert data["hang"]["init_incomplete"] == ["gpu2 rank 1"]
    assert (
        "TORCH_FR_DUMP_TEMP_FILE" in data["hang"]["collect_next"] and "ncclgen explain" in data["hang"]["collect_next"]
    )


def test_watchdog_only_names_the_last_collective_and_the_flight_recorder(tmp_path):
    later = FAIL.split("\n", 1)[1].replace("SeqNum=3,", "SeqNum=4817,")
    data = triage(tmp_path, later)
    assert data["status"] == "unclassified" and data["_code"] == 1
    assert data["hang"]["last"] == ["rank 1 timed out in ALLREDUCE SeqNum=4817"]
    assert "flight recorder" in data["hang"]["collect_next"]


def test_a_timeout_in_a_groups_first_barrier_alone_is_a_rank_that_never_came(tmp_path):
    """A one-element ALLREDUCE among a group's first three collectives (dist.barrier) with no rank's error in
    the logs: the cause is a rank busy elsewhere or gone; a rank's own error, when present, stays the root."""
    data = triage(tmp_path, FAIL.split("\n", 1)[1])
    assert data["status"] == "cause" and data["_code"] == 0
    assert data["first"]["signature"] == "watchdog-start-timeout" and "not reached it" in data["cause"]
    assert "flight recorder" in data["hang"]["collect_next"]  # still what to collect next
    bigger = FAIL.split("\n", 1)[1].replace("NumelIn=1, NumelOut=1", "NumelIn=4096, NumelOut=4096")
    assert triage(tmp_path, bigger)["status"] == "unclassified"
    oom = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert triage(tmp_path, oom + FAIL.split("\n", 1)[1])["first"]["signature"] != "watchdog-start-timeout"


def test_torchrun_table_and_srun_name_the_killed_rank_node(tmp_path):
    log = (
        "E1203 19:48:32.807000 2946 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) "
        "local_rank: 0 (pid: 3077) of binary: bash\n"
        "Root Cause (first observed failure):\n[0]:\n  time      : 2026-12-03_19:48:32\n  host      : localhost\n"
        "  rank      : 0 (local_rank: 0)\n  exitcode  : -9 (pid: 3077)  (SIGKILL)\n  error_file: <N/A>\n"
        "  traceback : Signal 9 (SIGKILL) received by PID 3077\n"
        "srun: error: node2: task 1: Exited with exit code 1\nsrun: error: node1: task 0: Terminated\n"
    )
    data = triage(tmp_path, log)
    assert data["first"]["signature"] == "sigkill" and data["first"]["where"].endswith(":1")
    assert data["first"]["node"] == "node2" and data["first"]["rank"] == "0"


def test_torchrun_table_host_is_used_when_it_names_a_node(tmp_path):
    log = (
        "Root Cause (first observed failure):\n[0]:\n  host      : gpu-17\n  rank      : 5 (local_rank: 1)\n"
        "  exitcode  : -9 (pid: 3077)  (SIGKILL)\n"
    )
    data = triage(tmp_path, log)
    assert data["first"]["node"] == "gpu-17" and data["first"]["rank"] == "5"


def test_nccl_settings_that_differ_between_hosts(tmp_path):
    log = (
        info("gpu1", 10, "NCCL_SOCKET_IFNAME set by environment to eth0")
        + info("gpu1", 10, "NCCL_IB_HCA set by environment to mlx5_0")
        + info("gpu2", 20, "NCCL_SOCKET_IFNAME set by environment to ib0")
        + info("gpu2", 20, "NCCL_IB_HCA set by environment to mlx5_0")
        + FAIL
    )
    data = triage(tmp_path, log)
    assert data["first"]["signature"] == "nodes-differ-env"
    assert "NCCL_SOCKET_IFNAME: eth0 on gpu1; ib0 on gpu2" in data["cause"]


def test_host_resource_failure_is_the_root_before_the_nccl_error(tmp_path):
    log = "OSError: [Errno 28] No space left on device: '/dev/shm/torch_123'\n" + FAIL
    data = triage(tmp_path, log)
    assert data["first"]["signature"] == "no-space-left" and data["first"]["where"].endswith(":1")


def test_ncclgen_ray_readiness_failure_is_named(tmp_path):
    log = "ncclgen: ERROR: Ray cluster not ready after 300 s (want 2 nodes/16 GPUs, have 1 nodes/8 GPUs)\n"
    data = triage(tmp_path, log)
    assert data["first"]["signature"] == "ncclgen-ray-not-ready" and "1 of 2 nodes" in data["cause"]


def test_prefixed_lines_and_the_pre_2_4_interface_line(tmp_path):
    """mpirun's '[1,0]<stdout>:' tag before NCCL's prefix, and 'NET : Using interface' (NCCL before 2.4)."""
    log = (
        "[1,2]<stdout>:gpu2:20:21 [0] NCCL INFO NET : Using interface lo:127.0.0.1<0>\n"
        "[1,2]<stdout>:gpu2:20:21 [0] NCCL INFO NET : Using interface eth0:10.151.40.240<0>\n"
        "[1,2]<stdout>:gpu2:20:22 [1] include/socket.h:361 NCCL WARN Call to connect timeout : Connection refused\n"
    )
    data = triage(tmp_path, log)
    assert data["first"]["signature"] == "bootstrap-unroutable" and data["first"]["where"].endswith(":1")
    assert data["first"]["node"] == "gpu2" and "lo (127.0.0.1)" in data["cause"]


def test_channels_set_up_then_nothing_ends_in_init(tmp_path):
    """No rank printed Init COMPLETE and nothing shows the run's end: a hang there, or an excerpt cut short;
    the log cannot tell which, so it is no failure (exit 0) but says where it ends and what to collect."""
    chan = "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA"
    log = info("gpu1", 10, chan) + info("gpu2", 20, chan.replace("send", "receive"))
    data = triage(tmp_path, log)
    assert data["status"] == "unfinished" and data["_code"] == 0 and "first" not in data
    assert (
        data["hang"]["ends_early"] == ["gpu1 began NCCL init", "gpu2 began NCCL init"] and not data["hang"]["certain"]
    )


def test_old_init_lines_without_a_network_channel_end_in_init(tmp_path):
    """NCCL 2.4-2.7 init lines on one node (affinity, intra-node rings and channels) count as init begun."""
    log = info("gpu1", 10, "Setting affinity for GPU 0 to ff00ff") + info("gpu1", 11, "Ring 00 : 0 -> 1 via P2P/IPC")
    assert triage(tmp_path, log)["hang"]["ends_early"] == ["gpu1 began NCCL init"]


def test_nccl_tests_rows_show_the_run_got_past_init(tmp_path):
    row = (
        "           8             2     float     sum    45.82    0.00    0.00  2e-07    38.17    0.00    0.00  1e-07\n"
    )
    log = info("gpu1", 10, "Channel 00/02 :    0   1") + row
    data = triage(tmp_path, log)  # past init, but a table with no closing average stopped (or was cut)
    assert data["status"] == "unfinished" and data["hang"]["ends_early"] == [
        "nccl-tests printed result rows and no closing '# Avg bus bandwidth' line"
    ]
    assert triage(tmp_path, log + "# Avg bus bandwidth    : 1.5\n")["status"] == "clean"


def test_ranks_behind_others_that_completed_init_are_a_hang(tmp_path):
    start = "comm 0x1 rank {r} nranks 2 cudaDev {r} busId 1000 - Init {w}"
    log = info("gpu1", 10, start.format(r=0, w="START")) + info("gpu1", 10, start.format(r=0, w="COMPLETE"))
    log += info("gpu2", 20, start.format(r=1, w="START"))
    data = triage(tmp_path, log)
    assert data["status"] == "hang" and data["_code"] == 1 and data["hang"]["init_incomplete"] == ["gpu2 rank 1"]


def test_a_run_that_finished_is_no_hang(tmp_path):
    chan = info("gpu1", 10, "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA")
    assert triage(tmp_path, chan + "# Avg bus bandwidth    : 8.62002 \n")["status"] == "clean"


def test_hcas_outside_the_plans_ib_hca(tmp_path):
    """h100-ib pins NCCL_IB_HCA to eight rails; a node that used mlx5_1 (a storage NIC) did not get the plan."""
    log = info("gpu1", 10, "NET/IB : Using [0]mlx5_1:1/IB [1]mlx5_0:1/IB ; OOB bond0:10.0.0.1<0>") + FAIL
    data = triage(tmp_path, log, "h100-ib")
    assert data["first"]["signature"] == "plan-hca" and "mlx5_1:1 on gpu1" in data["cause"]
    assert "mlx5_0:1," not in data["cause"].split("the plan sets")[0]


def test_only_symptoms_say_what_to_collect_and_a_line_above_the_root_is_not_then(tmp_path):
    """nccl-tests' 'Test NCCL failure ... internal error' with no NCCL line (NCCL_DEBUG unset): not classified,
    but the symptom's own advice is printed; a symptom printed above the root reads 'before it', not 'then'."""
    only = (
        "fengyun: Test NCCL failure common.cu:959 'internal error - please report this issue to the NCCL developers'\n"
    )
    data = triage(tmp_path, only)
    assert data["status"] == "unclassified" and "NCCL_DEBUG=WARN" in data["symptom"]["collect_next"]
    out, _code = run.triage([str(tmp_path / "job.out")], fmt="text")
    assert "collect next: rerun with NCCL_DEBUG=WARN" in out
    above = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1, invalid usage\n" + (
        "h1:1:2 [0] init.cc:974 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1\n"
    )
    data = triage(tmp_path, above)
    assert data["first"]["signature"] == "duplicate-gpu"
    assert [t["before_first"] for t in data["then"]] == [True]
    out, _code = run.triage([str(tmp_path / "job.out")], fmt="text")
    assert "\nbefore it 1 rank" in out and "\nthen " not in out


def test_a_hang_after_init_names_the_last_collective_and_the_ranks_missing(tmp_path):
    """nccl#997: every rank finished init, entered AllReduce opCount 0, and nothing followed; NCCL's COLL lines
    (src/enqueue.cc) say which processes are behind and how many of the communicator's ranks the logs show."""
    coll = (
        "AllReduce: opCount {} sendbuff 0x1 recvbuff 0x1 count 1 datatype 1 op 0 root 0 comm 0x4 [nranks=4] stream 0x5"
    )
    log = info("n1", 10, coll.format("1")) + info("n1", 11, coll.format("1")) + info("n2", 20, coll.format("0"))
    data = triage(tmp_path, log)
    assert data["status"] == "hang" and data["_code"] == 1
    assert data["hang"]["last"] == [
        "n2:20 stopped before opCount 0x1, which the others reached",
        "AllReduce opCount 0x1 is the last collective in the logs (2 processes)",
        "3 of the communicator's 4 ranks appear in these logs: read the others' too",
    ]
    done = triage(tmp_path, log + "#  Avg bus bandwidth    : 21.5\n")
    assert done["status"] == "clean" and done["hang"] is None


def test_the_line_after_last_error_keeps_its_prefix_and_is_read_as_nccl(tmp_path):
    """PyTorch's 'Last error:' quote under Ray's prefix (vllm#3688): printed as the log has it, classified as NCCL's
    WARN text."""
    ray = "(RayWorkerVllm pid=4028887) ERROR 03-28 21:38:23 ray_utils.py:44] "
    log = f"{ray}ncclUnhandledCudaError: Call to CUDA function failed.\n{ray}Last error:\n{ray}Cuda failure 'invalid argument'\n"
    data = triage(tmp_path, log)
    assert (
        data["first"]["line"] == f"{ray}Cuda failure 'invalid argument'"
        and data["first"]["signature"] == "nccl-cuda-invalid-argument"
    )


def test_a_generic_cuda_error_takes_the_gpu_hardware_cause_the_driver_reports(tmp_path):
    """sichek#51: nccl-tests' 'Test CUDA failure' without its text, then the driver's NV_ERR_RESET_REQUIRED:
    the root stays the first line, the cause is the GPU; dmesg -T times are read (a timed line sorts first)."""
    log = "Test CUDA failure common.cu:1007\n[ 8512.3] NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED] (0x00000062)\n"
    data = triage(tmp_path, log)
    assert data["first"]["where"].endswith(":1") and data["first"]["signature"] == "gpu-nvrm-fatal"
    xid = triage(tmp_path, "[Fri Aug  9 13:32:56 2024] NVRM: Xid (PCI:0000:00:08): 94, pid=1, Contained: SM\n")
    assert xid["first"]["time"] == "08-09 13:32:56.000000" and xid["first"]["signature"] == "gpu-xid"


def _counters(rank: int, enq: int, done: int, dump: bool = False) -> str:
    """ProcessGroupNCCL's lines with the group's last enqueued/completed work (ncclgen/triage/progress.py)."""
    head = f"[rank{rank}]:[E227 16:30:4{rank}.000000000 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
    if dump:
        return head + (
            "Received a dump signal due to a collective timeout from  rank 0 and we will try our best to dump the "
            f"debug info. Last enqueued NCCL work: {enq}, last completed NCCL work: {done}.This is most likely\n"
        )
    return head + (
        f"Exception (either an error or timeout) detected by watchdog at work: {enq}, last enqueued NCCL work: "
        f"{enq}, last completed NCCL work: {done}.\n"
    )


def test_a_rank_out_of_step_in_the_counters_is_the_root(tmp_path):
    """Ranks waiting in work 21937 while rank 1 had nothing pending (it skipped the collective): rank 1's line;
    a rank that enqueued one more than the rest is named the same way; agreeing counters name nobody."""
    idle = _counters(0, 21937, 21936) + _counters(2, 21937, 21936) + _counters(1, 21936, 21936, dump=True)
    data = triage(tmp_path, idle)
    assert data["status"] == "cause" and data["first"]["signature"] == "ranks-out-of-step"
    assert data["first"]["rank"] == "1" and "rank 1 had no collective pending" in data["cause"]
    extra = _counters(0, 12, 11) + _counters(1, 11, 10) + _counters(2, 11, 10)
    data = triage(tmp_path, extra)
    assert data["first"]["rank"] == "0" and "rank 0 last enqueued work 12, rank 1, 2 work 11" in data["cause"]
    same = _counters(0, 11, 10) + _counters(1, 11, 10)
    assert triage(tmp_path, same).get("first", {}).get("signature") != "ranks-out-of-step"
    periodic = idle.replace("Received a dump signal", "NCCL Work update periodically: x").replace(
        "Exception (either an error or timeout) detected by watchdog at work", "NCCL Work update periodically: at"
    )
    assert triage(tmp_path, periodic).get("first", {}).get("signature") != "ranks-out-of-step"
    p2p = (
        "[rank0]:[E227 16:30:40.000000000 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=12, OpType=SEND, NumelIn=8, NumelOut=8, Timeout(ms)=1000) ran for 1001 ms.\n"
    )
    assert triage(tmp_path, p2p + extra).get("first", {}).get("signature") != "ranks-out-of-step"  # stages differ


def test_bootstrap_on_loopback_while_nccl_comm_id_names_another_host(tmp_path):
    """NCCL 2.29.2-2.29.7 inverted matchSubnet (src/os/linux.cc), so with NCCL_COMM_ID a host bootstrapped on
    lo: the interface line is the root, though nothing failed yet on this host."""
    env = info("vm1", 10, "NCCL_COMM_ID set by environment to 172.17.16.2:12340")
    lo = info("vm1", 10, "Bootstrap: Using lo:127.0.0.1<0>") + env + info("vm1", 10, "NCCL version 2.29.2+cuda12.8")
    data = triage(tmp_path, lo)
    assert data["first"]["signature"] == "bootstrap-commid-loopback" and data["first"]["where"].endswith(":1")
    assert "2.30.3" in data["fix"]
    # a root on this host itself (a one-host run) and an interface on the root's network are no finding
    local = info("vm1", 10, "Bootstrap: Using lo:127.0.0.1<0>") + env.replace("172.17.16.2", "127.0.0.1")
    eth = info("vm1", 10, "Bootstrap: Using eth0:172.17.16.2<0>") + env
    for log in (local, eth):
        assert triage(tmp_path, log + FAIL)["first"]["signature"] != "bootstrap-commid-loopback"


def test_loopback_on_a_job_of_one_host_is_no_finding(tmp_path):
    """All ranks on one host (nccl-tests' device list names one host, NCCL_SOCKET_IFNAME=lo on purpose): its own
    loopback reaches every rank, so no unroutable-bootstrap note; two hosts on lo still get it."""
    rows = "".join(f"#   Rank  {r} Pid  {10 + r} on gpu1 device  {r} [0x06] Tesla V100\n" for r in (0, 1))
    lo = "".join(info("gpu1", 10 + r, "Bootstrap : Using [0]lo:127.0.0.1<0>") for r in (0, 1))
    data = triage(tmp_path, rows + lo)
    assert not any(f["class"] == "bootstrap-unroutable" for f in data.get("findings", [])), data
    two = lo + info("gpu2", 30, "Bootstrap : Using [0]lo:127.0.0.1<0>") + FAIL
    assert triage(tmp_path, two)["first"]["signature"] in ("bootstrap-unroutable", "bootstrap-same-address")


def test_a_run_across_ray_workers_that_never_says_its_network_says_so(tmp_path):
    """vLLM over Ray without NCCL_DEBUG (vllm#6610: Socket in place of RoCE, no line showing it): the report says the
    network is not in the logs and how to see it; with NCCL's net line it says nothing of the kind."""
    log = (
        "INFO 07-20 17:27:20 pynccl.py:63] vLLM is using nccl==2.21.5\n"
        "(RayWorkerWrapper pid=593, ip=10.5.6.103) INFO 07-20 17:27:20 pynccl.py:63] vLLM is using nccl==2.21.5\n"
    )
    data = triage(tmp_path, log)  # (an excerpt that ends at the banners: no sign the run got further)
    assert data["status"] == "unfinished" and data["net_unseen"] is True
    assert "NCCL_DEBUG_SUBSYS=INIT,NET" in run.triage([str(tmp_path / "job.out")])[0]
    shown = log + info("gpu1", 10, "NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.5.6.103<0>")
    assert triage(tmp_path, shown)["net_unseen"] is False
    assert triage(tmp_path, log.replace("nccl==", "gloo "))["net_unseen"] is False  # no sign NCCL ran


def test_ranks_without_init_complete_in_an_excerpt_that_left_lines_out_are_no_certain_hang(tmp_path):
    """A rank's Init COMPLETE without its Init START (printed first since NCCL 2.18.3) shows lines were left out of
    the excerpt: the ranks missing COMPLETE are listed, the status is unfinished (exit 0), not a hang."""
    start = "comm 0x{r} rank {r} nranks 3 cudaDev {r} busId {r}000 commId 0x9 - Init {w}"
    log = info("gpu1", 10, start.format(r=0, w="START")) + info("gpu1", 11, start.format(r=1, w="COMPLETE"))
    data = triage(tmp_path, log)
    assert (data["status"], data["_code"]) == ("unfinished", 0) and data["hang"]["init_incomplete"] == ["gpu1 rank 0"]
    whole = log + info("gpu1", 11, start.format(r=1, w="START"))
    assert triage(tmp_path, whole)["status"] == "hang"
