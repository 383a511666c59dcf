"""`ncclgen k8s`: manifests the API server and the operators accept, carrying exactly the plan.

Every rendered object goes through tests/k8s_validate.py (CRD structural schemas with unknown fields
rejected, the kubernetes client's typed models, pod rules, operator webhook rules).
Goldens: examples/*/job.yaml (tests/test_examples.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import k8s_validate as kv
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ncclgen.cli import main
from ncclgen.errors import UserError
from ncclgen.load import descriptor
from ncclgen.load import workload as workloadmod
from ncclgen.pipeline import make_plan, request
from ncclgen.plan import launch, preflight
from ncclgen.render import k8s as render_k8s

PREFLIGHT = ["bash", f"{render_k8s.CONFIG_DIR}/{render_k8s.PREFLIGHT_SCRIPT}"]
PREFLIGHT_KEYS = [render_k8s.PREFLIGHT_MODULE, render_k8s.PREFLIGHT_SPEC, render_k8s.PREFLIGHT_SCRIPT]


def preflight_files(p) -> dict[str, str]:
    """The ConfigMap entries of the pod's preflight: the program, the plan's spec, the runner."""
    return {
        render_k8s.PREFLIGHT_MODULE: (ROOT / "ncclgen" / "jobside" / "preflight.py").read_text(),
        render_k8s.PREFLIGHT_SPEC: preflight.encode(preflight.spec(p)) + "\n",
        render_k8s.PREFLIGHT_SCRIPT: render_k8s._Job.preflight_script(),
    }


ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def plan_for(cluster, tier, workload, nodes=None, sets=(), debug=False, unchecked_sets=()):
    return make_plan(request(cluster, tier, workload, nodes, sets, debug, unchecked_sets=unchecked_sets))


def docs_of(text: str) -> list[dict]:
    """yaml.safe_load_all, with libyaml's loader when present (the pure-Python one is 10x slower)."""
    return list(yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))


def job_of(docs: list[dict]) -> dict:
    return next(d for d in docs if d["kind"] in ("PyTorchJob", "RayJob", "TrainJob"))


def driver_argv(docs: list[dict]) -> list[str]:
    """The Ray driver's argv as bash builds it from the ConfigMap's driver script (its exec line run as
    printf '%s\\0'), and a check that the RayJob's entrypoint names that script."""
    job = job_of(docs)
    assert job["spec"]["entrypoint"] == f"bash {render_k8s.CONFIG_DIR}/{render_k8s.RAY_DRIVER_SCRIPT}"
    (script,) = [d["data"][render_k8s.RAY_DRIVER_SCRIPT] for d in docs if d["kind"] == "ConfigMap"]
    assert script.count("\nexec ") == 1
    probe = script.replace("\nexec ", "\nprintf '%s\\0' ", 1)
    out = subprocess.run(["bash", "-c", probe], capture_output=True, check=True).stdout
    return [a.decode() for a in out.split(b"\0")[:-1]]


def containers(job: dict) -> list[dict]:
    return [c for _, t in kv.pod_templates(job) for c in t["spec"]["containers"]]


def kubelet_expand(s: str, env: dict[str, str] | None = None) -> str:
    """What the kubelet hands the process for a command/args/env string (k8s third_party/forked/golang/
    expansion/expand.go): `$$` -> `$`, `$(NAME)` -> NAME's value if defined, anything else unchanged."""
    env = env or {}
    out, i = [], 0
    while i < len(s):
        if s[i] == "$" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                end = s.find(")", i + 2)
                if end != -1:
                    name = s[i + 2 : end]
                    out.append(env.get(name, f"$({name})"))
                    i = end + 1
                    continue
                out.append("$(")
                i += 2
                continue
            out.append("$" + nxt)
            i += 2
            continue
        out.append(s[i])
        i += 1
    return "".join(out)


def env_of(container: dict) -> list[tuple[str, str]]:
    return [(e["name"], kubelet_expand(e["value"])) for e in container["env"]]


def run_cli(args, capsys):
    rc = main(["k8s", *args])
    out, err = capsys.readouterr()
    return rc, out, err


# -- every bundled cluster x tier x workload x kind --------------------------------------------------------


@pytest.mark.parametrize("cluster", sorted(descriptor.available()))
def test_every_cluster_tier_workload_kind_validates(cluster):
    """Renders pass the validator, or fail with the one-line reason the combination is invalid."""
    checked = 0
    for wl in workloadmod.bundled():
        for tier in (1, 2, 3):
            p = plan_for(cluster, tier, wl)
            for kind in render_k8s.KINDS:
                if kind == "rayjob" and p.launch.launcher != "ray":
                    with pytest.raises(UserError, match="--kind pytorchjob"):
                        render_k8s.render(p, kind=kind)
                    continue
                if kind == "trainjob" and p.launch.launcher == "ray":
                    with pytest.raises(UserError, match="use --kind rayjob or pytorchjob"):
                        render_k8s.render(p, kind=kind)
                    continue
                docs = render_k8s.documents(p, kind=kind)
                if tier == 3 and kind == render_k8s.default_kind(p):
                    # The YAML text carries exactly the data (checked on a subset: dumping is slow).
                    assert docs_of(render_k8s.render(p, kind=kind)) == docs
                for d in docs:
                    kv.validate(d)
                assert kv.check_stream(docs) == []
                _check_plan_in_job(p, docs)
                checked += 1
    assert checked >= 3 * (len(workloadmod.bundled()) + 3)


