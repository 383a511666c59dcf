"""`ncclgen doctor` against sysfs fixture trees (tests/sysfs_fixtures.py) and a fake NVML.

Healthy trees must pass every hardware check against the reference preset and against what
`discover` wrote; each kind of breakage must fail its own row and nothing else.
"""

from __future__ import annotations

import dataclasses
import json
import resource
import shutil
import sys

import pytest
import sysfs_fixtures as sf
from fake_nvml import FakeNvml

from ncclgen.cli import main
from ncclgen.load import descriptor
from ncclgen.node import discover as disc
from ncclgen.node import doctor

H100 = descriptor.load_cluster("h100-ib")
SOFTWARE = {"nccl": ("2.21.5", "test"), "torch": ("2.6.0", "test"), "cuda": ("12.4", "test")}
UNLIMITED = resource.RLIM_INFINITY


def rows(checks) -> dict[str, tuple[str, str]]:
    return {c.check: (c.status, c.detail) for c in checks}


def check(desc, layout, fake=None, **kw):
    kw.setdefault("memlock", UNLIMITED)
    kw.setdefault("environ", {})
    return doctor.run(desc, sysfs_root=str(layout.root), backend=fake or FakeNvml.from_layout(layout), **kw)


def discovered(tmp_path, layout, fake=None):
    path = tmp_path / "discovered.yaml"
    path.write_text(
        disc.discover(str(layout.root), backend=fake or FakeNvml.from_layout(layout), hostname="n1", software=SOFTWARE)
    )
    return descriptor.load(str(path))


def test_healthy_dgx_passes_the_reference_preset(tmp_path):
    lay = sf.dgx_h100(tmp_path)
    checks = check(H100, lay, shm_path=str(tmp_path), which=lambda _: "/usr/bin/numactl")
    r = rows(checks)
    hw = {k: v for k, v in r.items() if k.split(".")[0] in ("gpu", "hca") or k.startswith(("gpu", "numa"))}
    assert {s for s, _ in hw.values()} == {"pass"}, hw
    assert r["gpu.count"] == ("pass", "8 GPUs (descriptor: 8)")
    assert r["gpu.model"][0] == "pass"  # 'NVIDIA H100 80GB HBM3' is an H100-SXM5-80GB
    assert r["gpu4"] == ("pass", "0000:9d:00.0, NUMA 1")
    assert r["hca.mlx5_0:1"] == ("pass", "ACTIVE, LinkUp, 400 Gb/s, InfiniBand, NUMA 0")
    assert r["numa1"] == ("pass", "CPUs 56-111,168-223")
    assert len([k for k in r if k.startswith("hca.")]) == 8
    assert r["ulimit.memlock"] == ("pass", "unlimited")
    assert r["env"][0] == "pass"
    assert r["numactl"] == ("pass", "/usr/bin/numactl")
    assert not doctor.failed(checks)


@pytest.mark.parametrize("build", [sf.dgx_h100, sf.oci_h100, sf.no_hca])
def test_each_layout_passes_what_discover_wrote_for_it(tmp_path, build):
    lay = build(tmp_path / "root")
    fake = FakeNvml.from_layout(lay, name="NVIDIA L40S", nvlinks=0) if build is sf.no_hca else None
    desc = discovered(tmp_path, lay, fake)
    r = rows(check(desc, lay, fake, shm_path=str(tmp_path), which=lambda _: "/usr/bin/numactl"))
    failing = {k: v for k, v in r.items() if v[0] == "fail"}
    assert failing == {}


def test_broken_ports_gpus_and_numa_fail_their_own_rows(tmp_path):
    lay = sf.dgx_h100(tmp_path)
    ib = tmp_path / "sys/class/infiniband"
    (ib / "mlx5_3/ports/1/state").write_text("1: DOWN\n")
    (ib / "mlx5_3/ports/1/phys_state").write_text("3: Polling\n")
    (ib / "mlx5_4/ports/1/rate").write_text("200 Gb/sec (4X HDR)\n")
    (ib / "mlx5_6/ports/1/link_layer").write_text("Ethernet\n")
    (ib / "mlx5_5").unlink()
    (tmp_path / "sys/devices/system/node/node1/cpulist").write_text("56-111\n")
    fake = FakeNvml.from_layout(lay)
    fake.gpus = fake.gpus[:7]  # GPU 7 fell off the bus
    r = rows(check(H100, lay, fake, shm_path=str(tmp_path)))
    assert r["gpu.count"] == ("fail", "7 GPUs (descriptor: 8)")
    assert r["gpu7"] == ("fail", "not present")
    assert r["hca.mlx5_3:1"] == ("fail", "DOWN, Polling, 400 Gb/s, InfiniBand, NUMA 0")
    assert r["hca.mlx5_4:1"] == (
        "fail",
        "ACTIVE, LinkUp, 200 Gb/s, descriptor 400 (link trained low?), InfiniBand, NUMA 0",
    )
    assert r["hca.mlx5_5:1"] == ("fail", "RDMA port not present in /sys/class/infiniband")
    assert (
        r["hca.mlx5_6:1"][0] == "fail"
        and "link layer Ethernet, fabric infiniband needs InfiniBand" in r["hca.mlx5_6:1"][1]
    )
    assert r["numa1"] == ("fail", "CPUs 56-111, descriptor 56-111,168-223")
    still_fine = ["hca.mlx5_0:1", "hca.mlx5_9:1", "hca.mlx5_10:1", "hca.mlx5_11:1", "numa0", "gpu0", "gpu6"]
    assert [r[k][0] for k in still_fine] == ["pass"] * len(still_fine)


