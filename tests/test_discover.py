"""`ncclgen discover` on sysfs trees of real layouts (tests/sysfs_fixtures.py) with a fake NVML.

Expected pairings are written out here from the vendors' documents, not derived from the fixture
code: DGX H100 User Guide Table 6 (GPU i PXB to mlx5_0,3,4,5,6,9,10,11; storage mlx5_1,2,7,8) and OCI
BM.GPU.H100.8 from oracle-quickstart/oci-hpc samples/gpu/H100-topology.xml (two RoCE ports per GPU;
mlx5_2 and mlx5_11 front-end).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import sysfs_fixtures as sf
from fake_nvml import FakeNvml

from ncclgen.cli import main
from ncclgen.errors import UserError
from ncclgen.load import yamlio
from ncclgen.node import Unavailable, sysfs
from ncclgen.node import discover as disc
from ncclgen.node.sysfs import Level, PciLoc

SOFTWARE = {"nccl": ("2.21.5", "test"), "torch": ("2.6.0", "test"), "cuda": ("12.4", "test")}

DGX_EXPECTED = {
    "mlx5_0": ([0], "ibp24s0", 0),
    "mlx5_3": ([1], "ibp64s0", 0),
    "mlx5_4": ([2], "ibp79s0", 0),
    "mlx5_5": ([3], "ibp94s0", 0),
    "mlx5_6": ([4], "ibp154s0", 1),
    "mlx5_9": ([5], "ibp192s0", 1),
    "mlx5_10": ([6], "ibp206s0", 1),
    "mlx5_11": ([7], "ibp220s0", 1),
}
OCI_EXPECTED = {
    0: {"mlx5_0", "mlx5_1"},
    1: {"mlx5_3", "mlx5_4"},
    2: {"mlx5_5", "mlx5_6"},
    3: {"mlx5_7", "mlx5_8"},
    4: {"mlx5_9", "mlx5_10"},
    5: {"mlx5_12", "mlx5_13"},
    6: {"mlx5_14", "mlx5_15"},
    7: {"mlx5_16", "mlx5_17"},
}


def run(layout, fake=None, **kw):
    text = disc.discover(
        str(layout.root), backend=fake or FakeNvml.from_layout(layout), hostname="gpu-node-01", software=SOFTWARE, **kw
    )
    return text, disc.validate(text)


def comment_of(text: str, needle: str) -> str:
    line = next(x for x in text.splitlines() if needle in x)
    return line.split("#", 1)[1].strip() if "#" in line else ""


def test_dgx_h100_pairs_each_gpu_with_its_pxb_hca_and_finds_storage(tmp_path):
    text, d = run(sf.dgx_h100(tmp_path))
    assert d.network.fabric == "infiniband"
    got = {r.hca: (list(r.gpus), r.netdev, r.numa) for r in d.network.compute}
    assert got == DGX_EXPECTED
    assert {r.gbps for r in d.network.compute} == {400} and {r.port for r in d.network.compute} == {1}
    assert [(n.id, n.cpus) for n in d.node.numa_nodes] == [(0, "0-55,112-167"), (1, "56-111,168-223")]
    assert [g.numa for g in d.node.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert d.node.gpus[0].pci_bus_id == "0000:1b:00.0"
    assert d.node.nvlink_gbps == 3600 and d.node.gpus_per_node == 8
    assert d.node.gpu_model == "NVIDIA H100 80GB HBM3"
    assert d.network.bootstrap_interfaces == ("bond0",)
    assert [s.name for s in d.network.storage] == ["mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"]
    # every inference says it is a guess, with the rule that made it
    assert comment_of(text, "name: mlx5_1,") == "guess: nearest to no GPU (storage / in-band)"
    assert "Ethernet link layer on an InfiniBand node" in comment_of(text, "name: mlx5_2,")
    assert comment_of(text, "name: mlx5_7,") == "guess: port DOWN, Polling"
    assert comment_of(text, "hca: mlx5_0,") == "guess: compute rail, PXB to GPU 0"
    assert comment_of(text, "bootstrap_interfaces").startswith("guess:")
    assert comment_of(text, "nvlink_gbps").startswith("guess:")


def test_dgx_discovery_matches_the_reference_preset(tmp_path):
    """The hand-written h100-ib preset (DGX layout) and discovery of a DGX-like node agree."""
    from ncclgen.load import descriptor

    _, d = run(sf.dgx_h100(tmp_path))
    ref = descriptor.load_cluster("h100-ib")
    rails = lambda x: [(r.hca, r.port, r.netdev, r.gbps, r.gpus, r.numa) for r in x.network.compute]  # noqa: E731
    assert rails(d) == rails(ref)
    assert [s.name for s in d.network.storage] == [s.name for s in ref.network.storage]
    assert [(n.id, n.cpus) for n in d.node.numa_nodes] == [(n.id, n.cpus) for n in ref.node.numa_nodes]


def test_oci_roce_dual_port_nics_give_two_rails_per_gpu(tmp_path):
    text, d = run(sf.oci_h100(tmp_path))
    assert d.network.fabric == "roce"
    assert d.network.roce.gid_index == "auto" and comment_of(text, "roce:").startswith("guess:")
    per_gpu = {g: {r.hca for r in d.rails_for_gpu(g)} for g in range(8)}
    assert per_gpu == OCI_EXPECTED
    assert len(d.network.compute) == 16 and {r.gbps for r in d.network.compute} == {200}
    assert [(s.name, comment_of(text, f"name: {s.name},")) for s in d.network.storage] == [
        ("mlx5_2", "guess: nearest to no GPU (storage / in-band)"),
        ("mlx5_11", "guess: nearest to no GPU (storage / in-band)"),
    ]
    assert d.network.bootstrap_interfaces == ("eth0",)
    assert [g.pci_bus_id for g in d.node.gpus][:2] == ["0000:0f:00.0", "0000:2d:00.0"]


def test_node_without_hca_is_tcp_with_ethernet_bootstrap(tmp_path):
    lay = sf.no_hca(tmp_path)
    text, d = run(lay, FakeNvml.from_layout(lay, name="NVIDIA L40S", nvlinks=0))
    assert d.network.fabric == "tcp" and d.network.compute == () and d.network.storage == ()
    assert comment_of(text, "fabric:") == "guess: no active RDMA port was found"
    assert d.network.bootstrap_interfaces == ("eth0",)
    assert [g.numa for g in d.node.gpus] == [0, 0, 1, 1]
    assert [(n.id, n.cpus) for n in d.node.numa_nodes] == [(0, "0-31,64-95"), (1, "32-63,96-127")]
    assert d.node.nvlink_gbps is None and "nvlink_gbps" not in text


def test_unknown_gpu_numa_falls_back_to_nvml_affinity_as_a_guess(tmp_path):
    lay = sf.dgx_h100(tmp_path)
    (tmp_path / "sys/devices/pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:01.0/0000:9d:00.0/numa_node").write_text(
        "-1\n"
    )
    text, d = run(lay)
    assert d.gpu(4).numa == 1
    assert comment_of(text, '"0000:9d:00.0"') == "guess: from NVML CPU affinity (sysfs numa_node unknown)"


def test_nvlink_bandwidth_is_left_to_a_person_for_unknown_models(tmp_path):
    lay = sf.dgx_h100(tmp_path)
    text, d = run(lay, FakeNvml.from_layout(lay, name="NVIDIA B200", nvlinks=18))
    assert d.node.nvlink_gbps is None
    assert "# node.nvlink_gbps unknown: 18 NVLink links are up" in text


def test_output_is_deterministic(tmp_path):
    lay = sf.oci_h100(tmp_path)
    assert run(lay)[0] == run(lay)[0]


def test_absolute_symlinks_in_a_captured_tree_stay_inside_it(tmp_path):
    """Some capture tools store absolute links; they must resolve under --sysfs-root, not under /."""
    lay = sf.dgx_h100(tmp_path)
    link = tmp_path / "sys/class/infiniband/mlx5_0"
    target = os.path.normpath(os.path.join(link.parent, os.readlink(link)))
    link.unlink()
    link.symlink_to("/" + os.path.relpath(target, tmp_path))
    _, d = run(lay)
    assert d.rails_for_gpu(0)[0].hca == "mlx5_0"


@pytest.mark.parametrize(
    "a, b, level",
    [
        (
            ("pci0000:15", ("0000:15:01.0", "0000:16:00.0", "0000:17:00.0", "0000:18:00.0"), 0),
            ("pci0000:15", ("0000:15:01.0", "0000:16:00.0", "0000:17:00.0", "0000:18:00.1"), 0),
            Level.PIX,
        ),
        (
            ("pci0000:15", ("0000:15:01.0", "0000:16:00.0", "0000:17:00.0", "0000:18:00.0"), 0),
            ("pci0000:15", ("0000:15:01.0", "0000:16:00.0", "0000:17:01.0", "0000:1b:00.0"), 0),
            Level.PXB,
        ),
        (
            ("pci0000:15", ("0000:15:01.0", "0000:16:00.0"), 0),
            ("pci0000:15", ("0000:15:02.0", "0000:17:00.0"), 0),
            Level.PHB,
        ),
        (
            ("pci0000:15", ("0000:15:01.0", "0000:16:00.0"), 0),
            ("pci0000:3d", ("0000:3d:01.0", "0000:3e:00.0"), 0),
            Level.NODE,
        ),
        (
            ("pci0000:15", ("0000:15:01.0", "0000:16:00.0"), 0),
            ("pci0000:97", ("0000:97:01.0", "0000:98:00.0"), 1),
            Level.SYS,
        ),
        (
            ("pci0000:15", ("0000:15:01.0", "0000:16:00.0"), None),
            ("pci0000:3d", ("0000:3d:01.0", "0000:3e:00.0"), None),
            Level.SYS,
        ),
    ],
)
def test_pcie_distance_classes(a, b, level):
    loc = lambda t: PciLoc(bdf=t[1][-1], host_bridge=t[0], chain=t[1], numa=t[2])  # noqa: E731
    assert sysfs.distance(loc(a), loc(b)) == level == sysfs.distance(loc(b), loc(a))


def test_hca_ports_read_state_rate_layer_and_netdev(tmp_path):
    sf.dgx_h100(tmp_path)
    ports = {p.hca: p for p in sysfs.hca_ports(sysfs.Sysfs(str(tmp_path)))}
    assert list(ports)[:4] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]  # natural order, not mlx5_10 first
    p = ports["mlx5_7"]
    assert (p.state, p.phys_state, p.rate_gbps, p.link_layer, p.netdev, p.driver) == (
        "DOWN",
        "Polling",
        400.0,
        "InfiniBand",
        "ibs8f0",
        "mlx5_core",
    )
    assert ports["mlx5_0"].pci.chain[-1] == "0000:18:00.0" and ports["mlx5_0"].pci.numa == 0


# -- the command ---------------------------------------------------------------------------------------


def test_cli_writes_a_file_that_ncclgen_validate_accepts(tmp_path, monkeypatch, capsys):
    lay = sf.dgx_h100(tmp_path / "root")
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml.from_layout(lay))
    out = tmp_path / "node.yaml"
    assert main(["discover", "--sysfs-root", str(lay.root), "--name", "dgx-a", "-o", str(out)]) == 0
    proc = subprocess.run([sys.executable, "-m", "ncclgen", "validate", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{out}: ok (dgx-a: 8x NVIDIA H100 80GB HBM3, infiniband")
    assert yamlio.load_file(str(out)).data["name"] == "dgx-a"


def test_no_gpu_no_hca_is_one_line_exit_1_and_no_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([], init_error=True))
    out = tmp_path / "node.yaml"
    assert main(["discover", "--sysfs-root", str(tmp_path), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        "ncclgen: error: discover: no NVIDIA GPU (NVML: NVML Shared Library Not Found) and no RDMA device"
    )
    assert not out.exists()


def test_this_machine_real_nvml_empty_tree(tmp_path):
    """The real pynvml, in a subprocess: here (no driver) or on a GPU node with an empty tree, one line, exit 1."""
    out = tmp_path / "x.yaml"
    proc = subprocess.run(
        [sys.executable, "-m", "ncclgen", "discover", "--sysfs-root", str(tmp_path), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("ncclgen: error: discover: no ")
    assert not out.exists()


def test_bad_name_and_missing_root_are_user_errors(tmp_path, capsys):
    assert main(["discover", "--sysfs-root", str(tmp_path), "--name", "Bad_Name"]) == 2
    assert "--name: 'Bad_Name' is not a DNS-1123 label" in capsys.readouterr().err
    assert main(["discover", "--sysfs-root", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err
    with pytest.raises(UserError):
        disc.discover(str(tmp_path), name="-x", backend=FakeNvml([]))


def test_gpu_without_nvml_gpus_is_unavailable(tmp_path):
    lay = sf.dgx_h100(tmp_path)
    with pytest.raises(Unavailable, match=r"^no NVIDIA GPU \(NVML reports none\) and RDMA devices present"):
        disc.discover(str(lay.root), backend=FakeNvml([]), software=SOFTWARE)


def test_host_name_to_cluster_name():
    assert disc.host_name_to_cluster("GPU_Node-01.cluster.example") == "gpu-node-01"
    assert disc.host_name_to_cluster("___") == "node"


def test_a_node_with_only_compute_ports_says_storage_is_empty(tmp_path):
    """`ncclgen validate` warns about an InfiniBand descriptor without a storage list; discover states
    `storage: []` when every RDMA port it found is a compute rail, so its output validates silently."""
    lay = sf.dgx_h100(tmp_path / "root")
    for hca in ("mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"):
        os.unlink(tmp_path / "root" / "sys/class/infiniband" / hca)
    text, _ = run(lay)
    assert "  storage: []  # no RDMA port here other than the compute rails\n" in text
    from ncclgen.load import descriptor

    path = tmp_path / "d.yaml"
    path.write_text(text)
    desc, warnings = descriptor.load_checked(str(path))
    assert (desc.network.storage, warnings) == ((), [])
    assert len(desc.network.compute) == 8
