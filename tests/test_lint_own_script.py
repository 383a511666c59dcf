"""`ncclgen slurm ... | ncclgen lint -` says what it checked: the step wrapper's `eval "$NCCLGEN_NODE_SH"`
is read as checked only when the script's heredoc holds this ncclgen's ncclgen/jobside/node.sh byte for
byte and nothing else assigns the variable (node.sh stops the job where the setup changes a plan-owned
name). On 53b6203 every rendered script linted as exit 3, "not checked: eval"."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _ncclgen(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ncclgen", *args], input=stdin, capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def script() -> str:
    r = _ncclgen("slurm", "--cluster", "h100-ib", "--tier", "3")
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("cluster", [(), ("--cluster", "h100-ib")])
def test_ncclgens_own_script_lints_clean(script, cluster):
    r = _ncclgen("lint", *cluster, "-", stdin=script)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not checked" not in r.stdout + r.stderr


@pytest.mark.parametrize(
    "edit",
    [
        ("ncclgen_node=${SLURMD_NODENAME", "export NCCL_ALGO=Tree; ncclgen_node=${SLURMD_NODENAME"),
        ("\nncclgen_step() {", '\nNCCLGEN_NODE_SH="export NCCL_ALGO=Tree"\nncclgen_step() {'),
    ],
    ids=["node-program-changed", "variable-reassigned"],
)
def test_a_changed_node_program_is_not_checked(script, edit):
    old, new = edit
    assert script.count(old) == 1
    r = _ncclgen("lint", "-", stdin=script.replace(old, new))
    assert r.returncode == 3, r.stdout + r.stderr
    assert "not checked: eval: the text it runs is built at run time" in r.stdout + r.stderr


def test_an_eval_of_anything_else_stays_not_checked():
    r = _ncclgen("lint", "-", stdin='#!/bin/bash\neval "$NCCLGEN_NODE_SH"\nexport NCCL_DEBUG=INFO\n')
    assert r.returncode == 3


@pytest.mark.parametrize(
    ("line", "checked"),
    [
        ('export TORCH_FR_DUMP_TEMP_FILE="/lustre/fr/${SLURM_JOB_ID:-local}/nccl_trace_rank_"', True),
        ('export TORCH_FR_DUMP_TEMP_FILE="/lustre/fr/${SLURM_JOB_ID:-local}/$(id -u)/p"', False),
        ('export TORCH_FR_DUMP_TEMP_FILE="/lustre/fr/${SLURM_JOB_ID}/p"', False),
        ('export NCCL_DEBUG_FILE="/lustre/${SLURM_JOB_ID:-local}/%h.%p"', False),
    ],
    ids=["job-folder", "other-expansion", "other-job-form", "not-a-job-path"],
)
def test_only_the_flight_recorders_job_folder_is_read_through_its_expansion(line, checked):
    """The plan's TORCH_FR_DUMP_TEMP_FILE holds ${SLURM_JOB_ID:-local} (one folder per job, plan/flightrec.py):
    lint reads that one form of that path as written; any other expansion stays 'not checked' (exit 3)."""
    r = _ncclgen("lint", "-", stdin=line + "\n")
    assert (r.returncode == 0) is checked, r.stdout + r.stderr
    assert ("not checked" in r.stdout) is not checked
