"""Hostile names, namespaces, images, --set values and -- ARGS stay single, escaped scalars in the
manifests, or are one-line errors (split from tests/test_render_k8s.py)."""

from __future__ import annotations

import shlex
from pathlib import Path

import k8s_validate as kv
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from test_render_k8s import (
    containers,
    docs_of,
    driver_argv,
    env_of,
    job_of,
    kubelet_expand,
    run_cli,
)

from ncclgen.load import workload as workloadmod
from ncclgen.pipeline import make_plan, request
from ncclgen.render import k8s as render_k8s

# -- hostile input ---------------------------------------------------------------------------------------------

HOSTILE = [
    "a\nb",
    "key: value",
    "'single'",
    '"double"',
    "{{ template }}",
    ": colon",
    "- dash",
    "!!python/object:os.system",
    "&anchor",
    "*alias",
    "# comment",
    "$(HOME)",
    "$$",
    "tab\there",
    "trailing ",
    " leading",
    "null",
    "true",
    "0x10",
    "[1, 2]",
    "{a: b}",
    "|",
    ">",
    "%TAG",
    "@at",
    "`tick`",
    "\\backslash",
    "ünïcödé",
    "--- doc",
    "...",
]


@pytest.mark.parametrize(
    "name",
    ["Bad", "a_b", "9lives", "x-", "a.b", "a\nb", "a: b", "'a'", "{{a}}", "- a", "!!python/object", "", "a" * 64],
)
def test_bad_name_is_one_line_exit_2(name, capsys, tmp_path):
    out_file = tmp_path / "out.yaml"
    rc, out, err = run_cli(["--workload", "verl-sft", "--name", name, "-o", str(out_file)], capsys)
    assert rc == 2 and out == "" and not out_file.exists()
    assert err.count("\n") == 1 and err.startswith("ncclgen: error: --name") and "DNS-1035" in err


def test_pytorchjob_name_leaves_room_for_worker_services(capsys):
    # 2 nodes: "<name>-worker-0" must fit 63 characters, so the name may have 54.
    assert run_cli(["--workload", "verl-sft", "--name", "a" * 54], capsys)[0] == 0
    rc, _, err = run_cli(["--workload", "verl-sft", "--name", "a" * 55], capsys)
    assert rc == 2 and "at most 54 characters" in err


@pytest.mark.parametrize(
    "flag,value",
    [
        ("--namespace", "Bad_NS"),
        ("--namespace", "a\nb"),
        ("--image", "img with space"),
        ("--image", "img\n"),
        ("--image", ""),
    ],
)
def test_bad_namespace_or_image(flag, value, capsys):
    rc, out, err = run_cli([flag, value], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1 and err.startswith(f"ncclgen: error: {flag}")


def test_hostile_set_values_and_args_stay_single_scalars(tmp_path, capsys):
    """Values and argv elements come back from yaml.safe_load exactly, one scalar each."""
    wl = yaml.safe_load(Path(workloadmod.bundled()["bench"]).read_text())
    wl["name"] = "hostile"
    wl["command"] = ["python3", *HOSTILE]
    path = tmp_path / "hostile.yaml"
    path.write_text(yaml.safe_dump(wl))
    sets = [f"NCCLGEN_TEST_{i}={v}" for i, v in enumerate(HOSTILE)]
    p = make_plan(request("local-ci", 3, str(path), None, (), False, unchecked_sets=tuple(sets)))
    text = render_k8s.render(p, kind="pytorchjob")
    docs = docs_of(text)
    job = job_of(docs)
    for c in containers(job):
        env = dict(env_of(c))
        for i, v in enumerate(HOSTILE):
            assert env[f"NCCLGEN_TEST_{i}"] == v
        cmd = [kubelet_expand(a) for a in c["command"]]
        assert cmd[-len(HOSTILE) :] == HOSTILE
    annotation = kv.pod_templates(job)[0][1]["metadata"]["annotations"]["ncclgen.io/explain"]
    assert shlex.split(annotation)[-2:] == ["--set-unchecked", f"NCCLGEN_TEST_{len(HOSTILE) - 1}={HOSTILE[-1]}"]
    for d in docs:
        kv.validate(d)


def test_hostile_args_in_rayjob_entrypoint(tmp_path):
    wl = yaml.safe_load(Path(workloadmod.bundled()["verl-ppo-critic"]).read_text())
    wl["name"] = "hostile-ray"
    wl["framework"] = "torch"  # a verl command is checked against verl's keys; this one is not verl
    del wl["verl"]
    wl["command"] = ["python3", "-m", "x", *HOSTILE]
    path = tmp_path / "hostile-ray.yaml"
    path.write_text(yaml.safe_dump(wl))
    p = make_plan(request("h100-ib", 1, str(path), None, (), False))
    assert driver_argv(docs_of(render_k8s.render(p))) == list(p.launch.command)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("$()ab{} \n"), max_size=16))
def test_kubelet_escaping_round_trips(s):
    assert kubelet_expand(render_k8s._kubelet_literal(s), {"a": "EXPANDED", "b": "X"}) == s
