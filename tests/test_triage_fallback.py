"""Triage names a run slower than its fabric (NCCL's Socket net where IB/RoCE was there or planned), reads NCCL's
lines without their host prefix, and the launch-level facts of this round (a rank that joined twice, Open MPI's
prefixes, every rank on one host, a command not found, KubeRay's init container waiting, CUDA's 'not supported').

The lines are in the formats NCCL (src/transport/net_socket.cc, net_ib.cc), Lightning and Open MPI print (cited in
ncclgen/triage/nodes.py, events.py and classes.yaml); each test builds the smallest log that shows one behaviour.
"""

from __future__ import annotations

from triage_json import triage


def info(host: str, text: str) -> str:
    return f"{host}:10:11 [0] NCCL INFO {text}\n"


SOCKET_IB0 = "NET/Socket : Using [0]ib0:10.1.0.2<0>"


def test_socket_net_over_ipoib_is_a_slow_run(tmp_path):
    data = triage(tmp_path, info("gpu1", "NCCL version 2.21.5+cuda12.4") + info("gpu1", SOCKET_IB0))
    assert data["status"] == "slow" and data["_code"] == 0
    assert data["first"]["signature"] == "net-socket-fallback" and data["first"]["where"].endswith(":2")
    assert "ib0" in data["cause"]


def test_socket_net_asked_for_is_no_fallback(tmp_path):
    log = info("gpu1", "NCCL_NET set by environment to Socket") + info("gpu1", SOCKET_IB0)
    assert triage(tmp_path, log)["status"] != "slow"


def test_old_release_lists_socket_interfaces_before_its_ib_net(tmp_path):
    """Before 2.4.8 NCCL printed the Socket list for its bootstrap, then 'NET/IB : Using': the net is IB, not Socket."""
    log = info("gpu1", SOCKET_IB0) + info("gpu1", "NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.1.0.2<0>")
    data = triage(tmp_path, log)
    assert data["status"] != "slow"
    assert all(row["net"] != "Socket" for row in data["nodes"])


def test_lines_without_host_prefix_are_checked_against_the_plan(tmp_path):
    """An excerpt whose NCCL lines lost their host:pid:tid prefix: Socket on an InfiniBand plan is still slow."""
    data = triage(tmp_path, "NCCL INFO NET/Socket : Using [0]bond0:10.0.0.2<0>\n", cluster="h100-ib")
    assert data["status"] == "slow" and data["first"]["signature"] == "plan-net"
    assert triage(tmp_path, "NCCL INFO NET/Socket : Using [0]bond0:10.0.0.2<0>\n")["status"] != "slow"


def test_unprefixed_lines_are_not_compared_with_named_hosts(tmp_path):
    log = info("gpu1", "NCCL version 2.21.5+cuda12.4") + "NCCL INFO NCCL version 2.18.1+cuda12.1\n"
    data = triage(tmp_path, log)
    assert data.get("first", {}).get("signature") != "nodes-differ-version"


def test_hcas_of_a_node_are_the_union_of_its_processes(tmp_path):
    """Each local rank may print its own NIC: two processes of one node with different HCAs are one node's set."""
    log = (
        "gpu1:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n"
        "gpu1:12:13 [1] NCCL INFO NET/IB : Using [0]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>\n"
    )
    row = triage(tmp_path, log)["nodes"][0]
    assert row["hcas"] == ["mlx5_0:1", "mlx5_1:1"]


def test_bootstrap_failure_points_at_the_ipoib_interface_chosen(tmp_path):
    log = (
        info("gpu1", "NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.0.3<0>")
        + info("gpu1", "misc/socket.cc:567 -> 2")
        + info("gpu1", "bootstrap.cc:270 -> 2")
    )
    data = triage(tmp_path, log)
    assert data["status"] == "cause" and data["first"]["signature"] == "bootstrap-connect"
    assert data["first"]["where"].endswith(":1") and "ib0" in data["cause"]


