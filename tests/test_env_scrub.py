"""The job environment is the plan (issue 28 item 4): the batch script removes every NCCL_*, TORCH_NCCL_*,
TORCH_DIST*, TORCH_FR_*, GLOO_*, UCX_* and FI_* variable of the submitting shell that the plan does not
set and --pass-env does not name, one line each, before the first step.

Run with the stand-ins of tests/test_render_slurm.py (srun, torchrun ... record what they receive); the
real-Slurm version is in tests/test_launch_e2e.py.
"""

from __future__ import annotations

import pytest
from slurm_shims import Run, local_ci, render

from ncclgen.plan import launch

LINE = "ncclgen: removed {} from the submitting environment (not in the plan; --pass-env NAME keeps it)"
SUBMITTED = {
    "NCCL_ALGO": "Tree",  # ~/.bashrc habits the plan does not set
    "NCCL_BUFFSIZE": "8388608",
    "TORCH_NCCL_BLOCKING_WAIT": "1",
    "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
    "TORCH_FR_BUFFER_SIZE": "100",
    "GLOO_DEVICE_TRANSPORT": "TCP",
    "UCX_TLS": "rc",
    "FI_PROVIDER": "efa",
    "NCCL_DEBUG": "TRACE",  # planned (WARN): replaced by the plan's export, not reported
    "NCCLGEN_OTHER": "kept",  # not an NCCL name (no '_' after NCCL)
    "MY_NCCL_ALGO": "kept",  # the prefix is at the start only
}
REMOVED = sorted(set(SUBMITTED) - {"NCCL_DEBUG", "NCCLGEN_OTHER", "MY_NCCL_ALGO"})


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
def test_unplanned_names_are_removed_with_one_line_each(capsys, tmp_path, launcher):
    script, plan = local_ci(capsys, tmp_path, launcher, ["python3", "work.py"])
    run = Run(tmp_path, script, **SUBMITTED).finish()
    assert run.rc == 0, run.stderr
    removed = sorted(line for line in run.stderr.splitlines() if line.startswith("ncclgen: removed "))
    assert removed == sorted(LINE.format(n) for n in REMOVED)
    calls = run.calls("torchrun" if launcher == "torchrun" else "ray")
    assert calls
    for _args, env in calls:
        assert not set(REMOVED) & set(env), sorted(set(REMOVED) & set(env))
        assert env["NCCL_DEBUG"] == plan.env_dict()["NCCL_DEBUG"] != "TRACE"
        assert env["NCCLGEN_OTHER"] == env["MY_NCCL_ALGO"] == "kept"


def test_pass_env_keeps_a_name_and_the_plan_keeps_its_own(capsys, tmp_path):
    wl = tmp_path / "w.yaml"
    wl.write_text("name: w\ndescription: d\nlauncher: torchrun\nnodes: 2\ncommand: [python3, work.py]\n")
    script = render(capsys, "--cluster", "local-ci", "--tier", "3", "--workload", str(wl), "--pass-env", "NCCL_ALGO")
    run = Run(tmp_path, script, NCCL_ALGO="Tree", UCX_TLS="rc").finish()
    assert run.rc == 0, run.stderr
    assert [ln for ln in run.stderr.splitlines() if "removed" in ln] == [LINE.format("UCX_TLS")]
    for _args, env in run.calls("torchrun"):
        assert env["NCCL_ALGO"] == "Tree" and "UCX_TLS" not in env


def test_nothing_to_remove_prints_nothing(capsys, tmp_path):
    script, _ = local_ci(capsys, tmp_path, "torchrun", ["python3", "work.py"])
    run = Run(tmp_path, script).finish()
    assert run.rc == 0 and "removed" not in run.stderr, run.stderr


def test_the_scrub_runs_before_the_plan_and_the_first_step(capsys, tmp_path):
    script, _ = local_ci(capsys, tmp_path, "torchrun", ["python3", "work.py"])
    for prefix in launch.SCRUBBED_PREFIXES:
        assert f"{prefix}*" in script
    main = script.index("ncclgen_main() {\n")
    assert script.index("ncclgen_scrub  #", main) < script.index("\n  ncclgen_step ", main)
