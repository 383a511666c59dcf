"""Small things a new user meets first (issue 32): a mistyped command gets a suggestion and one
`ncclgen: error:` prefix, and `--comments full` writes lines a terminal shows whole."""

from __future__ import annotations

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
