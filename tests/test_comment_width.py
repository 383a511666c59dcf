"""--comments full keeps the script's comment lines (the header, the plan's reasons, the launcher
plumbing and the launch's own notes) at 100 characters or fewer; before, the plumbing exports carried
their reasons on the same line (up to 134 characters) and the header ran to 170. The Regenerate and
explain commands are continued with ' \\' onto '#   ' lines; `ncclgen triage` joins the Regenerate
command when it reads it back (triage/reader.py). Program text inside the quoted heredocs is the programs' own source, not checked here."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

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
    long = [ln for ln in lines if len(ln) > 100]
    assert long == []
    # The plumbing's reasons are above their export, as the plan's are.
    assert not [ln for ln in script.splitlines() if ln.startswith("export ") and "  # " in ln]


def _command(lines: list[str], at: int, prefix: str) -> list[str]:
    """The argv of a comment command starting at lines[at] after ``prefix``, joined as bash would."""
    text = lines[at][len(prefix) :]
    while text.endswith(" \\"):
        at += 1
        assert lines[at].startswith("#   ")
        text = text[:-2] + " " + lines[at][4:]
    return shlex.split(text)


LONG = ["--cluster", "aws-p5", "--tier", "3", "--container-image", "/x.sif", "--container-runtime", "apptainer"]


def test_full_header_keeps_the_commands_runnable(capsys):
    args = [*LONG, "--comments", "full", "--", "trainer.total_epochs=2"]
    assert main(["slurm", *args]) == 0
    lines = capsys.readouterr().out.splitlines()
    (at,) = [i for i, ln in enumerate(lines) if ln.startswith("# Regenerate: ")]
    regen = _command(lines, at, "# Regenerate: ")
    assert regen[:2] == ["ncclgen", "slurm"] and regen[-2:] == ["--", "trainer.total_epochs=2"]
    assert lines[at].endswith(" \\")  # it was 170 characters on one line
    # The command as written makes the same script again.
    assert main(regen[1:]) == 0
    assert capsys.readouterr().out.splitlines() == lines
    explain = lines.index("# Every value's reason and source:")
    assert _command(lines, explain + 1, "#   ")[:2] == ["ncclgen", "explain"]


def test_triage_reads_a_continued_regenerate_line(tmp_path):
    from ncclgen.triage import reader

    script = tmp_path / "job.sh"
    assert main(["slurm", *LONG, "--comments", "full", "-o", str(script)]) == 0
    (line,) = list(reader.scan([script]))
    assert line.lineno == next(i for i, t in enumerate(script.read_text().splitlines(), 1) if "# Regenerate:" in t)
    assert line.text == "# Regenerate: " + shlex.join(
        ["ncclgen", "slurm", "--cluster", "aws-p5", "--tier", "3", "--workload", "verl-grpo-qwen2-7b", "--nodes", "2",
         "--container-image", "/x.sif", "--container-runtime", "apptainer", "--comments", "full", "-o", str(script)]
    )  # fmt: skip


def test_short_comments_header_is_unchanged(capsys):
    assert main(["slurm", "--cluster", "h100-ib", "--tier", "3"]) == 0
    out = capsys.readouterr().out
    assert (
        "\n# Every value's reason and source: ncclgen explain --cluster h100-ib --tier 3 "
        "--workload verl-grpo-qwen2-7b --nodes 2\n" in out
    )
    # the plumbing's reason above its export; PYTHONPATH is no longer exported (ncclgen/jobside/node.sh
    # puts the node's hook folder on it in each step, issue 28)
    assert (
        "\n# read by the Ray worker hook\nexport NCCLGEN_GPU_CPUS=" in out
        and "export PYTHONPATH=" not in out.split("# ==== Programs")[0]
    )


def test_triage_takes_the_plan_from_a_full_comments_script(tmp_path):
    from ncclgen.triage import run

    args = ["--cluster", "h100-ib", "--tier", "3", "--workload", "verl-sft", "--comments", "full"]
    assert main(["slurm", *args, "-o", str(tmp_path / "job.sh")]) == 0
    log = Path(__file__).parent / "data" / "triage" / "nccl-426-roce-gid.log"
    (tmp_path / "slurm-1.out").write_text(log.read_text())
    data = json.loads(run.triage([str(tmp_path)], fmt="json")[0])
    assert data["plan"]["from"].startswith("the job script's Regenerate: line (ncclgen slurm --cluster h100-ib")
    assert "--comments full" in data["plan"]["from"]
