"""Triage rules that hold for every launcher's log, not for one sample: file headers, Python tracebacks, the node
of a torchrun line, NCCL's bootstrap. Each input is a few lines in the formats the programs print."""

from __future__ import annotations

from pathlib import Path

from triage_json import triage

from ncclgen.triage import compare, reader, run, runstate
from ncclgen.triage.analyse import Accumulator
from ncclgen.triage.reader import Line


def _result(lines: list[str]):
    acc = Accumulator()
    for i, text in enumerate(lines, 1):
        acc.add(Line("job.out", i, text))
    return acc.result()


def test_any_key_value_header_that_opens_a_file_is_not_log(tmp_path: Path):
    """A person's note above a shared log quotes the failing line: it must not become the first failure."""
    log = tmp_path / "shared.log"
    quoted = "ValueError: When connecting to an existing cluster, num_cpus and num_gpus must not be provided."
    log.write_text(f"# source: https://example.org/thread\n# established cause: {quoted}\nstarting\n{quoted}\n")
    assert reader.header_lines(log.read_bytes()) == 2
    assert [line.lineno for line in reader.scan([log])] == [4]
    text, code = run.triage([str(log)], fmt="json")
    assert code == 0 and '"where": "' + f"{log}:4" in text


def test_header_lines_stop_at_the_first_line_of_log():
    assert reader.header_lines(b"# note: a\nlog line\n# cause: b\n") == 1
    assert reader.header_lines(b"#!/bin/bash\n# cause: b\n") == 0


def test_traceback_header_is_not_the_first_failure_its_exception_line_is():
    res = _result(
        [
            "Traceback (most recent call last):",
            '  File "train.py", line 3, in <module>',
            "KeyError: 'rollout'",
        ]
    )
    assert res.status == "unclassified" and res.first is not None
    assert res.first.line.text == "KeyError: 'rollout'"


def test_a_bare_traceback_header_is_still_a_failure():
    res = _result(["Traceback (most recent call last):", '  File "train.py", line 3, in <module>'])
    assert res.status == "unclassified" and res.first and res.first.line.lineno == 1


KILLED = "E1205 21:14:37.544000 7809 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) local_rank: 0 (pid: 7846) of binary: ncclgen-bind"
SRUN = ["srun: error: node1: task 0: Exited with exit code 1", "srun: error: node2: task 1: Exited with exit code 1"]


def test_torchrun_line_takes_its_node_from_ncclgen_pid_line_not_from_srun_order():
    """srun reports its tasks' exits in the order it learns them (a race): node1's agent may be first."""
    pids = ["ncclgen: torchrun on node node1 is pid 7808", "ncclgen: torchrun on node node2 is pid 7809"]
    res = _result([*pids, KILLED, *SRUN])
    assert res.first and res.first.sig and res.first.sig.id == "sigkill"
    assert res.first.node == "node2"


def test_without_the_pid_line_the_first_srun_exit_names_the_node():
    res = _result([KILLED, *SRUN])
    assert res.first and res.first.node == "node1"


def test_socket_closed_in_nccl_bootstrap_is_a_cause_elsewhere_a_symptom():
    warn = "seyun:17283:17549 [3] include/socket.h:371 WARN Connection closed by remote peer"
    trace = "seyun:17283:17549 [3] INFO bootstrap.cu:45 -> 2 [Net]"
    res = _result([warn, trace])
    assert res.status == "cause" and res.first and res.first.sig and res.first.sig.id == "bootstrap-connect"
    later = _result([warn, "seyun:17283:17549 [3] INFO transport/net_socket.cu:166 -> 2"])
    assert later.status == "unclassified" and later.first and later.first.sig.id == "socket-peer-closed"  # type: ignore[union-attr]


