"""The triage catalogue (ncclgen/data/triage/) is consistent with its sources and with itself.

That nccl-warn.tsv is what NCCL's source gives is checked by hand, not here (CI has no clone of NCCL):
`python tools/nccl_warn_strings.py --check /path/to/nccl.git`; the table's header names the tags read and
the newest tag's commit, and the tests below check the header and the table agree with each other.
"""

from __future__ import annotations

import collections
import re
from pathlib import Path

from ncclgen.triage import catalogue

ROOT = Path(__file__).resolve().parent.parent


def test_ids_unique_and_every_entry_has_cause_fix_and_sources():
    sigs = catalogue.signatures()
    assert len({s.id for s in sigs}) == len(sigs)
    for s in sigs:
        assert s.cause and (s.fix or s.fixes) and s.sources and s.keys, s.id
        if s.role == "symptom":
            assert "{n}" in s.then, s.id
    for cid, c in catalogue.classes().items():
        assert c.cause and (c.fix or c.fixes) and c.sources, cid
        assert all(fab in ("infiniband", "roce", "tcp", "efa") for fab, _ in c.fixes), cid


def test_quoted_nccl_warnings_are_real_format_strings():
    formats = catalogue.nccl_warn_formats()
    quoted = [s for s in catalogue.signatures() if s.nccl_warn]
    assert len(quoted) >= 3
    for s in quoted:
        assert s.nccl_warn in formats, s.id


def test_table_header_names_its_source_tags_and_commit():
    lines = (catalogue.DATA / "nccl-warn.tsv").read_text().splitlines()
    head = "\n".join(lines[:3])
    tags = re.search(r"\((\d+) tags: ([\d. ]+)\)", head)
    assert tags and int(tags.group(1)) == len(tags.group(2).split()) >= 50
    assert re.search(r"newest v2\.30\.7-1 = [0-9a-f]{40}", head)
    assert lines[3].split("\t") == ["level", "format", "where", "first", "last"]
    named = tags.group(2).split()
    for level, fmt, where in catalogue.nccl_rows():
        assert level in ("WARN", "INFO") and where.startswith("src/") and fmt, (level, fmt)
    for row in lines[4:]:
        first, last = row.split("\t")[3:5]
        assert first in named and last in named, row
    assert len(catalogue.nccl_warn_formats()) > 900


def test_every_nccl_format_has_a_class_and_the_catch_all_is_rare():
    """Cover the sources: every WARN (and failing INFO) format any release since 2.4 prints gets a cause class
    from its source file and text; the generic class takes under 3% of them (Windows-only code, odd checks)."""
    classes = catalogue.classes()
    counts = collections.Counter(catalogue.class_of(lv, f, w) for lv, f, w in catalogue.nccl_rows())
    assert set(counts) <= set(classes)
    rows = len(catalogue.nccl_rows())
    assert counts["nccl-other"] < 0.03 * rows, counts["nccl-other"]
    assert len([c for c in counts if counts[c]]) >= 25


def test_classes_by_source_file_and_call_site():
    cases = {
        ("WARN", "NET/IB : %s:%d Got async event : %s", "src/transport/net_ib/common.cc:1"): "ib-port-event",
        ("WARN", "Cuda failure '%s'", "src/include/checks.h:1"): "cuda-failure",
        ("WARN", "Failed to bind NVLink SHARP (NVLS) Multicast memory", "src/transport/nvls.cc:1"): "fabric-manager",
        ("WARN", "Error while %s shared memory segment %s", "src/misc/shmutils.cc:1"): "shm",
        ("WARN", "Bootstrap : no socket interface found", "src/bootstrap.cc:1"): "socket-interface",
        ("WARN", "Failed to initialize any NET plugin", "src/plugin/net.cc:1"): "plugin-load",
        # init ignores it ((void) ncclCudaLibraryInit(), v2.16.2-1 src/init.cc:1198): a note, not a failure
        ("WARN", "Failed to find CUDA library (NCCL_CUDA_PATH='%s') : %s", "src/misc/cudawrap.cc:1"): "cuda-lib-path",
        ("WARN", "Mismatched NCCL version detected : rank %d version %d", "src/init.cc:1"): "version-mismatch",
        ("INFO", "NET/IB : No device found.", "src/transport/net_ib/init.cc:1"): "nccl-advice",
    }
    for (level, fmt, where), want in cases.items():
        assert catalogue.class_of(level, fmt, where) == want, fmt


