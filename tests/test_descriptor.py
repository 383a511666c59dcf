"""Descriptor loading: every cross-field check in descriptor.check() and the schema-level guards.

Each case edits one line of a small valid descriptor and asserts the exact key path and the line the
error names, because "file:line:col: key.path: message" is what lets a user fix a descriptor without
reading ncclgen's source.
"""

from __future__ import annotations

import pytest

from ncclgen.errors import UserError
from ncclgen.load import descriptor

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