def test_a_gpudirect_disabled_line_on_a_socket_nic_is_not_a_slow_run():
    acc = Accumulator()
    acc.add(Line("a.log", 1, "h:1:2 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'"))
    acc.add(Line("a.log", 2, "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'"))
    found = compare.findings(acc.facts)
    assert [f.cls for f in found] == ["no-gdrdma"] and "mlx5_0" in found[0].detail
    socket_only = Accumulator()
    socket_only.add(Line("a.log", 1, "h:1:2 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'"))
    assert compare.findings(socket_only.facts) == []


def test_vllm_waiting_for_its_placement_group_is_a_cause():
    """vLLM's own lines (vllm/executor/ray_utils.py): the wait alone, then with its earlier GPU count warning."""
    wait = (
        "INFO 02-02 19:54:30 ray_utils.py:212] Waiting for creating a placement group of specs for 10 seconds. "
        "specs=[{'GPU': 1.0, 'node:172.31.42.4': 0.001}, {'GPU': 1.0}]. Check `ray status` to see if you have enough resources."
    )
    alone = _result([wait])
    assert (
        alone.status == "cause"
        and alone.first
        and alone.first.sig
        and alone.first.sig.id == "vllm-placement-group-wait"
    )
    fewer = "WARNING 02-02 19:54:20 ray_utils.py:315] The number of required GPUs exceeds the total number of available GPUs in the placement group."
    both = _result(["Started a local Ray instance.", fewer, wait])
    assert both.first and both.first.sig and both.first.sig.id == "ray-infeasible" and both.first.line.lineno == 2


def test_ray_cxx_error_lines_are_failures_not_a_clean_run():
    """Ray's raylet and GCS log glog-style ('[date time,ms E pid tid] file.cc:N: ...'): an E line is an error."""
    line = "(raylet) [2025-10-31 17:10:05,847 E 24507 24507] (raylet) node_manager.cc:1201: something went wrong"
    res = _result([line])
    assert res.status == "unclassified" and res.first and res.first.line.lineno == 1
    info = "(raylet) [2025-10-31 17:10:05,847 I 24507 24507] (raylet) node_manager.cc:1201: all good"
    assert _result([info]).status == "clean"


def test_english_after_node_is_not_a_node_name():
    res = _result(["srun: error: Unable to create step for job 77: Requested node configuration is not available"])
    assert res.first and res.first.sig and res.first.sig.id == "srun-step-unavailable"
    assert res.first.node is None


def test_nccl_init_timings_line_means_the_run_got_past_init():
    """NCCL 2.23+ prints it right after Init COMPLETE (src/init.cc): an excerpt without Init COMPLETE is not cut off."""
    lines = [
        "head:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA",
        "head:1:2 [0] NCCL INFO Init timings - ncclCommInitRank: rank 0 nranks 16 total 3.08 (kernels 0.20, alloc 0.10,"
        " bootstrap 0.50, allgathers 0.10, topo 1.00, graphs 0.01, connections 1.10, rest 0.07)",
    ]
    assert _result(lines).status == "clean"
    assert _result(lines[:1]).status == "clean"  # the hang/unfinished call is the report's (runstate.ends_early)
    acc = Accumulator()
    for i, text in enumerate(lines, 1):
        acc.add(Line("a.log", i, text))
    assert runstate.ends_early(acc.facts) == []
    only_channels = Accumulator()
    only_channels.add(Line("a.log", 1, lines[0]))
    assert runstate.ends_early(only_channels.facts) == ["head began NCCL init"]


def test_gdrdma_on_the_send_end_only_names_the_receiving_node_the_reverse_is_normal():
    send = "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA"
    recv = "9[1a000] -> 2[6b000] [receive] via NET/IB/1"
    acc = Accumulator()
    for i, text in enumerate([send, recv], 1):
        acc.add(Line("a.log", i, text))
    found = compare.findings(acc.facts)
    assert [f.cls for f in found] == ["no-gdrdma"] and found[0].line.text == recv
    normal = Accumulator()  # GDR reads (the send end) are off by default on some platforms, writes on
    for i, text in enumerate([send.replace("/GDRDMA", ""), recv + "/GDRDMA"], 1):
        normal.add(Line("a.log", i, text))
    assert compare.findings(normal.facts) == []