def _check_plan_in_job(p, docs):
    """The descriptor's and the plan's facts, in every container of the job."""
    kube = p.cluster.kubernetes
    job = job_of(docs)
    config = {d["metadata"]["name"]: d["data"] for d in docs if d["kind"] == "ConfigMap"}
    want_env = [(e.name, e.value) for e in p.env]
    trainer = job["spec"].get("trainer")
    if trainer is not None:
        # TrainJob: env, resources and command are the trainer's; the pods are the TrainingRuntime's.
        job = next(d for d in docs if d["kind"] == "TrainingRuntime")
        want = {kube.gpu_resource: str(p.launch.gpus_per_node), **{k: str(v) for k, v in kube.resources.items()}}
        assert env_of(trainer)[: len(want_env)] == want_env
        assert trainer["resourcesPerNode"] == {"limits": want, "requests": want}
        assert trainer["numNodes"] == p.launch.nodes and trainer["numProcPerNode"] == p.launch.gpus_per_node
    for path, template in kv.pod_templates(job):
        spec = template["spec"]
        assert template["metadata"]["annotations"]["ncclgen.io/explain"] == render_k8s.explain_command(p)
        for k, v in kube.annotations.items():
            assert template["metadata"]["annotations"][k] == v
        assert spec.get("hostNetwork", False) == kube.host_network
        assert spec.get("nodeSelector", {}) == kube.node_selector
        shm = next(v for v in spec["volumes"] if v["name"] == "dshm")
        assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": kube.shm_size}
        for v in spec["volumes"]:
            if "configMap" in v:
                assert v["configMap"]["name"] in config, f"{path}: mounts a ConfigMap that is not rendered"
        for c in spec["containers"]:
            if trainer is None:
                assert env_of(c)[: len(want_env)] == want_env, f"{path}: env differs from the plan"
                want = {
                    kube.gpu_resource: str(p.launch.gpus_per_node),
                    **{k: str(v) for k, v in kube.resources.items()},
                }
                assert c["resources"] == {"limits": want, "requests": want}
            sc = c.get("securityContext", {})
            assert sc.get("capabilities", {}).get("add") == list(kube.capabilities)
            assert sc.get("privileged", False) == kube.privileged
            assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
            # Any file the command runs from /etc/ncclgen is in the rendered ConfigMap.
            for arg in c.get("command", []) + c.get("args", []) + (trainer or {}).get("command", []):
                for f in re.findall(r"/etc/ncclgen/([\w.-]+)", arg):
                    assert any(f in data for data in config.values()), f"{path}: {f} not in the ConfigMap"


def test_output_is_deterministic(capsys):
    first = run_cli(["--tier", "3", "--kind", "pytorchjob"], capsys)
    assert first[0] == 0
    assert run_cli(["--tier", "3", "--kind", "pytorchjob"], capsys) == first


# -- PyTorchJob --------------------------------------------------------------------------------------------


def test_pytorchjob_replicas_torchrun_and_binding():
    p = plan_for("h100-ib", 3, "verl-sft", 4)
    docs = render_k8s.documents(p, kind="pytorchjob")
    job = job_of(docs)
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert specs["Master"]["replicas"] == 1 and specs["Worker"]["replicas"] == 3
    assert job["spec"]["nprocPerNode"] == "8"
    assert job["spec"]["runPolicy"]["backoffLimit"] == 0
    assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    assert job["spec"]["runPolicy"]["activeDeadlineSeconds"] == 4 * 3600  # verl-sft time 04:00:00
    for r in specs.values():
        assert r["restartPolicy"] == "Never"
        c = r["template"]["spec"]["containers"][0]
        assert c["name"] == "pytorch"
        pre, setup, cmd = c["command"][:2], c["command"][2:4], c["command"][4:]
        assert pre == PREFLIGHT  # the preflight first (issue 11), then exec
        assert setup == ["bash", "/etc/ncclgen/setup.sh"]  # the workload's setup: lines, then exec
        # torchrun takes nnodes, node rank, master address/port and nproc from the operator's PET_*.
        assert cmd[0] == "torchrun"
        assert not any(
            a.startswith(
                (
                    "--nnodes",
                    "--node-rank",
                    "--rdzv-endpoint",
                    "--rdzv-backend",
                    "--master-addr",
                    "--master-port",
                    "--nproc-per-node",
                )
            )
            for a in cmd
        )
        assert "--max-restarts=0" in cmd
        i = cmd.index("--no-python")
        assert cmd[i + 1 : i + 3] == ["bash", "/etc/ncclgen/bind.sh"]
        assert cmd[i + 3 :] == list(p.launch.command)
        assert c["ports"] == [{"name": "pytorchjob-port", "containerPort": 29500, "protocol": "TCP"}]
    cm = docs[0]
    assert cm["kind"] == "ConfigMap"
    assert cm["data"] == {
        "bind.sh": launch.bind_wrapper(p.binding, p.launch.bind_memory),
        "setup.sh": launch.setup_program(p.workload.setup),
        **preflight_files(p),
    }