def test_a_rank_that_joined_twice_is_the_cause_of_the_failure(tmp_path):
    joins = "".join(f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/4\n" for r in (0, 1, 0, 1))
    data = triage(tmp_path, joins + "Traceback (most recent call last):\nRuntimeError: boom\n")
    assert data["first"]["signature"] == "ranks-started-twice" and data["first"]["where"].endswith(":3")
    clean = triage(tmp_path, joins)  # alone it is no failure: a log may hold two attempts of one job
    assert clean["status"] == "clean"


def test_open_mpi_prefix_names_the_node(tmp_path):
    line = "[gpu7][[22157,1],4][btl_tcp_endpoint.c:626:mca_btl_tcp_endpoint_recv_connect_ack] received unexpected process identifier [[22157,1],7]\n"
    data = triage(tmp_path, line)
    assert data["first"]["signature"] == "ompi-tcp-peer" and data["first"]["node"] == "gpu7"


def test_one_host_hang_suggests_the_p2p_test(tmp_path):
    setup = info("gpu1", "NCCL version 2.21.5+cuda12.4") + info("gpu1", "Channel 00/02 :    0   1")
    assert "NCCL_P2P_DISABLE=1" in triage(tmp_path, setup)["hang"]["collect_next"]
    two = setup + info("gpu2", "NCCL version 2.21.5+cuda12.4")
    assert "NCCL_P2P_DISABLE=1" not in triage(tmp_path, two)["hang"]["collect_next"]


def test_command_not_found_is_the_cause_of_what_follows_and_a_note_alone(tmp_path):
    missing = "/bin/bash: line 11: ray: command not found\n"
    waits = "800 seconds elapsed: Still waiting for GCS to be ready.\n805 seconds elapsed: Still waiting for GCS to be ready.\n"
    data = triage(tmp_path, missing + waits)
    assert data["first"]["signature"] == "command-not-found" and "(ray)" in data["cause"]
    alone = triage(tmp_path, missing)
    assert alone["status"] == "clean" and "(ray)" in alone["notes"][0]["says"]


def test_kuberay_init_container_wait_says_the_worker_never_started(tmp_path):
    data = triage(tmp_path, "125 seconds elapsed: Still waiting for GCS to be ready.\n")
    assert data["status"] == "unclassified" and "wait-gcs-ready" in data["symptom"]["says"]


def test_cuda_operation_not_supported_is_its_own_class(tmp_path):
    data = triage(tmp_path, "node1:1:2 [0] include/alloc.h:125 NCCL WARN Cuda failure 'operation not supported'\n")
    assert data["first"]["signature"] == "cuda-unsupported" and "NCCL_CUMEM_ENABLE=0" in data["fix"]


def test_socket_channels_over_several_interfaces_explain_the_failure(tmp_path):
    chans = "".join(info("gpu1", f"Channel 0{i}/0 : 0[90000] -> 1[1000] [send] via NET/Socket/{i}") for i in range(3))
    fail = info("gpu1", "include/net.h:25 -> 2") + info("gpu1", "transport/net.cc:515 -> 2")
    data = triage(tmp_path, chans + fail)
    assert data["first"]["signature"] == "socket-net-spread" and data["first"]["where"].endswith(":2")
    pinned = info("gpu1", "NCCL_SOCKET_IFNAME set by environment to bond0") + chans + fail
    assert triage(tmp_path, pinned).get("first", {}).get("signature") != "socket-net-spread"


def test_the_ib_hca_list_that_matched_nothing_is_the_root_of_a_socket_fallback(tmp_path):
    """NCCL_IB_HCA as the IB net prints it (net_ib.cc 'NCCL_IB_HCA set to %s'), then no device, then sockets on ib0."""
    log = (
        info("gpu1", "NCCL_IB_HCA set to mlx5_1") + info("gpu1", "NET/IB : No device found.") + info("gpu1", SOCKET_IB0)
    )
    data = triage(tmp_path, log)
    assert data["status"] == "slow" and data["first"]["where"].endswith(":1")
    assert "NCCL_IB_HCA=mlx5_1" in data["cause"] and "prefixes" in data["cause"]
    without = triage(tmp_path, info("gpu1", "NET/IB : No device found.") + info("gpu1", SOCKET_IB0))
    assert without["first"]["where"].endswith(":1") and "NCCL_IB_HCA=" not in without["cause"]


WATCHDOG = (
    "[rank{r}]:[E218 04:54:22.86 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=32, NumelOut=32, Timeout(ms)=600000) ran for 600045 milliseconds "
    "before timing out.\n"
)


def test_global_ranks_above_the_hosts_devices_are_not_one_host(tmp_path):
    """[rank15] beside NCCL's device [7]: the job had other hosts, so no single-host P2P advice."""
    setup = info("gpu1", "NCCL version 2.21.5+cuda12.4").replace("[0]", "[7]") + info(
        "gpu1", "Channel 00/02 :    0   1"
    )
    assert "NCCL_P2P_DISABLE=1" in triage(tmp_path, setup)["hang"]["collect_next"]
    assert (
        "NCCL_P2P_DISABLE=1"
        in triage(tmp_path, setup + WATCHDOG.format(r=7, seq=3, op="ALLREDUCE"))["hang"]["collect_next"]
    )
    other = setup + WATCHDOG.format(r=15, seq=3, op="ALLREDUCE")
    assert "NCCL_P2P_DISABLE=1" not in triage(tmp_path, other)["hang"]["collect_next"]


def test_timeouts_in_different_collectives_are_each_listed_with_what_that_may_mean(tmp_path):
    log = WATCHDOG.format(r=13, seq=216, op="ALLTOALL_BASE") + WATCHDOG.format(r=15, seq=57, op="ALLREDUCE")
    hang = triage(tmp_path, log)["hang"]
    assert any("ALLTOALL_BASE SeqNum=216" in x for x in hang["last"]) and any("SeqNum=57" in x for x in hang["last"])
    assert "in different collectives (ALLREDUCE SeqNum=57, ALLTOALL_BASE SeqNum=216)" in hang["collect_next"]
    same = triage(tmp_path, WATCHDOG.format(r=13, seq=5, op="ALLREDUCE") + WATCHDOG.format(r=15, seq=5, op="ALLREDUCE"))
    assert "different collectives" not in same["hang"]["collect_next"] and len(same["hang"]["last"]) == 1


def _init(host: str, pid: int, rank: int, bus: str, cid: str) -> str:
    """NCCL 2.19+'s init line (src/init.cc: 'ncclCommInitRank comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId
    %lx commId 0x%llx - Init START')."""
    return (
        f"{host}:{pid}:{pid} [0] NCCL INFO ncclCommInitRank comm 0x7a1{pid} rank {rank} nranks 2 cudaDev 0 "
        f"nvmlDev 0 busId {bus} commId {cid} - Init START\n"
    )


def test_two_ranks_of_one_communicator_on_one_gpu_is_the_cause(tmp_path):
    log = _init("pod-0", 42, 0, "100000", "0xaa9b") + _init("pod-0", 43, 1, "100000", "0xaa9b")
    data = triage(tmp_path, log)
    assert (data["status"], data["first"]["signature"]) == ("cause", "duplicate-gpu")
    assert data["first"]["where"].endswith(":2") and "ranks 0 and 1" in data["cause"]
    other_comm = _init("pod-0", 42, 0, "100000", "0xaa9b") + _init("pod-0", 42, 0, "100000", "0xbbbb")
    assert triage(tmp_path, other_comm).get("first", {}).get("signature") != "duplicate-gpu"
    other_gpu = _init("pod-0", 42, 0, "100000", "0xaa9b") + _init("pod-0", 43, 1, "200000", "0xaa9b")
    assert triage(tmp_path, other_gpu).get("first", {}).get("signature") != "duplicate-gpu"


SUMMARY = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 3.94 \n#\n"
TABLE = "# nThread 1 nGpus 2 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20\n" + "\n".join(
    f"           8             2     float     sum      -1    12.34    0.00    0.00      0    12.1    0.00    0.00      0 {i}"
    for i in range(3)
)


def test_two_nccl_tests_summaries_with_nothing_between_are_separate_jobs(tmp_path):
    data = triage(tmp_path, "mpirun -np 2 ./all_reduce_perf -g 2\n" + SUMMARY + SUMMARY)
    assert (data["status"], data["first"]["signature"]) == ("cause", "nccl-tests-separate-runs")
    two_runs = TABLE + "\n" + SUMMARY + TABLE + "\n" + SUMMARY  # two tests one after the other
    assert triage(tmp_path, two_runs)["status"] == "clean"
    # each process's start line, before any row (the run then hung or was cut): the same, seen sooner
    start = TABLE.split("\n")[0] + "\n#\n# Using devices\n"
    data = triage(tmp_path, "mpirun -np 2 ./all_reduce_perf -g 8\n" + start + start)
    assert (data["status"], data["first"]["signature"]) == ("cause", "nccl-tests-separate-runs")
    assert data["first"]["where"].endswith(":5") and "two start lines" in data["cause"]


def test_a_host_in_the_device_table_with_no_nccl_line_is_named(tmp_path):
    table = "".join(
        f"#  Rank  {r} Group  0 Pid  {9 + r} on {h} device  0 [0x00] Tesla T4\n" for r, h in enumerate(("a", "b"))
    )
    data = triage(tmp_path, table + info("a", "NCCL_SHM_DISABLE set by environment to 1."))
    assert (
        data["status"] == "mismatch"
        and data["first"]["signature"] == "env-not-forwarded"
        and "b print no NCCL" in data["cause"]
    )
    both = (
        table
        + info("a", "NCCL_SHM_DISABLE set by environment to 1.")
        + info("b", "NCCL_SHM_DISABLE set by environment to 1.")
    )
    assert triage(tmp_path, both)["status"] != "mismatch"


def test_p2p_turned_off_by_a_setting_with_shm_channels_is_a_slow_run(tmp_path):
    """NCCL_P2P_LEVEL=LOC (paths.cc ncclGetLevel, pasted here without NCCL's prefix) and channels via SHM, none via
    P2P: the GPUs go through host memory; no single-host P2P advice then, the test it suggests already ran."""
    shm = info("gpu1", "Channel 00 : 7[ca000] -> 6[c7000] via SHM/direct/direct")
    data = triage(tmp_path, "NCCL_P2P_LEVEL set by environment to LOC\n" + shm)
    assert (data["status"], data["first"]["signature"]) == ("slow", "p2p-disabled") and "NCCL_P2P_LEVEL=LOC" in data[
        "cause"
    ]
    p2p = info("gpu1", "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read")
    assert triage(tmp_path, "NCCL_P2P_LEVEL set by environment to LOC\n" + shm + p2p)["status"] != "slow"
    assert triage(tmp_path, shm)["status"] != "slow"  # SHM alone: GPUs without peer access use it too


def test_gpus_without_peer_access_in_a_run_that_shows_its_bandwidth_is_a_slow_run(tmp_path):
    """NCCL's 'Could not enable P2P between dev' (p2p.cc p2pCanConnect) and a closing nccl-tests average: the GPUs
    exchange data through host memory. The same line in a run that trained to its end with no figure, or beside a
    channel via P2P, is no slow run; NCCL_P2P_DISABLE's own finding keeps its place."""
    nopeer = info("gpu1", "Could not enable P2P between dev 1(=3000) and dev 0(=2000)")
    shm = info("gpu1", "Channel 00 : 1[3000] -> 0[2000] via SHM/direct/direct")
    done = "# Avg bus bandwidth    : 2.05774\n"
    data = triage(tmp_path, nopeer + shm + done)
    assert (data["status"], data["first"]["signature"]) == ("slow", "p2p-unavailable") and "no peer access" in data[
        "cause"
    ]
    assert data["first"]["where"].endswith(":1")
    finished = nopeer + shm + info("gpu1", "comm 0x5 rank 0 nranks 2 cudaDev 0 busId 2000 - Destroy COMPLETE")
    assert triage(tmp_path, finished)["status"] == "clean"
    p2p = info("gpu1", "Channel 01/0 : 0[2000] -> 1[3000] via P2P/CUMEM/read")
    assert triage(tmp_path, nopeer + shm + p2p + done)["status"] == "clean"
    off = "NCCL_P2P_DISABLE set by environment to 1\n"
    assert triage(tmp_path, off + nopeer + shm + done)["first"]["signature"] == "p2p-disabled"


def test_a_connect_to_a_link_local_address_names_the_interface(tmp_path):
    """socketStartConnect's 'Connect to 169.254.x failed' (any errno, ECONNABORTED included) is an address no other
    host routes to, not a peer that was gone; a routable address keeps the generic classes."""
    line = "socketStartConnect: Connect to 169.254.0.1<40815> failed : Software caused connection abort\n"
    data = triage(tmp_path, line)
    assert data["first"]["signature"] == "socket-link-local" and "link-local" in data["cause"]
    six = "socketStartConnect: Connect to [fe80::1%eth1]<40815> failed : Connection refused\n"
    assert triage(tmp_path, six)["first"]["signature"] == "socket-link-local"
    routable = line.replace("169.254.0.1", "10.0.0.1")
    assert triage(tmp_path, routable)["first"]["signature"] == "socket-connect-aborted"


def test_a_loopback_bootstrap_in_a_job_of_several_hosts_is_a_mismatch(tmp_path):
    """NCCL 2.3's 'NET : Using interface lo:127.0.0.1' on one of two hosts: the other cannot reach it; on one host
    alone loopback is fine."""
    lo = info("a", "NET : Using interface lo:127.0.0.1<0>")
    eth = info("b", "NET : Using interface eth0:3.5.6.12<0>")
    data = triage(tmp_path, lo + eth)
    assert (data["status"], data["first"]["signature"]) == ("mismatch", "bootstrap-unroutable")
    assert triage(tmp_path, lo)["status"] != "mismatch"
