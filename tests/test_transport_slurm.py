"""The transport check in the rendered sbatch script: each node's launch step (torchrun agent, or `ray start
--block` on the head and the workers) runs under the check; the Ray readiness, watchdog and driver steps do
not; --transport-check off leaves it out; the embedded program runs as `python3 -c` with nothing from
ncclgen importable (the job runs it so)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ncclgen import pipeline
from ncclgen.plan import transport as transportmod
from ncclgen.render import slurm

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "-- ncclgen_transport"


def script(workload, check="on", cluster="h100-ib"):
    plan = pipeline.make_plan(pipeline.request(cluster, 1, workload, transport_check=check))
    return slurm.render_plan(plan, slurm.Options())


def test_torchrun_step_runs_under_the_check():
    text = script("bench")
    lines = text.splitlines()
    ((i, line),) = [(i, ln) for i, ln in enumerate(lines) if PREFIX in ln]
    # the step's srun options end the line before: its node programs (preflight, then the check) follow `--`
    assert "--kill-on-bad-exit=1" in lines[i - 1] and "ncclgen_step" in lines[i - 1], lines[i - 1]
    assert line.strip().startswith("-- preflight.py @preflight.json --"), line
    plan = pipeline.make_plan(pipeline.request("h100-ib", 1, "bench"))
    spec = transportmod.spec(plan)
    assert spec["hcas"][0] == "mlx5_0:1" and spec["gdr"] is True and spec["net"] == "IB"
    assert transportmod.encode(spec) in text  # the node file transport.json
    for name in ("nccllines.py", "transport.py", "transport.json"):
        assert f"{name}=NCCLGEN_" in text, name
    assert 'python3 -S "$ncclgen_dir/transport.py" "@$ncclgen_dir/transport.json"' in text
    assert "export NCCL_DEBUG='INFO'" in text


def test_ray_start_steps_run_under_the_check_and_nothing_else():
    lines = [ln for ln in script("verl-grpo-qwen2-7b").splitlines() if PREFIX in ln]
    assert len(lines) == 2  # the head's `ray start --block` step and the workers' step
    assert all("ray-driver.sh" not in ln for ln in lines)


@pytest.mark.parametrize("workload", ["bench", "verl-grpo-qwen2-7b"])
def test_off_leaves_it_out(workload):
    text = script(workload, check="off")
    # (node.sh, the same in every script, names the entry it would source)
    assert "-- ncclgen_transport" not in text and "bin/ncclgen_transport=" not in text
    assert "NCCLGEN_TRANSPORT" not in text and "NCCL_DEBUG_FILE" not in text
    assert "export NCCL_DEBUG='WARN'" in text
    assert "--transport-check off" in text  # the Regenerate: line repeats it


def test_shellcheck_clean(tmp_path):
    out = tmp_path / "job.sh"
    out.write_text(script("bench"))
    r = subprocess.run(["shellcheck", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
