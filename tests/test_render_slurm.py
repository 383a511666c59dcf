"""`ncclgen slurm`: the rendered sbatch script, checked by bash, shellcheck, Slurm itself, and by running
it with stand-ins for srun/scontrol/ray/torchrun/python3 that record what they receive.

Why stand-ins here: the real 2-node runs live in tests/test_slurm_e2e.py and take a minute each; the
script's own logic (quoting, the wait -n fail-fast paths, exit codes, clean-up) can be run in
milliseconds by letting PATH shims play srun and Ray. No Slurm or Ray is needed except where marked.
"""

from __future__ import annotations

import itertools
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import goldens
import pytest
import yaml
from conftest import skip_or_fail

from ncclgen import __version__
from ncclgen.cli import main
from ncclgen.errors import UserError
from ncclgen.load import descriptor, workload
from ncclgen.pipeline import make_plan, request
from ncclgen.plan import flightrec

CLUSTERS = sorted(descriptor.available())
WORKLOADS = sorted(workload.bundled())
TIERS = (1, 2, 3)
MATRIX = list(itertools.product(CLUSTERS, TIERS, WORKLOADS))
GOLDEN = Path(__file__).resolve().parent / "golden" / "slurm"
HOSTILE = "/tmp/$(touch PWNED) `touch PWNED2` \"dq\" 'sq' ; touch PWNED3 * ?[a] ${HOME} a,b=c \\ \nnewline"


def render(capsys, *args: str) -> str:
    """The real CLI in-process (same code path as the console script); returns stdout."""
    rc = main(["slurm", *args])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