def test_pytorchjob_one_node_has_no_worker_and_tier2_no_configmap():
    p = plan_for("h100-ib", 2, "verl-sft", 1)
    docs = render_k8s.documents(p)
    assert [d["kind"] for d in docs] == ["ConfigMap", "PyTorchJob"]
    assert sorted(docs[0]["data"]) == sorted(["setup.sh", *PREFLIGHT_KEYS])  # no binding below tier 3
    assert list(docs[1]["spec"]["pytorchReplicaSpecs"]) == ["Master"]
    cmd = docs[1]["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["command"][4:]
    assert "bash" not in cmd[: cmd.index("--no-python") + 2]


def test_ray_workload_as_pytorchjob():
    """Master: Ray head, readiness wait, driver; workers: ray start --address=$MASTER_ADDR:6379."""
    p = plan_for("h100-ib", 3, "verl-grpo-qwen2-7b", 3)
    docs = render_k8s.documents(p, kind="pytorchjob")
    data = docs[0]["data"]
    specs = job_of(docs)["spec"]["pytorchReplicaSpecs"]
    master = specs["Master"]["template"]["spec"]["containers"][0]
    worker = specs["Worker"]["template"]["spec"]["containers"][0]
    assert specs["Worker"]["replicas"] == 2
    setup = [*PREFLIGHT, "bash", "/etc/ncclgen/setup.sh"]
    assert master["command"] == [*setup, "bash", "/etc/ncclgen/ray-head.sh", *p.launch.command]
    assert worker["command"] == [*setup, "bash", "/etc/ncclgen/ray-worker.sh"]
    assert master["ports"][0] == {"name": "pytorchjob-port", "containerPort": 6379, "protocol": "TCP"}
    head = data["ray-head.sh"]
    assert "ray start --head --port=6379 --num-gpus=8 --num-cpus=224" in head
    assert "ncclgen_raywait.py wait 127.0.0.1:6379 3 24 300" in head
    assert head.rstrip().endswith('exec "$@"')
    for script in (head, data["ray-worker.sh"]):
        assert "unset MASTER_ADDR MASTER_PORT WORLD_SIZE RANK PET_" in script
    assert 'head="${MASTER_ADDR:?' in data["ray-worker.sh"]
    assert 'exec ray start --address="$head":6379' in data["ray-worker.sh"]
    assert "--block" in data["ray-worker.sh"]
    assert data["ncclgen_raywait.py"] == (ROOT / "ncclgen" / "jobside" / "raywait.py").read_text()
    assert data["ncclgen_raybind.py"] == (ROOT / "ncclgen" / "jobside" / "raybind.py").read_text()
    for script in ("ray-head.sh", "ray-worker.sh"):
        subprocess.run(["bash", "-n"], input=data[script], text=True, check=True)


# -- RayJob ------------------------------------------------------------------------------------------------


def test_rayjob_groups_entrypoint_and_env():
    p = plan_for("h100-ib", 2, "verl-grpo-qwen3-235b-megatron")
    docs = render_k8s.documents(p)
    assert [d["kind"] for d in docs] == ["ConfigMap", "RayJob"]  # driver's argv and the setup lines
    assert sorted(docs[0]["data"]) == sorted([render_k8s.RAY_DRIVER_SCRIPT, "setup.sh", *PREFLIGHT_KEYS])
    job = docs[1]
    spec = job["spec"]
    assert driver_argv(docs) == list(p.launch.command)
    assert "trainer.nnodes=8" in p.launch.command
    assert spec["shutdownAfterJobFinishes"] is True
    cluster = spec["rayClusterSpec"]
    (group,) = cluster["workerGroupSpecs"]
    assert group["replicas"] == group["minReplicas"] == group["maxReplicas"] == p.launch.nodes - 1
    params = {"num-gpus": "8", "num-cpus": str(p.launch.cpus_per_node)}
    assert cluster["headGroupSpec"]["rayStartParams"] == params == group["rayStartParams"]
    # The env is in the head AND the workers: raylets pass it to every Ray worker process.
    for c in containers(job):
        assert env_of(c) == [(e.name, e.value) for e in p.env]
        # KubeRay's generated `ray start` runs after the workload's setup lines
        assert kubelet_expand(c["args"][0]) == (
            "ulimit -n 65536; exec bash /etc/ncclgen/preflight.sh "
            "bash /etc/ncclgen/setup.sh "
            '/bin/bash -c "$KUBERAY_GEN_RAY_START_CMD"'
        )
    assert "runtimeEnvYAML" not in spec


def test_rayjob_one_node_has_no_worker_group():
    p = plan_for("local-ci", 1, "verl-grpo-qwen2-7b", 1)
    docs = render_k8s.documents(p)
    job = job_of(docs)
    assert "workerGroupSpecs" not in job["spec"]["rayClusterSpec"]
    assert "trainer.nnodes=1" in driver_argv(docs)
    kv.validate(job)


def test_rayjob_tier3_binding_hook():
    p = plan_for("h100-ib", 3, "verl-grpo-qwen2-7b")
    docs = render_k8s.documents(p)
    assert docs[0]["data"]["ncclgen_raybind.py"] == (ROOT / "ncclgen" / "jobside" / "raybind.py").read_text()
    assert docs[0]["data"]["setup.sh"] == launch.setup_program(p.workload.setup)
    assert sorted(docs[0]["data"]) == sorted(
        ["ncclgen_raybind.py", render_k8s.RAY_DRIVER_SCRIPT, "setup.sh", *PREFLIGHT_KEYS]
    )
    for _path, t in kv.pod_templates(docs[1]):
        assert t["metadata"]["annotations"]["ray.io/overwrite-container-cmd"] == "true"
        c = t["spec"]["containers"][0]
        env = dict(env_of(c))
        assert env["NCCLGEN_GPU_CPUS"] == launch.gpu_cpu_map(p.binding)
        assert env["__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR"] == "ncclgen_raybind.hook"
        assert "PYTHONPATH" not in env  # prepended in the shell, not replaced
        script = kubelet_expand(c["args"][0])
        assert script.startswith('export PYTHONPATH="/etc/ncclgen${PYTHONPATH:+:$PYTHONPATH}";')
        assert script.endswith(
            'exec bash /etc/ncclgen/preflight.sh bash /etc/ncclgen/setup.sh /bin/bash -c "$KUBERAY_GEN_RAY_START_CMD"'
        )
        subprocess.run(["bash", "-n", "-c", script], check=True)


def test_rayjob_name_limit_and_kind_for_torchrun(capsys):
    rc, out, err = run_cli(["--name", "a" * 48], capsys)
    assert rc == 2 and out == "" and "at most 47 characters for a RayJob" in err
    assert run_cli(["--name", "a" * 47], capsys)[0] == 0
    rc, out, err = run_cli(["--workload", "verl-sft", "--kind", "rayjob"], capsys)
    assert rc == 2 and "use --kind pytorchjob" in err


# -- fabrics -----------------------------------------------------------------------------------------------


def test_efa_requests_efa_devices_not_rdma(tmp_path):
    """aws-p5 with the memory request hugepages need: vpc.amazonaws.com/efa, no rdma/* resource."""
    doc = yaml.safe_load(Path(descriptor.available()["aws-p5"]).read_text())
    doc["kubernetes"]["resources"]["memory"] = 34359738368  # 32 GiB, as in the EKS EFA example
    path = tmp_path / "aws-p5.yaml"
    path.write_text(yaml.safe_dump(doc))
    p = make_plan(request(str(path), 2, "verl-sft", None, (), False))
    docs = render_k8s.documents(p)
    for d in docs:
        kv.validate(d)
    for c in containers(job_of(docs)):
        req = c["resources"]["requests"]
        assert req["vpc.amazonaws.com/efa"] == "32" and req["nvidia.com/gpu"] == "8"
        assert not any(k.startswith("rdma/") for k in req)
        assert c["resources"]["limits"] == req


def test_hugepages_without_memory_is_one_line_error(tmp_path, capsys):
    doc = yaml.safe_load(Path(descriptor.available()["aws-p5"]).read_text())
    doc["kubernetes"]["resources"]["hugepages-2Mi"] = "5120Mi"
    doc["kubernetes"]["resources"].pop("memory", None)
    doc["kubernetes"]["resources"].pop("cpu", None)
    path = tmp_path / "p5.yaml"
    path.write_text(yaml.safe_dump(doc))
    out_file = tmp_path / "job.yaml"
    rc, out, err = run_cli(["--cluster", str(path), "-o", str(out_file)], capsys)
    assert rc == 2 and out == "" and not out_file.exists()
    assert err.count("\n") == 1 and "hugepages need a cpu or memory request" in err and "Traceback" not in err
    assert "p5.yaml:" in err and "kubernetes.resources" in err  # the descriptor check names the place


def test_roce_env_has_gid_index():
    p = plan_for("oci-bm-gpu-h100-8", 1, "verl-sft")
    assert "NCCL_IB_GID_INDEX" in p.env_dict()
    job = job_of(render_k8s.documents(p))
    for c in containers(job):
        assert dict(env_of(c))["NCCL_IB_GID_INDEX"] == p.env_dict()["NCCL_IB_GID_INDEX"]
        assert c["securityContext"]["privileged"] is True  # the OKE host-network manifests say so


def test_ipc_lock_and_no_privileged_by_default():
    job = job_of(render_k8s.documents(plan_for("h100-ib", 1, "verl-grpo-qwen2-7b")))
    for c in containers(job):
        assert c["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}


# -- env parity with the plan and the sbatch script ---------------------------------------------------------


@pytest.mark.parametrize(
    "cluster,tier,workload,sets",
    [
        ("h100-ib", 3, "verl-sft", ()),
        ("local-ci", 3, "verl-grpo-qwen2-7b", ()),
        ("oci-bm-gpu-h100-8", 2, "verl-grpo-qwen2-7b", ()),
        ("local-ci", 1, "bench", ("NCCLGEN_PARITY=a\nb 'c' \"d\" $(x) `y` $$ ${z}",)),
    ],
)
def test_env_equals_plan_and_sbatch(cluster, tier, workload, sets, capsys):
    """k8s env == plan.env_dict() == what the sbatch script exports, for every plan variable."""
    p = plan_for(cluster, tier, workload, None, unchecked_sets=sets)  # NCCLGEN_PARITY: not a known name
    job = job_of(render_k8s.documents(p, kind="pytorchjob"))
    for c in containers(job):
        k8s_env = dict(env_of(c))
        assert {n: k8s_env[n] for n in p.env_dict()} == p.env_dict()
    if importlib.util.find_spec("ncclgen.cli.slurm") is None:
        pytest.skip("ncclgen.cli.slurm (the Slurm renderer) has not landed yet; this part runs once it has")
    assert (
        main(
            [
                "slurm",
                "--cluster",
                cluster,
                "--tier",
                str(tier),
                "--workload",
                workload,
                *[a for kv_ in sets for a in ("--set-unchecked", kv_)],
            ]
        )
        == 0
    )
    script = capsys.readouterr().out
    exported = sbatch_exports(script, list(p.env_dict()))
    assert exported == p.env_dict()
    if p.launch.launcher == "ray" and p.launch.bind:
        ray = dict(env_of(containers(job)[0]))
        both = sbatch_exports(script, ["NCCLGEN_GPU_CPUS", "__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR"])
        assert both == {k: ray[k] for k in both}


def sbatch_exports(script: str, names: list[str]) -> dict[str, str]:
    """Run the script's `export NAME=...` statements in bash (never the rest) and read the values back."""
    stmts = []
    lines = script.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        # ncclgen's own command substitutions (export X="$(...)") would run; a value quoted as data may hold "$(".
        if re.match(r"\s*export [A-Za-z_][A-Za-z0-9_]*=", lines[i]) and not re.search(
            r"=\"?\$\(|\$\(\w", lines[i].split("'")[0]
        ):
            stmt = lines[i]
            # A quoted value may span lines (shlex.quote keeps newlines): extend until bash accepts it.
            while subprocess.run(["bash", "-n"], input=stmt, text=True, capture_output=True).returncode:
                i += 1
                stmt += lines[i]
            stmts.append(stmt)
        i += 1
    probe = "".join(stmts) + "".join(f'printf "%s\\0%s\\0" {n} "${{{n}-__unset__}}"\n' for n in names)
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True, env={}).stdout
    parts = out.split("\0")[:-1]
    return {k: v for k, v in zip(parts[::2], parts[1::2]) if v != "__unset__"}


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


# -- CLI ---------------------------------------------------------------------------------------------------


def test_no_options_works_and_imports_stay_light(tmp_path):
    """`ncclgen k8s | yaml.safe_load_all` from an empty folder; the process never imports kubernetes/torch."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NCCLGEN_")}
    code = (
        "import sys; from ncclgen.cli import main; rc = main(['k8s']); "
        "heavy = [m for m in ('kubernetes', 'torch', 'ray') if m in sys.modules]; "
        "print('HEAVY', heavy, file=sys.stderr); sys.exit(rc)"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "HEAVY []" in r.stderr
    docs = docs_of(r.stdout)
    assert job_of(docs)["kind"] == "RayJob" and job_of(docs)["metadata"]["name"] == "verl-grpo-qwen2-7b"
    for d in docs:
        kv.validate(d)


def test_output_file_is_written_atomically(tmp_path, capsys):
    out_file = tmp_path / "job.yaml"
    rc, out, _ = run_cli(
        [
            "--workload",
            "verl-sft",
            "--namespace",
            "training",
            "--image",
            "reg.example/v:1",
            "--name",
            "sft-run1",
            "-o",
            str(out_file),
        ],
        capsys,
    )
    assert rc == 0 and out == ""
    job = job_of(docs_of(out_file.read_text()))
    assert job["metadata"] == {"name": "sft-run1", "namespace": "training", "labels": job["metadata"]["labels"]}
    assert {c["image"] for c in containers(job)} == {"reg.example/v:1"}
    assert job["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "ncclgen"


def test_manifest_lints_clean():
    """The linter reads every env list of the manifest and finds no error in what the plan emits."""
    from ncclgen import lint

    p = plan_for("h100-ib", 3, "verl-sft")
    findings = lint.lint_text(render_k8s.render(p), "job.yaml", p.cluster)
    assert [f for f in findings if f.severity == "error"] == []


# -- the validator itself ----------------------------------------------------------------------------------


@pytest.fixture
def good_pytorchjob():
    return job_of(render_k8s.documents(plan_for("h100-ib", 2, "verl-sft"), kind="pytorchjob"))


def test_validator_accepts_known_good(good_pytorchjob):
    assert kv.check(good_pytorchjob) == []


def test_validator_rejects_misplaced_resources(good_pytorchjob):
    """`resources` one level too high (pod spec, not container) is pruned by a real API server: the GPUs
    and RDMA devices are silently lost. Both the CRD schema and the client's model catch it."""
    spec = good_pytorchjob["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    spec["resources"] = spec["containers"][0].pop("resources")
    errors = kv.check(good_pytorchjob)
    assert any("spec.resources: unknown field" in e for e in errors), errors
    with pytest.raises(kv.Invalid):
        kv.validate(good_pytorchjob)


@pytest.mark.parametrize(
    "mutate,expect",
    [
        (lambda j: j["spec"].__setitem__("nprocPerNod", "8"), "spec.nprocPerNod: unknown field"),
        (
            lambda j: j["spec"]["pytorchReplicaSpecs"]["Master"].__setitem__("replica", 1),
            "Master.replica: unknown field",
        ),
        (lambda j: j["spec"]["pytorchReplicaSpecs"]["Master"].__setitem__("replicas", "1"), "expected integer"),
        (lambda j: j["spec"]["pytorchReplicaSpecs"]["Master"].__setitem__("replicas", 2**31), "outside"),
        (lambda j: j["spec"]["runPolicy"].__setitem__("backoffLimit", True), "expected integer"),
        (lambda j: _c(j)["env"].append({"name": "NCCL_DEBUG", "value": "INFO"}), "set more than once"),
        (lambda j: _c(j)["env"].append({"valu": "x", "name": "X"}), ".valu: unknown field"),
        (lambda j: _c(j)["resources"]["limits"].__setitem__("nvidia.com/gpu", "eight"), "does not match"),
        (lambda j: _c(j)["resources"]["limits"].__setitem__("nvidia.com/gpu", True), "integer or a string"),
        (lambda j: _c(j)["resources"]["requests"].pop("nvidia.com/gpu"), None),  # limit alone is valid
        (lambda j: _c(j)["resources"]["limits"].pop("nvidia.com/gpu"), "Limit must be set"),
        (lambda j: _c(j)["resources"]["requests"].__setitem__("nvidia.com/gpu", "4"), "must be equal"),
        (lambda j: _c(j).__setitem__("name", "torch"), "container named pytorch"),
        (lambda j: _c(j)["volumeMounts"].append({"name": "nope", "mountPath": "/x"}), "names no volume"),
        (lambda j: _c(j).pop("name"), "name: required"),
        (lambda j: j["spec"]["pytorchReplicaSpecs"].__setitem__("Chief", {"replicas": 1}), "only Master and Worker"),
        (lambda j: j["spec"]["pytorchReplicaSpecs"]["Master"].__setitem__("replicas", 2), "must be 1"),
        (lambda j: j["metadata"].__setitem__("name", "9lives"), "DNS-1035"),
        (lambda j: j["metadata"]["labels"].__setitem__("bad key!", "x"), "qualified name"),
        (lambda j: j["metadata"]["labels"].__setitem__("ok", "a" * 64), "label value"),
        (lambda j: j.__setitem__("apiVersion", "kubeflow.org/v2"), "not served"),
        (
            lambda j: j["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"].__setitem__("hostNetwork", "yes"),
            "expected boolean",
        ),
    ],
)
def test_validator_rejects(good_pytorchjob, mutate, expect):
    mutate(good_pytorchjob)
    errors = kv.check(good_pytorchjob)
    if expect is None:
        assert errors == []
    else:
        assert any(expect in e for e in errors), errors


def _c(job):
    return job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]


def test_validator_structural_semantics():
    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {
            "a": {"type": "string", "enum": ["x", "y"]},
            "n": {"type": "integer", "format": "int32", "minimum": 0, "nullable": True},
            "q": {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
                "pattern": "^[0-9]+Gi$",
            },
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "closed": {"type": "object"},
            "m": {"type": "object", "additionalProperties": {"type": "integer"}},
            "s": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "cel": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() > 1"}]},
            "imm": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]},
        },
    }
    ok = {"a": "x", "n": None, "q": 8, "free": {"any": {"thing": 1}}, "m": {"k": 1}, "s": ["a", "b"], "imm": "z"}
    assert kv.check_schema(ok, schema, "") == []
    assert kv.check_schema(dict(ok, q="8Gi"), schema, "") == []
    bad = [
        ({**ok, "a": "z"}, "not one of"),
        ({k: v for k, v in ok.items() if k != "a"}, "a: required"),
        ({**ok, "n": -1}, "outside"),
        ({**ok, "n": 2**31}, "outside"),
        ({**ok, "q": "8G"}, "does not match"),
        ({**ok, "q": 1.5}, "integer or a string"),
        ({**ok, "closed": {"k": 1}}, "closed.k: unknown field"),
        ({**ok, "m": {"k": "1"}}, "m.k: expected integer"),
        ({**ok, "s": ["a", "a"]}, "duplicate entries"),
        ({**ok, "cel": "x"}, "cannot be checked"),
        ({**ok, "extra": 1}, "extra: unknown field"),
        ({**ok, "a": None}, "null is not allowed"),
    ]
    for obj, expect in bad:
        errors = kv.check_schema(obj, schema, "")
        assert any(expect in e for e in errors), (obj, errors)


