"""Descriptor loading, continued from tests/test_descriptor.py: the fabric rules (each needs a different
network block) and the bundled presets, every one valid with its documented facts."""

from __future__ import annotations

import os

import pytest
from test_descriptor import BASE, edit, line_of, write

from ncclgen import datapaths
from ncclgen.errors import UserError
from ncclgen.load import cpuset, descriptor

# Fabric rules: each needs a different network block, so these cases replace the whole block.
NET = """\
network:
  fabric: {fabric}
  bootstrap_interfaces: [eth0]
{extra}"""
RAILS_HCA = "  compute:\n    - {hca: mlx5_0, gbps: 400, gpus: [0], numa: 0}\n"
RAILS_NETDEV = "  compute:\n    - {netdev: eth1, gbps: 200, gpus: [0], numa: 0}\n"
OLD_NET = BASE[BASE.index("network:") : BASE.index("software:")]

FABRIC_CASES = {
    "infiniband without compute rails": (
        "infiniband",
        "",
        "network.compute",
        "infiniband needs compute rails with an hca each",
        "network:",
    ),
    "roce rail without an hca": (
        "roce",
        RAILS_NETDEV + "  roce: {gid_index: 3}\n",
        "network.compute",
        "roce needs compute rails with an hca each",
        "  compute:",
    ),
    "RoCE needs a GID index": ("roce", RAILS_HCA, "network", "fabric roce needs network.roce.gid_index", "network:"),
    "GID index on a non-RoCE fabric": (
        "infiniband",
        RAILS_HCA + "  roce: {gid_index: 3}\n",
        "network.roce",
        "a RoCE GID index has no meaning on fabric infiniband",
        "  roce:",
    ),
    "EFA without an efa block": ("efa", "", "network", "fabric efa needs network.efa.devices_per_node", "network:"),
    "EFA with InfiniBand HCAs": (
        "efa",
        RAILS_HCA + "  efa: {devices_per_node: 32, gbps_per_device: 100}\n",
        "network.compute",
        "EFA clusters declare no InfiniBand HCAs",
        "  compute:",
    ),
    "efa block on another fabric": (
        "tcp",
        "  efa: {devices_per_node: 32, gbps_per_device: 100}\n",
        "network.efa",
        "network.efa is only for fabric efa, not tcp",
        "  efa:",
    ),
    "EFA device count not positive": (
        "efa",
        "  efa: {devices_per_node: 0, gbps_per_device: 100}\n",
        "network.efa.devices_per_node",
        "expected a value >= 1",
        "  efa:",
    ),
    "tcpx rails with HCAs": ("tcpx", RAILS_HCA, "network.compute", "tcpx rails are interfaces (netdev)", "  compute:"),
    "tcpxo rails with HCAs": (
        "tcpxo",
        RAILS_HCA,
        "network.compute",
        "tcpxo rails are interfaces (netdev)",
        "  compute:",
    ),
    "unknown source id (roce)": (
        "roce",
        RAILS_HCA + "  roce: {gid_index: 3, source: nope}\n",
        "network.roce.source",
        "'nope'",
        "  roce:",
    ),
    "unknown source id (efa)": (
        "efa",
        "  efa: {devices_per_node: 32, gbps_per_device: 100, source: nope}\n",
        "network.efa.source",
        "'nope'",
        "  efa:",
    ),
}


@pytest.mark.parametrize("case", FABRIC_CASES, ids=list(FABRIC_CASES))
def test_fabric_checks(tmp_path, case):
    fabric, extra, key_path, words, marker = FABRIC_CASES[case]
    text = edit(OLD_NET, NET.format(fabric=fabric, extra=extra))
    with pytest.raises(UserError) as info:
        descriptor.load(write(tmp_path, text))
    assert info.value.path == key_path
    assert words in info.value.message
    assert info.value.line == line_of(text, marker), str(info.value)


@pytest.mark.parametrize(
    "fabric,extra",
    [
        ("roce", RAILS_HCA + "  roce: {gid_index: auto}\n"),
        ("efa", "  efa: {devices_per_node: 32, gbps_per_device: 100}\n"),
        ("tcpxo", RAILS_NETDEV),
        ("tcp", ""),
    ],
)
def test_each_fabric_has_a_valid_form(tmp_path, fabric, extra):
    """The fabric checks reject only what they should: a well-formed block of each kind loads."""
    d = descriptor.load(write(tmp_path, edit(OLD_NET, NET.format(fabric=fabric, extra=extra))))
    assert d.network.fabric == fabric


# The bundled folder itself, not descriptor.available(): a user's $NCCLGEN_CLUSTERS or ./clusters
# must not change what this test checks.
BUNDLED = datapaths.bundled("clusters")
PRESETS = sorted(f[: -len(".yaml")] for f in os.listdir(BUNDLED) if f.endswith(".yaml"))


def preset(name: str) -> descriptor.Descriptor:
    return descriptor.load(os.path.join(BUNDLED, name + ".yaml"))


def test_every_bundled_preset_is_found_and_valid():
    """A preset that fails check() would make `clusters list` show INVALID for every user."""
    assert {"h100-ib", "dgx-h100", "azure-nd-h100-v5", "oci-bm-gpu-h100-8", "aws-p5", "gcp-a3-mega", "local-ci"} <= set(
        PRESETS
    )
    for name in PRESETS:
        d = preset(name)
        assert d.name == name, f"{name}: the file name and `name:` differ"
        used = {s.source for s in d.vendor_env} | {d.node.source, d.network.source}
        assert used - {None} <= set(d.sources), name


def test_presets_keep_their_documented_facts():
    """Spot checks of facts the presets exist to carry (the sources each preset cites)."""
    azure = preset("azure-nd-h100-v5")
    assert azure.network.topo_file == "/opt/microsoft/ndv5-topo.xml"
    assert [r.hca for r in azure.network.compute] == [f"mlx5_ib{i}" for i in range(8)]
    assert azure.numa(azure.gpu(0).numa).cpus == "0-47"  # the Slurm-mask reading, not the topology XML's
    oci = preset("oci-bm-gpu-h100-8")
    assert (oci.network.roce.gid_index, oci.network.roce.traffic_class) == (3, 41)
    assert len(oci.network.compute) == 16 and all(len(oci.rails_for_gpu(g)) == 2 for g in range(8))
    assert {s.name for s in oci.network.storage} == {"mlx5_2", "mlx5_11"}
    aws = preset("aws-p5")
    assert (aws.network.efa.devices_per_node, aws.network.net_plugin, aws.network.compute) == (32, "aws-ofi-nccl", ())
    assert [e.name for e in aws.vendor_env] == ["FI_EFA_USE_HUGE_PAGE"]
    assert aws.node.bind_memory is False  # its NUMA layout is unknown
    local = preset("local-ci")
    assert (local.node.gpus_per_node, local.node.bind_memory, local.network.bootstrap_interfaces) == (2, False, ("lo",))
    assert [local.numa(local.gpu(i).numa).cpus for i in (0, 1)] == ["0", "1"]
    assert (local.slurm.partition, local.slurm.gres_type) == ("debug", "h100")


@pytest.mark.parametrize("name", PRESETS)
def test_preset_numa_cpus_are_disjoint_and_gpus_complete(name):
    d = preset(name)
    sets = [cpuset.parse(n.cpus) for n in d.node.numa_nodes]
    assert sum(map(len, sets)) == len(frozenset().union(*sets)) == d.cpus_per_node
    assert sorted(g.index for g in d.node.gpus) == list(range(d.node.gpus_per_node))
