"""NCCL's version banner without its host prefix (printf on stdout: NVIDIA/nccl v2.19.3-1 src/init.cc:478-487)
belongs to the process whose NCCL line came just before it. Read that way, two nodes on different releases are
the cause of a bootstrap failure whose WARN names only a socket (the shape of NVIDIA/nccl #1267, where one host
ran 2.19.3 and the other an older NCCL; lines written here in NCCL's formats)."""

from __future__ import annotations

import subprocess
import sys

import pytest

NODE_A = """\
{p}instance-4:101707:101707 [0] NCCL INFO Bootstrap : Using ens7:10.128.0.33<0>
{p}instance-4:101707:101707 [0] NCCL INFO cudaDriverVersion 12000
{p}NCCL version 2.19.3+cuda12.3
{p}instance-4:101707:101889 [0] NCCL INFO Using network Socket
"""
NODE_B = """\
{p}instance-5:55101:55101 [0] NCCL INFO Bootstrap : Using ens7:10.128.0.34<0>
{p}instance-5:55101:55101 [0] NCCL INFO cudaDriverVersion 12000
{p}NCCL version 2.18.1+cuda12.1
{p}instance-5:55101:55230 [0] NCCL INFO Using network Socket
{p}instance-5:55101:55230 [0] misc/socket.cc:484 NCCL WARN ncclSocketInit: connecting to address  with family 0 \
is neither AF_INET(2) nor AF_INET6(10)
{p}instance-5:55101:55230 [0] NCCL INFO bootstrap.cc:274 -> 3
"""
TORCH = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
    "internal error - please report this issue to the NCCL developers, NCCL version 2.18.1\n"
)


def _triage(tmp_path, text: str) -> str:
    log = tmp_path / "job.log"
    log.write_text(text, encoding="utf-8")
    r = subprocess.run(
        [sys.executable, "-m", "ncclgen", "triage", str(log)], capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("label", ["", "0: ", "[1,0]<stdout>:"], ids=["plain", "srun-l", "mpirun"])
def test_two_releases_are_the_cause_not_the_socket(tmp_path, label):
    out = _triage(tmp_path, NODE_A.format(p=label) + NODE_B.format(p=label) + TORCH)
    assert "cause: the nodes run different NCCL releases (2.18.1 on instance-5; 2.19.3 on instance-4)" in out, out
    assert "node instance-4: NCCL 2.19.3" in out and "node instance-5: NCCL 2.18.1" in out


def test_one_release_keeps_the_socket_cause_and_the_torch_sentence_is_no_banner(tmp_path):
    out = _triage(
        tmp_path, NODE_A.format(p="") + NODE_B.format(p="").replace("2.18.1+cuda12.1", "2.19.3+cuda12.3") + TORCH
    )
    assert "cause: the nodes run different NCCL releases" not in out, out
    assert "cause: NCCL was handed an address that is neither IPv4 nor IPv6" in out, out
    assert "node instance-5: NCCL 2.19.3" in out


def test_a_banner_is_given_only_to_the_host_just_before_it_in_that_file():
    from ncclgen.triage.nodes import Facts
    from ncclgen.triage.reader import Line

    facts = Facts()
    lines = [
        Line("a.log", 1, "NCCL version 2.18.1+cuda12.1"),  # nothing before it: no host to give it to
        Line("a.log", 2, "instance-4:1:1 [0] NCCL INFO Bootstrap : Using ens7:10.0.0.1<0>"),
        Line("b.log", 1, "NCCL version 2.17.1+cuda12.0"),  # another file's stream
        Line("a.log", 3, "NCCL version 2.19.3+cuda12.3"),
    ]
    for seq, line in enumerate(lines):
        facts.add(line, seq)
    assert facts.hosts["instance-4"].version == "2.19.3"
    assert facts.hosts["instance-4"].lines["version"] is lines[3]
