"""explain's LAUNCH section shows what the rendered script runs: the torchrun step names the binding
wrapper as the script calls it (ncclgen-bind, on PATH from the node's private folder; bash
/etc/ncclgen/bind.sh in pods), not the `bash -c '<binding wrapper>'` argv of the old per-node launch."""

from __future__ import annotations

import subprocess
import sys


def _ncclgen(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "ncclgen", *args], capture_output=True, text=True, check=True)
    return r.stdout


def _explain(*args: str) -> str:
    return _ncclgen("explain", *args)


def test_the_torchrun_line_names_the_wrapper_the_script_runs():
    text = _explain("--cluster", "local-ci", "--tier", "3", "--workload", "verl-sft")
    per_node = [ln for ln in text.splitlines() if ln.startswith("  per node: torchrun ")]
    assert len(per_node) == 1 and "bash -c" not in per_node[0]
    assert " ncclgen-bind python3 -m verl.trainer.sft_trainer " in per_node[0]
    assert any(ln.startswith("  ncclgen-bind: runs each rank under numactl") for ln in text.splitlines())
    script = _ncclgen("slurm", "--cluster", "local-ci", "--tier", "3", "--workload", "verl-sft")
    assert ' --rdzv-id="$SLURM_JOB_ID" ncclgen-bind \\\n' in script
    pod = _ncclgen("k8s", "--cluster", "h100-ib", "--tier", "3", "--workload", "verl-sft")
    assert "- /etc/ncclgen/bind.sh" in pod
    assert "  setup (once per node, before the launch; it may not change a name the plan owns): " in text


def test_below_tier_3_there_is_no_wrapper():
    text = _explain("--cluster", "local-ci", "--tier", "2", "--workload", "verl-sft")
    assert "ncclgen-bind" not in text