def test_a_few_socket_connect_retries_at_start_are_no_failure_many_are():
    """NCCL 2.22+ logs every refused connect it retries (socket.cc socketConnectCheck): a peer a second late to
    listen leaves one or two in a healthy run."""
    fmt = "h1:1:2 [0] NCCL INFO socketPollConnect: connect to 10.0.0.2<43211> returned Connection refused, retrying ({}/34) after sleep for {} msec"
    assert _result([fmt.format(1, 100), fmt.format(2, 200)]).status == "clean"
    res = _result([fmt.format(n, n * 100) for n in range(1, 14)])
    assert res.status == "unclassified" and res.first.sig.id == "socket-connect-retry"
    assert res.first.line.lineno == 10


def test_deepspeed_runner_master_address_only_when_it_is_no_address():
    """runner.py logs the address it chose on every multi-node launch: an IPv4 is no failure, nothing or a path is."""
    ok = "[2024-02-24 04:37:40,964] [INFO] [runner.py:568:main] Using IP address of 10.1.2.3 for node trainer-1"
    assert _result([ok]).status == "clean"
    bad = "[2022-12-15 21:00:19,543] [INFO] [runner.py:417:main] Using IP address of  for node ddp-0"
    res = _result([bad])
    assert res.status == "cause" and res.first.sig.id == "deepspeed-master-address"
    cmd = "pdsh -S -f 1024 -w a,b export NCCL_DEBUG=INFO; cd /w; python -u -m deepspeed.launcher.launch --master_addr=/root/x.bashrc --master_port=1"
    assert _result([cmd]).first.sig.id == "deepspeed-master-address"
    assert _result([cmd.replace("/root/x.bashrc", "10.0.0.1")]).status == "clean"


def test_nccl_device_allocation_is_gpu_memory_pinned_host_allocation_is_not():
    """alloc.h: ncclCudaCalloc/ncclCudaMalloc take device memory; ncclCudaHostCalloc pinned host memory."""
    dev = _result(["h1:1:2 [0] include/alloc.h:520 NCCL WARN Failed to CUDA calloc async 1920 bytes"])
    host = _result(["h1:1:2 [0] include/alloc.h:159 NCCL WARN Failed to CUDA host alloc 4096 bytes"])
    assert dev.first.sig.id == "gpu-oom" and host.first.sig.id == "host-resources"


def test_pytorch_quote_of_nccl_names_the_failure_when_nothing_else_does():
    """NCCLUtils.cpp getNcclErrorDetailStr: the exception, then 'Last error:', then NCCL's text: the text says what failed."""
    res = _result(
        [
            "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:268, remote process exited or there was a network error, NCCL version 2.21.5",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "Last error:",
        ]
    )
    assert res.first.line.lineno == 1  # no quote read: the exception stays the first failure
    log = [
        "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:268, remote process exited or there was a network error, NCCL version 2.21.5",
        "Last error:",
    ]
    acc = Accumulator()
    for i, text in enumerate(log, 1):
        acc.add(Line("job.out", i, text))
    acc.add(
        Line(
            "job.out",
            3,
            "socketProgressOpt: Call to recv from 10.0.0.2<33759> failed : Connection reset by peer",
            "socketProgressOpt: Call to recv from 10.0.0.2<33759> failed : Connection reset by peer",
        )
    )
    res = acc.result()
    assert res.status == "unclassified" and res.first.line.lineno == 3 and res.first.sig.id == "socket-peer-closed"


