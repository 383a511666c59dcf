"""Entry-point fuzz (issue 33) over what the hardening pass found still open: the per-job Slurm options,
the pod settings and `-- KEY=VALUE`. The contract of tests/test_fuzz_entry.py (exit 0, 1 or 2; on 2 one
error line, no traceback, no control character), and on success what the output must be: a script bash
parses, whose #SBATCH lines each carry one option; manifests whose labels, annotations (total size in
bytes included) and names the API server would accept (ncclgen/load/k8snames.py); a verl command whose
derived trainer.nnodes no per-run argument replaces. Derandomized, about 40 examples per entry point."""

from __future__ import annotations

import re
import subprocess

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fuzz_entry import FUZZ, HOSTILE, call, check

values = st.one_of(
    st.sampled_from(
        [
            *HOSTILE,
            "gpu",
            "a b",
            "x\ny",
            "\ufeffx",
            "\u200b",
            "\u0421",
            "ncclgen.io/explain",
            "ncclgen.io/explain=x",
            "a=b",
        ]
    ),
    st.text(max_size=16),
)
SLURM_OPTIONS = [
    "--job-name",
    "--time",
    "--partition",
    "--account",
    "--qos",
    "--constraint",
    "--reservation",
    "--dependency",
    "--output",
    "--error",
    "--sbatch",
    "--signal",
    "--container-image",
    "--container-workdir",
    "--container-mounts",
    "--pass-env",
]
POD_OPTIONS = [
    "--label",
    "--annotation",
    "--volume",
    "--service-account",
    "--priority-class",
    "--image-pull-secret",
    "--scheduler-name",
    "--secret-env",
    "--image",
    "--namespace",
    "--name",
]


def _bash_parses(script: str) -> bool:
    return subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True).returncode == 0


@settings(FUZZ, max_examples=40)
@given(st.lists(st.tuples(st.sampled_from(SLURM_OPTIONS), values), min_size=1, max_size=3))
def test_slurm_job_options(pairs):
    argv = ["slurm", "--cluster", "local-ci", "--workload", "bench"]
    for option, value in pairs:
        argv += [option, value]
    code, out, err = call(argv)
    check(argv, code, out, err)
    if code == 0:
        assert _bash_parses(out), argv
        for line in out.splitlines():
            if line.startswith("#SBATCH"):
                assert re.fullmatch(r"#SBATCH --[a-z][a-z0-9-]*(=\S.*)?", line), (argv, line)


def _meta_ok(node) -> None:
    """Every labels/annotations mapping in the manifests passes the API server's checks."""
    from ncclgen.load import k8snames

    if isinstance(node, dict):
        meta = node.get("metadata")
        if isinstance(meta, dict):
            for key, value in (meta.get("labels") or {}).items():
                k8snames.qualified_name(key, "label key")
                k8snames.label_value(value, "label value")
            annotations = meta.get("annotations") or {}
            for key in annotations:
                k8snames.qualified_name(key.lower(), "annotation key")
            k8snames.check_annotations_size(annotations)
        for v in node.values():
            _meta_ok(v)
    elif isinstance(node, list):
        for v in node:
            _meta_ok(v)


@settings(FUZZ, max_examples=40)
@given(st.lists(st.tuples(st.sampled_from(POD_OPTIONS), values), min_size=1, max_size=3))
def test_pod_settings(pairs):
    argv = ["k8s", "--cluster", "local-ci", "--workload", "bench"]
    for option, value in pairs:
        argv += [option, value]
    code, out, err = call(argv)
    check(argv, code, out, err)
    if code == 0:
        docs = [d for d in yaml.safe_load_all(out) if d]
        assert docs
        _meta_ok(docs)
        for option, value in pairs:
            if option == "--annotation" and value.lower().startswith("ncclgen.io/"):
                raise AssertionError(f"ncclgen's own key accepted: {value!r}")


keys = st.one_of(
    st.sampled_from(["trainer", "trainer.nnodes", "trainer.n_gpus_per_node", "trainer.total_epochs", "data"]),
    st.from_regex(r"[a-z_]{1,8}(\.[a-z_]{1,8}){0,2}", fullmatch=True),
)
overrides = st.tuples(st.sampled_from(["", "+", "++", "~"]), keys, st.sampled_from(["=", ""]), values).map(
    lambda t: f"{t[0]}{t[1]}{t[2]}{t[3] if t[2] else ''}"
)


@settings(FUZZ, max_examples=40)
@given(st.lists(st.one_of(overrides, values), min_size=1, max_size=3))
def test_per_run_overrides(extra):
    argv = ["slurm", "--cluster", "local-ci", "--workload", "verl-grpo-qwen2-7b", "--", *extra]
    code, out, err = call(argv)
    check(argv, code, out, err)
    if code == 0:
        assert _bash_parses(out), argv
        for arg in extra:  # nothing that replaces or deletes trainer.nnodes got through
            key = arg.lstrip("+~").split("=", 1)[0]
            assert key not in ("trainer", "trainer.nnodes", "trainer.n_gpus_per_node"), arg