def test_cuda_error_text_refines_the_class():
    assert catalogue.refine("cuda-failure", "Cuda failure 'out of memory'") == "gpu-oom"
    assert catalogue.refine("cuda-failure", "Cuda failure 802 'system not yet initialized'") == "fabric-manager"
    assert catalogue.refine("cuda-failure", "Cuda failure 'an illegal memory access was encountered'") == (
        "cuda-kernel-launch"
    )


def test_a_specific_signature_keeps_its_cause_over_the_cuda_error_text():
    """NVLS multicast objects used up read CUDA error 2 'out of memory' (nccl#2077): not GPU memory, so
    neither the NVLS signature nor NCCL's own NVLS line becomes a GPU memory failure; a generic CUDA error
    line still is one; Gloo's refused connection names the address it tried."""
    from ncclgen.triage import events
    from ncclgen.triage.reader import Line

    def sig(text):
        ev = events.classify(Line("x.log", 1, text), 0)
        return ev.sig.id, ev

    nvls = "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 2 'out of memory'."
    assert sig(nvls)[0] == "nvls-bind-failed"
    assert catalogue.refine("fabric-manager", nvls) == "fabric-manager"
    assert sig("RuntimeError: CUDA error: out of memory")[0] == "gpu-oom"
    gloo_id, ev = sig("[/gloo/transport/tcp/pair.cc:761] connect [127.0.1.1]:60817: Connection refused")
    assert gloo_id == "gloo-connect" and ev.groups["err"] == "connect [127.0.1.1]:60817: Connection refused"


def test_a_matching_line_always_holds_a_key():
    """The reader only looks at lines holding a key: a signature matching without one would never fire."""
    for f in (ROOT / "tests" / "data" / "triage").glob("*.log"):
        for line in f.read_text().splitlines():
            for s in catalogue.signatures():
                if s.match and s.match.search(line):
                    assert any(k in line for k in s.keys), (s.id, line)


def test_nccl_source_names_the_file_for_a_current_warning():
    text = "Call to ibv_modify_qp failed with 110 Connection timed out, hint"
    assert catalogue.nccl_source(text) == (
        "Call to ibv_modify_qp failed with %d %s, %s",
        "src/misc/ibvwrap.cc:376",
        "ib-qp-setup",
    )


def test_a_redis_era_ray_node_that_cannot_join_and_no_node_named_types():
    """Ray before 2.0 kept its GCS in Redis: its raylet's retry line is a join failure (ray#12153); Ray's
    autoscaler's 'No available node types' names no node."""
    from ncclgen.triage import events
    from ncclgen.triage.reader import Line

    redis = "W1119 08:22:22.445783 1513663 1513663 redis_context.cc:303] Failed to connect to Redis, retrying."
    assert events.classify(Line("x.log", 1, redis), 0).sig.id == "ray-join-failed"
    ev = events.classify(Line("x.log", 1, "Error: No available node types can fulfill resource request"), 0)
    assert ev is None or ev.node is None


def test_a_warn_line_of_nccl_before_2_4_is_read():
    """NCCL up to 2.3 printed 'FILE:LINE WARN text' without the word NCCL (nccl#210): the same line is an NCCL
    warning, classed by its text (EAFNOSUPPORT from socket(): no usable interface)."""
    from ncclgen.triage import events
    from ncclgen.triage.reader import Line

    old = "include/socket.h:344 WARN Socket creation failed : Address family not supported by protocol"
    ev = events.classify(Line("x.log", 1, old), 0)
    assert ev is not None and ev.sig is not None and ev.sig.id == "socket-interface"
    assert events.classify(Line("x.log", 2, "2024-01-01 WARN something else happened"), 0) is None


