"""The NCCL line parser (ncclgen/jobside/nccllines.py) on lines in NCCL's formats, every variant the
releases in the knowledge base print (the format strings are cited in the module)."""

import pytest

from ncclgen.jobside import nccllines as n

P = "gpu-node-3:4242:4300 [2] NCCL INFO "


def parse(text):
    level, host, pid, message = n.split(P + text)
    assert (level, host, pid) == ("INFO", "gpu-node-3", 4242)
    return n.message(message)


@pytest.mark.parametrize(
    "text, kind, field, value",
    [
        ("NCCL version 2.30.7+cuda12.9", "version", "version", "2.30.7"),
        ("NCCL version 2.31.0a7+cuda13.0", "version", "suffix", "a7"),
        ("Using network IB", "net", "name", "IB"),
        ("Using network AWS Libfabric", "net", "name", "AWS Libfabric"),
        ("NET/Plugin: Loaded net plugin Libfabric (v10)", "plugin", "name", "Libfabric"),
        (
            "NET/Plugin: Could not find: libnccl-net-ofi.so libnccl-net.so",
            "nofile",
            "names",
            " libnccl-net-ofi.so libnccl-net.so",
        ),
        ("NET/OFI Initializing aws-ofi-nccl 1.13.2-aws", "plugin_version", "version", "1.13.2-aws"),
        ("comm 0x55d0c0de0100 rank 3 nRanks 16 nNodes 2 localRanks 8 localRank 3 MNNVL 0", "comm", "localranks", "8"),
        (
            "ncclCommInitRankConfig comm 0x5612 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 5d000 commId 0xa1b2 - Init COMPLETE",
            "complete",
            "commid",
            "a1b2",
        ),
        (  # 2.28.3-2.30.4: a split communicator (init.cc:1548 "parent %p splitCount", 2.29 "childCount")
            "ncclCommSplit comm 0x7f rank 1 nranks 8 cudaDev 1 nvmlDev 1 busId 1b000 parent 0x6f childCount 2 color 0 key 1 - Init COMPLETE",
            "complete",
            "color",
            "0",
        ),
        ("Connected all rings, use ring PXN 0 GDR 1", "rings", None, None),
    ],
)
def test_messages(text, kind, field, value):
    parsed = parse(text)
    assert parsed is not None and parsed[0] == kind
    if field:
        assert parsed[1][field] == value


@pytest.mark.parametrize(
    "text, gdr, name, dev, direction",
    [
        ("Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/7/GDRDMA", True, "IB", "7", "send"),
        ("Channel 03/1 : 15[7] -> 0[0] [receive] via NET/IB/3", False, "IB", "3", "receive"),
        ("Channel 01/0 : 2[2] -> 10[2] [send] via NET/IB/0(3)/GDRDMA", True, "IB", "0", "send"),  # PXN proxy
        ("Channel 01/0 : 2[2] -> 10[2] [send] via NET/IB/1/GDRDMA(PCI)", True, "IB", "1", "send"),  # C2C
        ("Channel 02/1 : 2[2] -> 10[2] [send] via NET/IB/1/GDRDMA/Shared", True, "IB", "1", "send"),
        ("Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0", False, "Socket", "0", "send"),
        ("Channel 00/0 : 0[0] -> 8[0] [receive] via NET/AWS Libfabric/0/GDRDMA", True, "AWS Libfabric", "0", "receive"),
    ],
)
def test_net_channels(text, gdr, name, dev, direction):
    kind, f = parse(text)
    assert kind == "channel_net"
    assert (bool(f["gdr"]), f["name"], f["dev"], f["dir"]) == (gdr, name, dev, direction)


def test_intra_node_channels():
    assert parse("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC")[0] == "channel_p2p"
    assert parse("Channel 05/1 : 0[0] -> 1[1] via P2P/CUMEM/read")[0] == "channel_p2p"
    assert parse("Channel 00 : 0[0] -> 1[1] via SHM/direct")[0] == "channel_shm"  # 2.30.7 shm.cc:116
    assert parse("Channel 00 : 0[0] -> 1[1] via SHM/direct/direct")[0] == "channel_shm"  # 2.28.3 shm.cc:128


def test_device_lists():
    kind, f = parse("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB [2]mlx5_4:1/RoCE [RO]; OOB bond0:10.1.0.5<0>")
    assert kind == "ib"
    assert n.ib_devices(f["devices"]) == [("mlx5_0", 1, "IB"), ("mlx5_3", 1, "IB"), ("mlx5_4", 1, "RoCE")]
    # 2.30: rail and plane ids after the port (net_ib/init.cc:494-503)
    kind, f = parse("NET/IB : Using [0]mlx5_0:1:0/IB [1]mlx5_1:1::2/IB ; OOB eth0:10.0.0.1<0>")
    assert n.ib_devices(f["devices"]) == [("mlx5_0", 1, "IB"), ("mlx5_1", 1, "IB")]
    kind, f = parse("NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>")
    assert kind == "socket" and n.socket_devices(f["devices"]) == ["eth0", "eth1"]


def test_other_lines_are_not_read():
    assert parse("NCCL_IB_HCA set by environment to =mlx5_0:1") is None
    assert parse("Channel 00/32 :    0   1   2   3") is None  # the ring order line (graph/rings.cc:48)
    assert n.split("some program output") is None


def test_warn_lines():
    # 2.30.7 debug.cc:345: timestamp (NCCL_DEBUG_TIMESTAMP_LEVELS=WARN), then "(FUNC)"; 2.29 without it
    for line in (
        "[2026-12-03 10:00:01] node1:77:90 [0] transport/net_ib/connect.cc:987 (ncclIbConnect) NCCL WARN NET/IB : oops",
        "node1:77:90 [0] transport/net_ib.cc:1444 NCCL WARN NET/IB : oops",
    ):
        assert n.split(line) == ("WARN", "node1", 77, "NET/IB : oops")


def test_debug_file_expansion():
    assert n.expand_debug_file("/tmp/x/%h.%p.log", "gpu-3.cluster.local", 12) == "/tmp/x/gpu-3.12.log"
    assert n.expand_debug_file("a%%b%q%", "h", 1) == "a%b%q%"
    assert n.log_hostname("a/b%c.d") == "a-b-c"
    rx = n.file_pattern("%h.%p.log", "gpu-3.x")
    assert rx.match("gpu-3.991.log")["pid"] == "991"
    assert rx.match("gpu-4.991.log") is None


def test_debug_settings():
    assert n.debug_level("info") == 3 and n.debug_level(None) == 0 and n.debug_level("WARN") == 2
    assert n.debug_mask(None) == n.SUBSYS["INIT"] | n.SUBSYS["BOOTSTRAP"] | n.SUBSYS["ENV"]
    net_only = n.debug_mask("NET")
    assert n.shows("ib", net_only) and not n.shows("net", net_only) and not n.shows("complete", net_only)
    init = n.debug_mask("INIT")
    assert all(n.shows(kind, init) for kind in n.LINE_SUBSYS)
    assert not n.shows("complete", n.debug_mask("^INIT")) and n.shows("ib", n.debug_mask("^INIT"))
