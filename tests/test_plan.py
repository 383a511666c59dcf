"""The plan: tier rules, cumulative tiers, overrides, derived launch, and the `env`/`explain` commands."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap

import pytest

from ncclgen import plan
from ncclgen.cli import main
from ncclgen.load import descriptor, workload
from ncclgen.pipeline import make_plan, request
from ncclgen.plan import rules

CLUSTERS = sorted(descriptor.available())
WORKLOADS = sorted(workload.bundled())
H100 = descriptor.load_cluster("h100-ib")
GRPO = workload.load_workload("verl-grpo-qwen2-7b")


def names(p: plan.Plan) -> list[str]:
    return [e.name for e in p.env]


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def run_cli(*args, cwd=None, env=None):
    """The real console entry point in a subprocess: exit status, stdout, stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "ncclgen", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("wl", WORKLOADS)
def test_tiers_are_cumulative_and_every_value_is_explained(cluster, wl):
    from ncclgen.lint import knowledge

    plans = [make_plan(request(cluster, t, wl, None, (), False)) for t in (1, 2, 3)]
    for lower, higher in itertools.pairwise(plans):
        assert set(names(lower)) <= set(names(higher))
    for e in plans[2].env:
        assert e.reason.strip() and e.source.strip(), e
        info = knowledge.lookup(e.name)
        assert info is not None, f"{e.name} is not in the knowledge base"
        assert info.status in ("active", "deprecated"), (e.name, info.status)


@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("tier", [1, 2, 3])
def test_lint_finds_no_error_in_env_output(cluster, tier):
    from ncclgen import lint

    for wl in WORKLOADS:
        text = main_capture(["env", "--cluster", cluster, "--tier", str(tier), "--workload", wl])
        errors = [f for f in lint.lint_text(text, "env-output") if f.severity == "error"]
        assert not errors, (cluster, tier, wl, errors)


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_lint_flags_nothing_in_ncclgens_own_output_against_its_cluster(cluster):
    """ncclgen's own output is never flagged, not even as info: every pin has its reason in explain
    (issue 16: NG009 on the tier-1 TORCH_NCCL_ASYNC_ERROR_HANDLING=3 pin, 12 times in init's CI check)."""
    from ncclgen import lint

    desc = descriptor.load_cluster(cluster)
    for wl in WORKLOADS:
        for tier in (1, 2, 3):
            text = main_capture(["env", "--cluster", cluster, "--tier", str(tier), "--workload", wl])
            found = [(f.code, f.variable, f.message) for f in lint.lint_text(text, "env-output", desc)]
            assert found == [], (cluster, tier, wl, found)


def main_capture(argv) -> str:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv) == 0
    return buf.getvalue()


