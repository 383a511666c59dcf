"""A Slurm render says on stderr, in one line, where NCCL will load the net plugin from and that the
preflight checks it there (a Kubernetes manifest says it in its header). With a container image and no
mount of the node's folder, the plugin's path is inside the container: the line says the image must have
it there (AWS's own container recipes use an image that carries aws-ofi-nccl:
aws-samples/awsome-distributed-training@0a8aacd7 micro-benchmarks/nccl-tests/slurm/nccl-tests-container.sbatch,
whose NCCL_TUNER_PLUGIN is a path inside the image), and the preflight checks that same path in the
container, where NCCL looks."""

from __future__ import annotations

import json
import re

import pytest

from ncclgen.cli import main


def render(capsys, *args: str):
    assert main(["slurm", *args]) == 0
    out = capsys.readouterr()
    lines = [ln for ln in out.err.splitlines() if ln.startswith("ncclgen: note: net plugin")]
    return out.out, lines


def preflight_files(script: str) -> list[list[str]]:
    # the spec is the file preflight.json the node programs get (ncclgen/jobside/node.sh writes it)
    spec = re.search(r"<<'NCCLGEN_PREFLIGHT_SPEC_EOF' \|\| true\n(\{.*?\})\n", script)
    assert spec and "-- preflight.py @preflight.json" in script, "no preflight step"
    return json.loads(spec.group(1)).get("files", [])


def test_host_plugin_is_stated_and_checked_on_the_node(capsys):
    script, (line,) = render(capsys, "--cluster", "aws-p5")
    assert line == (
        "ncclgen: note: net plugin aws-ofi-nccl: NCCL loads it from /opt/amazon/ofi-nccl/lib on each node; the "
        "preflight checks libnccl-net-ofi.so there on every node and stops the job (exit 6) before NCCL starts "
        "if one is missing"
    )
    assert ["net plugin", "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so"] in preflight_files(script)
    assert "export NCCL_NET_PLUGIN='/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so'" in script


def test_container_without_the_nodes_folder_needs_an_image_that_has_it(capsys):
    script, (line,) = render(capsys, "--cluster", "aws-p5", "--container-image", "nvcr.io#nvidia/pytorch:25.01-py3")
    assert "inside the container, so the image nvcr.io#nvidia/pytorch:25.01-py3 must have it there" in line
    assert "(the node's folder is not mounted)" in line
    assert "--container-mounts /opt/amazon/ofi-nccl/lib:/opt/amazon/ofi-nccl/lib" in line
    assert "network.plugin_dir" in line
    # The preflight runs in the same container as NCCL and checks the path NCCL_NET_PLUGIN names.
    pre = next(ln for ln in script.splitlines() if "preflight.py" in ln and "ncclgen_step" in ln)
    assert "--host" not in pre and "    '--container-image=nvcr.io#nvidia/pytorch:25.01-py3'\n" in script
    assert ["net plugin", "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so"] in preflight_files(script)


@pytest.mark.parametrize(
    "mount", ["/opt/amazon/ofi-nccl/lib:/opt/amazon/ofi-nccl/lib", "/opt/amazon:/opt/amazon:ro", "/opt/amazon"]
)
@pytest.mark.parametrize("runtime", ["pyxis", "apptainer"])
def test_a_mount_of_the_nodes_folder_is_said(capsys, mount, runtime):
    image = "nvcr.io#nvidia/pytorch:25.01-py3" if runtime == "pyxis" else "/images/verl.sif"
    args = ["--container-image", image, "--container-runtime", runtime, "--container-mounts", mount]
    _, (line,) = render(capsys, "--cluster", "aws-p5", *args)
    assert "inside the container, mounted from the node's /opt/amazon/ofi-nccl/lib;" in line
    assert "must have it" not in line


def test_plugin_mounted_by_the_plugin_data_tcpxo(capsys):
    _, (line,) = render(capsys, "--cluster", "gcp-a3-mega", "--container-image", "x/y:1")
    assert "tcpxo: NCCL loads it from /var/lib/tcpxo/lib64 inside the container, mounted from the node's" in line


def test_no_preflight_says_nothing_checks_it(capsys):
    _, (line,) = render(capsys, "--cluster", "azure-nd-h100-v5", "--no-preflight")
    assert line.endswith(
        "rdma-sharp: NCCL loads it from /usr/local/nccl-rdma-sharp-plugins/lib on each node; "
        "--no-preflight: nothing checks it before NCCL starts"
    )


def test_no_plugin_no_line(capsys):
    _, lines = render(capsys, "--cluster", "h100-ib")
    assert lines == []