def test_validator_core_models():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}}
    assert kv.check(cm) == []
    assert any("datta: unknown field of V1ConfigMap" in e for e in kv.check({**cm, "datta": {}}))
    assert any("expected str" in e for e in kv.check({**cm, "data": {"a": 1}}))
    tmpl = {"spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "A", "value": 1}]}]}}
    assert any("value: expected str" in e for e in kv.check_core(tmpl, "V1PodTemplateSpec"))
    tmpl["spec"]["containers"][0]["env"][0] = {"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x", "typo": 1}}}
    assert any("typo: unknown field of V1ObjectFieldSelector" in e for e in kv.check_core(tmpl, "V1PodTemplateSpec"))


def test_validator_resources_rules():
    assert kv.check_resources({"limits": {"hugepages-2Mi": "5Gi"}, "requests": {"hugepages-2Mi": "5Gi"}}, "r") == [
        "r: HugePages require cpu or memory"
    ]
    assert kv.check_resources({"limits": {"hugepages-2Mi": "3Mi", "memory": "1Gi"}}, "r") == [
        "r: hugepages-2Mi '3Mi' is not a multiple of the page size"
    ]
    assert kv.check_resources({"limits": {"gpu": "1"}}, "r") == [
        "r.limits.gpu: must be a standard resource or fully qualified"
    ]
    assert (
        kv.check_resources(
            {
                "limits": {"memory": "1Gi", "hugepages-2Mi": "4Mi", "rdma/ib": "8"},
                "requests": {"rdma/ib": "8", "hugepages-2Mi": "4Mi"},
            },
            "r",
        )
        == []
    )


