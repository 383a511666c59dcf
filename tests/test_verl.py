"""verl as released: the knowledge base, override checking, and the bundled launch lines composed and
validated by the real verl releases (installed by tests/run.sh with pip install --no-deps --target)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
from conftest import skip_or_fail

from ncclgen import plan
from ncclgen.errors import UserError
from ncclgen.load import descriptor, verl, workload

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TREES = os.environ.get("NCCLGEN_VERL_TREES", os.path.join(sys.prefix, "verl"))
H100 = descriptor.load_cluster("h100-ib")
NEWEST = list(verl.releases())[-1]


def tree(version: str) -> str:
    root = os.path.join(TREES, version)
    if not os.path.isfile(os.path.join(root, "verl", "version", "version")):
        skip_or_fail(
            f"verl {version} is not installed in {root} (tests/run.sh installs it: "
            f"pip install --no-deps --target {root} verl=={version})"
        )
    return root


def check(*overrides, module="verl.trainer.main_ppo", version=NEWEST, derived=verl.DERIVED):
    return [m for _, m in verl.check_command(("python3", "-m", module, *overrides), version, derived=derived)]


# -- the checker, from the generated tables ------------------------------------------------------------


def test_unknown_key_suggests_the_close_one():
    (msg,) = check("actor_rollout_ref.rollout.nn=3")
    assert "unknown key actor_rollout_ref.rollout.nn" in msg and "did you mean 'actor_rollout_ref.rollout.n'" in msg


def test_removed_and_dead_keys_name_what_replaces_them():
    (grad,) = check("model_engine=megatron", "actor_rollout_ref.actor.megatron.grad_offload=True")
    assert "removed in 0.9.1" in grad and "PR #7544" in grad and "param_offload" in grad
    assert check("model_engine=megatron", "actor_rollout_ref.actor.megatron.grad_offload=True", version="0.9.0") == []
    (rm,) = check("reward_model.reward_manager=dapo")
    assert "does nothing" in rm and "use reward.reward_manager.name" in rm
    assert check("reward_model.reward_manager=dapo", version="0.8.0") == []  # still migrated in 0.8.0
    (nt,) = check("actor_rollout_ref.nccl_timeout=1200", version="0.8.0")
    assert "does nothing" in nt and "#7815" in nt
    (mod,) = check(module="verl.trainer.fsdp_sft_trainer")
    assert "use verl.trainer.sft_trainer" in mod and "#5382" in mod
    (pk,) = check("data.prompt_key=question", module="verl.trainer.sft_trainer")
    assert "use data.messages_key" in pk


def test_plus_follows_hydra_append_rules():
    (msg,) = check("+trainer.total_epochs=3")
    assert "already exists" in msg and "without the +" in msg
    # a key whose default is null may be appended (Hydra 1.3 config_loader_impl is_add)
    assert (
        check(
            "model_engine=megatron",
            "+actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform",
        )
        == []
    )
    assert check("+actor_rollout_ref.actor.optim.override_optimizer_config.foo=1", "model_engine=megatron") == []
    (open_dict,) = check("model_engine=megatron", "actor_rollout_ref.actor.megatron.override_transformer_config.zzz=1")
    assert "add a new key to it with +actor_rollout_ref" in open_dict
    (parent,) = check("+actor_rollout_ref.actr.foo=1")
    assert "unknown parent key actor_rollout_ref.actr" in parent


def test_groups_config_names_and_derived_keys():
    (opt,) = check("model_engine=megatrn")
    assert "no option 'megatrn'" in opt and "did you mean 'megatron'" in opt
    assert check("--config-name=ppo_megatron_trainer.yaml", "actor_rollout_ref.actor.megatron.param_offload=True") == []
    (name,) = check("--config-name=ppo_megatron_traner")
    assert "did you mean 'ppo_megatron_trainer'" in name
    (d,) = check("trainer.nnodes=2")
    assert "derived by ncclgen" in d


def test_a_range_is_checked_on_every_release_in_it():
    assert verl.versions_in(">=0.8.0,<0.9.1") == ["0.8.0", "0.9.0"]
    msgs = check("reward_model.reward_manager=dapo", version=">=0.8.0")
    assert len(msgs) == 2 and all("0.9" in m for m in msgs)
    with pytest.raises(ValueError, match="knows"):
        verl.versions_in("0.6.0")


def test_the_timeout_that_applies_is_verls_own():
    t = verl.timeout(("python3", "-m", "verl.trainer.main_ppo"), NEWEST)
    assert t["knob"] is None and t["seconds"] == 1800 and "timeout_second=None" in t["why"]
    assert verl.timeout(("python3", "-m", "verl.trainer.sft_trainer"), NEWEST)["seconds"] == 36000


def test_a_variable_verl_overwrites_at_import_is_refused():
    from ncclgen.pipeline import make_plan, request

    with pytest.raises(
        UserError,
        match=r"--debug: cannot take effect: .*NCCL_DEBUG=WARN at import "
        r"\(verl/trainer/sft_trainer.py:21\)",
    ):
        make_plan(request("h100-ib", 1, "verl-sft", debug=True))
    with pytest.raises(UserError, match=r"NCCL_DEBUG=INFO \(--set\): cannot take effect"):
        make_plan(request("h100-ib", 1, "verl-sft", sets=("NCCL_DEBUG=INFO",)))
    assert make_plan(request("h100-ib", 1, "verl-grpo-qwen2-7b", debug=True)).env_dict()["NCCL_DEBUG"] == "INFO"


# -- workloads ----------------------------------------------------------------------------------------


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def test_a_minimal_workload_loads_and_plans(tmp_path):
    path = write(
        tmp_path,
        "tiny-job.yaml",
        """\
        launcher: torchrun
        nodes: 2
        command: [python3, train.py]
    """,
    )
    wl = workload.load(path)
    assert wl.name == "tiny-job" and wl.description == "" and wl.setup == ()
    p = plan.build(H100, wl, 1)
    assert p.launch.command == ("python3", "train.py") and p.launch.nodes == 2


@pytest.mark.parametrize(
    "body, where, what",
    [
        ('setup: ["a\\rb"]\n', "setup[0]", "control character"),
        ("setup: [NCCLGEN_SETUP_EOF]\n", "setup[0]", "heredoc"),
        ("timeout_s: 900\n", "timeout_s", "nothing reads it"),
        ("", "verl", "names the verl release"),
        ('verl: "0.5.0"\n', "verl", "not in ncclgen's knowledge base"),
    ],
)
def test_verl_workload_errors(tmp_path, body, where, what):
    path = write(
        tmp_path,
        "w.yaml",
        "launcher: ray\nframework: verl\n" + body + "command: [python3, -m, verl.trainer.main_ppo]\n",
    )
    with pytest.raises(UserError) as e:
        workload.load(path)
    assert where in str(e.value) and what in str(e.value) and "w.yaml:" in str(e.value)


def test_workload_override_error_points_at_the_argument(tmp_path):
    path = write(
        tmp_path,
        "w.yaml",
        'launcher: ray\nframework: verl\nverl: "0.9.1"\n'
        "command:\n  - python3\n  - -m\n  - verl.trainer.main_ppo\n  - trainer.total_epoch=1\n",
    )
    with pytest.raises(UserError) as e:
        workload.load(path)
    assert "w.yaml:8:" in str(e.value) and "command[3]" in str(e.value) and "trainer.total_epochs" in str(e.value)


def test_workloads_are_searched_like_clusters(tmp_path, monkeypatch):
    mine, cwd = tmp_path / "mine", tmp_path / "cwd"
    (cwd / "workloads").mkdir(parents=True)
    mine.mkdir()
    (cwd / "workloads" / "bench.yaml").write_text("launcher: torchrun\ncommand: [here]\n")
    (cwd / "workloads" / "local.yaml").write_text("launcher: torchrun\ncommand: [local]\n")
    (mine / "local.yaml").write_text("launcher: torchrun\ncommand: [env]\n")
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("NCCLGEN_WORKLOADS", str(mine))
    assert workload.load_workload("local").command == ("env",)
    assert workload.load_workload("bench").command == ("here",)
    assert "verl-sft" in workload.available()


def test_ncclgen_appends_only_knobs_verl_reads():
    wl = workload.load_workload("verl-grpo-qwen2-7b")
    cmd = plan.build(H100, wl, 1, nodes=3).launch.command
    assert cmd[-2:] == ("trainer.nnodes=3", "trainer.n_gpus_per_node=8")
    assert not any("nccl_timeout" in a for a in cmd)


# -- against the real releases ------------------------------------------------------------------------


def bundled_jobs():
    """(workload name, version, rendered argv) for every bundled verl workload and targeted release."""
    out = []
    for name, path in workload.bundled().items():
        wl = workload.load(path)
        if wl.framework == "verl":
            argv = list(plan.build(H100, wl, 1).launch.command)
            out += [(name, v, argv) for v in verl.versions_in(wl.verl)]
    return out


def run_compose(version, jobs, validate=False):
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"verl-compose-{os.getpid()}-{version}.json")
    env = {**os.environ, "PYTHONPATH": tree(version)}
    r = subprocess.run(
        [sys.executable, os.path.join(HERE, "verl_compose.py"), out] + (["--validate"] if validate else []),
        input=json.dumps(jobs),
        text=True,
        capture_output=True,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    with open(out, encoding="utf-8") as f:
        res = json.load(f)
    os.unlink(out)
    return res


PROBES = [
    # (override, does Hydra compose it on 0.9.1 ppo_trainer?) - the checker must agree with Hydra
    ("trainer.total_epochs=2", True),
    ("trainer.total_epoch=2", False),
    ("+trainer.total_epochs=2", False),
    ("++trainer.total_epochs=2", True),
    ("+trainer.my_new_key=1", True),
    ("actor_rollout_ref.actor.optim.override_optimizer_config.x=1", False),
    ("model_engine=megatron", True),
    ("model_engine=nope", False),
    ("~trainer.total_epochs", True),
]


@pytest.mark.parametrize("version", list(verl.releases()))
def test_bundled_launch_lines_compose_and_the_checker_agrees_with_hydra(version):
    jobs = [j for j in bundled_jobs() if j[1] == version]
    base = ["python3", "-m", "verl.trainer.main_ppo"]
    probes = [[*base, o] for o, _ in PROBES]
    res = run_compose(version, [argv for _, _, argv in jobs] + probes)
    for (name, _, _), r in zip(jobs, res):
        assert r["composed"], f"{name} on verl {version}: {r['error']}"
    for (override, composes), r in zip(PROBES, res[len(jobs) :]):
        assert r["composed"] == composes, (override, r["error"])
        assert (check(override, version=version, derived=()) == []) == composes, override


@pytest.mark.slow
def test_bundled_workloads_pass_verls_own_validation():
    """verl's validate_config (PPO) and the SFT trainer's config dataclasses, run on CPU."""
    old_235b = [
        a
        for a in workload.load_workload("verl-grpo-qwen3-235b-megatron").command
        if "dynamic_bsz" not in a and "max_token_len" not in a
    ]
    by_version: dict[str, list] = {}
    for name, v, argv in bundled_jobs():
        by_version.setdefault(v, []).append((name, argv))
    for v, jobs in by_version.items():
        res = run_compose(v, [argv for _, argv in jobs] + [[*old_235b, "trainer.nnodes=8"]], validate=True)
        for (name, _), r in zip(jobs, res):
            assert r["validated"], f"{name} on verl {v}: {r['error']}"
        # the control: without the example's batch settings verl rejects the 235B line
        assert res[-1]["composed"] and res[-1]["validated"] is False and "NoneType" in res[-1]["error"]


@pytest.mark.slow
def test_knowledge_base_matches_the_released_wheels():
    roots = [f"{tree(v)}={v}" for v in verl.releases()]
    r = subprocess.run(
        [sys.executable, os.path.join(REPO, "tools", "verl_kb.py"), "--check", *roots],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("command", ["slurm", "k8s", "explain"])
def test_per_run_overrides_are_checked_and_carried(command, capsys):
    from ncclgen.cli import main

    args = [command, "--workload", "verl-grpo-qwen2-7b", "--", "actor_rollout_ref.rollout.n=16"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "actor_rollout_ref.rollout.n=16" in out.replace("\\\n", "")
    # the Regenerate: line and the ncclgen.io/explain annotation repeat it
    if command != "explain":
        assert re.search(
            r"--workload verl-grpo-qwen2-7b --nodes 2 (--target pod )?-- actor_rollout_ref.rollout.n=16", out
        )
    assert main([command, "--workload", "verl-grpo-qwen2-7b", "--", "actor_rollout_ref.rollout.nn=16"]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.count("\n") == 1 and "did you mean 'actor_rollout_ref.rollout.n'" in cap.err
    assert main([command, "--workload", "verl-grpo-qwen2-7b", "--", "trainer.nnodes=4"]) == 2
    assert "derived by ncclgen" in capsys.readouterr().err
