"""Descriptor loading: every cross-field check in descriptor.check() and the schema-level guards.

Each case edits one line of a small valid descriptor and asserts the exact key path and the line the
error names, because "file:line:col: key.path: message" is what lets a user fix a descriptor without
reading ncclgen's source.
"""

from __future__ import annotations

import os
import re

import pytest

from ncclgen import datapaths
from ncclgen.errors import UserError
from ncclgen.load import cpuset, descriptor

BASE = """\
name: t
description: test cluster
sources:
  a: "source A"
  b: "source B"
node:
  gpu_model: X
  gpus_per_node: 2
  source: a
  numa_nodes:
    - {id: 0, cpus: "0-3", source: a}
    - {id: 1, cpus: "4-7"}
  gpus:
    - {index: 0, numa: 0}
    - {index: 1, numa: 1}
network:
  fabric: infiniband
  bootstrap_interfaces: [eth0]
  source: b
  compute:
    - {hca: mlx5_0, gbps: 400, gpus: [0], numa: 0}
    - {hca: mlx5_1, gbps: 400, gpus: [1], numa: 1}
  storage:
    - {name: mlx5_2}
software: {nccl: "2.30.7", torch: "2.13.0", cuda: "12.9"}
kubernetes:
  source: a
vendor_env:
  - {name: NCCL_IB_TIMEOUT, value: 22, reason: r}
env:
  - {name: NCCL_DEBUG, value: WARN, reason: r}
"""