# -- the Ray-on-PyTorchJob scripts, run for real ------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_ray_pytorchjob_scripts_bring_up_ray_and_bind(tmp_path):
    """The master's ray-head.sh and a worker's ray-worker.sh from a rendered ConfigMap, run as the two
    pods would (container env, MASTER_ADDR from the operator, files where the ConfigMap is mounted):
    the head waits for both nodes, the driver's GPU tasks see the plan's env, and at tier 3 each is bound
    to its GPU's CPU by the hook (local-ci: GPU 0 -> CPU 0, GPU 1 -> CPU 1)."""
    import shutil

    if shutil.which("ray") is None or len(os.sched_getaffinity(0)) < 2:
        reason = "needs the `ray` CLI and 2 CPUs"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: a missing service is a failure, not a skip)", pytrace=False)
        pytest.skip(reason)
    out = tmp_path / "out"
    out.mkdir()
    wl = {
        "name": "ray-e2e",
        "description": "e2e",
        "launcher": "ray",
        "framework": "torch",
        "nodes": 2,
        "command": ["python3", str(ROOT / "tests" / "e2e" / "ray_driver.py"), str(out), "2", "4"],
    }
    (tmp_path / "wl.yaml").write_text(yaml.safe_dump(wl))
    p = make_plan(request("local-ci", 3, str(tmp_path / "wl.yaml"), None, (), False))
    # A free GCS port: other Ray clusters may run on this machine.
    p = dataclasses.replace(p, launch=dataclasses.replace(p.launch, ray_port=_free_port(), ray_ready_timeout_s=240))
    docs = render_k8s.documents(p, kind="pytorchjob")
    mount = tmp_path / "etc-ncclgen"  # stands in for the ConfigMap volume at /etc/ncclgen
    mount.mkdir()
    for key, text in docs[0]["data"].items():
        (mount / key).write_text(text.replace(render_k8s.CONFIG_DIR, str(mount)))
    specs = job_of(docs)["spec"]["pytorchReplicaSpecs"]
    short = Path("/tmp") / f"nk8s{os.getpid()}"  # Ray's socket paths must stay short
    fake_dev = tmp_path / "dev"  # the pods' preflight counts these as their 2 GPUs (test-only root)
    fake_dev.mkdir()
    for i in range(2):
        (fake_dev / f"nvidia{i}").touch()
    (fake_dev / "shm").symlink_to("/dev/shm")
    base = {
        **os.environ,
        "RAY_TMPDIR": str(short),
        "MASTER_ADDR": "127.0.0.1",
        "PYTHONUNBUFFERED": "1",
        "NCCLGEN_PREFLIGHT_DEV": str(fake_dev),
    }
    procs = []
    logs = {role: tmp_path / f"{role}.log" for role in ("Worker", "Master")}
    try:
        for role in ("Worker", "Master"):
            c = specs[role]["template"]["spec"]["containers"][0]
            env = {**base, **dict(env_of(c)), "NCCLGEN_E2E_POD": role}
            argv = [kubelet_expand(a).replace(render_k8s.CONFIG_DIR, str(mount)) for a in c["command"]]
            with open(logs[role], "w") as log:
                procs.append(
                    subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
                )
        rc = procs[1].wait(timeout=420)  # generous: Ray start-up is CPU-bound on 2 cores
        worker_alive = procs[0].poll() is None
    finally:
        _stop_ray(procs, short)
    report = "\n".join(f"--- {role}:\n{path.read_text()[-3000:]}" for role, path in logs.items())
    assert rc == 0, report
    assert worker_alive, "the worker's `ray start --block` ended early\n" + report
    assert "Ray cluster ready: 2 nodes, 4 GPUs" in logs["Master"].read_text()
    tasks = json.loads((out / "ray.json").read_text())["tasks"]
    seen = {(t["env"]["NCCLGEN_E2E_POD"], t["gpu_ids"][0]) for t in tasks}
    assert seen == {(pod, gpu) for pod in ("Master", "Worker") for gpu in ("0", "1")}
    for t in tasks:
        assert {n: t["env"].get(n) for n in p.env_dict()} == p.env_dict()
        assert "MASTER_ADDR" not in t["env"]  # the operator's torchrun variables stay out of Ray
        assert t["affinity"] == [int(t["gpu_ids"][0])], t


