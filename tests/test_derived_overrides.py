"""A per-run override may not replace what ncclgen derives (issue 33): `-- trainer={nnodes:4,...}` (Hydra's
dict form), `~trainer` or `++trainer={...}` replace trainer.nnodes after ncclgen appended its own value;
only the dotted form was refused. Hydra itself shows the replacement (composed as
tests/test_per_run_overrides.py does), and ncclgen refuses every form whose key is above a derived key."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from ncclgen import pipeline
from ncclgen.errors import UserError
from ncclgen.load import verl

CONFIG = """\
trainer:
  nnodes: 1
  n_gpus_per_node: 8
  total_epochs: 15
"""
DERIVED = ("trainer.nnodes=2", "trainer.n_gpus_per_node=8")  # what ncclgen appends for 2 nodes of 8 GPUs


@pytest.fixture(scope="module")
def hydra_compose(tmp_path_factory):
    d = tmp_path_factory.mktemp("conf")
    (d / "cfg.yaml").write_text(CONFIG, encoding="utf-8")

    def run(args):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(d), version_base=None):
            return compose("cfg", overrides=list(args))

    return run


ATTACKS = ["trainer={nnodes:4,n_gpus_per_node:1}", "++trainer={nnodes:4,n_gpus_per_node:1}", "~trainer"]


@pytest.mark.parametrize("arg", ATTACKS)
def test_hydra_would_replace_the_derived_count(hydra_compose, arg):
    """Why the refusal is needed: appended after ncclgen's values, Hydra replaces or deletes them."""
    assert hydra_compose(DERIVED).trainer.nnodes == 2
    cfg = hydra_compose([*DERIVED, arg])
    trainer = cfg.get("trainer") or {}
    assert trainer.get("nnodes") != 2


@pytest.mark.parametrize("arg", [*ATTACKS, "trainer.nnodes=4", "+trainer.nnodes=4"])
def test_a_per_run_override_above_a_derived_key_is_refused(arg):
    with pytest.raises(UserError, match="derive"):
        pipeline.make_plan(pipeline.request(workload="verl-grpo-qwen2-7b", extra_args=(arg,)))


def test_the_message_names_the_derived_keys_and_the_way_out():
    with pytest.raises(UserError) as exc:
        pipeline.make_plan(pipeline.request(workload="verl-grpo-qwen2-7b", extra_args=(ATTACKS[0],)))
    text = str(exc.value)
    assert "trainer would replace trainer.nnodes, trainer.n_gpus_per_node" in text
    assert "trainer.NAME=VALUE" in text


def test_a_sibling_key_is_still_allowed(hydra_compose):
    p = pipeline.make_plan(pipeline.request(workload="verl-grpo-qwen2-7b", extra_args=("trainer.total_epochs=2",)))
    assert "trainer.total_epochs=2" in p.launch.command
    derived = [a for a in p.launch.command if a.startswith(("trainer.nnodes=", "trainer.n_gpus_per_node="))]
    per_run = [a for a in p.launch.command if a.startswith("trainer.total_epochs=")]
    assert hydra_compose([*derived, *per_run]).trainer.nnodes == p.launch.nodes


def test_a_key_that_only_shares_a_prefix_is_not_above_a_derived_key():
    assert verl._derived_under("trainer", verl.DERIVED) == list(verl.DERIVED)
    assert verl._derived_under("train", verl.DERIVED) == []
    assert verl._derived_under("trainer.nnodes", verl.DERIVED) == []
