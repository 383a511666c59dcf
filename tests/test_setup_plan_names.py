"""A workload's setup may not set, change or unset a name the plan owns (NCCL_*, TORCH_NCCL_*, TORCH_DIST*,
TORCH_FR_*, GLOO_*, UCX_*, FI_*): such a value would override the plan with nothing checking or explaining
it. A setup line that does so is refused when the workload is loaded (exit 2, at its file:line:col); one
that sources a file doing so stops the job on the node, one line per name (Slurm: ncclgen/jobside/node.sh
under tests/slurm_shims.py; pods: the setup program of plan/launch.py run by bash)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from slurm_shims import Run, render

from ncclgen.load import patterns
from ncclgen.load.workload import plan_name_set
from ncclgen.plan import launch

NODE_SH = Path(__file__).resolve().parent.parent / "ncclgen" / "jobside" / "node.sh"


def _workload(tmp_path, setup, launcher="torchrun"):
    wl = tmp_path / "w.yaml"
    doc = {"name": "w", "description": "d", "launcher": launcher, "nodes": 2, "command": ["python3", "work.py"]}
    doc["setup"] = list(setup)
    wl.write_text(yaml.safe_dump(doc))
    return wl


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("export NCCL_ALGO=Tree", "NCCL_ALGO"),
        ("declare -x TORCH_NCCL_BLOCKING_WAIT=1", "TORCH_NCCL_BLOCKING_WAIT"),
        ("true; GLOO_SOCKET_IFNAME=eth0", "GLOO_SOCKET_IFNAME"),
        ("unset NCCL_DEBUG", "NCCL_DEBUG"),
        ("export -n FI_PROVIDER", "FI_PROVIDER"),
        ("export TORCH_FR_BUFFER_SIZE+=0", "TORCH_FR_BUFFER_SIZE"),
    ],
)
def test_a_setup_line_setting_a_plan_name_is_refused_at_its_line(tmp_path, line, name):
    wl = _workload(tmp_path, ["python3 -m pip install --no-deps verl==0.9.1", line])
    r = subprocess.run(
        [sys.executable, "-m", "ncclgen", "slurm", "--cluster", "local-ci", "--workload", str(wl)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 2 and r.stdout == ""
    assert re.fullmatch(rf"ncclgen: error: {re.escape(str(wl))}:\d+:\d+: setup\[1\]: sets {name}, .*\n", r.stderr)


@pytest.mark.parametrize(
    "line",
    ["python3 -m pip install --no-deps verl==0.9.1", "echo $NCCL_DEBUG", "export PATH=$PATH:/opt/x", "MYNCCL_X=1"],
)
def test_setup_lines_that_only_read_plan_names_are_kept(line):
    assert plan_name_set(line) is None


def test_the_node_program_and_the_loader_know_the_same_prefixes():
    text = NODE_SH.read_text(encoding="utf-8")
    owned = re.search(r"ncclgen_owned='\^\(([^)]*)\)'", text)
    assert owned and tuple(owned.group(1).split("|")) == patterns.PLAN_PREFIXES == launch.SCRUBBED_PREFIXES


def test_a_sourced_file_that_sets_a_plan_name_stops_the_slurm_job_naming_node_and_name(capsys, tmp_path):
    conf = tmp_path / "site.env"
    conf.write_text("export NCCL_ALGO=Tree\nunset NCCL_DEBUG\nexport OTHER=fine\n")
    wl = _workload(tmp_path, [f"source {conf}"])
    script = render(capsys, "--cluster", "local-ci", "--tier", "3", "--workload", str(wl))
    run = Run(tmp_path, script).finish()
    assert run.rc != 0
    lines = sorted(ln for ln in run.stderr.splitlines() if "a name the plan owns" in ln)
    # the setup runs in the launch step, so the first node to fail ends it (--kill-on-bad-exit=1): the other
    # node may not get to say it; each node that does names both
    said = {
        (node, name): f"ncclgen: ERROR: node {node}: the workload's setup changed {name}, a name the plan owns "
        f"(set it with --set {name}=VALUE or in the descriptor's env:)"
        for node in ("node1", "node2")
        for name in ("NCCL_ALGO", "NCCL_DEBUG")
    }
    assert set(lines) <= set(said.values()), run.stderr
    assert any({said[node, "NCCL_ALGO"], said[node, "NCCL_DEBUG"]} <= set(lines) for node in ("node1", "node2"))
    assert run.calls("torchrun") == []


def test_a_sourced_file_that_sets_a_plan_name_stops_the_pod_before_its_launch(tmp_path):
    conf = tmp_path / "site.env"
    conf.write_text("export NCCL_ALGO=Tree\nexport OTHER=fine\n")
    program = launch.setup_program((f"source {conf}",))
    env = {"PATH": os.environ["PATH"], "NCCL_DEBUG": "INFO"}
    r = subprocess.run(
        ["bash", "-c", program, "ncclgen-setup", "touch", str(tmp_path / "launched")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert r.returncode != 0 and not (tmp_path / "launched").exists()
    assert r.stderr.splitlines() == [
        "ncclgen: ERROR: the workload's setup changed NCCL_ALGO, a name the plan owns "
        "(set it with --set NCCL_ALGO=VALUE or in the descriptor's env:)"
    ]
    ok = subprocess.run(
        ["bash", "-c", launch.setup_program(("export OTHER=fine",)), "ncclgen-setup", "touch", str(tmp_path / "ok")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert ok.returncode == 0 and (tmp_path / "ok").exists(), ok.stderr