def test_gpu_on_another_numa_node_or_pci_address_fails(tmp_path):
    lay = sf.oci_h100(tmp_path / "root")
    text = disc.discover(str(lay.root), backend=FakeNvml.from_layout(lay), hostname="n1", software=SOFTWARE)
    text = text.replace(
        '{index: 0, numa: 0, pci_bus_id: "0000:0f:00.0"}', '{index: 0, numa: 1, pci_bus_id: "0000:0f:00.0"}'
    )
    text = text.replace('pci_bus_id: "0000:2d:00.0"', 'pci_bus_id: "0000:2e:00.0"')
    path = tmp_path / "d.yaml"
    path.write_text(text)
    r = rows(check(descriptor.load(str(path)), lay))
    assert r["gpu0"] == ("fail", "NUMA 0, descriptor 1")
    assert r["gpu1"] == ("fail", "PCI 0000:2d:00.0, descriptor 0000:2e:00.0")
    assert r["gpu2"][0] == "pass"


def test_gpu_model_compared_by_model_number():
    assert doctor.model_matches("H100-SXM5-80GB", "NVIDIA H100 80GB HBM3") is True
    assert doctor.model_matches("H100-SXM5-80GB", "NVIDIA H200") is False
    assert doctor.model_matches("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB") is True
    assert doctor.model_matches("FAKE-GPU", "NVIDIA H100") is None


def test_wrong_gpu_model_fails(tmp_path):
    lay = sf.dgx_h100(tmp_path)
    r = rows(check(H100, lay, FakeNvml.from_layout(lay, name="NVIDIA A100-SXM4-80GB")))
    assert r["gpu.model"] == ("fail", "NVIDIA A100-SXM4-80GB (descriptor: H100-SXM5-80GB)")


def test_no_nvml_fails_the_gpu_row_only(tmp_path):
    lay = sf.dgx_h100(tmp_path)
    r = rows(check(H100, lay, FakeNvml([], init_error=True)))
    assert r["gpu.count"] == ("fail", "no NVIDIA GPU (NVML: NVML Shared Library Not Found)")
    assert r["hca.mlx5_0:1"][0] == "pass"


def test_limits_memlock_shm_numactl(tmp_path):
    lay = sf.dgx_h100(tmp_path / "root")
    r = rows(check(H100, lay, memlock=8 << 20, shm_path=str(tmp_path / "missing"), which=lambda _: None))
    assert r["ulimit.memlock"] == ("fail", "8192 KiB (ulimit -l); RDMA memory registration needs unlimited")
    assert r["shm"][0] == "fail" and "No such file or directory" in r["shm"][1]
    assert r["numactl"][0] == "fail"
    # without RDMA a locked-memory limit is not a failure
    tcp = descriptor.load_cluster("local-ci")
    assert rows(doctor.check_limits(tcp, 8 << 20, str(tmp_path), shutil.which))["ulimit.memlock"][0] == "info"


def test_shm_smaller_than_the_descriptor_wants_warns(tmp_path):
    import os

    st = os.statvfs(str(tmp_path))
    size = st.f_frsize * st.f_blocks
    r = rows(doctor.check_limits(H100, UNLIMITED, str(tmp_path), shutil.which, pod=True))
    assert r["shm"][0] == ("pass" if size >= doctor.quantity_bytes("256Gi") else "warn")
    # kubernetes.shm_size sizes a pod's /dev/shm: on a host it is not the measure
    tiny = descriptor.load_cluster("local-ci")
    big = dataclasses.replace(H100, kubernetes=dataclasses.replace(H100.kubernetes, shm_size=f"{size + 2**30}"))
    assert rows(doctor.check_limits(big, UNLIMITED, str(tmp_path), shutil.which, pod=True))["shm"][0] == "warn"
    host = rows(doctor.check_limits(big, UNLIMITED, str(tmp_path), shutil.which, pod=False))["shm"]
    assert host == ("pass", f"{tmp_path} {size / 2**30:.1f} GiB (not in a pod: kubernetes.shm_size not compared)")
    assert tiny.kubernetes.shm_size
    assert doctor.quantity_bytes("256Gi") == 256 * 2**30 and doctor.quantity_bytes("32M") == 32 * 10**6