def _stop_ray(procs, tmpdir: Path) -> None:
    """End what the two 'pods' started: our process groups, then the Ray daemons `ray start` detached,
    found by this test's own RAY_TMPDIR in their command line or environment and killed by PID (never
    `ray stop`, which kills every Ray process on the host)."""
    import shutil
    import signal
    import time

    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    marker = str(tmpdir).encode()
    for _ in range(5):  # a dying raylet may still start a worker: sweep until none is left
        mine = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if marker in (entry / "cmdline").read_bytes() or marker in (entry / "environ").read_bytes():
                    mine.append(int(entry.name))
            except OSError:
                continue
        for pid in mine:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if not mine:
            break
        time.sleep(0.5)
    shutil.rmtree(tmpdir, ignore_errors=True)


# -- the preflight in every pod (issue 11) -------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind, workload", [("pytorchjob", "verl-sft"), ("rayjob", "verl-grpo-qwen2-7b"), ("trainjob", "verl-sft")]
)
def test_every_pod_runs_the_preflight_before_its_launch(kind, workload):
    p = plan_for("h100-ib", 3, workload)
    docs = render_k8s.documents(p, kind=kind)
    assert {k: docs[0]["data"][k] for k in PREFLIGHT_KEYS} == preflight_files(p)
    job = docs[-1]
    if kind == "trainjob":
        commands = [job["spec"]["trainer"]["command"]]
    elif kind == "rayjob":
        commands = [shlex.split(kubelet_expand(c["args"][0]).split("; exec ", 1)[1]) for c in containers(job)]
    else:
        commands = [c["command"] for c in containers(job)]
    assert commands and all(cmd[:2] == PREFLIGHT for cmd in commands)
    bare = render_k8s.documents(p, kind=kind, preflight=False)
    assert not any(k in bare[0]["data"] for k in PREFLIGHT_KEYS)
    assert "preflight" not in yaml.safe_dump_all(bare[1:])


