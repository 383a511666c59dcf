"""The README says what the tool does (issue 32 item 5): its options exist where it uses them, and the
markers and refusals it quotes are what the rendered output and the errors show.

Every `ncclgen SUB ...` command in the README (code spans and bash/console blocks) names a real command
and only options that command has; every other `--flag` in a code span is an option of some ncclgen
command or listed in FOREIGN with whose it is. The Security section's quoted markers (the script's
`# override, --set, unchecked`, explain's `[override, --set, unchecked]` and `[unchecked: ...]`) are
found in what `ncclgen slurm` and `ncclgen explain` print for `--set-unchecked PYTHONPATH=/x`, and its
`--set PYTHONPATH=/x` is refused naming `--set-unchecked`, as the README says.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from ncclgen.cli import cli, main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
# Flags the README names that belong to other programs, each with whose.
FOREIGN = {
    "--check-network-topology": "the seed article's diagnose.py, listed as a flag that does not exist",
    "--nccl-health-check": "the seed article's diagnose.py, listed as a flag that does not exist",
    "--monitor-nccl-buffers": "the seed article's memory_utils.py, listed as a flag that does not exist",
    "--export": "sbatch/srun's, which ncclgen refuses in --sbatch",
    "--export-file": "sbatch's, refused in --sbatch",
    "--get-user-env": "sbatch's, refused in --sbatch",
    "--check": "tools/nccl_warn_strings.py's",
    "--nv": "apptainer exec's, which ncclgen writes before each step's program",
    "--bind": "apptainer exec's, which ncclgen writes before each step's program",
    "--timestamps": "kubectl logs', whose prefix triage reads through",
}


def _spans() -> list[str]:
    return re.findall(r"`([^`\n]+)`", README)


def _block_lines() -> list[str]:
    lines = []
    for block in re.findall(r"```(?:bash|console)\n(.*?)```", README, flags=re.S):
        lines += [line.removeprefix("$ ") for line in block.splitlines()]
    return lines


def _commands() -> list[list[str]]:
    """Each `ncclgen ...` command line the README shows, as argv (comments and pipes cut off)."""
    out = []
    for text in _spans() + _block_lines():
        for m in re.finditer(r"(?:^|[\s(&|;])(ncclgen\s[^|;&)]*)", text):
            line = m.group(1).split("  #")[0]
            try:
                argv = shlex.split(line, comments=True)
            except ValueError:  # a span cut inside quotes: not a whole command
                continue
            out.append(argv)
    return out


def _command(argv: list[str]) -> tuple[click.Command, list[str]]:
    """The click command an argv names (through groups), and the arguments after it."""
    cmd: click.Command = cli
    rest = argv[1:]
    with click.Context(cli) as ctx:
        while isinstance(cmd, click.Group) and rest and not rest[0].startswith("-"):
            sub = cmd.get_command(ctx, rest[0])
            assert sub is not None, f"README: `{' '.join(argv)}`: no command {rest[0]!r}"
            cmd, rest = sub, rest[1:]
    return cmd, rest


def _options(cmd: click.Command) -> set[str]:
    return {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help", "-h"}


def _all_options() -> set[str]:
    found: set[str] = set()
    with click.Context(cli) as ctx:
        for name in cli.list_commands(ctx):
            cmd = cli.get_command(ctx, name)
            found |= _options(cmd)
            if isinstance(cmd, click.Group):
                for sub in cmd.list_commands(ctx):
                    found |= _options(cmd.get_command(ctx, sub))
    return found


def test_the_readme_shows_ncclgen_commands():
    assert len(_commands()) >= 20  # the parser finds them: a broken pattern would check nothing


@pytest.mark.parametrize("argv", _commands(), ids=lambda a: " ".join(a)[:60])
def test_every_readme_command_uses_options_its_command_has(argv):
    cmd, rest = _command(argv)
    known = _options(cmd)
    for arg in rest:
        if arg == "--":
            break
        if arg.startswith("--"):
            assert arg.split("=", 1)[0] in known, f"README: `{' '.join(argv)}`: {cmd.name} has no {arg}"


def test_every_flag_the_readme_names_exists():
    flags = {f for span in _spans() for f in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", span)}
    assert "--set-unchecked" in flags and "--ttl-after-finished" in flags
    unknown = sorted(flags - _all_options() - set(FOREIGN))
    assert unknown == [], f"the README names options no ncclgen command has: {unknown}"
    assert not set(FOREIGN) & _all_options(), "a FOREIGN flag is ncclgen's own now: check the README"


def _security() -> str:
    return README[README.index("## Security") : README.index("## More")]


def test_the_security_sections_unchecked_markers_are_what_is_rendered(capsys):
    quoted = re.findall(r"`([^`]*unchecked[^`]*)`", _security().replace("\n  ", " "))
    script_marker = next(q for q in quoted if q.startswith("export PYTHONPATH="))
    explain_marker = next(q for q in quoted if q.startswith("[override"))
    reason_marker = next(q for q in quoted if q.startswith("[unchecked:"))
    args = ["--cluster", "h100-ib", "--set-unchecked", "PYTHONPATH=/x"]
    assert main(["slurm", *args]) == 0
    script = capsys.readouterr().out
    assert script_marker in script.splitlines()
    assert main(["explain", *args]) == 0
    explained = " ".join(capsys.readouterr().out.split())
    assert " ".join(explain_marker.split()) in explained and reason_marker in explained


def test_the_security_sections_set_refusal_is_what_happens(capsys):
    assert "`--set PYTHONPATH=/x` is refused, exit 2, with a line naming `--set-unchecked`" in " ".join(
        _security().split()
    )
    assert main(["slurm", "--cluster", "h100-ib", "--set", "PYTHONPATH=/x"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "--set-unchecked PYTHONPATH=VALUE" in err
    # "The names that run code (above) stay refused with --set-unchecked too."
    assert main(["slurm", "--cluster", "h100-ib", "--set-unchecked", "LD_PRELOAD=/x.so"]) == 2
    assert "LD_PRELOAD" in capsys.readouterr().err


def test_every_rendered_output_has_the_header_the_readme_promises(capsys):
    """'Every rendered script and manifest stream says in its header how to regenerate it and which
    `ncclgen explain` command prints every value's reason and source'."""
    assert "Every rendered script and manifest stream says in its header how to regenerate it" in " ".join(
        README.split()
    )
    for command in ("slurm", "k8s"):
        assert main([command, "--cluster", "h100-ib"]) == 0
        head = capsys.readouterr().out.split("\n---\n")[0].split("\nset -euo")[0]
        assert f"# Regenerate: ncclgen {command} " in head and "ncclgen explain " in head


def test_the_transport_check_section_quotes_the_program():
    """The README's transport check: its exit status, its FAILED line and the debug file are the code's."""
    from ncclgen.jobside import transport

    section = README[README.index("**The transport check.**") : README.index("**The job environment is the plan.**")]
    assert f"**exit status {transport.EXIT_PROBLEMS}**" in section.replace("\n", " ")
    source = (ROOT / "ncclgen" / "jobside" / "transport.py").read_text(encoding="utf-8")
    assert "ncclgen: transport FAILED: node NODE: ITEM: expected ..., found ..." in section
    assert "ncclgen: transport FAILED: node NODE: ITEM: expected EXPECTED, found FOUND" in source
    rules = (ROOT / "ncclgen" / "data" / "rules.yaml").read_text(encoding="utf-8")
    assert "NCCL_DEBUG_FILE=/tmp/ncclgen-nccl/%h.%p.log" in section
    assert "value: /tmp/ncclgen-nccl/%h.%p.log" in rules


def test_the_flight_recorder_section_is_what_the_plan_and_script_do(capsys):
    """The README's flight recorder: the variables, the folders and the exit line are the plan's and the script's."""
    section = README[README.index("**The flight recorder.**") : README.index("**The job environment is the plan.**")]
    flat = " ".join(section.split())
    assert main(["env", "--cluster", "h100-ib"]) == 0
    env = capsys.readouterr().out
    assert "export TORCH_NCCL_DUMP_ON_TIMEOUT=1\n" in env and "TORCH_NCCL_DUMP_ON_TIMEOUT=1" in flat
    assert 'export TORCH_FR_DUMP_TEMP_FILE="/tmp/ncclgen-fr-${SLURM_JOB_ID:-local}/nccl_trace_rank_"\n' in env
    assert "/tmp/ncclgen-fr-JOB_ID" in flat and "slurm.dump_dir/JOB_ID" in flat
    assert main(["slurm", "--cluster", "h100-ib"]) == 0
    script = " ".join(capsys.readouterr().out.replace('" \\\n', "").replace('"', "").split())
    said = "ncclgen: flight recorder: ranks dumped their last collectives to $fr on $(hostname), one folder per node;"
    assert said in script and "read them with python3 -m torch.distributed.flight_recorder.fr_trace -j $fr" in script
    assert "read them with python3 -m torch.distributed.flight_recorder.fr_trace -j FOLDER" in flat
    assert main(["k8s", "--cluster", "h100-ib"]) == 0
    assert "mountPath: /tmp/ncclgen-fr\n" in capsys.readouterr().out and "`/tmp/ncclgen-fr`" in flat
