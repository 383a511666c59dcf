"""Options declared once (issue 34 item 3): the fields of render/options.py's SlurmOptions and K8sOptions and of
plan/request.py's Request (the plan options) are the click options, the Regenerate argv and the check before
rendering; one pipeline.make_plan(Request)."""

from __future__ import annotations

import dataclasses
import inspect
import shlex

import click
import pytest
from click.testing import CliRunner

from ncclgen import pipeline
from ncclgen.cli import cli, common
from ncclgen.cli.options import click_options, from_click
from ncclgen.errors import UserError
from ncclgen.plan import Request
from ncclgen.render import options
from ncclgen.render.options import K8sOptions, SlurmOptions

# One value per option, as a person types it, in declaration order.
SLURM_LINE = (
    "--job-name j --time 1:00:00 --partition gpu --account a --qos high --constraint h100 --reservation r "
    "--dependency afterok:1 --output o-%j.log --error e-%j.log --sbatch mail-type=END --sbatch exclusive "
    "--requeue --signal B:USR1@600 --container-image nvcr.io#nvidia/pytorch:25.01-py3 --container-runtime apptainer "
    "--container-workdir /w "
    "--container-mounts /data:/data --monitor --ray-dashboard --no-preflight --pass-env WANDB_API_KEY "
    "--comments full -o job.sh"
)
K8S_LINE = (
    "--kind pytorchjob --name run1 --namespace team --image reg.example/v:1 --volume pvc:ckpt:/ckpt "
    "--service-account sa --priority-class high --image-pull-secret pull --scheduler-name volcano "
    "--label kueue.x-k8s.io/queue-name=q --annotation a=b --secret-env W=wandb:key --no-preflight "
    "--ttl-after-finished 600 -o job.yaml"
)


def _parse(cls, argv: list[str]):
    """The options instance click builds for ``argv`` through the generated decorators."""
    seen = {}

    @click.command()
    @click_options(cls)
    def cmd(**params):
        seen["opts"] = from_click(cls, params)
        assert not params, f"parameters that are no field: {params}"

    r = CliRunner().invoke(cmd, argv, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return seen["opts"]


@pytest.mark.parametrize(("cls", "line"), [(SlurmOptions, SLURM_LINE), (K8sOptions, K8S_LINE)])
def test_every_option_typed_comes_back_in_the_regenerate_argv(cls, line):
    argv = shlex.split(line)
    opts = _parse(cls, argv)
    assert options.argv(opts) == argv
    # each field was set away from its default by the line: none is left out of the test
    assert all(getattr(opts, f.name) != f.default for f, _ in options.flags(cls))


@pytest.mark.parametrize(("cls", "command"), [(SlurmOptions, "slurm"), (K8sOptions, "k8s")])
def test_help_lists_each_field_with_its_declared_help(cls, command):
    r = CliRunner().invoke(cli, [command, "--help"], terminal_width=400)
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    for _, flag in options.flags(cls):
        assert ", ".join(n for n in flag.names if n.startswith("--")) in flat
        assert " ".join(flag.help.split())[:60] in flat


def test_defaults_give_an_empty_argv():
    assert options.argv(SlurmOptions()) == [] and options.argv(K8sOptions()) == []


def test_the_script_regenerate_line_repeats_the_options(tmp_path):
    out = tmp_path / "job.sh"
    argv = ["slurm", "--cluster", "local-ci", "--workload", "verl-sft", "--partition", "gpu", "--monitor"]
    r = CliRunner().invoke(cli, [*argv, "--comments", "full", "-o", str(out)])
    assert r.exit_code == 0, r.output
    # --comments full continues the command with ' \\' onto '#   ' lines (ncclgen triage joins them too).
    text = out.read_text().replace(" \\\n#   ", " ")
    line = next(x for x in text.splitlines() if x.startswith("# Regenerate: "))
    typed = shlex.split(line.removeprefix("# Regenerate: "))
    assert typed[-7:] == ["--partition", "gpu", "--monitor", "--comments", "full", "-o", str(out)], line


def test_a_value_outside_the_choices_is_refused_before_rendering():
    with pytest.raises(UserError, match=r"--comments 'long': expected one of short, full"):
        SlurmOptions(comments="long")
    with pytest.raises(UserError, match=r"--kind 'job': expected one of pytorchjob, rayjob, trainjob"):
        K8sOptions(kind="job")


def test_a_new_option_is_one_field(tmp_path):
    """A field with a check gets its click option, its argv and its check, with nothing else written."""

    def positive(value: str) -> None:
        if not value.isdigit() or int(value) < 1:
            raise UserError(f"--ttl {value!r}: expected seconds >= 1")

    @dataclasses.dataclass(frozen=True)
    class WithTtl(K8sOptions):
        ttl: str | None = options.option(None, "--ttl", metavar="SECONDS", help="Delete after.", check=positive)

    opts = _parse(WithTtl, ["--ttl", "60", "--name", "x"])
    assert opts.ttl == "60" and options.argv(opts) == ["--name", "x", "--ttl", "60"]
    with pytest.raises(UserError, match="--ttl '0'"):
        WithTtl(ttl="0")


def test_one_make_plan_taking_a_request():
    assert not hasattr(pipeline, "plan_for")
    for f in (pipeline.make_plan, common.make_plan):
        (param,) = inspect.signature(f).parameters.values()
        assert param.annotation in (Request, "Request")
    req = pipeline.request("local-ci", 2, "verl-sft")
    assert pipeline.make_plan(req).request == req


PLAN_LINE = (
    "--cluster clusters/my.yaml --tier 3 --workload bench --nodes 4 --target pod --set NCCL_DEBUG=WARN "
    "--set-unchecked MY_APP_FLAG=1 --debug --transport-check warn"
)


def test_the_plan_options_are_declared_once_on_the_request():
    """Every Request field with a flag is a click option of explain (plan_options + target_option), and the
    Regenerate argv of what click parsed repeats the line typed (all fields away from their defaults)."""
    seen = {}

    @click.command()
    @common.plan_options
    @common.target_option
    def cmd(**params):
        seen["req"] = common.request_from(params)
        assert not params, f"parameters that are no field: {params}"

    argv = shlex.split(PLAN_LINE)
    r = CliRunner().invoke(cmd, argv, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    req = seen["req"]
    assert req.argv("explain") == ["ncclgen", "explain", *argv]
    assert "--target" not in req.argv("slurm")  # only env and explain take it
    flagged = [f for f, _ in options.flags(Request)]
    assert {f.name for f in dataclasses.fields(Request)} - {f.name for f in flagged} == {"extra_args"}
    assert all(getattr(req, f.name) != f.default for f in flagged)
    r = CliRunner().invoke(cli, ["slurm", "--help"], terminal_width=400)
    flat = " ".join(r.output.split())
    assert all(" ".join(flag.help.split())[:60] in flat for f, flag in options.flags(Request) if f.name != "target")
