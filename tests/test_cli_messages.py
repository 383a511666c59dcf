"""Small things a new user meets first (issue 32): a mistyped command gets a suggestion and one
`ncclgen: error:` prefix, and `--comments full` writes lines a terminal shows whole."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from ncclgen.cli import main


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["slurmm"], "ncclgen: error: no such command 'slurmm' (did you mean 'slurm'?); see `ncclgen --help`"),
        (["qqq"], "ncclgen: error: no such command 'qqq'; see `ncclgen --help`"),
        (["clusters", "lst"], "ncclgen: error: ncclgen clusters: No such command 'lst'. Did you mean 'list'?"),
    ],
)
def test_a_mistyped_command_is_one_line_with_a_suggestion(capsys, argv, want):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [want]
    assert err.count("ncclgen: error:") == 1 and "ncclgen: error: ncclgen: " not in err


@pytest.mark.parametrize("tier", [1, 3])
def test_comments_full_explains_each_value_in_lines_under_100_characters(capsys, tier):
    assert main(["slurm", "--cluster", "h100-ib", "--tier", str(tier), "--comments", "full"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("# ==== Environment: the plan (tier, rule), inherited by every step (srun --export=ALL; never")
    env = lines[start : lines.index("", start)]
    if "# Launcher plumbing, not NCCL/PyTorch settings:" in env:  # Ray's hook plumbing: short comments
        env = env[: env.index("# Launcher plumbing, not NCCL/PyTorch settings:")]
    exports = [line for line in env if line.startswith("export ")]
    assert exports and all("  # " not in line for line in exports)  # each reason is above its export
    comments = [line for line in env if line.startswith("#")]
    assert len(comments) > 2 * len(exports)  # wrapped, not one long line per value
    assert max(len(line) for line in comments) < 100


def _ncclgen(*argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ncclgen", *argv], capture_output=True, timeout=120, check=False, **kw)


def test_the_console_script_ends_without_teardown_but_with_all_output(capsys, tmp_path):
    """`run` ends with os._exit (cli._leave): everything written reaches the pipe, exit statuses are kept,
    and exit handlers still run."""
    assert main(["slurm", "--cluster", "h100-ib", "--tier", "3"]) == 0
    whole = capsys.readouterr().out.encode()
    r = _ncclgen("slurm", "--cluster", "h100-ib", "--tier", "3")
    assert (r.returncode, r.stdout, r.stderr) == (0, whole, b"")
    bad = _ncclgen("slurm", "--cluster", "no-such-cluster")
    assert bad.returncode == 2 and bad.stdout == b"" and bad.stderr.count(b"\n") == 1
    marker = tmp_path / "ran"
    code = (
        "import atexit, pathlib, sys\n"
        f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'yes')\n"
        "sys.argv = ['ncclgen', 'slurm', '--cluster', 'h100-ib', '--tier', '1']\n"
        "from ncclgen.cli import run\n"
        "run()\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120, check=False)
    assert r.returncode == 0 and r.stdout.startswith(b"#!/bin/bash") and marker.read_text() == "yes"


def test_a_reader_that_stops_early_is_no_error():
    """`ncclgen slurm ... | head -1`: the pipe closes under the writer; no traceback, status 0."""
    r = subprocess.run(
        f"{shlex.quote(sys.executable)} -m ncclgen slurm --cluster h100-ib --tier 3 | head -c 20",
        shell=True,
        capture_output=True,
        timeout=120,
        check=False,
        executable="/bin/bash",
    )
    assert r.stdout == b"#!/bin/bash\n#SBATCH "[:20] and b"Traceback" not in r.stderr, r.stderr
