"""The node-side preflight (ncclgen/jobside/preflight.py) and its spec (ncclgen/plan/preflight.py).

Fake nodes are sysfs trees of real layouts (tests/sysfs_fixtures.py) plus a fake /dev; each check is
shown to pass on a healthy node and to fail, with its own line, on a broken one. Stand-ins, because a
fake tree cannot hold them: IPv4 addresses of the fake trees' interfaces (the real program asks the
kernel with SIOCGIFADDR; that path is tested on this machine's own `lo`), /dev/shm's size and the
locked-memory limit where a test needs a given value (the real values are tested in a subprocess
that sets its own limit). The program also runs as a subprocess from its embedded text, with no
ncclgen on the path, exactly as the job runs it.
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import sysfs_fixtures as sf

from ncclgen import jobside
from ncclgen.jobside import preflight as pf
from ncclgen.pipeline import make_plan, request
from ncclgen.plan import preflight as spec_mod

GIB = 1 << 30


class FakeNode(pf.Node):
    """A fake tree's node: addresses, /dev/shm size and the memlock limit given by the test."""

    def __init__(self, root: Path, *, addrs=None, shm=64 * GIB, memlock=None, environ=None):
        super().__init__(sysfs=str(root / "sys"), dev=str(root / "dev"), environ=environ or {"PATH": str(root / "bin")})
        self.addrs = addrs if addrs is not None else {}
        self._shm = shm
        self._memlock = memlock

    def name(self):
        return "node7"

    def ipv4(self, ifname):
        return self.addrs.get(ifname)

    def shm_bytes(self):
        return self._shm

    def memlock(self):
        return self._memlock


def fake_dev(root: Path, gpus: int) -> None:
    (root / "dev").mkdir(parents=True, exist_ok=True)
    for i in range(gpus):
        (root / "dev" / f"nvidia{i}").write_text("")
    (root / "dev" / "nvidiactl").write_text("")  # not a GPU: must not be counted


def fake_bin(root: Path, *names: str) -> None:
    (root / "bin").mkdir(parents=True, exist_ok=True)
    for name in names:
        p = root / "bin" / name
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)


def plan(cluster="h100-ib", tier=3, workload="verl-sft", sets=()):
    return make_plan(request(cluster, tier, workload, None, tuple(sets), False))


def h100_spec(**kw):
    return spec_mod.spec(plan(), **kw)


def healthy_dgx(tmp_path):
    sf.dgx_h100(tmp_path)
    sf.Tree(tmp_path).file("/sys/module/nvidia_peermem/version", "1.0")  # GPUDirect RDMA (gdr check)
    fake_dev(tmp_path, 8)
    fake_bin(tmp_path, "numactl")
    return FakeNode(tmp_path, addrs={"bond0": "10.1.0.7", "lo": "127.0.0.1"})


def run(node, spec):
    out, err = io.StringIO(), io.StringIO()
    code = pf.run(spec, node, out=out, err=err)
    return code, out.getvalue(), err.getvalue().splitlines()


# -- the spec, from the plan ---------------------------------------------------------------------------