def test_a_request_pinned_to_a_node_address_no_node_has():
    """vLLM pins its first bundle to the driver's 'node:IP' resource; no node with it: the addresses differ
    (vllm#7815), not too few GPUs."""
    from ncclgen.triage import events
    from ncclgen.triage.reader import Line

    line = "(autoscaler +7s) Error: No available node types can fulfill resource request {'node:10.0.0.5': 0.001, 'GPU': 1.0}."
    ev = events.classify(Line("x.log", 1, line), 0)
    assert ev.sig.id == "ray-node-ip-pinned" and ev.groups["ip"] == "10.0.0.5"
    plain = events.classify(Line("x.log", 1, "No available node types can fulfill resource request {'GPU': 8.0}"), 0)
    assert plain.sig.id == "ray-infeasible"


def test_a_gid_table_change_is_not_a_port_down():
    """NCCL's async event thread names the event in its %s: 'GID table change' is an address change on the
    RoCE port (nccl#394), not a link down to replace a cable for."""
    from ncclgen.triage import events
    from ncclgen.triage.reader import Line

    gid = "VM-0-14:106:196 [0] transport/net_ib.cc:73 NCCL WARN NET/IB : Got async event : GID table change"
    assert events.classify(Line("x.log", 1, gid), 0).sig.id == "ib-gid-change"
    down = "VM-0-14:106:196 [0] transport/net_ib.cc:73 NCCL WARN NET/IB : Got async event : port error"
    assert events.classify(Line("x.log", 1, down), 0).sig.id == "ib-port-event"


def test_an_address_of_no_family_names_both_causes_and_ray_versions_both_sides():
    """'family N is neither AF_INET nor AF_INET6' is an empty or garbled peer address: a missing interface
    (nccl#1837) or two NCCL releases (nccl#1267); one node's log cannot tell them apart, so the cause names
    both, not only the interface. Ray's 'Version mismatch' names the cluster's side and the process's."""
    from ncclgen.triage import events
    from ncclgen.triage.reader import Line

    fam = "h:1:2 [0] misc/socket.cc:484 NCCL WARN ncclSocketInit: connecting to address  with family 0 is neither AF_INET(2) nor AF_INET6(10)"
    ev = events.classify(Line("x.log", 1, fam), 0)
    assert ev.sig.id == "socket-address-family"
    assert "NCCL_SOCKET_IFNAME" in ev.sig.cause and "different NCCL releases" in ev.sig.cause
    ray = events.classify(Line("x.log", 1, "RuntimeError: Version mismatch: The cluster was started with:"), 0)
    assert ray.sig.id == "ray-version-mismatch" and "Ray or Python differ" in ray.sig.cause


def _event(text: str):
    from ncclgen.triage import events
    from ncclgen.triage.reader import Line

    return events.classify(Line("x.log", 1, text), 0)


def test_forms_a_held_out_trial_missed_are_read_by_their_source():
    """Second held-out trial (21 public logs, kept outside the project): each line below is a family of
    messages with one printing site upstream, not a sample's words."""
    # torch ProcessGroupGloo.cpp createDefaultDevice: the loopback fallback, a suspect before Gloo's failure
    loop = "[rank8] Warning: Unable to resolve hostname to a (local) address. Using the loopback"
    assert _event(loop).sig.id == "gloo-loopback" and _event(loop).sig.role == "suspect"
    assert _event("[rank8] Gloo connectFullMesh failed ... timed out connecting: SO_ERROR").sig.id == "gloo-connect"
    # ray node_manager.cc: the raylet's periodic count of OOM kills (a count of 0 is no kill)
    oom = "(raylet) node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed"
    assert _event(oom).sig.id == "ray-oom-kill"
    none = "(raylet) node_manager.cc:3069: 0 Workers (tasks / actors) killed due to memory pressure (OOM), 2 Workers crashed"
    assert _event(none) is None or _event(none).sig is None or _event(none).sig.id != "ray-oom-kill"
    # torch 1.x THC/ATen forms of a CUDA error, refined by the error text like C10_CUDA_CHECK's
    legacy = "RuntimeError: cuda runtime error (10) : invalid device ordinal at /pytorch/torch/csrc/cuda/Module.cpp:33"
    assert _event(legacy).sig.id == "gpu-visibility"
    thc = "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=50 error=2 : out of memory"
    assert _event(thc).sig.id == "gpu-oom"