def test_graph_search_fallback_explains_only_the_nic_fusion_failure():
    """nccl#1748: in 2.24-2.26 the fallback names NET 0, which NIC fusion removed; it explains that failure, not others."""
    fallback = (
        "h1:1:2 [0] graph/search.cc:1135 NCCL WARN Could not find a path for pattern 1, falling back to simple order"
    )
    res = _result([fallback, "h1:1:2 [0] graph/topo.h:230 NCCL WARN Could not find NET with id 0"])
    assert (res.status, res.first.sig.id, res.first.line.lineno) == ("cause", "graph-search-fallback", 1)
    res = _result([fallback, "[Mon Jul  1 10:00:00 2024] Out of memory: Killed process 4242 (python)"])
    assert res.first.sig.id == "host-oom-kill"
    assert _result([fallback.replace("graph/search.cc:1135 NCCL WARN", "NCCL INFO")]).status == "clean"


def test_pyxis_names_enroots_own_error_not_its_wrapper():
    """pyxis prints 'container start failed', then enroot's log: enroot's [ERROR] line says what failed."""
    res = _result(
        [
            "slurmstepd: error: pyxis: container start failed with error code: 1",
            "slurmstepd: error: pyxis: printing contents of log file ...",
            "slurmstepd: error: pyxis:     [ERROR] /etc/enroot/hooks.d/99-mellanox.sh exited with return code 1",
        ]
    )
    assert (res.status, res.first.sig.id, res.first.line.lineno) == ("cause", "enroot-error", 3)


