"""`ncclgen k8s` pod settings and Secrets, for every kind (PyTorchJob, RayJob, TrainJob + TrainingRuntime):
volumes, service account, priority class, pull secrets, scheduler, labels, annotations, Secret-backed env
and the descriptor's affinity reach every pod, and pass tests/k8s_validate.py (CRD structural schemas,
the kubernetes client's typed models, pod rules, operator rules, references inside the stream).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import k8s_validate as kv
import pytest
import yaml
from test_render_k8s import docs_of, job_of

from ncclgen.cli import main
from ncclgen.load import descriptor
from ncclgen.render import k8s as render_k8s

ROOT = Path(__file__).resolve().parent.parent
SECRET_VALUE = "s3cr3t-Value-that-must-never-appear"

AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "agentpool", "operator": "In", "values": ["ndh100v5"]}]}
            ]
        }
    },
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "podAffinityTerm": {
                    "topologyKey": "ib/torset",
                    "labelSelector": {"matchLabels": {"app.kubernetes.io/managed-by": "ncclgen"}},
                },
            }
        ]
    },
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchExpressions": [{"key": "ncclgen.io/cluster", "operator": "Exists"}]},
            }
        ]
    },
}

OPTIONS = [
    "--volume",
    "pvc:train-data:/data",
    "--volume",
    "hostpath:/lustre/models:/models:ro",
    "--volume",
    "configmap:hydra-conf:/conf",
    "--service-account",
    "trainer",
    "--priority-class",
    "gpu-high",
    "--image-pull-secret",
    "regcred",
    "--image-pull-secret",
    "regcred2",
    "--scheduler-name",
    "volcano",
    "--label",
    "kueue.x-k8s.io/queue-name=team-a",
    "--annotation",
    "example.com/owner=ml-platform",
    "--secret-env",
    "WANDB_API_KEY=wandb:api-key",
    "--secret-env",
    "HF_TOKEN=hf:token",
]

CASES = [
    ("verl-sft", "pytorchjob"),
    ("verl-sft", "trainjob"),
    ("verl-grpo-qwen2-7b", "rayjob"),
    ("verl-grpo-qwen2-7b", "pytorchjob"),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> str:
    """h100-ib with a descriptor-level volume, label and Azure-style affinity."""
    data = yaml.safe_load(Path(descriptor.resolve("h100-ib")).read_text())
    data["name"] = "h100-aff"
    data["kubernetes"].update(
        {
            "affinity": AFFINITY,
            "volumes": [{"name": "ckpt", "pvc": "checkpoints", "mount_path": "/checkpoints"}],
            "labels": {"team": "research"},
        }
    )
    path = tmp_path_factory.mktemp("cluster") / "h100-aff.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def render(capsys, *args) -> tuple[int, str, str]:
    rc = main(["k8s", *args])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("workload, kind", CASES)
def test_every_kind_carries_the_pod_settings_and_validates(cluster, capsys, workload, kind):
    rc, out, err = render(capsys, "--cluster", cluster, "--tier", "3", "--workload", workload, "--kind", kind, *OPTIONS)
    assert rc == 0, err
    docs = docs_of(out)
    for d in docs:
        kv.validate(d)
    assert kv.check_stream(docs) == []
    job = job_of(docs)
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"  # Kueue reads the job's
    assert all(d["metadata"]["labels"]["team"] == "research" for d in docs)
    pods = [t for d in docs if d["kind"] in kv.KINDS_WITH_PODS for _, t in kv.pod_templates(d)]
    assert pods
    want_volumes = {
        "ckpt": {"persistentVolumeClaim": {"claimName": "checkpoints"}},
        "pvc-train-data": {"persistentVolumeClaim": {"claimName": "train-data"}},
        "hostpath-lustre-models": {"hostPath": {"path": "/lustre/models", "type": "Directory"}},
        "configmap-hydra-conf": {"configMap": {"name": "hydra-conf"}},
    }
    for t in pods:
        spec = t["spec"]
        assert spec["serviceAccountName"] == "trainer" and spec["priorityClassName"] == "gpu-high"
        assert spec["schedulerName"] == "volcano"
        assert spec["imagePullSecrets"] == [{"name": "regcred"}, {"name": "regcred2"}]
        assert spec["affinity"] == AFFINITY
        assert t["metadata"]["annotations"]["example.com/owner"] == "ml-platform"
        assert t["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
        vols = {v["name"]: {k: x for k, x in v.items() if k != "name"} for v in spec["volumes"]}
        assert {k: vols.get(k) for k in want_volumes} == want_volumes
        for c in spec["containers"]:
            mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
            assert mounts["/data"] == {"name": "pvc-train-data", "mountPath": "/data"}
            assert mounts["/models"] == {"name": "hostpath-lustre-models", "mountPath": "/models", "readOnly": True}
            assert mounts["/conf"]["readOnly"] is True and mounts["/checkpoints"]["name"] == "ckpt"
    envs = [c["env"] for t in pods for c in t["spec"]["containers"] if "env" in c]
    if kind == "trainjob":
        assert envs == []  # the TrainJob's trainer carries the env
        envs = [job["spec"]["trainer"]["env"]]
    for env in envs:
        refs = [e for e in env if "valueFrom" in e]
        assert refs == [
            {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
        ]


def test_trainjob_runtime_and_command():
    from test_render_k8s import plan_for

    p = plan_for("h100-ib", 3, "verl-sft", 4)
    docs = render_k8s.documents(p, kind="trainjob", name="sft-run")
    assert [d["kind"] for d in docs] == ["TrainingRuntime", "TrainJob", "ConfigMap"]
    runtime, job = docs[0], docs[1]
    assert job["spec"]["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "TrainingRuntime",
        "name": "sft-run",
    }
    assert runtime["metadata"]["name"] == "sft-run" and runtime["spec"]["mlPolicy"] == {"numNodes": 4, "torch": {}}
    (rj,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    assert rj["name"] == "node"
    assert rj["template"]["metadata"]["labels"] == {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    assert rj["template"]["spec"]["backoffLimit"] == 0
    assert rj["template"]["spec"]["activeDeadlineSeconds"] == 4 * 3600
    pod = rj["template"]["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["containers"][0]["name"] == "node"
    cmd = job["spec"]["trainer"]["command"]
    # torchrun reads PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR/PORT and PET_NPROC_PER_NODE from the
    # torch plugin, as from the training operator for a PyTorchJob: the same command as the PyTorchJob's.
    pj = job_of(render_k8s.documents(p, kind="pytorchjob", name="sft-run"))
    assert cmd == pj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["command"]
    assert not any(a.startswith(("--nnodes", "--node-rank", "--rdzv", "--master", "--nproc")) for a in cmd)
    i = cmd.index("--no-python")
    assert cmd[i + 1 : i + 3] == ["bash", "/etc/ncclgen/bind.sh"] and cmd[i + 3 :] == list(p.launch.command)
    assert not {e["name"] for e in job["spec"]["trainer"]["env"]} & set(kv.TORCH_RESERVED_ENV)


def test_trainjob_refuses_ray_and_long_names(capsys):
    rc, out, err = render(capsys, "--workload", "verl-grpo-qwen2-7b", "--kind", "trainjob")
    assert rc == 2 and out == "" and "use --kind rayjob or pytorchjob" in err
    rc, out, err = render(capsys, "--workload", "verl-sft", "--kind", "trainjob", "--name", "x" * 60)
    assert rc == 2 and out == "" and "<name>-node-0-1" in err and err.count("\n") == 1


def test_the_validator_rejects_what_trainer_would():
    """The TrainJob checks can fail: each mutation below is refused."""
    from test_render_k8s import plan_for

    docs = render_k8s.documents(plan_for("h100-ib", 1, "verl-sft"), kind="trainjob")
    runtime, job = docs[0], docs[1]
    bad = yaml.safe_load(yaml.safe_dump(job))
    bad["spec"]["trainer"]["env"].append({"name": "PET_NNODES", "value": "3"})
    assert any("reserved envs" in e for e in kv.check(bad))
    bad = yaml.safe_load(yaml.safe_dump(job))
    bad["metadata"]["name"] = "9-starts-with-a-digit"
    assert any("RFC 1035" in e for e in kv.check(bad))
    bad = yaml.safe_load(yaml.safe_dump(job))
    bad["spec"]["trainer"]["numNodes"] = "2"
    assert any("expected integer" in e for e in kv.check(bad))
    bad = yaml.safe_load(yaml.safe_dump(job))
    bad["spec"]["podTemplateOverrides"] = []
    assert any("unknown field" in e for e in kv.check(bad))
    assert kv.check_stream([job]) != []  # its runtime is missing
    bad = yaml.safe_load(yaml.safe_dump(runtime))
    del bad["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["metadata"]
    assert any("no trainer job" in e for e in kv.check(bad))
    bad = yaml.safe_load(yaml.safe_dump(runtime))
    bad["spec"]["mlPolicy"]["mpi"] = {}
    assert any("mlPolicy" in e for e in kv.check(bad))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--volume", "pvc:data:data"], "--volume: mount path 'data' must be an absolute path"),
        (["--volume", "pvc:a:/d", "--volume", "pvc:b:/d"], "--volume: mount path /d is used twice"),
        (["--volume", "nfs:srv:/d"], "--volume: 'nfs:srv:/d': expected pvc:CLAIM:/mount/path"),
        (["--service-account", "Trainer"], "--service-account: ServiceAccount name 'Trainer' is not a DNS-1123"),
        (["--priority-class", "-x"], "--priority-class: PriorityClass name"),
        (["--image-pull-secret", "a_b"], "--image-pull-secret: Secret name 'a_b'"),
        (["--scheduler-name", "Volcano"], "--scheduler-name: scheduler name 'Volcano'"),
        (["--label", "queue"], "expected KEY=VALUE"),
        (["--label", "kueue.x-k8s.io/queue-name=Team A"], "--label kueue.x-k8s.io/queue-name: value 'Team A'"),
        (["--label", "app.kubernetes.io/name=x"], "ncclgen sets this label itself"),
        (["--annotation", "bad key=x"], "--annotation: annotation key 'bad key'"),
        (["--secret-env", "WANDB_API_KEY"], "--secret-env: 'WANDB_API_KEY': expected NAME=SECRET:KEY"),
        (["--secret-env", "NCCL_DEBUG=s:k"], "the plan already sets NCCL_DEBUG"),
    ],
)
def test_bad_option_is_one_line_exit_2(capsys, args, message):
    rc, out, err = render(capsys, "--workload", "verl-sft", *args)
    assert rc == 2 and out == ""
    assert message in err and err.count("\n") == 1, err
    assert "Traceback" not in err


def test_a_secret_value_appears_in_no_rendered_output(tmp_path):
    """The value of a Secret-backed variable is in the caller's environment (as when a user exported it
    to test locally) and in the Secret; ncclgen never writes it: not in any manifest of any kind, not in
    an annotation, not in the sbatch script (its Regenerate comment included), not in explain."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NCCLGEN_")}
    env.update(WANDB_API_KEY=SECRET_VALUE, HF_TOKEN=SECRET_VALUE, PYTHONPATH=str(ROOT))
    outputs = []
    runs = [["k8s", "--workload", w, "--kind", k, "--tier", "3", *OPTIONS] for w, k in CASES]
    runs += [
        ["slurm", "--workload", w, "--tier", "3", "--pass-env", "WANDB_API_KEY", "--pass-env", "HF_TOKEN"]
        for w in ("verl-sft", "verl-grpo-qwen2-7b")
    ]
    runs += [["explain", "--workload", "verl-sft"]]
    for i, argv in enumerate(runs):
        out = tmp_path / f"out{i}"
        if argv[0] != "explain":
            argv = [*argv, "-o", str(out)]
        proc = subprocess.run(
            [sys.executable, "-m", "ncclgen", *argv], env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        text = (out.read_text() if out.exists() else "") + proc.stdout + proc.stderr
        assert "WANDB_API_KEY" in text or argv[0] == "explain"
        outputs.append(text)
    assert all(SECRET_VALUE not in t for t in outputs)
    assert len(outputs) == len(runs)
