"""The transport check in pods: every kind runs its launch under the check (ConfigMap files, command),
the manifests stay valid (tests/k8s_validate.py), --transport-check off leaves it out, and the rendered
pod command, run here with the ConfigMap's files in a folder and the NCCL stand-in (tests/nccl_standin.py)
as the launch, ends with status 7 and the FAILED line on a node without GPUDirect RDMA."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import k8s_validate as kv
import pytest

from ncclgen import pipeline
from ncclgen.render import k8s as render_k8s

ROOT = Path(__file__).resolve().parent.parent
STANDIN = ROOT / "tests/nccl_standin.py"
CHECK = ["python3", "-S", "/etc/ncclgen/ncclgen_transport.py", "@/etc/ncclgen/transport.json", "--"]

CASES = [
    ("h100-ib", "bench", "pytorchjob"),
    ("h100-ib", "bench", "trainjob"),
    ("h100-ib", "verl-grpo-qwen2-7b", "rayjob"),
    ("h100-ib", "verl-grpo-qwen2-7b", "pytorchjob"),
    ("aws-p5", "bench", "pytorchjob"),
]


def docs(cluster, workload, kind, check="on", preflight=True):
    plan = plan_for(cluster, 1, workload, target="pod", transport_check=check)
    image = "example.com/verl-efa:1" if cluster == "aws-p5" else None  # aws-p5 needs an image with the plugin
    return render_k8s.documents(plan, kind=kind, preflight=preflight, image=image)


def split(out: list[dict]) -> tuple[dict, dict]:
    """(the ConfigMap, the job) of one rendering."""
    cm = next((d for d in out if d["kind"] == "ConfigMap"), {})
    return cm, next(d for d in out if d["kind"] in ("PyTorchJob", "RayJob", "TrainJob"))


def commands(job: dict) -> list[list[str]]:
    """Every container's command + args of the job's pod templates (TrainJob: its trainer command)."""
    if job["kind"] == "TrainJob":
        return [job["spec"]["trainer"]["command"]]
    out = []
    for _, template in kv.pod_templates(job):
        for c in template["spec"]["containers"]:
            out.append(list(c.get("command") or []) + list(c.get("args") or []))
    return out


@pytest.mark.parametrize("cluster, workload, kind", CASES)
def test_every_pod_runs_its_launch_under_the_check(cluster, workload, kind):
    out = docs(cluster, workload, kind)
    cm, job = split(out)
    assert {"ncclgen_transport.py", "nccllines.py", "transport.json"} <= set(cm["data"])
    spec = json.loads(cm["data"]["transport.json"])
    assert spec["mode"] == "on" and spec["debug_file"] == "/tmp/ncclgen-nccl/%h.%p.log"
    for cmd in commands(job):
        text = " ".join(cmd)
        assert " ".join(CHECK) in text, cmd
        # after the preflight and the setup, right before the launch
        assert text.index("preflight.sh") < text.index("ncclgen_transport.py")
    env = {
        e["name"]: e.get("value")
        for _, t in kv.pod_templates(job)
        for c in t["spec"]["containers"]
        for e in c.get("env", [])
    }
    if kind == "trainjob":
        env = {e["name"]: e.get("value") for e in job["spec"]["trainer"]["env"]}
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_DEBUG_SUBSYS"] == "INIT"
    for obj in out:
        kv.validate(obj)
    assert kv.check_stream(out) == []


def test_the_spec_is_the_pod_view():
    spec = json.loads(split(docs("h100-ib", "bench", "pytorchjob"))[0]["data"]["transport.json"])
    assert spec["net"] == "IB" and spec["gdr"] is True and spec["nccl"] == "2.30.7"
    assert spec["hcas"] == [
        "mlx5_0:1",
        "mlx5_3:1",
        "mlx5_4:1",
        "mlx5_5:1",
        "mlx5_6:1",
        "mlx5_9:1",
        "mlx5_10:1",
        "mlx5_11:1",
    ]
    efa = json.loads(split(docs("aws-p5", "bench", "pytorchjob"))[0]["data"]["transport.json"])
    assert efa["net"] == "Libfabric" and efa["plugin"] == {"package": "aws-ofi-nccl", "min": "1.13.0"}
    assert "hcas" not in efa


@pytest.mark.parametrize("cluster, workload, kind", CASES)
def test_off_leaves_it_out(cluster, workload, kind):
    out = docs(cluster, workload, kind, check="off")
    cm, job = split(out)
    assert not any("transport" in name for name in cm.get("data", {}))
    assert not any("ncclgen_transport.py" in " ".join(c) for c in commands(job))


def test_warn_mode_is_in_the_spec():
    spec = json.loads(split(docs("h100-ib", "bench", "pytorchjob", check="warn"))[0]["data"]["transport.json"])
    assert spec["mode"] == "warn"


def pod_run(tmp_path, fault):
    """The master container's command as the kubelet runs it, with /etc/ncclgen replaced by a folder
    holding the ConfigMap's files, the container's env, and the stand-in in place of torchrun."""
    out = docs("h100-ib", "bench", "pytorchjob", preflight=False)
    cm, job = split(out)
    etc = tmp_path / "etc-ncclgen"
    etc.mkdir()
    for name, text in cm["data"].items():
        (etc / name).write_text(text)
    (_, template), *_ = kv.pod_templates(job)
    container = template["spec"]["containers"][0]
    cmd = [a.replace("/etc/ncclgen", str(etc)) for a in container["command"]]
    launch = cmd.index("--") + 1
    cmd = [*cmd[:launch], sys.executable, str(STANDIN), "--local-ranks", "1", "--nranks", "2", "--rank", "1"]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env["NCCL_DEBUG_FILE"] = str(tmp_path / "nccl" / "%h.%p.log")  # the pod's /tmp, here a test folder
    env.update(
        PATH=os.environ["PATH"],
        NCCLGEN_STANDIN_HCAS=",".join(json.loads(cm["data"]["transport.json"])["hcas"]),
        NCCLGEN_STANDIN_FAULT=fault,
        NCCLGEN_STANDIN_AFTER_S="1",
    )
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


def test_pod_as_planned_completes(tmp_path):
    p = pod_run(tmp_path, "")
    assert p.returncode == 0, p.stderr
    assert "NET channels 4 GDRDMA / 0 without" in p.stderr


def test_pod_without_gdr_ends_with_status_7(tmp_path):
    p = pod_run(tmp_path, "nogdr")
    assert p.returncode == 7, p.stderr
    assert "ncclgen: transport FAILED: node " in p.stderr and ": GPUDirect RDMA: expected every NET channel" in p.stderr


def plan_for(cluster, tier, workload, target="host", transport_check="on"):
    return pipeline.make_plan(pipeline.request(cluster, tier, workload, target=target, transport_check=transport_check))