def test_gpu_hardware_faults_are_not_program_bugs():
    """Uncorrectable ECC (cudaErrorECCUncorrectable 214), the driver API's CUresult forms and fatal Xids: drain
    the node, not CUDA_LAUNCH_BLOCKING."""
    assert _event("RuntimeError: CUDA error: uncorrectable ECC error encountered").sig.id == "gpu-hardware"
    assert _event("Accelerator Fatal Error: call to cuCtxCreate returned error 214").sig.id == "gpu-hardware"
    assert _event("  (CUDA_ERROR_ECC_UNCORRECTABLE): uncorrectable ECC error encountered").sig.id == "gpu-hardware"
    assert _event("call to cuMemAlloc returned error 2 (CUDA_ERROR_OUT_OF_MEMORY)").sig.id == "gpu-oom"
    xid = _event("[ 1234.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.")
    assert xid.sig.id == "gpu-xid" and xid.groups["xid"] == "79"
    assert _event("NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception") is None  # a program's fault, not hardware
    launch = "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert _event(launch).sig.id == "cuda-kernel-launch"


def test_nccl_text_quoted_by_xla_or_pasted_with_markdown():
    """XLA (JAX) quotes NCCL's last WARN in its own error (openxla/xla nccl_api.cc); a log pasted into an issue
    keeps Markdown around the level; NCCL <= 2.8 glued the syscall's name into 'Call to X failed' (no format)."""
    xla = "invalid usage ... Last NCCL warning(error): 'Bootstrap : no socket interface found'"
    assert _event(xla).sig.id == "socket-interface"
    full = "x.cc:1: NCCL operation ncclCommInitRank failed: internal error. Last NCCL warning(error) log entry (may be unrelated) 'Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1'."
    assert _event(full).sig.id == "duplicate-gpu"
    md = "c2:41588:41837 [0] include/shm.h:28 **NCCL WARN Call to posix_fallocate failed : No space left on device**"
    ev = _event(md)
    assert (
        ev.sig.id == "shm" and ev.groups["nccl_where"] == "src/include/shm.h:28" and not ev.groups["text"].endswith("*")
    )


def test_no_node_from_a_host_port_or_an_attribute_name():
    """'fake-host:1234' is an address, not torchrun's 'host : NAME'; Ray's 'node name: IP' names no node 'name'
    (its 'address: IP' does)."""
    tcp = "[c10d] The client socket has failed to connect to fake-host:1234 (errno: 113 - No route to host)."
    assert _event(tcp).node is None
    ray = "The node with node id: c118 and address: 10.0.3.192 and node name: 10.0.3.192 has been marked dead because"
    assert _event(ray).node == "10.0.3.192"


