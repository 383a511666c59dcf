"""The manifests carry the plan's env exactly: the same values as the plan and as the sbatch script's
exports (split from tests/test_render_k8s.py)."""

from __future__ import annotations

import importlib.util
import re
import subprocess

import pytest
from test_render_k8s import (
    containers,
    env_of,
    job_of,
    plan_for,
)

from ncclgen.cli import main
from ncclgen.plan import flightrec
from ncclgen.render import k8s as render_k8s

# -- env parity with the plan and the sbatch script ---------------------------------------------------------


@pytest.mark.parametrize(
    "cluster,tier,workload,sets",
    [
        ("h100-ib", 3, "verl-sft", ()),
        ("local-ci", 3, "verl-grpo-qwen2-7b", ()),
        ("oci-bm-gpu-h100-8", 2, "verl-grpo-qwen2-7b", ()),
        ("local-ci", 1, "bench", ("NCCLGEN_PARITY=a\nb 'c' \"d\" $(x) `y` $$ ${z}",)),
    ],
)
def test_env_equals_plan_and_sbatch(cluster, tier, workload, sets, capsys):
    """k8s env == plan.env_dict() == what the sbatch script exports, for every plan variable."""
    p = plan_for(cluster, tier, workload, None, unchecked_sets=sets)  # NCCLGEN_PARITY: not a known name
    job = job_of(render_k8s.documents(p, kind="pytorchjob"))
    for c in containers(job):
        k8s_env = dict(env_of(c))
        assert {n: k8s_env[n] for n in p.env_dict()} == p.env_dict()
    if importlib.util.find_spec("ncclgen.cli.slurm") is None:
        pytest.skip("ncclgen.cli.slurm (the Slurm renderer) has not landed yet; this part runs once it has")
    assert (
        main(
            [
                "slurm",
                "--cluster",
                cluster,
                "--tier",
                str(tier),
                "--workload",
                workload,
                *[a for kv_ in sets for a in ("--set-unchecked", kv_)],
            ]
        )
        == 0
    )
    script = capsys.readouterr().out
    exported = sbatch_exports(script, list(p.env_dict()))
    # the flight recorder's folder is the job's: bash expands ${SLURM_JOB_ID:-local} (unset here)
    assert exported == {k: v.replace(flightrec.JOB, "local") for k, v in p.env_dict().items()}
    if p.launch.launcher == "ray" and p.launch.bind:
        ray = dict(env_of(containers(job)[0]))
        both = sbatch_exports(script, ["NCCLGEN_GPU_CPUS", "__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR"])
        assert both == {k: ray[k] for k in both}


def sbatch_exports(script: str, names: list[str]) -> dict[str, str]:
    """Run the script's `export NAME=...` statements in bash (never the rest) and read the values back."""
    stmts = []
    lines = script.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        # ncclgen's own command substitutions (export X="$(...)") would run; a value quoted as data may hold "$(".
        if re.match(r"\s*export [A-Za-z_][A-Za-z0-9_]*=", lines[i]) and not re.search(
            r"=\"?\$\(|\$\(\w", lines[i].split("'")[0]
        ):
            stmt = lines[i]
            # A quoted value may span lines (shlex.quote keeps newlines): extend until bash accepts it.
            while subprocess.run(["bash", "-n"], input=stmt, text=True, capture_output=True).returncode:
                i += 1
                stmt += lines[i]
            stmts.append(stmt)
        i += 1
    probe = "".join(stmts) + "".join(f'printf "%s\\0%s\\0" {n} "${{{n}-__unset__}}"\n' for n in names)
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True, env={}).stdout
    parts = out.split("\0")[:-1]
    return {k: v for k, v in zip(parts[::2], parts[1::2]) if v != "__unset__"}
