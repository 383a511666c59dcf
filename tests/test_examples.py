"""Every golden example in examples/<workload>/ equals a fresh render (h100-ib, tier 3).

After an intended change to a renderer, a rule, h100-ib or a bundled workload, regenerate with
    bash examples/regen.sh
(or NCCLGEN_REGEN_GOLDEN=1 python -m pytest -q tests/test_examples.py, which runs it), then read the
diff of examples/ before committing it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ncclgen.cli import main
from ncclgen.load import workload

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
REGEN = "bash examples/regen.sh"
WORKLOADS = sorted(workload.bundled())
FLAGS = ["--cluster", "h100-ib", "--tier", "3"]


def _subprocess_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NCCLGEN_")}
    env["PYTHON"] = sys.executable
    return env


@pytest.fixture(scope="module", autouse=True)
def regenerate():
    """NCCLGEN_REGEN_GOLDEN=1: rewrite every example with the documented command first."""
    if os.environ.get("NCCLGEN_REGEN_GOLDEN") == "1":
        subprocess.run(["bash", str(EXAMPLES / "regen.sh")], check=True, env=_subprocess_env(), timeout=600)


def render(tmp_path: Path, monkeypatch, capsys, w: str) -> dict[str, str]:
    """What regen.sh writes for ``w``, rendered in-process from a clean folder with the same relative
    paths (job.sh names its own -o path in its header)."""
    for key in ("NCCLGEN_CLUSTER", "NCCLGEN_TIER", "NCCLGEN_WORKLOAD", "NCCLGEN_CLUSTERS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    out = Path("examples") / w
    out.mkdir(parents=True)
    assert main(["slurm", *FLAGS, "--workload", w, "-o", str(out / "job.sh")]) == 0
    assert main(["k8s", *FLAGS, "--workload", w, "-o", str(out / "job.yaml")]) == 0
    capsys.readouterr()
    assert main(["explain", *FLAGS, "--workload", w]) == 0
    return {
        "workload.yaml": Path(workload.bundled()[w]).read_text(),
        "job.sh": (out / "job.sh").read_text(),
        "job.yaml": (out / "job.yaml").read_text(),
        "explain.txt": capsys.readouterr().out,
    }


def test_every_bundled_workload_has_an_example_and_nothing_else_does():
    # kustomize/: the overlay example (tests/test_kustomize_example.py), not a workload.
    dirs = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and p.name != "kustomize")
    assert dirs == WORKLOADS, f"examples/ out of date; regenerate: {REGEN} (and remove stale folders)"


@pytest.mark.parametrize("w", WORKLOADS)
def test_example_equals_a_fresh_render(tmp_path, monkeypatch, capsys, w):
    fresh = render(tmp_path, monkeypatch, capsys, w)
    for name, text in fresh.items():
        committed = EXAMPLES / w / name
        assert committed.is_file(), f"examples/{w}/{name} is missing; regenerate: {REGEN}"
        assert committed.read_text() == text, f"examples/{w}/{name} is stale; regenerate: {REGEN}"


@pytest.mark.parametrize("w", WORKLOADS)
def test_example_parses(w):
    """The goldens are what users copy: the script is valid bash, the manifests valid YAML objects."""
    proc = subprocess.run(["bash", "-n", str(EXAMPLES / w / "job.sh")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    docs = list(yaml.safe_load_all((EXAMPLES / w / "job.yaml").read_text()))
    assert docs and all(d["apiVersion"] and d["kind"] and d["metadata"]["name"] for d in docs)
    assert f"workload {w}" in (EXAMPLES / w / "explain.txt").read_text().splitlines()[0]


def test_regen_script_writes_the_committed_bytes(tmp_path):
    """The documented command itself (one torchrun workload keeps it quick)."""
    proc = subprocess.run(
        ["bash", str(EXAMPLES / "regen.sh"), "--into", str(tmp_path), "bench"],
        capture_output=True,
        text=True,
        env=_subprocess_env(),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "examples/bench: workload.yaml job.sh job.yaml explain.txt\n"
    written = sorted(p.name for p in (tmp_path / "examples/bench").iterdir())
    assert written == ["explain.txt", "job.sh", "job.yaml", "workload.yaml"]
    for name in written:
        assert (tmp_path / "examples/bench" / name).read_bytes() == (EXAMPLES / "bench" / name).read_bytes(), name
    assert os.access(tmp_path / "examples/bench/job.sh", os.X_OK)


def test_readme_names_only_variables_the_examples_emit_or_ncclgen_refuses():
    """examples/README.md is prose: each variable it names must still be in an example's plan, or be one
    rules.yaml lists as never emitted (NCCL_TIMEOUT), so a rule change cannot leave it describing
    settings that are gone."""
    import re

    from ncclgen.plan import rules

    readme = (EXAMPLES / "README.md").read_text()
    section = readme.split("## What was generated, and why", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`((?:NCCL|CUDA|TORCH|GLOO)_[A-Z0-9_]+)(?:=[^`]*)?`", section))
    emitted = {
        line.split()[0]
        for w in WORKLOADS
        for line in (EXAMPLES / w / "explain.txt").read_text().split("\nBINDING", 1)[0].splitlines()[3:]
        if line.startswith("  ") and not line.startswith("    ")
    }
    assert named and named - emitted <= {n.var for n in rules.not_emitted()}, named - emitted


# The readability targets of the job script (issue 10): the launch starts early, the part a person reads
# (above the programs the nodes run, an appendix) stays short, no line in it is over 160 characters and
# none passes program text in argv (issue 28). verl-sft: issue 10's 100 lines, + its setup and the
# preflight step (issues 11, 12), NCCL_NET (issue 21), then issue 28: the environment scrub (21 lines),
# ncclgen_step and ncclgen_programs (the node programs' plumbing, 32), the ports (2), PYTHONUNBUFFERED (2).
# 170 until the flight recorder added two planned variables and its three lines at exit (session 21)
LINE_TARGETS = {"verl-sft": (175, 80)}
FIRST_STEP_BEFORE = {"verl-grpo-qwen2-7b": 120, "verl-ppo-critic": 120, "bench": 80}
MAX_WIDTH = 160


def _readable(lines: list[str]) -> list[str]:
    return lines[: lines.index(next(ln for ln in lines if ln.startswith("# ==== Programs")))]


@pytest.mark.parametrize("w", sorted(set(LINE_TARGETS) | set(FIRST_STEP_BEFORE)))
def test_job_script_is_short_and_launches_early(w):
    lines = _readable((EXAMPLES / w / "job.sh").read_text().splitlines())
    first_step = next(i for i, line in enumerate(lines, 1) if line.lstrip().startswith("ncclgen_step "))
    max_lines, before = LINE_TARGETS.get(w, (None, FIRST_STEP_BEFORE.get(w)))
    if max_lines is not None:
        assert len(lines) <= max_lines, f"{w}/job.sh has {len(lines)} lines above its programs (target {max_lines})"
    assert first_step < before, f"{w}/job.sh: first step at line {first_step} (target < {before})"
    assert max(len(line) for line in lines) <= MAX_WIDTH, w
    # No program text in argv: the node programs are files (ncclgen/jobside/node.sh writes them).
    assert not [ln for ln in lines if re.search(r"(python3|bash) -c \"\$", ln)], w
    assert not [ln for ln in lines if "=$(cat <<'" in ln or "<<'" in ln], w


@pytest.mark.parametrize("w", WORKLOADS)
def test_every_embedded_program_sits_under_a_line_naming_its_source(w):
    lines = (EXAMPLES / w / "job.sh").read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("IFS= read -r -d '' NCCLGEN_")]
    assert starts
    for i in starts:
        assert lines[i - 1].startswith("# ncclgen/") or lines[i - 1].startswith("# the workload's setup"), lines[i - 1]


def test_annotation_and_regenerate_commands_work_for_files(tmp_path, monkeypatch, capsys):
    """A descriptor ./my.yaml and a workload file: the k8s ncclgen.io/explain annotation's command runs
    and prints the render's environment; the sbatch `Regenerate:` command reproduces the script."""
    for key in ("NCCLGEN_CLUSTER", "NCCLGEN_TIER", "NCCLGEN_WORKLOAD", "NCCLGEN_CLUSTERS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my.yaml").write_text((ROOT / "clusters" / "h100-ib.yaml").read_text())
    (tmp_path / "wl.yaml").write_text(Path(workload.bundled()["verl-sft"]).read_text())
    args = [
        "--cluster",
        "./my.yaml",
        "--workload",
        "wl.yaml",
        "--tier",
        "2",
        "--set",
        "NCCL_DEBUG_SUBSYS=INIT",
    ]  # verl-sft forces NCCL_DEBUG
    assert main(["k8s", *args]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    job = docs[0]  # the job first, then its ConfigMap
    pod = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    command = pod["metadata"]["annotations"]["ncclgen.io/explain"]
    argv = shlex.split(command)
    assert argv[:2] == ["ncclgen", "explain"] and "./my.yaml" in argv and "wl.yaml" in argv
    assert main(argv[1:]) == 0
    explained = {}
    for line in capsys.readouterr().out.split("\nBINDING")[0].splitlines():
        m = re.match(r"  (\S+)\s+(.*?)    \[", line)
        if m:
            explained[m.group(1)] = m.group(2)
    rendered = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert explained == rendered and rendered["NCCL_DEBUG_SUBSYS"] == "INIT"

    assert main(["slurm", *args, "-o", "job.sh"]) == 0
    script = (tmp_path / "job.sh").read_text()
    regen = next(line for line in script.splitlines() if line.startswith("# Regenerate: "))
    (tmp_path / "job.sh").unlink()
    assert main(shlex.split(regen[len("# Regenerate: ") :])[1:]) == 0
    assert (tmp_path / "job.sh").read_text() == script