def test_a_crash_is_a_root_and_an_abort_a_symptom():
    """SIGSEGV/SIGILL in native code ends a rank (torchrun's 'Signal 11 (SIGSEGV) received by PID', exitcode -11,
    Ray's absl handler '*** SIGSEGV received'); SIGABRT is how PyTorch's watchdog ends a rank after a timeout, so
    it follows the cause. An uncaught C++ exception and a failed CHECK are error lines."""
    for line in (
        "Signal 11 (SIGSEGV) received by PID 1234",
        "  exitcode  : -11 (pid: 5)",
        "*** SIGSEGV received at time=1",
    ):
        ev = _event(line)
        assert ev.sig.id == "process-crash" and ev.sig.role == "root", line
    assert _event("Signal 6 (SIGABRT) received by PID 12").sig.role == "symptom"
    assert _event("  exitcode  : -9 (pid: 5)").sig.id == "sigkill"
    assert _event("Fatal Python error: Aborted") is None
    ev = _event("terminate called after throwing an instance of 'std::runtime_error'")
    assert ev is not None and ev.sig is None
    check = _event("F1203 core_worker.cc:1] Check failed: ok")  # glog's CHECK: an abort, a symptom with its words
    assert check is not None and check.sig.id == "native-check-failed" and check.sig.role == "symptom"


def test_third_trial_families():
    """Third held-out trial: IB completion status 4/8/10 is a refused DMA (ACS, IOMMU, peermem), not an
    unreachable peer; a transport's size check between ranks is their settings differing; a missing libnccl in
    XLA's or the loader's words; aws-ofi-nccl's EINVAL registration is the NCCL >= 2.19 / old Libfabric pair."""
    acs = "NCCL WARN NET/IB : Got completion from peer fe80::1%ib0<33397> with error 4, opcode 1, len 1, vendor err 81 (Send)"
    assert _event(acs).sig.id == "ib-completion-access"
    new = "h:1:2 [0] transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<1> with status=IBV_WC_LOC_PROT_ERR(4) opcode=IBV_WC_SEND(0) vendor_err=81"
    assert _event(new).sig.id == "ib-completion-access"
    retry = acs.replace("error 4,", "error 12,")
    assert _event(retry).sig.id == "ib-completion-error-12"
    size = "h:1:2 [0] transport/net_ib.cc:1119 NCCL WARN NET/IB : req 0/1 tag 0 peer 10.0.0.6<5> collective mismatch error, local size 4 remote size 2"
    assert _event(size).sig.id == "rank-config-mismatch"
    assert _event("ImportError: libnccl.so.2: cannot open shared object file: No such file or directory").sig.id == (
        "nccl-library-missing"
    )
    ofi = "register_mr_buffers:544 NCCL WARN NET/OFI Unable to register memory (type = 2) for device 0. RC: -22, Error: Invalid argument"
    assert _event(ofi).sig.id == "ofi-register-memory"
    other = _event(
        "h:1:2 [0] nccl_net_ofi_rdma_init:7978 NCCL WARN NET/OFI OFI fi_getinfo() call failed: No data available"
    )
    assert other.sig.id == "ofi-plugin" and other.groups["plugin_source"] == "aws/aws-ofi-nccl"
    assert "nccl_where" not in other.groups


def test_a_peer_on_an_ipoib_interface_means_infiniband(tmp_path):
    """No HCA list in the log, but the peer's address sits on ib0 (IPoIB exists on InfiniBand only): the
    RoCE GID-index fix is not offered."""
    import json

    from ncclgen.triage import run

    log = tmp_path / "job.out"
    log.write_text(
        "h1:1:2 [0] transport/net_ib.cc:1333 NCCL WARN NET/IB : Got completion from peer fe80::1%ib0<3> with "
        "error 12, opcode 1, len 1, vendor err 129 (Send)\n"
    )
    data = json.loads(run.triage([str(log)], fmt="json")[0])
    assert data["fabric"]["name"] == "infiniband" and "GID index is not the cause" in data["fix"]