def test_pod_preflight_script_stops_with_6_and_execs_only_on_success(tmp_path):
    """The ConfigMap's preflight.sh, run as a pod would: a failing check ends it with status 6 before the
    command it wraps; a passing one execs that command."""
    mount = tmp_path / "etc"
    mount.mkdir()
    marker = tmp_path / "launched"
    for spec, rc, launched in (
        ({"v": 1, "ifaces": {"NCCL_SOCKET_IFNAME": "=ncclgen-x0"}}, 6, False),
        ({"v": 1, "ifaces": {"NCCL_SOCKET_IFNAME": "=lo"}}, 0, True),
    ):
        files = {
            render_k8s.PREFLIGHT_MODULE: (ROOT / "ncclgen" / "jobside" / "preflight.py").read_text(),
            render_k8s.PREFLIGHT_SPEC: json.dumps(spec),
            render_k8s.PREFLIGHT_SCRIPT: render_k8s._Job.preflight_script(),
        }
        for key, text in files.items():
            (mount / key).write_text(text.replace(render_k8s.CONFIG_DIR, str(mount)))
        r = subprocess.run(
            ["bash", str(mount / render_k8s.PREFLIGHT_SCRIPT), "touch", str(marker)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert (r.returncode, marker.exists()) == (rc, launched), r.stderr
        if rc:
            assert "NCCL_SOCKET_IFNAME ncclgen-x0: expected an interface named ncclgen-x0" in r.stderr
