"""The pod view is checked at render (issue 20 item 4): a pod without hostNetwork that would name a host
interface, or an InfiniBand/RoCE cluster's pod without an RDMA resource or device mount, is refused with
the descriptor key to set, at its file:line:col; `ncclgen lint` of such a manifest fails too."""

from __future__ import annotations

import io
import os
from contextlib import redirect_stderr, redirect_stdout

import pytest

from ncclgen.cli import main
from ncclgen.load import descriptor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "clusters", "h100-ib.yaml"), encoding="utf-8") as _fh:
    H100 = _fh.read()
HOSTNET = "  host_network: true\n"
RESOURCES = "  resources:\n    rdma/rdma_shared_device_a: 1\n"


def run(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv)) or 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def variant(tmp_path, *, drop=(), add="") -> str:
    """h100-ib as the `init` scaffold leaves it when host_network/resources stay commented."""
    assert HOSTNET in H100 and RESOURCES in H100
    text = H100
    for part in drop:
        text = text.replace(part, "")
    text = text.replace("  shm_size: 256Gi\n", "  shm_size: 256Gi\n" + add)
    path = tmp_path / "scaffold.yaml"
    path.write_text(text)
    return str(path)


def test_scaffold_like_pod_is_refused_with_both_keys(tmp_path):
    path = variant(tmp_path, drop=(HOSTNET, RESOURCES))
    code, out, err = run(["k8s", "--cluster", path, "--tier", "3"])
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0].startswith(f"ncclgen: error: {path}:")
    assert "kubernetes.host_network: " in lines[0] and "bond0" in lines[0]
    assert "kubernetes.resources: " in lines[1] and "mlx5_0" in lines[1]
    assert all(line.split(":")[3].isdigit() and line.split(":")[4].isdigit() for line in lines)  # file:line:col
    # the host view is unaffected: the same descriptor still renders for Slurm
    assert run(["slurm", "--cluster", path, "--tier", "3"])[0] == 0


@pytest.mark.parametrize(
    ("drop", "add", "keys"),
    [
        ((HOSTNET,), "", ["kubernetes.host_network"]),
        ((RESOURCES,), "", ["kubernetes.resources"]),
        ((RESOURCES,), "  privileged: true\n", []),
        (
            (RESOURCES,),
            "  volumes:\n    - {name: ib, host_path: /dev/infiniband, mount_path: /dev/infiniband}\n",
            [],
        ),
        ((HOSTNET,), "  bootstrap_interfaces: [eth0]\n", []),
        ((), "", []),
    ],
)
def test_each_pod_requirement(tmp_path, drop, add, keys):
    code, _, err = run(["k8s", "--cluster", variant(tmp_path, drop=drop, add=add), "--tier", "3"])
    assert [k for k in ("kubernetes.host_network", "kubernetes.resources") if f"{k}: " in err] == keys
    assert code == (2 if keys else 0), err


@pytest.mark.parametrize("name", sorted(descriptor.available()))
def test_every_preset_still_renders_its_pods(name):
    image = ["--image", "example.com/verl-efa:1"] if name == "aws-p5" else []  # its plugin is in the image
    code, _, err = run(["k8s", "--cluster", name, "--tier", "3", *image])
    assert code == 0, err


def test_lint_of_such_a_manifest_fails(tmp_path):
    manifest = tmp_path / "job.yaml"
    code, out, _ = run(["k8s", "--cluster", "h100-ib", "--tier", "3"])
    manifest.write_text(out)
    path = variant(tmp_path, drop=(HOSTNET, RESOURCES))
    code, out, _ = run(["lint", "--cluster", path, str(manifest)])
    assert code == 1
    assert f"{manifest}: error NG017 NCCL_SOCKET_IFNAME: cluster h100-ib: a pod without hostNetwork" in out
    assert f"{manifest}: error NG017 NCCL_IB_HCA: cluster h100-ib: the infiniband HCAs" in out
    assert "2 error(s)" in out