def test_pytorch_init_and_barrier_messages_by_their_source():
    """PyTorch's own words for ranks that never met: rank 0's NCCL id not found in the store (ProcessGroupNCCL's
    broadcastUniqueNCCLID), a store-based barrier or TCPStore server with fewer ranks than the world, Gloo's
    monitored barrier naming the absent ranks, the heartbeat monitor; and a torch that cannot use the GPUs."""
    reset = "[1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer"
    ev = _event(reset)
    assert (
        ev.sig.id == "nccl-id-from-rank0"
        and ev.sig.role == "symptom"
        and ev.groups["err"] == "Connection reset by peer"
    )
    barrier = "Timed out initializing process group in store based barrier on rank 3, for key: store_based_barrier_key:1 (world_size=8, num_workers_joined=4, timeout=0:30:00 error=x)"
    assert _event(barrier).sig.id == "ranks-not-joined" and _event(barrier).groups["what"].endswith(
        "num_workers_joined=4"
    )
    assert _event("DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.").sig.id == (
        "ranks-not-joined"
    )
    gloo = _event("RuntimeError: Ranks 1, 3 failed to pass monitoredBarrier in 30000 ms")
    assert gloo.sig.id == "monitored-barrier" and gloo.groups["ranks"] == "1, 3"
    assert _event("[PG 0 Rank 0] Heartbeat monitor timed out! Process will be terminated").sig.id == "watchdog-stuck"
    assert _event("AssertionError: Torch not compiled with CUDA enabled").sig.id == "torch-without-cuda"


def test_fourth_trial_families():
    """NCCL's cuMem host path in the SHM transport (CUDA 217, a size-0 segment) is not /dev/shm's size; vLLM's
    custom all-reduce needs peer access; CUDACHECK's 'Failed: Cuda error'; a device busy or unavailable; torchrun's
    worker exit of any status; a closed rendezvous; PyTorch 1.x's 'unhanled'; vLLM's pynccl 'NCCL error:'."""
    shm = "h:1:2 [0] transport/shm.cc:590 NCCL WARN Cuda failure 217 'peer access is not supported between these two devices'"
    assert _event(shm).sig.id == "shm-cumem-host"
    attach = "h:1:2 [7] misc/shmutils.cc:132 NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl- (size 0), error: No such file or directory (2)"
    assert _event(attach).sig.id == "shm-cumem-host"
    small = "h:1:2 [7] misc/shmutils.cc:100 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x (size 9637888)"
    assert _event(small).sig.id == "shm"
    car = "Failed: Cuda error /w/vllm/csrc/custom_all_reduce.cuh:307 'peer access is not supported between these two devices'"
    assert _event(car).sig.id == "custom-allreduce-p2p"
    assert _event("Failed: Cuda error /w/vllm/csrc/x.cu:3 'an illegal memory access was encountered'").sig.id == (
        "cuda-kernel-launch"
    )
    assert (
        _event("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable").sig.id
        == "gpu-unavailable"
    )
    ex = _event(
        "E0213 12:07:20.086000 870572 api.py:869] failed (exitcode: 1) local_rank: 0 (pid: 876053) of binary: /bin/python3"
    )
    assert ex.sig.id == "elastic-worker-failed" and ex.sig.role == "symptom"
    assert _event("torch.distributed.elastic.rendezvous.api.RendezvousClosedError").sig.id == "rendezvous-closed"
    assert _event(
        "NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:272, unhanled system error"
    ).sig.role == ("symptom")
    assert (
        _event("RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)").sig.id
        == "nccl-usage-error"
    )


def test_fifth_trial_families():
    """NCCL's text after 'Last error:' on the same line names the cause; an NCCL WARN text without its prefix is
    read by its format only when the format is long; other wrappers' CUDA runtime errors are refined by their
    text; a connect to a loopback address is a loopback address advertised."""
    joined = (
        "10: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1331, unhandled system error "
        "10: Last error: 10: socketStartConnect: Connect to 127.0.0.1<45069> failed : Software caused connection abort"
    )
    assert _event(joined).sig.id == "socket-loopback"
    assert _event("socketStartConnect: Connect to 10.0.0.2<45069> failed : No route to host").sig.id == (
        "socket-connect"
    )
    bare = "(Runner pid=8) Error while creating shared memory segment /dev/shm/nccl-Um (size 7340384)"
    assert _event(bare).sig.id == "shm"
    assert _event("(Runner pid=8) Connection closed") is None  # a short format is no evidence without NCCL's prefix
    trt = "[TensorRT-LLM][ERROR] CUDA runtime error in error: peer access is not supported between these two devices"
    assert _event(trt).sig.id == "p2p-ipc"
    assert _event(
        "RuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMalloc(ptr, n): out of memory"
    ).sig.id == ("gpu-oom")


