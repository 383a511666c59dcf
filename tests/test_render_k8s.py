"""`ncclgen k8s`: manifests the API server and the operators accept, carrying exactly the plan.

Every rendered object goes through tests/k8s_validate.py (CRD structural schemas with unknown fields
rejected, the kubernetes client's typed models, pod rules, operator webhook rules).
Goldens: examples/*/job.yaml (tests/test_examples.py).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import k8s_validate as kv
import pytest
import yaml

from ncclgen.cli import main
from ncclgen.errors import UserError
from ncclgen.load import descriptor
from ncclgen.load import workload as workloadmod
from ncclgen.pipeline import make_plan, request
from ncclgen.plan import launch, preflight
from ncclgen.render import k8s as render_k8s

PREFLIGHT = ["bash", f"{render_k8s.CONFIG_DIR}/{render_k8s.PREFLIGHT_SCRIPT}"]
PREFLIGHT_KEYS = [render_k8s.PREFLIGHT_MODULE, render_k8s.PREFLIGHT_SPEC, render_k8s.PREFLIGHT_SCRIPT]
# The transport check's files, and the prefix that runs the launch under it (tests/test_transport_k8s.py)
TRANSPORT_KEYS = ["ncclgen_transport.py", "nccllines.py", "transport.json"]
CHECK = ["python3", "-S", "/etc/ncclgen/ncclgen_transport.py", "@/etc/ncclgen/transport.json", "--"]


def embedded(name: str) -> str:
    """A node program as the ConfigMap must hold it: one line naming its file, then the file unchanged."""
    return (
        f"# ncclgen/jobside/{name}.py, embedded by ncclgen\n"
        + (ROOT / "ncclgen" / "jobside" / f"{name}.py").read_text()
    )


def preflight_files(p) -> dict[str, str]:
    """The ConfigMap entries of the pod's preflight: the program, the plan's spec, the runner."""
    return {
        render_k8s.PREFLIGHT_MODULE: embedded("preflight"),
        render_k8s.PREFLIGHT_SPEC: preflight.encode(preflight.spec(p)) + "\n",
        render_k8s.PREFLIGHT_SCRIPT: render_k8s._Job.preflight_script(),
    }


ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def plan_for(cluster, tier, workload, nodes=None, sets=(), debug=False, unchecked_sets=(), target="host"):
    return make_plan(request(cluster, tier, workload, nodes, sets, debug, unchecked_sets=unchecked_sets, target=target))


def docs_of(text: str) -> list[dict]:
    """yaml.safe_load_all, with libyaml's loader when present (the pure-Python one is 10x slower)."""
    return list(yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))


def job_of(docs: list[dict]) -> dict:
    return next(d for d in docs if d["kind"] in ("PyTorchJob", "RayJob", "TrainJob"))


def config_of(docs: list[dict]) -> dict:
    """The ConfigMap of the programs the pods run (after the job in the stream)."""
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    return cm


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
    cm = config_of(docs)
    assert cm["kind"] == "ConfigMap"
    assert cm["data"] == {
        "bind.sh": launch.bind_wrapper(p.binding, p.launch.bind_memory),
        "setup.sh": launch.setup_program(p.workload.setup),
        **preflight_files(p),
    }


def test_pytorchjob_one_node_has_no_worker_and_tier2_no_configmap():
    p = plan_for("h100-ib", 2, "verl-sft", 1)
    docs = render_k8s.documents(p)
    assert [d["kind"] for d in docs] == ["PyTorchJob", "ConfigMap"]
    assert sorted(config_of(docs)["data"]) == sorted(["setup.sh", *PREFLIGHT_KEYS])  # no binding below tier 3
    assert list(job_of(docs)["spec"]["pytorchReplicaSpecs"]) == ["Master"]
    cmd = job_of(docs)["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["command"][4:]
    assert "bash" not in cmd[: cmd.index("--no-python") + 2]


def test_ray_workload_as_pytorchjob():
    """Master: Ray head, readiness wait, driver; workers: ray start --address=$MASTER_ADDR:6379."""
    p = plan_for("h100-ib", 3, "verl-grpo-qwen2-7b", 3)
    docs = render_k8s.documents(p, kind="pytorchjob")
    data = config_of(docs)["data"]
    specs = job_of(docs)["spec"]["pytorchReplicaSpecs"]
    master = specs["Master"]["template"]["spec"]["containers"][0]
    worker = specs["Worker"]["template"]["spec"]["containers"][0]
    assert specs["Worker"]["replicas"] == 2
    setup = [*PREFLIGHT, "bash", "/etc/ncclgen/setup.sh", *CHECK]
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
    assert data["ncclgen_raywait.py"] == embedded("raywait")
    assert data["ncclgen_raybind.py"] == embedded("raybind")
    for script in ("ray-head.sh", "ray-worker.sh"):
        subprocess.run(["bash", "-n"], input=data[script], text=True, check=True)


# -- RayJob ------------------------------------------------------------------------------------------------


def test_rayjob_groups_entrypoint_and_env():
    p = plan_for("h100-ib", 2, "verl-grpo-qwen3-235b-megatron")
    docs = render_k8s.documents(p)
    assert [d["kind"] for d in docs] == ["RayJob", "ConfigMap"]  # driver's argv and the setup lines
    assert sorted(config_of(docs)["data"]) == sorted(
        [render_k8s.RAY_DRIVER_SCRIPT, "setup.sh", *PREFLIGHT_KEYS, *TRANSPORT_KEYS]
    )
    job = job_of(docs)
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
            "python3 -S /etc/ncclgen/ncclgen_transport.py @/etc/ncclgen/transport.json -- "
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
    assert config_of(docs)["data"]["ncclgen_raybind.py"] == embedded("raybind")
    assert config_of(docs)["data"]["setup.sh"] == launch.setup_program(p.workload.setup)
    assert sorted(config_of(docs)["data"]) == sorted(
        ["ncclgen_raybind.py", render_k8s.RAY_DRIVER_SCRIPT, "setup.sh", *PREFLIGHT_KEYS, *TRANSPORT_KEYS]
    )
    for _path, t in kv.pod_templates(job_of(docs)):
        assert t["metadata"]["annotations"]["ray.io/overwrite-container-cmd"] == "true"
        c = t["spec"]["containers"][0]
        env = dict(env_of(c))
        assert env["NCCLGEN_GPU_CPUS"] == launch.gpu_cpu_map(p.binding)
        assert env["__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR"] == "ncclgen_raybind.hook"
        assert "PYTHONPATH" not in env  # prepended in the shell, not replaced
        script = kubelet_expand(c["args"][0])
        assert script.startswith('export PYTHONPATH="/etc/ncclgen${PYTHONPATH:+:$PYTHONPATH}";')
        assert script.endswith(
            "exec bash /etc/ncclgen/preflight.sh bash /etc/ncclgen/setup.sh python3 -S "
            "/etc/ncclgen/ncclgen_transport.py @/etc/ncclgen/transport.json -- "
            '/bin/bash -c "$KUBERAY_GEN_RAY_START_CMD"'
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
