"""--comments full keeps the script's comment lines (the header, the plan's reasons, the launcher
plumbing and the launch's own notes) at 100 characters or fewer; before, the plumbing exports carried
their reasons on the same line (up to 134 characters) and the header ran to 117. The `# Regenerate:`
line stays whole: `ncclgen triage` reads the command back from that one line (triage/reader.py).
Program text inside the quoted heredocs is the programs' own source, not checked here."""

from __future__ import annotations

import re
import shlex

import pytest

from ncclgen.cli import main

RENDERS = [
    "--cluster h100-ib --tier 3 --monitor --pass-env WANDB_API_KEY",
    "--cluster h100-ib --tier 3 --workload verl-sft --monitor",
    "--cluster h100-ib --tier 3 --requeue -- trainer.default_local_dir=/shared/ck trainer.save_freq=10",
    "--cluster aws-p5 --tier 3 --container-image /x.sif --container-runtime apptainer",
    "--cluster gcp-a3-mega --tier 1 --workload bench --requeue --container-image x/y:1",
]


def comment_lines(script: str) -> list[str]:
    out, delimiter = [], None
    for line in script.splitlines():
        if delimiter is not None:
            delimiter = None if line == delimiter else delimiter
            continue
        heredoc = re.search(r"<<'(\w+)'", line)
        if heredoc:
            delimiter = heredoc.group(1)
        if line.lstrip().startswith("# ") or "  # " in line:  # a comment line, or a comment after code
            out.append(line)
    return out


@pytest.mark.parametrize("args", RENDERS)
def test_full_comments_fit_in_100_columns(capsys, args):
    flags, _, overrides = args.partition(" -- ")
    argv = ["slurm", *flags.split(), "--comments", "full"] + (["--", *overrides.split()] if overrides else [])
    assert main(argv) == 0
    script = capsys.readouterr().out
    lines = comment_lines(script)
    long = [ln for ln in lines if len(ln) > 100 and not ln.startswith("# Regenerate: ")]
    assert long == []
    # The plumbing's reasons are above their export, as the plan's are.
    assert not [ln for ln in script.splitlines() if ln.startswith("export ") and "  # " in ln]


def test_full_header_keeps_the_commands_runnable(capsys):
    args = ["--cluster", "h100-ib", "--tier", "3", "--comments", "full"]
    assert main(["slurm", *args]) == 0
    lines = capsys.readouterr().out.splitlines()
    (regen,) = [ln for ln in lines if ln.startswith("# Regenerate: ")]
    assert shlex.split(regen[len("# Regenerate: ") :])[:2] == ["ncclgen", "slurm"]
    at = lines.index("# Every value's reason and source:")
    assert lines[at + 1] == "#   ncclgen explain --cluster h100-ib --tier 3 --workload verl-grpo-qwen2-7b --nodes 2"
    assert lines[at - 1] == "# Run with: sbatch <this file>"


def test_short_comments_header_is_unchanged(capsys):
    assert main(["slurm", "--cluster", "h100-ib", "--tier", "3"]) == 0
    out = capsys.readouterr().out
    assert (
        "\n# Every value's reason and source: ncclgen explain --cluster h100-ib --tier 3 "
        "--workload verl-grpo-qwen2-7b --nodes 2\n" in out
    )
    assert "export PYTHONPATH=" in out and "  # makes the hook module importable by every Ray worker" in out