def test_environment_is_linted(tmp_path):
    lay = sf.dgx_h100(tmp_path)
    env = {"NCCL_TIMEOUT": "1800", "NCCL_IB_HCA": "mlx5", "NCCL_BUFFSIZE": "1048576", "PATH": "/usr/bin"}
    r = rows(check(H100, lay, environ=env))
    assert r["env.NCCL_TIMEOUT"][0] == "fail"  # invented: the seed article's "NCCL_TIMEOUT"
    assert r["env.NCCL_IB_HCA"][0] == "fail"  # prefix 'mlx5' also selects the storage HCAs
    assert r["env.NCCL_BUFFSIZE"][0] == "warn"  # shrinks the 4 MiB default
    assert "env" not in r and not any(k == "env.PATH" for k in r)


# -- the command ---------------------------------------------------------------------------------------


def test_cli_text_and_json_agree_with_exit_status(tmp_path, monkeypatch, capsys):
    lay = sf.dgx_h100(tmp_path)
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml.from_layout(lay))
    for name in [k for k in list(__import__("os").environ) if k.startswith(("NCCL_", "TORCH_"))]:
        monkeypatch.delenv(name)
    rc = main(["doctor", "--cluster", "h100-ib", "--sysfs-root", str(lay.root), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    real_memlock_ok = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0] == resource.RLIM_INFINITY
    by = {c["check"]: c["status"] for c in report["checks"]}
    assert by["ulimit.memlock"] == ("pass" if real_memlock_ok else "fail")
    assert by["hca.mlx5_11:1"] == "pass" and by["gpu.count"] == "pass"
    assert rc == (0 if report["ok"] else 1) and report["ok"] == all(s != "fail" for s in by.values())
    assert report["counts"]["fail"] == sum(s == "fail" for s in by.values())

    rc_text = main(["doctor", "--cluster", "h100-ib", "--sysfs-root", str(lay.root)])
    text = capsys.readouterr().out
    assert rc_text == rc
    assert text.splitlines()[0].split() == ["STATUS", "CHECK", "DETAIL"]
    assert any(line.split()[:2] == ["pass", "hca.mlx5_0:1"] for line in text.splitlines())
    assert text.rstrip().endswith("FAILED" if rc else "ok")


def test_cli_takes_the_project_cluster(tmp_path, monkeypatch, capsys):
    """Without --cluster, doctor checks against ncclgen.yaml's cluster: and says so; with none, exit 2."""
    lay = sf.dgx_h100(tmp_path / "sysfs")
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml.from_layout(lay))
    monkeypatch.delenv("NCCLGEN_CLUSTER", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    assert main(["doctor", "--sysfs-root", str(lay.root)]) == 2
    assert "give --cluster NAME|PATH or set cluster: in ncclgen.yaml" in capsys.readouterr().err
    (project / "ncclgen.yaml").write_text("cluster: h100-ib\n")
    main(["doctor", "--sysfs-root", str(lay.root), "--format", "json"])
    out = capsys.readouterr()
    assert json.loads(out.out)["cluster"] == "h100-ib"
    assert "doctor: checking against h100-ib (from ncclgen.yaml)" in out.err


def test_cli_bad_cluster_is_one_line_exit_2(tmp_path, capsys):
    assert main(["doctor", "--cluster", "h100-ibb"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean 'h100-ib'" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nnode: [\n")
    assert main(["doctor", "--cluster", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(bad) in err and "Traceback" not in err


# -- bootstrap interface, GPUDirect RDMA, GPU<->HCA PCIe proximity, pods -------------------------------


def variant(tmp_path, *edits: tuple[str, str], name: str = "h100-ib"):
    """The preset ``name`` with text edits (old, new), loaded from a file; each must match exactly once."""
    text = (sf.Path(descriptor.resolve(name))).read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / "variant.yaml"
    path.write_text(text)
    return descriptor.load(str(path), warnings=False)


ETH9 = ("bootstrap_interfaces: [bond0]", "bootstrap_interfaces: [eth9]")


def test_bootstrap_interface_must_exist(tmp_path):
    lay = sf.dgx_h100(tmp_path / "root")
    assert rows(check(H100, lay))["bootstrap.bond0"] == ("pass", "bond0 up")
    eth9 = variant(tmp_path, ETH9)
    r = rows(check(eth9, lay))
    assert r["bootstrap.eth9"] == (
        "fail",
        "no such interface; NCCL/Gloo bootstrap would fail (network.bootstrap_interfaces)",
    )
    assert doctor.failed(check(eth9, lay))
    # in a pod with its own network namespace the host's name is not expected to be there; in a
    # host-network pod (h100-ib's kubernetes.host_network) it is
    in_pod = {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    assert rows(check(eth9, lay, environ=in_pod))["bootstrap.eth9"][0] == "fail"
    own_ns = variant(tmp_path, ETH9, ("host_network: true", "host_network: false"))
    pod = rows(check(own_ns, lay, environ=in_pod))
    assert pod["bootstrap.eth9"][0] == "info" and "in this pod's network namespace" in pod["bootstrap.eth9"][1]
    # a down interface fails; a prefix matches any interface that starts with it
    down = variant(tmp_path, ("bootstrap_interfaces: [bond0]", "bootstrap_interfaces: [ibs8f0]"))
    assert rows(check(down, lay))["bootstrap.ibs8f0"] == ("fail", "ibs8f0 down")
    prefix = variant(
        tmp_path, ("bootstrap_interfaces: [bond0]", "bootstrap_interfaces: [ibp2]\n  bootstrap_match: prefix")
    )
    assert rows(check(prefix, lay))["bootstrap.ibp2"] == ("pass", "ibp206s0 up, ibp220s0 up, ibp24s0 up")


@pytest.mark.parametrize(
    "files, status, words",
    [
        ({"sys/module/nvidia_peermem/version": "570.86"}, "pass", "/sys/module/nvidia_peermem/version"),
        ({"sys/kernel/mm/memory_peers/nv_mem/version": "1.3"}, "pass", "peer memory module loaded"),
        (
            {
                "proc/sys/kernel/osrelease": "6.8.0-51-generic",
                "proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15",
            },
            "pass",
            "DMA-BUF path: Linux 6.8.0-51-generic, NVIDIA open kernel module",
        ),
        (
            {
                "proc/sys/kernel/osrelease": "5.4.0-200-generic",
                "proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01",
            },
            "warn",
            "Linux 5.4.0-200-generic is older than 5.12; the NVIDIA kernel module is not the open one",
        ),
        ({}, "warn", "no GPUDirect RDMA module (modprobe nvidia_peermem) and DMA-BUF unknown"),
    ],
)
def test_gpudirect_rdma_as_nccl_detects_it(tmp_path, files, status, words):
    lay = sf.dgx_h100(tmp_path)
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text + "\n")
    got = rows(check(H100, lay))["gdr"]
    assert got[0] == status and words in got[1], got
    # no RDMA fabric, no row
    assert "gdr" not in rows(check(descriptor.load_cluster("local-ci"), sf.no_hca(tmp_path / "tcp")))


def test_gpu_rail_pairing_is_checked_against_the_pcie_tree(tmp_path):
    lay = sf.dgx_h100(tmp_path / "root")
    r = rows(check(H100, lay))
    assert r["pcie.gpu0"] == ("pass", "mlx5_0:1 PXB") and r["pcie.gpu7"] == ("pass", "mlx5_11:1 PXB")
    # GPU 0 and GPU 1 swapped their HCAs: both are in the same NUMA node, so only PCIe tells
    swapped = variant(
        tmp_path,
        ("netdev: ibp24s0, gbps: 400, gpus: [0]", "netdev: ibp24s0, gbps: 400, gpus: [1]"),
        ("netdev: ibp64s0, gbps: 400, gpus: [1]", "netdev: ibp64s0, gbps: 400, gpus: [0]"),
    )
    r = rows(check(swapped, lay))
    assert r["pcie.gpu0"] == (
        "fail",
        "descriptor rail mlx5_3:1 NODE; nearest compute HCA mlx5_0:1 (PXB): check network.compute's gpus",
    ), r["pcie.gpu0"]
    assert r["pcie.gpu1"][0] == "fail" and "nearest compute HCA mlx5_3:1 (PXB)" in r["pcie.gpu1"][1]
    assert [k for k, v in r.items() if k.startswith("pcie.") and v[0] == "fail"] == ["pcie.gpu0", "pcie.gpu1"]
    # the same check passes what discover wrote for a dual-port-per-GPU layout
    oci = sf.oci_h100(tmp_path / "oci")
    r = rows(check(descriptor.load_cluster("oci-bm-gpu-h100-8"), oci))
    assert r["pcie.gpu0"] == ("pass", "mlx5_0:1 PXB, mlx5_1:1 PXB")