def test_ib_hca_is_exact_ports_and_never_a_storage_nic():
    env = plan.build(H100, GRPO, 1).env_dict()
    assert env["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"
    selected = {p.split(":")[0] for p in env["NCCL_IB_HCA"][1:].split(",")}
    assert not selected & {s.name for s in H100.network.storage}
    assert env["NCCL_SOCKET_IFNAME"] == "=bond0" and env["GLOO_SOCKET_IFNAME"] == "bond0"


def test_no_invented_or_default_only_settings_from_the_seed_article():
    for t in (1, 2, 3):
        env = plan.build(H100, GRPO, t).env_dict()
        for bogus in ("NCCL_TIMEOUT", "NCCL_FP16_ENABLE", "NCCL_MAX_RINGS", "NCCL_IB_DISABLE"):
            assert bogus not in env


def test_no_timeout_knob_is_appended_and_explain_states_verls_own():
    """verl >= 0.8 reads no timeout key (actor_rollout_ref.nccl_timeout is dead): nothing is appended,
    and explain names the timeout that applies."""
    p = plan.build(H100, GRPO, 1, nodes=3)
    assert p.launch.command[-2:] == ("trainer.nnodes=3", "trainer.n_gpus_per_node=8")
    assert not any("timeout" in a for a in p.launch.command)
    out = main_capture(["explain", "--workload", "verl-grpo-qwen2-7b"])
    assert "collective timeout: 1800 s, no config key sets it" in out and "timeout_second=None" in out


def test_derived_overrides_must_not_be_typed_twice(tmp_path):
    path = write(
        tmp_path,
        "w.yaml",
        """\
        name: twice
        description: d
        launcher: ray
        framework: verl
        verl: "0.9.1"
        command: [python3, -m, verl.trainer.main_ppo, trainer.nnodes=2]
    """,
    )
    rc, out, err = run_cli("env", "--workload", path)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "w.yaml:6" in err and "command[3]" in err and "derived" in err
    rc, out, err = run_cli("env", "--workload", "verl-sft", "--", "trainer.n_gpus_per_node=4")
    assert rc == 0  # derived only for Ray drivers; torchrun's SFT takes it as a plain override
    rc, out, err = run_cli("env", "--", "trainer.n_gpus_per_node=4")
    assert rc == 2 and out == "" and err.count("\n") == 1 and "-- trainer.n_gpus_per_node=4" in err


def test_version_gating_of_channel_counts(tmp_path):
    old = H100.__class__(
        **{**H100.__dict__, "software": H100.software.__class__(nccl="2.16.5", torch="2.1.0", cuda="12.1")}
    )
    env_old = plan.build(old, GRPO, 3).env_dict()
    env_new = plan.build(H100, GRPO, 3).env_dict()
    assert "NCCL_MIN_NCHANNELS" in env_old and "NCCL_MIN_CTAS" not in env_old
    assert "NCCL_MIN_CTAS" in env_new and "NCCL_MIN_NCHANNELS" not in env_new
    assert env_new["NCCL_MIN_CTAS"] == "16"  # two per rail, 8 rails


def test_socket_threads_only_on_the_tcp_transport():
    assert "NCCL_SOCKET_NTHREADS" not in plan.build(H100, GRPO, 3).env_dict()
    tcp = H100.__class__(
        **{**H100.__dict__, "network": H100.network.__class__(fabric="tcp", bootstrap_interfaces=("eth0",))}
    )
    env = plan.build(tcp, GRPO, 3).env_dict()
    assert env["NCCL_SOCKET_NTHREADS"] == "4" and env["NCCL_NSOCKS_PERTHREAD"] == "4"
    assert int(env["NCCL_SOCKET_NTHREADS"]) * int(env["NCCL_NSOCKS_PERTHREAD"]) <= 64
    assert "NCCL_IB_HCA" not in env and "NCCL_IB_QPS_PER_CONNECTION" not in env
    assert "NCCL_SOCKET_NTHREADS" not in plan.build(tcp, GRPO, 2).env_dict()


def test_megatron_and_large_model_rules():
    big = workload.load_workload("verl-grpo-qwen3-235b-megatron")
    t1, t2 = plan.build(H100, big, 1).env_dict(), plan.build(H100, big, 2).env_dict()
    assert t1["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    assert "NCCL_NVLS_ENABLE" not in t2  # issue 31: verl turns NVLS off only in its DeepSeek scripts / on GB200
    assert int(t2["NCCL_BUFFSIZE"]) > 4 * 1024 * 1024  # never below NCCL's 4 MiB default here
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in plan.build(H100, GRPO, 3).env_dict()
    assert "NCCL_BUFFSIZE" not in plan.build(H100, GRPO, 3).env_dict()  # 7B keeps the default


def test_debug_flag_switches_to_info_with_net_logging():
    env = plan.build(H100, GRPO, 1, debug=True).env_dict()
    assert env["NCCL_DEBUG"] == "INFO" and "NET" in env["NCCL_DEBUG_SUBSYS"].split(",")
    # without --debug: INFO for the transport check (its file, INIT only); WARN with --transport-check off
    env = plan.build(H100, GRPO, 1).env_dict()
    assert (env["NCCL_DEBUG"], env["NCCL_DEBUG_SUBSYS"]) == ("INFO", "INIT")


def test_binding_follows_the_gpu_numa_node_and_is_applied_only_at_tier_3():
    p1, p3 = plan.build(H100, GRPO, 1), plan.build(H100, GRPO, 3)
    assert not p1.launch.bind and p3.launch.bind
    assert [(b.local_rank, b.numa, b.cpus) for b in p3.binding][3:5] == [
        (3, 0, "0-55,112-167"),
        (4, 1, "56-111,168-223"),
    ]
    assert "NCCL_IGNORE_CPU_AFFINITY" in p3.env_dict() and "NCCL_IGNORE_CPU_AFFINITY" not in p1.env_dict()


def test_set_overrides_win_and_say_what_they_replace():
    p = plan.build(H100, GRPO, 2, overrides=(("NCCL_IB_QPS_PER_CONNECTION", "8"), ("NCCL_DEBUG_FILE", "/tmp/a,b^c")))
    by = {e.name: e for e in p.env}
    assert by["NCCL_IB_QPS_PER_CONNECTION"].value == "8"
    assert "replaces rule ib-qps value '4'" in by["NCCL_IB_QPS_PER_CONNECTION"].reason
    assert by["NCCL_DEBUG_FILE"].value == "/tmp/a,b^c" and str(by["NCCL_DEBUG_FILE"].origin) == "--set"


def test_vendor_settings_win_over_generic_rules():
    from dataclasses import replace

    from ncclgen.load.descriptor import EnvSetting

    vendor = replace(
        H100,
        vendor_env=(
            EnvSetting(name="NCCL_IB_QPS_PER_CONNECTION", value="16", reason="vendor says", source="site", tier=1),
        ),
    )
    by = {e.name: e for e in plan.build(vendor, GRPO, 3).env}
    assert by["NCCL_IB_QPS_PER_CONNECTION"].value == "16" and str(by["NCCL_IB_QPS_PER_CONNECTION"].origin) == "vendor"


def test_explain_states_the_p2p_chunk_size_that_takes_effect():
    """Azure publishes NCCL_P2P_NET_CHUNKSIZE=2097152; NCCL caps it at NCCL_BUFFSIZE/8 (src/init.cc:841-843)."""
    azure = descriptor.load_cluster("azure-nd-h100-v5")
    by = {e.name: e for e in plan.build(azure, GRPO, 2).env}
    assert by["NCCL_P2P_NET_CHUNKSIZE"].value == "2097152"
    assert "NCCL_BUFFSIZE=4194304, 524288 (512 KiB) takes effect" in by["NCCL_P2P_NET_CHUNKSIZE"].reason
    big = {e.name: e for e in plan.build(azure, GRPO, 2, overrides=(("NCCL_BUFFSIZE", "8388608"),)).env}
    assert "this plan's NCCL_BUFFSIZE=8388608, 1048576 (1 MiB) takes effect" in big["NCCL_P2P_NET_CHUNKSIZE"].reason
    fits = {e.name: e for e in plan.build(azure, GRPO, 2, overrides=(("NCCL_BUFFSIZE", "16777216"),)).env}
    assert "takes effect" not in fits["NCCL_P2P_NET_CHUNKSIZE"].reason


@pytest.mark.parametrize(
    "args, expect",
    [
        (["--tier", "0"], "--tier"),
        (["--tier", "4"], "--tier"),
        (["--tier", "x"], "--tier"),
        (["--set", "NO_EQUALS"], "NAME=VALUE"),
        (["--set", "1BAD=x"], "NAME=VALUE"),
        (["--set", "NCCL_TIMEOUT=1800"], "NCCL_TIMEOUT"),
        (["--set", "NCCL_IB_TIMEOUT=abc"], "NCCL_IB_TIMEOUT"),
        (["--workload", "nope"], "unknown workload"),
        (["--cluster", "nope"], "unknown cluster"),
        (["--nodes", "0"], "--nodes"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, expect):
    rc, out, err = run_cli("env", *args)
    assert rc == 2 and out == "", (args, out)
    assert err.count("\n") == 1 and expect in err and "Traceback" not in err, err


def test_malformed_workload_yaml(tmp_path):
    for text, where in [
        ("name: [unclosed\n", "w.yaml:2"),
        ("- a\n- b\n", "expected a mapping"),
        ("name: x\ndescription: d\nlauncher: mpirun\ncommand: [a]\n", "launcher"),
    ]:
        path = write(tmp_path, "w.yaml", text)
        rc, _, err = run_cli("env", "--workload", path)
        assert rc == 2 and where in err and err.count("\n") == 1, (text, err)


def test_shell_format_is_safe_to_source_for_any_value(tmp_path):
    hostile = "a,b ^=c $(touch PWNED) `touch PWNED2` 'q' \"d\" ; * \n x"
    rc, out, err = run_cli("env", "--set", f"NCCL_DEBUG_FILE={hostile}", cwd=tmp_path)
    assert rc == 0, err
    script = tmp_path / "env.sh"
    script.write_text(out)
    dump = subprocess.run(
        ["bash", "-c", 'set -eu; source ./env.sh; printf %s "$NCCL_DEBUG_FILE"'],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout
    assert dump == hostile
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "PWNED2").exists()


def test_json_format_round_trips_the_plan():
    _, out, _ = run_cli("env", "--tier", "3", "--format", "json")
    doc = json.loads(out)
    assert doc["tier"] == 3 and doc["cluster"] == "h100-ib"
    assert {e["name"]: e["value"] for e in doc["env"]} == make_plan(request(None, 3, None, None, (), False)).env_dict()
    assert all(e["reason"] and e["source"] for e in doc["env"])


def test_explain_shows_reasons_binding_and_launch():
    out = main_capture(["explain", "--tier", "3", "--workload", "verl-sft"])
    assert "NCCL_IB_HCA" in out and "why:" in out and "source:" in out
    assert "0-55,112-167" in out and "numactl --physcpubind" in out
    assert "torchrun --nnodes=2 --nproc-per-node=8" in out and "verl.trainer.sft_trainer" in out


def test_project_defaults_precedence(tmp_path):
    (tmp_path / "ncclgen.yaml").write_text("tier: 2\nworkload: verl-sft\n")
    doc = json.loads(run_cli("env", "--format", "json", cwd=tmp_path)[1])
    assert (doc["tier"], doc["workload"]) == (2, "verl-sft")
    doc = json.loads(run_cli("env", "--format", "json", cwd=tmp_path, env={"NCCLGEN_TIER": "3"})[1])
    assert doc["tier"] == 3  # env var beats ncclgen.yaml
    doc = json.loads(run_cli("env", "--format", "json", "--tier", "1", cwd=tmp_path, env={"NCCLGEN_TIER": "3"})[1])
    assert doc["tier"] == 1  # flag beats both
    (tmp_path / "ncclgen.yaml").write_text("tier: 5\n")
    rc, _, err = run_cli("env", cwd=tmp_path)
    assert rc == 2 and "ncclgen.yaml:1:7: tier: expected a value <= 3" in err


def test_every_rule_is_well_formed():
    seen = set()
    for r in rules.load_rules():
        assert r.id not in seen
        seen.add(r.id)
        # A YAML comment can silently cut an unquoted value; sources end in a real citation.
        assert r.reason and r.source and not r.source.endswith((" issue", " PR"))