def test_sixth_trial_families():
    """glibc's heap-corruption abort is a root; Open MPI's signal report is a crash (11, 4) or an abort (6);
    NCCLCHECK/CUDACHECK without nccl-tests' 'Test ' prefix; NCCL's own 'Cuda failure N' stays NCCL's."""
    assert _event("free(): corrupted unsorted chunks").sig.id == "heap-corruption"
    assert _event("double free or corruption (!prev)").sig.id == "heap-corruption"
    assert _event("[n1:186363] Signal: Segmentation fault (11)").sig.id == "process-crash"
    assert _event("[n1:186363] Signal: Aborted (6)").sig.id == "process-abort"
    assert _event("NCCL failure all_reduce.cu:95 'unhandled cuda error'").sig.id == "nccl-tests-cuda-error"
    assert _event("Cuda failure common.cu:891 'out of memory'").sig.id == "gpu-oom"
    shm = "h:1:2 [0] transport/shm.cc:590 NCCL WARN Cuda failure 217 'peer access is not supported between these two devices'"
    assert _event(shm).sig.id == "shm-cumem-host"


def test_seventh_trial_families():
    """NCCL's socket reset is not Gloo's; a recv on a live connection failing is a peer or link gone; invalid
    usage is its own symptom; ibv_modify_qp's ENODEV is a local device; a config value no program passes is
    a program built against another NCCL."""
    nccl = "socketProgressOpt: Call to recv from 10.0.0.2<33759> failed : Connection reset by peer"
    assert _event(f"h:1:2 [0] misc/socket.cc:60 NCCL WARN {nccl}").sig.id == "socket-peer-closed"
    assert _event("Read error [10.0.0.2]:4321: Connection reset by peer").sig.id == "gloo-peer-closed"
    usage = _event("[rank0]: RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)")
    assert usage.sig.id == "nccl-usage-error" and usage.sig.role == "symptom"
    qp = "h:1:2 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_modify_qp failed with error No such device"
    assert _event(qp).sig.id == "ibv-modify-qp-no-device"
    cfg = "h:1:2 [0] init.cc:1 NCCL WARN Invalid config blocking attribute value -2147483648"
    assert _event(cfg).sig.id == "version-mismatch"
    assert _event("h:1:2 [0] init.cc:1 NCCL WARN Invalid config blocking attribute value 2").sig.id == "usage"


def test_eighth_trial_families():
    """torchrun's healthy join names its timeout ('with timeout 600'): no rendezvous timeout; a store that
    cannot be reached is its own root."""
    join = (
        "[INFO] [training.py:123:next_rendezvous] The node n attempts to join the next round of the rendezvous "
        "'elastic' with timeout 600."
    )
    assert _event(join) is None
    assert _event("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError").sig.id == "rendezvous-timeout"
    conn = "RendezvousConnectionError: The connection to the C10d store has failed. See inner exception for details."
    assert _event(conn).sig.id == "rendezvous-connection"


def test_no_key_is_given_twice_in_one_entry():
    """YAML keeps the last of two equal keys without a word: a second `fix:` would silently replace the first."""
    import yaml

    class Strict(yaml.SafeLoader):
        pass

    def mapping(loader, node, deep=False):
        keys = [loader.construct_object(k, deep=deep) for k, _v in node.value]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        assert not twice, f"line {node.start_mark.line + 1}: {twice} given twice"
        return yaml.SafeLoader.construct_mapping(loader, node, deep)

    Strict.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    for name in ("signatures.yaml", "classes.yaml", "anchors.yaml"):
        yaml.load((catalogue.DATA / name).read_text(), Loader=Strict)  # a SafeLoader subclass
