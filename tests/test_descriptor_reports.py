"""Descriptor loading, continued from tests/test_descriptor.py: how problems are reported (one printable
line each, in file order, every one at once), the warnings (mistakes that can be meant), layouts that
cannot work, and version and CPU-list forms."""

from __future__ import annotations

import os
import re

import pytest
from test_descriptor import BASE, edit, line_of, write
from test_descriptor_fabric import BUNDLED, PRESETS

from ncclgen.errors import UserError
from ncclgen.load import descriptor


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