def test_a_loggers_error_prefix_on_traceback_frames_does_not_make_them_errors():
    """vLLM's logger.exception prefixes every line of a traceback with ERROR: the exception line is the error."""
    pre = "(Worker pid=509) ERROR 04-13 19:52:24 [multiproc_executor.py:800] "
    res = _result(
        [
            pre + "Traceback (most recent call last):",
            pre + '  File "/x/pynccl_wrapper.py", line 373, in NCCL_CHECK',
            pre + '    raise RuntimeError(f"NCCL error: {error_str}")',
            pre + "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        ]
    )
    assert res.status == "unclassified" and res.first.line.lineno == 4


def test_a_socket_closed_by_a_peer_on_this_host_is_no_network_between_nodes():
    local = _result(
        ["h1:1:2 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer localhost<56086>"]
    )
    remote = _result(
        ["h1:1:2 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer h2<56086>"]
    )
    assert local.first.sig.id == "socket-local-closed" and remote.first.sig.id == "socket-peer-closed"


def test_a_retry_warning_alone_is_a_note_and_the_cause_when_the_connect_then_fails():
    """c10d warns while it retries a name that does not resolve yet (normal while pods come up)."""
    warn = "[W socket.cpp:558] [c10d] The IPv6 network addresses of (w-0-0.w, 3389) cannot be retrieved (gai error: -2 - Name or service not known)."
    alone = _result([warn])
    assert alone.status == "clean" and [n.sig.id for n in alone.notes] == ["store-name-not-yet-resolved"]
    failed = _result(
        [
            warn,
            "torch.distributed.DistNetworkError: The client socket has timed out after 600s while trying to connect to (w-0-0.w, 3389).",
        ]
    )
    assert (failed.status, failed.first.sig.id, failed.first.line.lineno) == ("cause", "store-name-not-yet-resolved", 1)


def test_fatal_words_of_other_programs_are_failures_but_not_on_nccl_info_lines():
    nvshmem = "/src/host/init/init.cu:nvshmemi_check_state_and_init:1080: nvshmem initialization failed, exiting"
    assert _result([nvshmem]).first.sig.id == "nvshmem-init-failed"
    assert _result(["Ctran.cc:181] Ctran initialization failed"]).status == "unclassified"
    assert _result(["h1:1:1 [0] NCCL INFO NET/OFI aws-ofi-nccl initialization failed"]).status == "clean"


def test_ranks_timed_out_in_different_collectives_at_one_seqnum_diverged():
    """The flight recorder's COLLECTIVE_TYPE_MISMATCH, read from the watchdog lines alone."""
    fmt = "[E ProcessGroupNCCL.cpp:737] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=37, OpType={op}, Timeout(ms)=1800000) ran for 1801750 milliseconds before timing out."
    res = _result(
        [fmt.format(r=1, op="_ALLGATHER_BASE"), fmt.format(r=0, op="REDUCE"), fmt.format(r=2, op="_ALLGATHER_BASE")]
    )
    assert (res.status, res.first.sig.id, res.first.rank) == ("cause", "watchdog-op-mismatch", "0")
    same = _result([fmt.format(r=1, op="REDUCE"), fmt.format(r=2, op="REDUCE")])
    assert same.status == "unclassified"


def test_ranks_of_a_group_that_printed_no_timeout_are_the_ones_waited_for():
    """An all-gather's counts give the group's size (NumelOut = size x NumelIn): its ranks with no timeout line."""
    fmt = (
        "[rank{r}]:[E ProcessGroupNCCL.cpp:563] [{pg}Rank {r}] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=15037, OpType={op}, NumelIn={nin}, NumelOut={nout}, Timeout(ms)=600000) ran for 600055 ms"
    )
    gather = dict(pg="", op="_ALLGATHER_BASE", nin=131072512, nout=524290048)
    res = _result([fmt.format(r=r, **gather) for r in (3, 1, 2)])
    assert (res.status, res.first.sig.id, res.first.rank) == ("cause", "ranks-absent", "3")
    assert res.first.groups["text"] == (
        "ranks 1-3 of the 4-rank group 0 waited for 600 s in _ALLGATHER_BASE SeqNum 15037; rank 0 printed no timeout there"
    )
    scatter = dict(pg="PG ID 2 PG GUID 2 ", op="_REDUCE_SCATTER_BASE", nin=64, nout=8)
    res = _result([fmt.format(r=r, **scatter) for r in (0, 1, 5)])
    assert res.first.groups["text"].startswith("ranks 0, 1, 5 of the 8-rank group 2 waited")
    assert res.first.groups["text"].endswith("; ranks 2, 3, 4, 6, 7 printed no timeout there")
    # every rank timed out, a collective whose counts say nothing of the size, one rank alone: no one to name
    assert _result([fmt.format(r=r, **gather) for r in range(4)]).status == "unclassified"
    reduce = dict(pg="", op="ALLREDUCE", nin=1024, nout=1024)
    assert _result([fmt.format(r=r, **reduce) for r in (1, 2, 3)]).status == "unclassified"
    assert _result([fmt.format(r=1, **gather)]).status == "unclassified"
    # a rank's own error explains the timeouts better than their count does
    oom = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert _result([oom] + [fmt.format(r=r, **gather) for r in (3, 1, 2)]).first.sig.id != "ranks-absent"


def test_a_generic_ray_death_takes_the_reason_its_message_gives_below():
    res = _result(
        [
            "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.",
            "        pid: 1412",
            "The actor is dead because its worker process has died. Worker exit type: USER_ERROR Worker exit detail: Task was killed due to the node running low on memory.",
        ]
    )
    assert (res.first.sig.id, res.first.line.lineno) == ("ray-oom-kill", 3)


def test_every_suspect_and_refinement_names_signatures_that_exist():
    from ncclgen.triage import catalogue

    known = {s.id for s in catalogue.signatures()} | set(catalogue.classes())
    named = [
        (s.id, n)
        for s in (*catalogue.signatures(), *catalogue.classes().values())
        for n in (*s.explains, *s.refined_by)
    ]
    assert named and [pair for pair in named if pair[1] not in known] == []


def test_a_locked_memory_warning_is_a_note_when_the_run_went_on_and_the_cause_when_it_failed():
    warn = "[1668693503.473099] [ampere:1188443:0]  ib_log.c:246  UCX  ERROR mlx5_0: ibv_create_cq() failed: Cannot allocate memory. Please set max locked memory (ulimit -l) to 'unlimited' (current: 64 kbytes)"
    assert _result([warn]).status == "clean"
    res = _result([warn, "[cn0022:4071024] pml_ucx.c:309  Error: Failed to create UCP worker"])
    assert (res.status, res.first.sig.id, res.first.line.lineno) == ("cause", "ucx-verbs-memlock", 1)


def test_an_untimed_root_stands_before_the_timed_echo_printed_after_it():
    """Python prints the exception without a time stamp, then the program's logger repeats it with one (OLMo's
    'Uncaught %s: %s'): the untimed line takes the next timed line's place in time, and is the first failure.
    NCCL's untimed error traces (symptoms) keep their place after the timed lines."""
    err = "HfHubHTTPError: 429 Client Error: Too Many Requests for url: https://huggingface.co/api/datasets/glue"
    echo = f"[2024-04-18 15:55:06] CRITICAL [olmo.util:158, rank=6] Uncaught {err}"
    res = _result([err, echo])
    assert res.first.line.lineno == 1 and res.first.sig.id == "hf-hub-unreachable"
    trace = "h1:5891:6272 [1] NCCL INFO misc/socket.cc:47 -> 3"
    stuck = "[E930 15:23:00.059980974 ProcessGroupNCCL.cpp:1487] [PG ID 4 PG GUID  Rank 2] ProcessGroupNCCL's watchdog got stuck for 10 seconds"
    assert _result([trace, stuck]).first.line.lineno == 2


def test_a_rank_that_stopped_training_one_timeout_before_the_others_timed_out_is_the_cause():
    """A stop decision taken on some ranks only (anemoi-core#1064: the time-limit check under rank_zero_only): the
    stop line comes one process-group timeout before the first watchdog timeout; any other gap, or no timeout at
    all, leaves it a line every healthy run prints."""
    stop = "[2026-04-20 19:14:34,416][anemoi.training.diagnostics.callbacks.stopping][INFO] - Time limit of 1d reached. Stopping training."
    fmt = (
        "[rank{r}]:[E420 {t} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=4832284, OpType={op}, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800051 milliseconds"
    )
    late = [
        fmt.format(r=0, t="19:44:35.569754537", op="ALLREDUCE"),
        fmt.format(r=5, t="19:44:36.136978018", op="BROADCAST"),
    ]
    res = _result([stop, *late])
    assert (res.status, res.first.sig.id, res.first.line.lineno) == ("cause", "training-stop", 1)
    soon = [line.replace("19:44:3", "19:19:3") for line in late]  # five minutes after: not this stop's doing
    assert _result([stop, *soon]).first.sig.id == "watchdog-op-mismatch"
    assert _result([stop]).status == "clean"


def test_an_exception_no_signature_names_is_placed_by_its_innermost_frame(tmp_path):
    """DeepSpeed#7636: a KeyError in the framework's own code; the report says which file and function raised it,
    from the traceback's last frame (a frame a paste wrapped after 'in' still counts)."""
    log = (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/ds/deepspeed/runtime/zero/stage_1_and_2.py", line 1007, in reduce_ipg_grads\n'
        "[rank0]:     self.report_ipg_memory_usage(...)\n"
        '[rank0]:   File "/ds/deepspeed/runtime/base_optimizer.py", line 70, in report_ipg_memory_usage\n'
        "[rank0]:     bucket = self.ipg_buckets[dt]\n"
        "[rank0]:              ~~~~~~~~~~~~~~~~^^^^\n"
        "[rank0]: KeyError: torch.bfloat16\n"
    )
    data = triage(tmp_path, log)
    assert data["status"] == "program"
    assert data["first"]["raised_in"] == "/ds/deepspeed/runtime/base_optimizer.py:70 in report_ipg_memory_usage"
    wrapped = log.replace(", in report_ipg_memory_usage\n", ", in\n report_ipg_memory_usage\n")
    assert triage(tmp_path, wrapped)["first"]["raised_in"] == "/ds/deepspeed/runtime/base_optimizer.py:70"
    far = log.replace("[rank0]: KeyError", "x\nx\nx\nx\n[rank0]: KeyError")  # no frame right above it: not placed
    assert "raised_in" not in triage(tmp_path, far)["first"]