def run_cli(*args: str, cwd=None):
    """The real console entry point in a subprocess: exit status, stdout, stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "ncclgen", "slurm", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        skip_or_fail(f"{tool} is not installed (apt-get install {tool})")
    return path


def env_section(script: str) -> str:
    """The plan's export block: from the template's `# ==== Environment` marker to the launcher
    plumbing (or the first blank line when there is none)."""
    start = script.index("# ==== Environment")
    rest = script[start:]
    ends = [i for i in (rest.find("# Launcher plumbing"), rest.find("\n\n")) if i >= 0]
    return rest[: min(ends)]


def bash_env(section: str) -> dict[str, str]:
    """Run shell text in a clean bash and return the environment it exports (env -0, no regex)."""
    out = subprocess.run(
        ["env", "-i", "bash", "-c", section + "\nexec env -0"], capture_output=True, check=True, timeout=30
    ).stdout.decode()
    env = dict(item.split("=", 1) for item in out.split("\0") if item)
    for name in ("PWD", "SHLVL", "_"):  # bash's own
        env.pop(name, None)
    return env


# --- the whole matrix ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def matrix(tmp_path_factory) -> dict[tuple, Path]:
    """Every bundled cluster x tier x workload, rendered once through the CLI code path."""
    folder = tmp_path_factory.mktemp("matrix")
    out = {}
    for cluster, tier, wl in MATRIX:
        path = folder / f"{cluster}-t{tier}-{wl}.sh"
        assert main(["slurm", "--cluster", cluster, "--tier", str(tier), "--workload", wl, "-o", str(path)]) == 0
        out[cluster, tier, wl] = path
    return out


def test_every_render_passes_bash_n(matrix):
    for key, path in matrix.items():
        r = subprocess.run([need("bash"), "-n", str(path)], capture_output=True, text=True, check=False)
        assert r.returncode == 0, f"{key}: {r.stderr}"


def test_every_render_is_shellcheck_clean(matrix):
    shellcheck = need("shellcheck")
    paths = [str(p) for p in matrix.values()]
    batches = [paths[i::2] for i in range(2)]  # CI has 2 cores; one shellcheck per core

    def check(batch):
        return subprocess.run([shellcheck, "-S", "style", *batch], capture_output=True, text=True, check=False)

    with ThreadPoolExecutor(2) as pool:
        for r in pool.map(check, batches):
            assert r.returncode == 0, r.stdout + r.stderr


def test_every_render_exports_only_in_the_batch_shell_with_a_labelled_comment(matrix):
    for key, path in matrix.items():
        text = path.read_text()
        code = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
        assert "--export=" in code
        assert set(re.findall(r"--export=([^\s)]*)", code)) == {"ALL"}, key
        plan_exports = env_section(text).splitlines()
        lines = text.split("\n# ==== Programs")[0].splitlines()  # the embedded programs are not the job's exports
        for before, line in itertools.pairwise(lines):
            if line.startswith("export "):
                # `export NAME='value'  # tier 1, rule-id` (the plan), or `# why` above (launcher plumbing)
                if line in plan_exports:
                    assert re.search(r"  # (tier [123], \S|override, )", line), f"{key}: {line!r} has no label comment"
                else:
                    assert re.match(r"# \S", before), f"{key}: {line!r} has no comment above it"
        assert path.stat().st_mode & 0o777 == 0o755, key


def test_every_render_exports_exactly_the_plan_env(matrix):
    for (cluster, tier, wl), path in matrix.items():
        if wl not in ("verl-grpo-qwen2-7b", "verl-sft"):  # same template code for the others
            continue
        want = make_plan(request(cluster, tier, wl, None, (), False)).env_dict()
        want = {k: v.replace(flightrec.JOB, "local") for k, v in want.items()}  # the job's folder; no job here
        assert bash_env(env_section(path.read_text())) == want, (cluster, tier, wl)


def test_render_is_byte_deterministic_across_processes(tmp_path):
    """Two processes (different hash seeds) give the same bytes, for both launchers."""
    for wl in ("verl-grpo-qwen2-7b", "verl-sft"):
        args = ("--cluster", "h100-ib", "--tier", "3", "--workload", wl, "--monitor")
        first, second = run_cli(*args), run_cli(*args)
        assert first[0] == 0, first[2]
        assert first == second


def test_rendering_imports_no_heavy_module():
    """`ncclgen slurm` runs on login nodes: no kubernetes client, torch, Ray or NVML import."""
    prog = textwrap.dedent("""
        import contextlib, io, sys
        from ncclgen.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            for wl in ("verl-grpo-qwen2-7b", "verl-sft"):
                assert main(["slurm", "--cluster", "h100-ib", "--tier", "3", "--workload", wl, "--monitor"]) == 0
        print(sorted({m.split(".")[0] for m in sys.modules} & {"kubernetes", "torch", "ray", "pynvml"}))
        """)
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120, check=False)
    assert (r.returncode, r.stdout) == (0, "[]\n"), r.stderr


# --- golden files (examples/ hold the h100-ib renders; this one covers local-ci) -------------------


def test_golden_local_ci(capsys):
    """The local-ci render the end-to-end tests run, reviewed. The version is masked so a release bump
    does not touch the golden."""
    got = render(capsys, "--cluster", "local-ci", "--tier", "3", "--workload", "verl-grpo-qwen2-7b")
    goldens.check(
        GOLDEN / "local-ci-t3-verl-grpo-qwen2-7b.sh", got.replace(f"ncclgen {__version__}:", "ncclgen VERSION:")
    )


# --- hostile input --------------------------------------------------------------------------------


def test_hostile_job_name_is_quoted_and_shellcheck_clean(capsys, tmp_path):
    name = "x $(touch PWNED) `touch PWNED2` \"q\" 'q' ; rm -rf * #c \\b"
    text = render(capsys, "--cluster", "local-ci", "--job-name", name)
    (line,) = [ln for ln in text.splitlines() if ln.startswith("#SBATCH --job-name=")]
    # sbatch's own parser: shell quoting, and a backslash escapes the next character even inside quotes
    assert line == "#SBATCH --job-name=" + shlex.quote(name).replace("\\", "\\\\")
    path = tmp_path / "job.sh"
    path.write_text(text)
    r = subprocess.run([need("shellcheck"), "-S", "style", str(path)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout


@pytest.mark.parametrize("flag", ["--job-name", "--partition", "--account", "--qos"])
def test_control_characters_in_sbatch_values_are_one_line_errors(tmp_path, flag):
    out = tmp_path / "job.sh"
    rc, stdout, stderr = run_cli("--cluster", "local-ci", flag, "a\nb", "-o", str(out))
    assert rc == 2 and stdout == ""
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert f"{flag} 'a\\nb': control characters" in stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_regenerate_comment_cannot_be_escaped_by_a_newline(capsys):
    text = render(capsys, "--cluster", "local-ci", "--set", "NCCL_DEBUG_FILE=a\ntouch PWNED")
    lines = text.splitlines()
    (i,) = [i for i, ln in enumerate(lines) if ln.startswith("# Regenerate:")]
    assert lines[i].endswith("--set $'NCCL_DEBUG_FILE=a\\ntouch PWNED'")
    assert lines[i + 1] == "# Run with: sbatch <this file>"


def test_output_file_is_atomic_and_bad_flags_are_one_line(tmp_path):
    out = tmp_path / "job.sh"
    for args, expect in (
        (("--cluster", "no-such-cluster"), "unknown cluster"),
        (("--tier", "4"), "--tier"),
        (("--nodes", "0"), "--nodes"),
        (("--time", "90 minutes"), "--time '90 minutes': expected [D-]HH:MM:SS"),
        (("--set", "NCCL_NO_SUCH_THING=1"), "NCCL_NO_SUCH_THING"),
    ):
        rc, stdout, stderr = run_cli(*args, "-o", str(out))
        assert (rc, stdout) == (2, ""), (args, stderr)
        assert stderr.count("\n") == 1 and expect in stderr and "Traceback" not in stderr, (args, stderr)
        assert list(tmp_path.iterdir()) == [], args  # neither the file nor a temp file
    rc, _, stderr = run_cli("--cluster", "local-ci", "-o", str(out))
    assert rc == 0, stderr
    assert out.stat().st_mode & 0o777 == 0o755 and out.read_text().startswith("#!/bin/bash\n")


def test_extra_sbatch_cannot_redefine_what_ncclgen_sets(tmp_path):
    doc = yaml.safe_load(Path(descriptor.resolve("local-ci")).read_text())

    def variant(name, extra):
        doc["slurm"]["extra_sbatch"] = extra
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc))
        return str(path)

    rc, _, stderr = run_cli("--cluster", variant("bad", {"time": "1:00:00"}))
    assert rc == 2 and "slurm.extra_sbatch.time: --time is set by ncclgen: use ncclgen slurm --time" in stderr
    rc, _, stderr = run_cli("--cluster", variant("gres", {"gres": "gpu:h100:2"}))
    assert rc == 2 and "slurm.extra_sbatch.gres: --gres=gpu:h100:2 asks for GPUs" in stderr, stderr
    rc, _, stderr = run_cli("--cluster", variant("typo", {"mail-typ": "END"}))
    assert rc == 2 and "sbatch has no option --mail-typ (did you mean 'mail-type'?)" in stderr, stderr
    for requeue in ("", True):  # `requeue: ""` was the only way before flags took `true`
        rc, stdout, stderr = run_cli(
            "--cluster", variant("good", {"requeue": requeue, "mail-type": "END", "nice": 10}), "--workload", "bench"
        )
        assert rc == 0, stderr
        for line in ("--requeue", "--mail-type=END", "--nice=10", "--signal=B:USR1@300", "--open-mode=append"):
            assert f"#SBATCH {line}\n" in stdout, line
        assert "trap ncclgen_requeue USR1\n" in stdout


def _step_function(text: str) -> tuple[str, list[str]]:
    """ncclgen_step's body, and the script's other lines that start srun (there must be none)."""
    body = text[text.index("\nncclgen_step() {") : text.index("\n}\n", text.index("\nncclgen_step() {"))]
    others = [ln for ln in text.split("\n# ==== Programs")[0].splitlines() if re.match(r"\s*srun ", ln)]
    return body, others


def test_container_image_reaches_every_srun(capsys):
    image = "nvcr.io#nvidia/pytorch:25.01-py3"
    for wl in ("verl-grpo-qwen2-7b", "verl-sft"):
        text = render(capsys, "--cluster", "h100-ib", "--workload", wl, "--monitor", "--container-image", image)
        body, others = _step_function(text)
        assert others == []  # every step is an ncclgen_step
        container, host = body.split("if [[ $1 == --host ]]")
        assert "    " + shlex.quote(f"--container-image={image}") + "\n" in container
        assert '    --container-name="ncclgen-$SLURM_JOB_ID"\n' in container
        assert "--container" not in host  # the monitor runs on the host
        monitor = [ln for ln in text.splitlines() if "monitor.py" in ln and "ncclgen_step" in ln]
        assert len(monitor) == 1 and "ncclgen_step --host " in monitor[0]
        steps = [ln for ln in text.splitlines() if ln.lstrip().startswith("ncclgen_step ")]
        assert len(steps) == (4 if wl == "verl-grpo-qwen2-7b" else 2) + 1  # + the preflight step


def test_descriptor_container_image_and_mounts(tmp_path, capsys):
    doc = yaml.safe_load(Path(descriptor.available()["h100-ib"]).read_text())
    doc["slurm"].update(
        container_image="nvcr.io#nvidia/pytorch:25.01-py3",
        container_mounts=["/data:/data:ro", "/home/me/my runs:/runs"],
    )
    good = tmp_path / "pyxis.yaml"
    good.write_text(yaml.safe_dump(doc))
    text = render(capsys, "--cluster", str(good), "--workload", "verl-sft")
    body, others = _step_function(text)
    container = body.split("if [[ $1 == --host ]]")[0]
    assert others == [] and "--container-image=nvcr.io#nvidia/pytorch:25.01-py3" in container
    assert shlex.quote("--container-mounts=/data:/data:ro,/home/me/my runs:/runs") in container
    steps = [ln for ln in text.splitlines() if ln.lstrip().startswith("ncclgen_step ")]
    assert len(steps) == 2 and not any("--host" in s for s in steps)  # the preflight runs in the container too
    doc["slurm"]["container_mounts"] = ["/a,/b:/c"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(UserError, match=r"slurm\.container_mounts\[0\].*must not contain ','"):
        descriptor.load(str(bad))


# --- the real Slurm -------------------------------------------------------------------------------


@pytest.mark.slurm
@pytest.mark.parametrize("cluster", CLUSTERS)
def test_sbatch_test_only_accepts_every_render(slurm_cluster, tmp_path, cluster):
    """The 2 test nodes declare 224 CPUs and gpu:h100:8; --nodes 2 fits the 4-node workload in."""
    for tier, wl in itertools.product(TIERS, WORKLOADS):
        path = tmp_path / f"{tier}-{wl}.sh"
        assert (
            main(
                [
                    "slurm",
                    "--cluster",
                    cluster,
                    "--tier",
                    str(tier),
                    "--workload",
                    wl,
                    "--partition",
                    "debug",
                    "--nodes",
                    "2",
                    "-o",
                    str(path),
                ]
            )
            == 0
        )
        rc, stderr = slurm_cluster.test_only(path)
        assert rc == 0 and "to start at" in stderr, f"{cluster} tier {tier} {wl}: {stderr}"


@pytest.mark.slurm
def test_slurm_reads_a_hostile_job_name_byte_exact(slurm_cluster, tmp_path):
    name = "x $(touch PWNED) `b` \"q\" 'q' ; * #c \\b"
    path = tmp_path / "job.sh"
    assert main(["slurm", "--cluster", "local-ci", "--job-name", name, "-o", str(path)]) == 0
    job = slurm_cluster.sbatch(path, "--hold", cwd=tmp_path)
    try:
        shown = subprocess.run(
            ["scontrol", "show", "job", "-o", job], env=slurm_cluster.env, capture_output=True, text=True, check=True
        ).stdout
    finally:
        slurm_cluster.cancel(job)
    assert re.search(r"\bJobName=(.*) UserId=", shown).group(1) == name
    assert not list(tmp_path.glob("PWNED*"))