def test_spec_for_h100_ib_lists_what_the_plan_relies_on():
    s = h100_spec()
    assert s["v"] == pf.SPEC_VERSION == spec_mod.SPEC_VERSION
    assert s["hca"] == {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"}
    assert s["ifaces"] == {"NCCL_SOCKET_IFNAME": "=bond0", "GLOO_SOCKET_IFNAME": "=bond0"}
    assert s["gpus"] == 8 and s["shm_bytes"] == GIB and s["memlock_unlimited"] is True
    assert s["commands"] == ["numactl"]  # tier-3 torchrun ranks run under numactl
    assert "files" not in s  # no topology file, no plugin on h100-ib
    assert json.loads(spec_mod.encode(s)) == s and "\n" not in spec_mod.encode(s)


@pytest.mark.parametrize("cluster", sorted(p.stem for p in (Path(__file__).parent.parent / "clusters").glob("*.yaml")))
def test_the_preflights_own_json_reader_reads_what_json_reads(cluster):
    """preflight.loads (the node program's reader, without the json module's imports) on every preset's spec and on
    strings json.dumps escapes; what JSON forbids or the spec never holds (a float, a trailing comma) is refused."""
    s = spec_mod.spec(plan(cluster=cluster))
    assert pf.loads(spec_mod.encode(s)) == json.loads(spec_mod.encode(s)) == s
    odd = {"k\u00e9\t": ['a"b\\c/', "\U0001f600 \u2028", -12, 0, True, None, {}, []]}
    for text in (json.dumps(odd), json.dumps(odd, ensure_ascii=False), json.dumps(odd, indent=2)):
        assert pf.loads(text) == odd
    for bad in ("", "{", "[1,]", '{"a" 1}', "[1 2]", "1.5", '"\\x"', '"abc', "{}}", "[" * 40 + "]" * 40, "tru"):
        with pytest.raises(ValueError):
            pf.loads(bad)


def test_spec_follows_the_plan_not_the_descriptor():
    assert "commands" not in spec_mod.spec(plan(tier=2))  # no binding below tier 3
    assert "commands" not in spec_mod.spec(plan(workload="verl-grpo-qwen2-7b"))  # Ray binds without numactl
    s = spec_mod.spec(
        plan(sets=["NCCL_IB_HCA=mlx5_0", "NCCL_SOCKET_IFNAME=^docker,lo", "NCCL_TOPO_FILE=/etc/topo.xml"]),
        plugin_files=("/usr/lib/libnccl-net.so",),
    )
    assert s["hca"] == {"NCCL_IB_HCA": "mlx5_0"} and s["ifaces"]["NCCL_SOCKET_IFNAME"] == "^docker,lo"
    assert s["files"] == [["net plugin", "/usr/lib/libnccl-net.so"], ["NCCL_TOPO_FILE", "/etc/topo.xml"]]
    assert "hca" not in spec_mod.spec(plan(sets=["NCCL_IB_DISABLE=1"]))


def test_spec_for_local_ci_and_other_fabrics():
    s = spec_mod.spec(plan("local-ci"))
    assert s["ifaces"] == {"NCCL_SOCKET_IFNAME": "=lo", "GLOO_SOCKET_IFNAME": "=lo"}
    assert "hca" not in s and "memlock_unlimited" not in s and s["gpus"] == 2  # TCP: no RDMA registration
    assert spec_mod.spec(plan("aws-p5"))["memlock_unlimited"] is True  # EFA registers memory
    azure = spec_mod.spec(plan("azure-nd-h100-v5"))
    assert ["NCCL_TOPO_FILE", "/opt/microsoft/ndv5-topo.xml"] in azure["files"]


def test_describe_has_one_line_per_check():
    lines = spec_mod.describe(h100_spec(plugin_files=("/p.so",)))
    assert lines[0].startswith("NCCL_IB_HCA==mlx5_0:1,") and "ACTIVE" in lines[0]
    assert "net plugin /p.so: readable" in lines and "8 GPUs visible" in lines
    assert "/dev/shm at least 1024 MiB" in lines and "numactl on PATH" in lines


# -- the checks on fake nodes ----------------------------------------------------------------------------


def test_healthy_dgx_passes_every_check(tmp_path):
    code, out, err = run(healthy_dgx(tmp_path), h100_spec())
    assert (code, err) == (0, [])
    assert out.startswith("ncclgen: preflight passed on node node7 in ")


def test_missing_hca_names_the_device(tmp_path):
    sf.no_hca(tmp_path)
    fake_dev(tmp_path, 8)
    fake_bin(tmp_path, "numactl")
    node = FakeNode(tmp_path, addrs={"eth0": "10.0.0.2"})
    code, _, err = run(node, {"v": 1, "hca": {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_3:1"}})
    assert code == pf.EXIT_PROBLEMS == spec_mod.EXIT_PROBLEMS == 6
    assert err == [
        "ncclgen: preflight FAILED: node node7: NCCL_IB_HCA mlx5_0 port 1: expected an RDMA device named "
        "mlx5_0, found no such device (have: none)",
        "ncclgen: preflight FAILED: node node7: NCCL_IB_HCA mlx5_3 port 1: expected an RDMA device named "
        "mlx5_3, found no such device (have: none)",
        "ncclgen: preflight FAILED on node node7: 2 problem(s); the job stops before the launch (exit 6)",
    ]


def test_hca_port_down_wrong_port_and_exact_vs_prefix(tmp_path):
    node = healthy_dgx(tmp_path)
    code, _, err = run(node, {"v": 1, "hca": {"NCCL_IB_HCA": "=mlx5_7:1,mlx5_0:2,mlx5_1"}})
    assert code == 6
    assert err[0].endswith("NCCL_IB_HCA mlx5_7 port 1: expected state ACTIVE, found port 1 DOWN")
    assert err[1].endswith("NCCL_IB_HCA mlx5_0 port 2: expected the port to exist, found ports 1")
    assert len(err) == 3  # mlx5_1 (exact, any port) is ACTIVE; the last line is the summary
    # '=' is exact: mlx5_1 does not stand for mlx5_10; without '=' it is a prefix that does.
    code, _, err = run(node, {"v": 1, "hca": {"NCCL_IB_HCA": "=mlx5_1"}})
    assert code == 0
    assert run(node, {"v": 1, "hca": {"NCCL_IB_HCA": "=mlx5_12"}})[0] == 6


def test_hca_prefix_and_exclusion(tmp_path):
    node = healthy_dgx(tmp_path)
    assert run(node, {"v": 1, "hca": {"NCCL_IB_HCA": "mlx5_0,mlx5_3"}})[0] == 0
    assert run(node, {"v": 1, "hca": {"NCCL_IB_HCA": "^mlx5_7"}})[0] == 0
    code, _, err = run(node, {"v": 1, "hca": {"NCCL_IB_HCA": "^mlx5"}})
    assert code == 6 and "expected an ACTIVE port on a device not excluded" in err[0]
    code, _, err = run(node, {"v": 1, "hca": {"NCCL_IB_HCA": "bnxt_re"}})
    assert code == 6 and "expected an RDMA device whose name starts with bnxt_re" in err[0]
    # A prefix with an uncabled match (mlx5_7 is DOWN) is fine while another match is ACTIVE, as for NCCL.
    assert run(node, {"v": 1, "hca": {"NCCL_IB_HCA": "mlx5_7,mlx5_8"}})[0] == 6
    assert run(node, {"v": 1, "hca": {"NCCL_IB_HCA": "mlx5"}})[0] == 0
    code, _, err = run(node, {"v": 1, "hca": {"NCCL_IB_HCA": "mlx5_7:1"}})
    assert err[0].endswith(
        "NCCL_IB_HCA mlx5_7 port 1: expected an ACTIVE port on a device whose name starts "
        "with mlx5_7, found mlx5_7: port 1 DOWN"
    )


def test_bootstrap_interface_missing_or_without_ipv4(tmp_path):
    node = healthy_dgx(tmp_path)
    node.addrs = {}
    code, _, err = run(node, {"v": 1, "ifaces": {"NCCL_SOCKET_IFNAME": "=bond0", "GLOO_SOCKET_IFNAME": "=bond1"}})
    assert code == 6
    assert err[0] == (
        "ncclgen: preflight FAILED: node node7: NCCL_SOCKET_IFNAME bond0: expected an IPv4 address, found none on bond0"
    )
    assert err[1].startswith(
        "ncclgen: preflight FAILED: node node7: GLOO_SOCKET_IFNAME bond1: expected an "
        "interface named bond1, found no such interface (have: bond0, ens2f1np1, "
    )


def test_bootstrap_prefix_and_exclusion(tmp_path):
    sf.oci_h100(tmp_path)
    node = FakeNode(tmp_path, addrs={"eth0": "10.0.0.5"})
    assert run(node, {"v": 1, "ifaces": {"NCCL_SOCKET_IFNAME": "eth"}})[0] == 0
    code, _, err = run(node, {"v": 1, "ifaces": {"NCCL_SOCKET_IFNAME": "en"}})  # AWS's prefix on an OCI node
    assert code == 6 and "expected an interface whose name starts with en, found no such interface" in err[0]
    assert run(node, {"v": 1, "ifaces": {"NCCL_SOCKET_IFNAME": "^rdma,docker"}})[0] == 0
    code, _, err = run(node, {"v": 1, "ifaces": {"NCCL_SOCKET_IFNAME": "^rdma,eth"}})
    assert code == 6 and "an interface not excluded with an IPv4 address" in err[0]


def test_ipv4_from_the_kernel():
    node = pf.Node()
    assert node.ipv4("lo") == "127.0.0.1"
    assert node.ipv4("ncclgen-none0") is None


def test_files_readable_missing_or_a_directory(tmp_path):
    node = healthy_dgx(tmp_path)
    topo = tmp_path / "topo.xml"
    topo.write_text("<system/>")
    spec = {
        "v": 1,
        "files": [
            ["NCCL_TOPO_FILE", str(topo)],
            ["net plugin", str(tmp_path / "lib" / "libnccl-net.so")],
            ["net plugin", str(tmp_path)],
        ],
    }
    code, _, err = run(node, spec)
    assert code == 6 and len(err) == 3
    assert err[0].endswith(f"net plugin {tmp_path}/lib/libnccl-net.so: expected a readable file, found no such file")
    assert err[1].endswith(f"net plugin {tmp_path}: expected a readable file, found a directory")


def test_gpu_count_from_device_nodes_and_cuda_visible_devices(tmp_path):
    node = healthy_dgx(tmp_path)
    assert run(node, {"v": 1, "gpus": 8})[0] == 0
    node.environ = {"CUDA_VISIBLE_DEVICES": "0,1"}
    code, _, err = run(node, {"v": 1, "gpus": 8})
    assert code == 6
    assert err[0].endswith("GPUs: expected 8 visible, found 8 /dev/nvidiaN device(s), CUDA_VISIBLE_DEVICES='0,1'")
    assert run(node, {"v": 1, "gpus": 2})[0] == 0
    (tmp_path / "dev" / "nvidia7").unlink()
    node.environ = {}
    code, _, err = run(node, {"v": 1, "gpus": 8})
    assert err[0].endswith("GPUs: expected 8 visible, found 7 /dev/nvidiaN device(s)")  # nvidiactl not counted


def test_shm_and_memlock(tmp_path):
    node = healthy_dgx(tmp_path)
    node._shm, node._memlock = 64 << 20, 8 << 20  # Docker's default 64 MiB; a common 8 MiB ulimit -l
    code, _, err = run(node, {"v": 1, "shm_bytes": GIB, "memlock_unlimited": True})
    assert code == 6
    assert err[0].endswith("/dev/shm: expected at least 1 GiB, found 64 MiB")
    assert err[1].endswith("locked-memory limit (ulimit -l): expected unlimited, found 8 MiB")
    assert run(node, {"v": 1, "shm_bytes": GIB})[0] == 6
    node._shm, node._memlock = 2 * GIB, None
    assert run(node, {"v": 1, "shm_bytes": GIB, "memlock_unlimited": True})[0] == 0


def test_shm_size_from_statvfs(tmp_path):
    (tmp_path / "dev" / "shm").mkdir(parents=True)
    node = pf.Node(dev=str(tmp_path / "dev"), environ={})
    st = os.statvfs(tmp_path)
    assert node.shm_bytes() == st.f_blocks * st.f_frsize
    assert run(node, {"v": 1, "shm_bytes": 1})[0] == 0
    code, _, err = run(node, {"v": 1, "shm_bytes": 1 << 60})
    assert code == 6 and "/dev/shm: expected at least " in err[0]
    code, _, err = run(pf.Node(dev=str(tmp_path / "none"), environ={}), {"v": 1, "shm_bytes": 1})
    assert code == 6 and err[0].endswith("/dev/shm: expected at least 1 B, found No such file or directory")


def test_numactl_on_path(tmp_path):
    node = healthy_dgx(tmp_path)
    assert run(node, {"v": 1, "commands": ["numactl"]})[0] == 0
    node.environ = {"PATH": str(tmp_path / "nowhere")}
    code, _, err = run(node, {"v": 1, "commands": ["numactl"]})
    assert code == 6 and err[0].endswith("command numactl: expected on PATH, found not found")


def test_every_problem_is_reported_not_only_the_first(tmp_path):
    sf.no_hca(tmp_path)
    node = FakeNode(tmp_path, shm=1 << 20, memlock=65536)
    code, _, err = run(node, h100_spec())
    items = [e.split(": ")[3] for e in err[:-1]]
    assert code == 6 and len(items) == 1 + 8 + 2 + 1 + 1 + 1 + 1, err  # 1: GPUDirect RDMA
    assert items[-4:] == ["GPUs", "/dev/shm", "locked-memory limit (ulimit -l)", "command numactl"]


# -- the program as the job runs it ---------------------------------------------------------------------


def _program(spec, env=None, preexec=None):
    """python3 -I -c "$NCCLGEN_PREFLIGHT" SPEC: isolated (no PYTHONPATH, no ncclgen importable)."""
    return subprocess.run(
        [sys.executable, "-I", "-c", jobside.source("preflight"), spec],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        preexec_fn=preexec,
        check=False,
    )


def test_embedded_program_on_a_fake_node(tmp_path):
    sf.dgx_h100(tmp_path)
    fake_dev(tmp_path, 8)
    env = {
        "PATH": os.environ["PATH"],
        "NCCLGEN_PREFLIGHT_SYSFS": str(tmp_path / "sys"),
        "NCCLGEN_PREFLIGHT_DEV": str(tmp_path / "dev"),
        "SLURMD_NODENAME": "node3",
    }
    spec = {"v": 1, "hca": {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_11:1"}, "gpus": 8}
    r = _program(json.dumps(spec), env)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    assert r.stdout.startswith("ncclgen: preflight passed on node node3 in ")
    spec["hca"]["NCCL_IB_HCA"] = "=mlx5_0:1,mlx5_7:1,mlx5_99:1"
    r = _program(json.dumps(spec), env)
    assert r.returncode == 6 and r.stdout == ""
    assert r.stderr.splitlines()[:2] == [
        "ncclgen: preflight FAILED: node node3: NCCL_IB_HCA mlx5_7 port 1: expected state ACTIVE, found port 1 DOWN",
        "ncclgen: preflight FAILED: node node3: NCCL_IB_HCA mlx5_99 port 1: expected an RDMA device named mlx5_99, "
        "found no such device (have: mlx5_0, mlx5_1, mlx5_10, mlx5_11, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, "
        "mlx5_7, mlx5_8, mlx5_9)",
    ]


def test_embedded_program_reads_the_real_locked_memory_limit():
    def limit():
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (65536, resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]))

    r = _program(json.dumps({"v": 1, "memlock_unlimited": True}), preexec=limit)
    assert r.returncode == 6
    assert r.stderr.splitlines()[0].endswith("locked-memory limit (ulimit -l): expected unlimited, found 64 KiB")
    if resource.getrlimit(resource.RLIMIT_MEMLOCK)[1] == resource.RLIM_INFINITY:

        def unlimited():
            resource.setrlimit(resource.RLIMIT_MEMLOCK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

        assert _program(json.dumps({"v": 1, "memlock_unlimited": True}), preexec=unlimited).returncode == 0


def test_embedded_program_checks_this_machine_lo():
    r = _program(json.dumps({"v": 1, "ifaces": {"NCCL_SOCKET_IFNAME": "=lo", "GLOO_SOCKET_IFNAME": "=ncclgen-x0"}}))
    assert r.returncode == 6
    assert len(r.stderr.splitlines()) == 2 and "GLOO_SOCKET_IFNAME ncclgen-x0: expected an interface" in r.stderr


def test_spec_from_a_file(tmp_path):
    (tmp_path / "spec.json").write_text('{"v": 1, "ifaces": {"NCCL_SOCKET_IFNAME": "=lo"}}')
    r = _program(f"@{tmp_path}/spec.json")
    assert (r.returncode, r.stderr) == (0, "") and "preflight passed" in r.stdout


@pytest.mark.parametrize(
    "arg, why",
    [
        ("not json", "JSON: unexpected 'not json' at 0"),
        ("@/nonexistent/spec.json", "No such file or directory"),
        ('{"v": 99}', "spec version 99, this program reads 1"),
        ("[1]", "spec version None"),
    ],
)
def test_bad_spec_exits_2_with_one_line(arg, why):
    r = _program(arg)
    assert r.returncode == pf.EXIT_USAGE == 2
    assert len(r.stderr.splitlines()) == 1 and why in r.stderr and "Traceback" not in r.stderr


def test_a_check_blocked_in_the_kernel_ends_at_the_deadline(tmp_path):
    """A read that never returns (here a FIFO with no writer; a hung NFS mount on a node) is a failure after
    DEADLINE_S: the timer thread prints the line and exits 6, as the main thread cannot."""
    fifo = tmp_path / "topo.xml"
    os.mkfifo(fifo)
    spec = json.dumps({"v": pf.SPEC_VERSION, "files": [["NCCL_TOPO_FILE", str(fifo)]]})
    code = (
        f"import sys; sys.path.insert(0, {str(Path(pf.__file__).parent)!r}); import preflight as pf; "
        f"pf.DEADLINE_S = 0.5; sys.exit(pf.main([{spec!r}]))"
    )
    r = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=30, check=False)
    assert r.returncode == pf.EXIT_PROBLEMS, r.stderr
    assert "preflight: expected to finish within 0 s, found it blocked (a hung file system?)" in r.stderr
