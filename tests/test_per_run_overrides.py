"""Per-run overrides (`-- ARGS`) replace the workload's value in place (issue 20 item 5), as Hydra would apply them.

The equivalence is checked with Hydra itself: composing the workload's overrides with the per-run ones
appended (what Hydra does when both are on the command line) gives the same config as the merged command,
and a merge ncclgen refuses is one Hydra refuses too.
"""

from __future__ import annotations

import shlex

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from ncclgen import pipeline
from ncclgen.errors import UserError
from ncclgen.plan import overrides

CONFIG = """\
trainer:
  total_epochs: 15
  logger: console
  maybe: null
data:
  batch: 1024
"""


@pytest.fixture(scope="module")
def hydra_compose(tmp_path_factory):
    d = tmp_path_factory.mktemp("conf")
    (d / "cfg.yaml").write_text(CONFIG, encoding="utf-8")

    def run(args):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(d), version_base=None):
            return compose("cfg", overrides=list(args))

    return run


CASES = [
    (["trainer.total_epochs=15"], ["trainer.total_epochs=2"]),
    (["trainer.total_epochs=15"], ["++trainer.total_epochs=2"]),
    (["+trainer.new=1"], ["trainer.new=2"]),
    (["+trainer.new=1"], ["++trainer.new=2"]),
    (["trainer.total_epochs=15"], ["~trainer.total_epochs"]),
    (["trainer.total_epochs=15"], ["~trainer.total_epochs=15"]),
    (["+trainer.new=1"], ["~trainer.new"]),
    (["trainer.maybe=null"], ["+trainer.maybe=3"]),
    (["trainer.total_epochs=15", "data.batch=8", "trainer.total_epochs=20"], ["trainer.total_epochs=2"]),
    (["trainer.total_epochs=15"], ["data.batch=8", "+extra.key=1"]),
    (["trainer.total_epochs=15"], ["trainer.total_epochs=2", "trainer.total_epochs=3"]),
]


@pytest.mark.parametrize(("mine", "extra"), CASES)
def test_merged_command_composes_like_the_appended_one(hydra_compose, mine, extra):
    cmd, rest, notes = overrides.merge(tuple(mine), tuple(extra))
    merged = [*cmd, *rest]
    assert hydra_compose(merged) == hydra_compose([*mine, *extra])
    for arg in extra:  # one line per per-run argument, or it stayed appended
        assert any(n.startswith(arg + ":") for n in notes) or arg in rest
    keys = [a.lstrip("+~").split("=")[0] for a in merged]
    assert len(keys) == len(set(keys)) or extra[-1] in rest, f"one value per key: {merged}"


@pytest.mark.parametrize(
    ("mine", "extra"),
    [
        (["trainer.total_epochs=15"], ["+trainer.total_epochs=2"]),
        (["trainer.total_epochs=15"], ["~trainer.total_epochs=3"]),
    ],
)
def test_a_merge_refused_is_one_hydra_refuses(hydra_compose, mine, extra):
    with pytest.raises(UserError, match=extra[0].replace("+", r"\+")):
        overrides.merge(tuple(mine), tuple(extra))
    with pytest.raises(Exception, match="Could not"):
        hydra_compose([*mine, *extra])


def test_a_key_the_workload_deletes_is_set_for_this_run(hydra_compose):
    cmd, rest, _ = overrides.merge(("~trainer.logger",), ("trainer.logger=wandb",))
    assert cmd == ("++trainer.logger=wandb",) and not rest
    assert hydra_compose(cmd).trainer.logger == "wandb"


def test_explain_and_the_job_script_carry_only_the_per_run_value():
    req = pipeline.request(workload="verl-grpo-qwen2-7b", extra_args=("trainer.total_epochs=2",))
    p = pipeline.make_plan(req)
    assert "trainer.total_epochs=2" in p.launch.command
    assert "trainer.total_epochs=15" not in p.launch.command
    assert p.launch.command.index("trainer.total_epochs=2") < p.launch.command.index("trainer.nnodes=2")
    from ncclgen.cli.plan import render_explain
    from ncclgen.render import slurm

    text = render_explain(p)
    assert "per-run (-- ARGS): trainer.total_epochs=2: replaces the workload's trainer.total_epochs=15" in text
    script = slurm.render_plan(p, slurm.Options())
    assert "trainer.total_epochs=2" in script
    assert "trainer.total_epochs=15" not in script


def test_a_non_hydra_command_keeps_them_appended():
    p = pipeline.make_plan(pipeline.request(workload="bench", extra_args=("--steps=3",)))
    assert p.workload.framework != "verl"
    assert p.launch.command[-1] == "--steps=3"
    assert p.launch.per_run == ("--steps=3: appended",)
    assert shlex.join(p.launch.command)