def write(tmp_path, text: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return str(path)


def edit(old: str, new: str, text: str = BASE) -> str:
    """``text`` with the one occurrence of ``old`` replaced: a case that matches nothing is a bug."""
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
    return text.replace(old, new)


def line_of(text: str, needle: str) -> int:
    (line,) = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    return line


def test_base_is_valid(tmp_path):
    d = descriptor.load(write(tmp_path, BASE))
    assert d.node.gpus_per_node == 2
    assert d.cpus_per_node == 8
    assert [r.hca for r in d.rails_for_gpu(1)] == ["mlx5_1"]
    assert d.numa(1).cpus == "4-7"
    assert d.vendor_env[0].value == "22"  # a bare YAML integer in an env value means the string "22"


# name: (old text, new text, key path in the error, words of the message, text on the error's line)
CASES = {
    "no sources": (
        'sources:\n  a: "source A"\n  b: "source B"\n',
        "sources: {}\n",
        "sources",
        "cite at least one source",
        "sources: {}",
    ),
    "unknown source id (node)": (
        "  source: a\n  numa_nodes",
        "  source: nope\n  numa_nodes",
        "node.source",
        "source 'nope' is not an id in `sources` (known: a, b)",
        "source: nope",
    ),
    "unknown source id (network)": ("  source: b\n", "  source: nope\n", "network.source", "'nope'", "source: nope"),
    "unknown source id (kubernetes)": (
        "kubernetes:\n  source: a\n",
        "kubernetes:\n  source: nope\n",
        "kubernetes.source",
        "'nope'",
        "source: nope",
    ),
    "unknown source id (numa node)": (
        'cpus: "0-3", source: a}',
        'cpus: "0-3", source: nope}',
        "node.numa_nodes[0].source",
        "'nope'",
        "source: nope",
    ),
    "unknown source id (rail)": (
        "gpus: [1], numa: 1}",
        "gpus: [1], numa: 1, source: nope}",
        "network.compute[1].source",
        "'nope'",
        "source: nope",
    ),
    "unknown source id (storage)": (
        "{name: mlx5_2}",
        "{name: mlx5_2, source: nope}",
        "network.storage[0].source",
        "'nope'",
        "source: nope",
    ),
    "NUMA id twice": (
        '{id: 1, cpus: "4-7"}',
        '{id: 0, cpus: "4-7"}',
        "node.numa_nodes[1].id",
        "NUMA node 0 is declared twice",
        '{id: 0, cpus: "4-7"}',
    ),
    "CPU range end before start": (
        'cpus: "4-7"',
        'cpus: "7-4"',
        "node.numa_nodes[1].cpus",
        "bad CPU range '7-4' (end before start)",
        '"7-4"',
    ),
    "CPU beyond the limit": (
        'cpus: "4-7"',
        'cpus: "4-70000"',
        "node.numa_nodes[1].cpus",
        "CPU 70000 is beyond 8191: Linux allows at most 8192 CPUs",
        '"4-70000"',
    ),
    "CPU lists overlap": (
        'cpus: "4-7"',
        'cpus: "3-7"',
        "node.numa_nodes[1].cpus",
        "CPU 3 is also in NUMA node 0",
        '"3-7"',
    ),
    "no NUMA nodes": (
        '  numa_nodes:\n    - {id: 0, cpus: "0-3", source: a}\n    - {id: 1, cpus: "4-7"}\n',
        "  numa_nodes: []\n",
        "node.numa_nodes",
        "declare at least one NUMA node",
        "numa_nodes: []",
    ),
    "GPU count mismatch": (
        "  gpus_per_node: 2\n",
        "  gpus_per_node: 3\n",
        "node.gpus",
        "gpus_per_node is 3 but 2 GPUs are listed",
        "  gpus:",
    ),
    "GPU listed twice": (
        "{index: 1, numa: 1}",
        "{index: 0, numa: 1}",
        "node.gpus[1].index",
        "GPU 0 is listed twice",
        "{index: 0, numa: 1}",
    ),
    "GPU index out of range": (
        "{index: 1, numa: 1}",
        "{index: 2, numa: 1}",
        "node.gpus[1].index",
        "GPU index 2 is out of range 0..1",
        "{index: 2",
    ),
    "GPU on an undeclared NUMA node": (
        "{index: 1, numa: 1}",
        "{index: 1, numa: 5}",
        "node.gpus[1].numa",
        "NUMA node 5 is not declared in node.numa_nodes",
        "numa: 5",
    ),
    "rail without hca or netdev": (
        "{hca: mlx5_1, gbps: 400, gpus: [1], numa: 1}",
        "{gbps: 400, gpus: [1], numa: 1}",
        "network.compute[1]",
        "a rail needs an hca or a netdev",
        "{gbps: 400",
    ),
    "rail port listed twice": (
        "{hca: mlx5_1, gbps: 400, gpus: [1], numa: 1}",
        "{hca: mlx5_0, gbps: 400, gpus: [1], numa: 1}",
        "network.compute[1]",
        "mlx5_0 port 1 is listed twice",
        "gpus: [1]",
    ),
    "HCA both compute and storage": (
        "{name: mlx5_2}",
        "{name: mlx5_1}",
        "network.compute[1].hca",
        "mlx5_1 is listed both as a compute rail and as storage",
        "{hca: mlx5_1",
    ),
    "rail serves no GPU": (
        "gpus: [1], numa: 1}",
        "gpus: [], numa: 1}",
        "network.compute[1].gpus",
        "a rail serves at least one GPU",
        "gpus: []",
    ),
    "rail references a missing GPU": (
        "gpus: [1], numa: 1}",
        "gpus: [1, 7], numa: 1}",
        "network.compute[1].gpus[1]",
        "GPU 7 is not in node.gpus",
        "[1, 7]",
    ),
    "rail on an undeclared NUMA node": (
        "gpus: [1], numa: 1}",
        "gpus: [1], numa: 4}",
        "network.compute[1].numa",
        "NUMA node 4 is not declared",
        "numa: 4",
    ),
    "duplicate vendor_env name": (
        "  - {name: NCCL_IB_TIMEOUT, value: 22, reason: r}\n",
        "  - {name: NCCL_IB_TIMEOUT, value: 22, reason: r}\n  - {name: NCCL_IB_TIMEOUT, value: 23, reason: again}\n",
        "vendor_env[1].name",
        "NCCL_IB_TIMEOUT is set twice in vendor_env",
        "value: 23",
    ),
    "duplicate env name": (
        "  - {name: NCCL_DEBUG, value: WARN, reason: r}\n",
        "  - {name: NCCL_DEBUG, value: WARN, reason: r}\n  - {name: NCCL_DEBUG, value: INFO, reason: again}\n",
        "env[1].name",
        "NCCL_DEBUG is set twice in env",
        "value: INFO",
    ),
    # schema-level guards (schema.py) that the cross-field checks rely on
    "count not positive": (
        "  gpus_per_node: 2\n",
        "  gpus_per_node: 0\n",
        "node.gpus_per_node",
        "expected a value >= 1, got 0",
        "gpus_per_node: 0",
    ),
    "rail speed not positive": (
        "{hca: mlx5_1, gbps: 400,",
        "{hca: mlx5_1, gbps: 0,",
        "network.compute[1].gbps",
        "expected a value >= 1, got 0",
        "gbps: 0",
    ),
    "bad Kubernetes resource name": (
        "kubernetes:\n  source: a\n",
        "kubernetes:\n  source: a\n  resources:\n    Rdma/ib: 8\n",
        "kubernetes.resources.Rdma/ib",
        "key 'Rdma/ib' is not a Kubernetes resource name like nvidia.com/gpu",
        "Rdma/ib",
    ),
    "hugepages without a memory request": (
        "kubernetes:\n  source: a\n",
        "kubernetes:\n  source: a\n  resources:\n    hugepages-2Mi: 5120Mi\n",
        "kubernetes.resources.hugepages-2Mi",
        "hugepages need a cpu or memory request",
        "hugepages-2Mi",
    ),
    "resource quantity malformed": (
        "kubernetes:\n  source: a\n",
        "kubernetes:\n  source: a\n  resources:\n    memory: 32 GB\n",
        "kubernetes.resources.memory",
        "is not a Kubernetes quantity",
        "32 GB",
    ),
    "malformed CPU list": (
        'cpus: "4-7"',
        'cpus: "4-7,x"',
        "node.numa_nodes[1].cpus",
        "'4-7,x' does not match a cpuset list",
        '"4-7,x"',
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_each_check_names_key_path_and_line(tmp_path, case):
    old, new, key_path, words, marker = CASES[case]
    text = edit(old, new)
    file = write(tmp_path, text)
    with pytest.raises(UserError) as info:
        descriptor.load(file)
    err = info.value
    assert (err.file, err.path) == (file, key_path)
    assert words in err.message
    assert err.line == line_of(text, marker), str(err)
    assert str(err).startswith(f"{file}:{err.line}:{err.col}: {key_path}: ")


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


def test_hostile_key_stays_on_one_printable_line(tmp_path):
    """A key with a vertical tab, an escape or U+2028 is quoted in the key path (found by fuzzing)."""
    text = edit("  gpu_model: X\n", '  gpu_model: X\n  "a\\vb\\ec\\u2028": 1\n')
    with pytest.raises(UserError) as info:
        descriptor.load(write(tmp_path, text))
    assert info.value.path == "node.'a\\x0bb\\x1bc\\u2028'"
    assert str(info.value).isprintable()


# -- every error at once, in file order ---------------------------------------------------------------


def test_every_schema_error_is_reported_in_file_order(tmp_path):
    """Three type errors, written so that the loader meets them out of file order (software before
    node in the text; a missing key found after the unknown ones): all three come back, sorted."""
    text = BASE.replace('software: {nccl: "2.30.7", torch: "2.13.0", cuda: "12.9"}\n', "")
    text = text.replace("node:\n", 'software: {nccl: 2.30, torch: "2.13.0", cuda: "12.9"}\nnode:\n', 1)
    text = edit("  gpus_per_node: 2\n", "  gpus_per_node: two\n", text)
    text = edit("{index: 1, numa: 1}", "{index: 1, numa: 1, nvlink: 900}", text)
    with pytest.raises(UserError) as info:
        descriptor.load(write(tmp_path, text))
    problems = info.value.all()
    assert [(e.path, e.line) for e in problems] == [
        ("software.nccl", line_of(text, "software:")),
        ("node.gpus_per_node", line_of(text, "gpus_per_node: two")),
        ("node.gpus[1].nvlink", line_of(text, "nvlink: 900")),
    ]
    assert (info.value.path, info.value.line) == (problems[0].path, problems[0].line)  # reads as the first


def test_every_cross_field_error_is_reported_in_file_order(tmp_path):
    text = edit("  source: a\n  numa_nodes", "  source: nope\n  numa_nodes")  # node.source
    text = edit("{index: 1, numa: 1}", "{index: 1, numa: 5}", text)  # node.gpus[1].numa
    text = edit("gpus: [1], numa: 1}", "gpus: [1, 7], numa: 1}", text)  # rail GPU 7
    text = edit(
        "  - {name: NCCL_DEBUG, value: WARN, reason: r}\n",
        "  - {name: NCCL_DEBUG, value: WARN, reason: r}\n  - {name: NCCL_DEBUG, value: INFO, reason: again}\n",
        text,
    )  # env[1].name
    with pytest.raises(UserError) as info:
        descriptor.load(write(tmp_path, text))
    paths = [e.path for e in info.value.all()]
    assert paths == ["node.source", "node.gpus[1].numa", "network.compute[1].gpus[1]", "env[1].name"]
    lines = [e.line for e in info.value.all()]
    assert lines == sorted(lines)


def test_validate_prints_one_line_per_error_and_exits_2(tmp_path, capsys):
    from ncclgen.cli import main

    text = edit("  gpus_per_node: 2\n", "  gpus_per_node: 0\n")
    text = edit("{hca: mlx5_1, gbps: 400,", "{hca: mlx5_1, gbps: 0,", text)
    file = write(tmp_path, text)
    with pytest.raises(SystemExit) as exit_info:
        main(["validate", file])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"ncclgen: error: {file}:{line_of(text, 'gpus_per_node: 0')}:18: node.gpus_per_node: "
        "expected a value >= 1, got 0",
        f"ncclgen: error: {file}:{line_of(text, 'gbps: 0')}:27: network.compute[1].gbps: expected a value >= 1, got 0",
    ]


def test_a_misspelt_key_is_not_also_reported_missing(tmp_path):
    with pytest.raises(UserError) as info:
        descriptor.load(write(tmp_path, edit("  gpus_per_node: 2\n", "  gpus_per_nod: 2\n")))
    assert [e.path for e in info.value.all()] == ["node.gpus_per_nod"]


# -- warnings: mistakes that run, but are almost always typos ----------------------------------------

# name: (old text, new text, key path the warning names, words of the message, text on its line)
WARNINGS = {
    "rail on another NUMA node than its GPU": (
        "gpus: [1], numa: 1}",
        "gpus: [1], numa: 0}",
        "network.compute[1].numa",
        "rail mlx5_1 is on NUMA node 0 but serves GPU 1 on NUMA node 1",
        "gpus: [1], numa: 0}",
    ),
    "GPU moved to another NUMA node than its rail": (
        "{index: 1, numa: 1}",
        "{index: 1, numa: 0}",
        "network.compute[1].numa",
        "serves GPU 1 on NUMA node 0",
        "gpus: [1], numa: 1}",
    ),
    "GPU without a rail": (
        "    - {hca: mlx5_1, gbps: 400, gpus: [1], numa: 1}\n",
        "",
        "node.gpus[1]",
        "GPU 1 has no compute rail (no network.compute entry lists it)",
        "{index: 1, numa: 1}",
    ),
    "two rails on one GPU, none on another": (
        "gpus: [1], numa: 1}",
        "gpus: [0], numa: 0}",
        "node.gpus[1]",
        "GPU 1 has no compute rail while GPU 0 has 2 (network.compute[1])",
        "{index: 1, numa: 1}",
    ),
    "InfiniBand node without a storage list": (
        "  storage:\n    - {name: mlx5_2}\n",
        "",
        "network",
        "fabric infiniband and no network.storage list",
        "network:",
    ),
    "NUMA CPU list with a hole": (
        '{id: 0, cpus: "0-3", source: a}',
        '{id: 0, cpus: "0-1", source: a}',
        "node.numa_nodes[0].cpus",
        "CPUs 2-3 are in no NUMA node's list",
        '"0-1"',
    ),
    "NUMA CPU lists of different sizes": (
        '{id: 1, cpus: "4-7"}',
        '{id: 1, cpus: "4-9"}',
        "node.numa_nodes[0].cpus",
        "NUMA node 0 has 4 CPUs, another has 6",
        '"0-3"',
    ),
    # issue 16: a descriptor declaring an NCCL the knowledge base does not cover validated without a word
    "NCCL newer than the knowledge base": (
        'nccl: "2.30.7"',
        'nccl: "2.33.1"',
        "software.nccl",
        "NCCL 2.33.1 is newer than ncclgen's knowledge base (NCCL 2.32.6)",
        'nccl: "2.33.1"',
    ),
}


@pytest.mark.parametrize("case", WARNINGS, ids=list(WARNINGS))
def test_each_warning_names_key_path_and_line(tmp_path, case, capsys):
    old, new, key_path, words, marker = WARNINGS[case]
    text = edit(old, new)
    file = write(tmp_path, text)
    desc, warnings = descriptor.load_checked(file)
    assert desc.name == "t"  # a warning, not an error: the descriptor loads
    assert [(w.path, w.line) for w in warnings] == [(key_path, line_of(text, marker))], warnings
    assert words in warnings[0].message
    # descriptor.load prints it (renders go through it), one line on stderr
    descriptor.load(file)
    assert capsys.readouterr().err == f"ncclgen: warning: {warnings[0]}\n"


def test_validate_shows_warnings_and_exits_0(tmp_path, capsys):
    from ncclgen.cli import main

    old, new, key_path, words, _ = WARNINGS["rail on another NUMA node than its GPU"]
    file = write(tmp_path, edit(old, new))
    assert main(["validate", file]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"{file}: ok (")
    (line,) = [ln for ln in err.splitlines() if "`ncclgen k8s` would refuse" not in ln]  # issue 31: pods said
    assert line.startswith(f"ncclgen: warning: {file}:") and f": {key_path}: {words}" in line


def test_the_newest_nccl_the_knowledge_base_covers_is_no_warning(tmp_path):
    from ncclgen.lint import knowledge

    assert descriptor.kb_newest_nccl() == knowledge.KB_VERSIONS["nccl"]  # the two layers agree
    for version in ("2.32.3", "2.32", "2.31.2"):
        text = edit('nccl: "2.30.7"', f'nccl: "{version}"')
        assert descriptor.load_checked(write(tmp_path, text))[1] == [], version


def test_an_empty_storage_list_says_there_is_none(tmp_path):
    text = edit("  storage:\n    - {name: mlx5_2}\n", "  storage: []\n")
    assert descriptor.load_checked(write(tmp_path, text))[1] == []


def test_render_shows_descriptor_warnings(tmp_path):
    """A render loads the descriptor through descriptor.load: its warnings reach the user there too."""
    import subprocess
    import sys

    old, new, key_path, words, _ = WARNINGS["GPU without a rail"]
    file = write(tmp_path, edit(old, new))
    proc = subprocess.run(
        [sys.executable, "-m", "ncclgen", "env", "--cluster", file], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout
    assert [ln for ln in proc.stderr.splitlines() if ln.startswith("ncclgen: warning: ")] == [
        ln for ln in proc.stderr.splitlines() if key_path in ln and words in ln
    ]
    assert any(key_path in ln for ln in proc.stderr.splitlines()), proc.stderr


def test_bundled_presets_have_no_warnings():
    for name in PRESETS:
        assert descriptor.load_checked(os.path.join(BUNDLED, name + ".yaml"))[1] == [], name


# -- hard errors: layouts that cannot be right ---------------------------------------------------------

HARD = {
    "GPU twice in one rail": (
        "gpus: [1], numa: 1}",
        "gpus: [1, 1], numa: 1}",
        "network.compute[1].gpus[1]",
        "GPU 1 is listed twice in this rail",
        "[1, 1]",
    ),
    "two GPUs at one PCI address": (
        "{index: 0, numa: 0}\n    - {index: 1, numa: 1}",
        '{index: 0, numa: 0, pci_bus_id: "0000:1b:00.0"}\n    - {index: 1, numa: 1, pci_bus_id: "0000:1B:00.0"}',
        "node.gpus[1].pci_bus_id",
        "PCI address 0000:1B:00.0 is also GPU 0's",
        "1B:00.0",
    ),
    "one interface on two ports": (
        "{hca: mlx5_0, gbps: 400,",
        "{hca: mlx5_0, netdev: ib0, gbps: 400,",
        "network.compute[1].netdev",
        "interface ib0 is also the netdev of mlx5_0:1",
        "{hca: mlx5_1",
    ),
    "storage interface as a compute rail": (
        "{name: mlx5_2}",
        "{name: ib0, kind: netdev}",
        "network.compute[1].netdev",
        "ib0 is listed both as a compute rail and as storage",
        "{hca: mlx5_1",
    ),
}


@pytest.mark.parametrize("case", HARD, ids=list(HARD))
def test_impossible_layouts_are_errors(tmp_path, case):
    old, new, key_path, words, marker = HARD[case]
    text = edit(old, new)
    if "netdev" in key_path:
        text = edit("{hca: mlx5_1, gbps: 400,", "{hca: mlx5_1, netdev: ib0, gbps: 400,", text)
    with pytest.raises(UserError) as info:
        descriptor.load(write(tmp_path, text))
    assert [(e.path, e.line) for e in info.value.all()] == [(key_path, line_of(text, marker))]
    assert words in info.value.message


# -- forms people write ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2.6.0a0+ecf3bae40a", "2.6.0+cu124", "2.13.0", "2.7.0.dev20250101", "2.5.0rc1"])
def test_torch_version_as_torch_prints_it(tmp_path, version):
    """`python -c 'import torch; print(torch.__version__)'` in an NGC image prints 2.6.0a0+ecf3bae40a."""
    d = descriptor.load(write(tmp_path, edit('torch: "2.13.0"', f'torch: "{version}"')))
    assert d.software.torch == version
    from ncclgen.plan.rules import version as release

    assert release(version)[:2] in ((2, 6), (2, 13), (2, 7), (2, 5))


@pytest.mark.parametrize("version", ["v2.6.0", "2.6.0 ", "2.6.0a0+", "latest"])
def test_torch_version_still_refuses_non_versions(tmp_path, version):
    with pytest.raises(UserError, match=re.escape("does not match a version like 2.6.0")):
        descriptor.load(write(tmp_path, edit('torch: "2.13.0"', f'torch: "{version}"')))


def test_cpu_list_with_spaces_after_commas(tmp_path):
    text = edit('{id: 1, cpus: "4-7"}', '{id: 1, cpus: "4-5, 6,7"}')
    d = descriptor.load(write(tmp_path, text))
    assert d.numa(1).cpus == "4-5,6,7"  # the form numactl and Slurm take
    assert d.cpus_per_node == 8


def test_did_you_mean_ignores_case(tmp_path):
    for written, meant in [("IB", "infiniband"), ("InfiniBand", "infiniband"), ("RoCE", "roce")]:
        with pytest.raises(UserError) as info:
            descriptor.load(write(tmp_path, edit("fabric: infiniband", f"fabric: {written}")))
        assert f"(did you mean '{meant}'?)" in info.value.message, info.value.message
    with pytest.raises(UserError, match=r"unknown key 'Fabric' \(did you mean 'fabric'\?\)"):
        descriptor.load(write(tmp_path, edit("fabric: infiniband", "Fabric: infiniband")))
