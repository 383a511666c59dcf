"""Pods that fit how teams run them (issue 32 item 3, issue 34 items 4-5, issue 28 item 8): manifests that
apply in any namespace, finished pods that keep their logs for a set time, Guaranteed pods where the
descriptor gives cpu and memory (checked with the API server's own QoS rule, tests/k8s_qos.py), a net
plugin that must come from the image named at render time, and a stream that reads like the script:
header, API key order, the job before its ConfigMap, each embedded program under its source file."""

from __future__ import annotations

import copy
import shlex
from pathlib import Path

import k8s_validate as kv
import pytest
import yaml
from k8s_qos import pod_qos
from test_render_k8s import config_of, docs_of, job_of, plan_for

from ncclgen.cli import main
from ncclgen.load import descriptor
from ncclgen.render import k8s as render_k8s

KINDS = {"pytorchjob": "verl-sft", "rayjob": "verl-grpo-qwen2-7b", "trainjob": "verl-sft"}
EFA_IMAGE = "example.com/verl-efa:1"


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def image_for(cluster: str) -> str | None:
    return EFA_IMAGE if cluster == "aws-p5" else None  # its pods load aws-ofi-nccl from the image


def pod_specs(docs: list[dict]) -> list[dict]:
    """Each pod spec as the kubelet gets it; a TrainJob's container `node` takes resourcesPerNode."""
    job = job_of(docs)
    if job["kind"] != "TrainJob":
        return [t["spec"] for _, t in kv.pod_templates(job)]
    runtime = next(d for d in docs if d["kind"] == "TrainingRuntime")
    specs = []
    for _, t in kv.pod_templates(runtime):
        spec = copy.deepcopy(t["spec"])
        for c in spec["containers"]:
            if c["name"] == "node":
                c["resources"] = job["spec"]["trainer"]["resourcesPerNode"]
        specs.append(spec)
    return specs


def header_of(text: str) -> list[str]:
    return text[: text.index("---\n")].splitlines()


def with_resources(tmp_path: Path, base: str, **resources) -> str:
    doc = yaml.safe_load(Path(descriptor.available()[base]).read_text())
    doc["kubernetes"].setdefault("resources", {}).update(resources)
    path = tmp_path / f"{base}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


# -- QoS -------------------------------------------------------------------------------------------------


def test_the_qos_port_follows_the_api_server_rule():
    gpu = {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}}
    full = {"limits": {"cpu": "16", "memory": "200Gi"}, "requests": {"cpu": "16", "memory": "200Gi"}}
    assert pod_qos({"containers": [{"resources": gpu}]}) == "BestEffort"  # GPUs do not count
    assert pod_qos({"containers": [{"resources": full}]}) == "Guaranteed"
    assert pod_qos({"containers": [{"resources": {"limits": full["limits"]}}]}) == "Guaranteed"  # defaulted
    assert pod_qos({"containers": [{"resources": full}], "initContainers": [{"name": "s"}]}) == "Burstable"
    half = {"limits": {"cpu": "16", "memory": "200Gi"}, "requests": {"cpu": "8", "memory": "200Gi"}}
    assert pod_qos({"containers": [{"resources": half}]}) == "Burstable"


@pytest.mark.parametrize("cluster", sorted(descriptor.available()))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_header_states_the_qos_class_the_api_server_computes(cluster, kind):
    p = plan_for(cluster, 3, KINDS[kind], target="pod")
    text = render_k8s.render(p, kind=kind, image=image_for(cluster))
    classes = {pod_qos(spec) for spec in pod_specs(docs_of(text))}
    assert len(classes) == 1
    (qos,) = classes
    assert f"# Pods: QoS {qos}" in text
    if cluster == "aws-p5":
        assert qos == "Guaranteed"  # AWS's own figures: 16 CPUs, 200Gi


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_cpu_and_memory_from_the_descriptor_make_every_gpu_pod_guaranteed(tmp_path, kind):
    path = with_resources(tmp_path, "h100-ib", cpu=200, memory="1800Gi")
    docs = render_k8s.documents(plan_for(path, 3, KINDS[kind], target="pod"), kind=kind)
    specs = pod_specs(docs)
    assert specs and {pod_qos(s) for s in specs} == {"Guaranteed"}
    for d in docs:
        kv.validate(d)


@pytest.mark.parametrize("cpu", ["15.5", "0.5", "2.50"])
def test_cpu_must_be_whole_cpus(tmp_path, capsys, cpu):
    path = with_resources(tmp_path, "h100-ib", cpu=cpu, memory="100Gi")
    rc, out, err = run_cli(["k8s", "--cluster", path], capsys)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert "expected whole CPUs" in err and "static CPU manager" in err


# -- namespace, ttl --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_no_namespace_unless_asked(kind, capsys):
    rc, out, _ = run_cli(["k8s", "--workload", KINDS[kind], "--kind", kind], capsys)
    assert rc == 0 and all("namespace" not in d["metadata"] for d in docs_of(out))
    rc, out, _ = run_cli(["k8s", "--workload", KINDS[kind], "--kind", kind, "--namespace", "team-a"], capsys)
    docs = docs_of(out)
    assert rc == 0 and {d["metadata"]["namespace"] for d in docs} == {"team-a"}
    assert kv.check_stream(docs) == []


def test_no_bundled_preset_sets_a_namespace():
    for name, path in descriptor.available().items():
        assert descriptor.load(path).kubernetes.namespace is None, name


def test_finished_pods_stay_an_hour_by_default_and_as_asked(capsys):
    for args, ttl in (([], 3600), (["--ttl-after-finished", "600"], 600)):
        rc, out, _ = run_cli(["k8s", "--workload", "verl-grpo-qwen2-7b", *args], capsys)
        ray = job_of(docs_of(out))
        assert rc == 0 and ray["spec"]["ttlSecondsAfterFinished"] == ttl and ray["spec"]["shutdownAfterJobFinishes"]
        kv.validate(ray)  # the field is in KubeRay's CRD
        rc, out, _ = run_cli(["k8s", "--workload", "verl-sft", *args], capsys)
        pj = job_of(docs_of(out))
        assert rc == 0 and pj["spec"]["runPolicy"]["ttlSecondsAfterFinished"] == ttl
        kv.validate(pj)
        assert f"stay {ttl} s after the job ends" in out


def test_a_trainjob_has_no_ttl_and_says_so(capsys):
    rc, out, _ = run_cli(["k8s", "--workload", "verl-sft", "--kind", "trainjob"], capsys)
    assert rc == 0 and "ttlSecondsAfterFinished" not in out and "until the TrainJob is deleted" in out
    rc, out, err = run_cli(["k8s", "--workload", "verl-sft", "--kind", "trainjob", "--ttl-after-finished", "5"], capsys)
    assert rc == 2 and out == "" and "kubeflow/trainer#4052" in err and len(err.splitlines()) == 1


# -- the net plugin ------------------------------------------------------------------------------------------


def test_eks_refuses_a_default_image_without_the_plugin(capsys):
    rc, out, err = run_cli(["k8s", "--cluster", "aws-p5"], capsys)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert "aws-ofi-nccl" in err and "--image" in err and "awsome-distributed-training" in err


def test_eks_with_an_image_states_the_preflight_check(capsys):
    rc, out, _ = run_cli(["k8s", "--cluster", "aws-p5", "--image", EFA_IMAGE], capsys)
    head = " ".join(line[2:] for line in header_of(out))
    assert rc == 0 and f"from the image {EFA_IMAGE}" in head and "libnccl-net-ofi.so" in head
    assert "status 6" in head
    rc, out, _ = run_cli(["k8s", "--cluster", "aws-p5", "--image", EFA_IMAGE, "--no-preflight"], capsys)
    assert "nothing checks them" in " ".join(header_of(out))


def test_gke_takes_the_plugin_from_the_node(capsys):
    rc, out, _ = run_cli(["k8s", "--cluster", "gcp-a3-mega"], capsys)
    head = " ".join(line[2:] for line in header_of(out))
    assert rc == 0 and "tcpxo in /usr/local/nvidia/lib64, from the node" in head and "status 6" in head


# -- reads like the script -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_header_regenerates_the_same_stream(kind, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["k8s", "--workload", KINDS[kind], "--kind", kind, "--name", "run-1", "--label", "team=a", "-o", "j.yaml"]
    assert run_cli(args, capsys)[0] == 0
    text = (tmp_path / "j.yaml").read_text()
    head = header_of(text)
    assert head[0].startswith("# Generated by ncclgen ")
    regen = next(line for line in head if line.startswith("# Regenerate: "))
    explain = next(line for line in head if line.startswith("# Every value's reason and source: "))
    assert shlex.split(explain.split(": ", 1)[1])[:2] == ["ncclgen", "explain"]
    (tmp_path / "j.yaml").unlink()
    assert run_cli(shlex.split(regen.split(": ", 1)[1])[1:], capsys)[0] == 0
    assert (tmp_path / "j.yaml").read_text() == text


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_objects_in_api_order_job_before_its_configmap(kind, capsys):
    rc, out, _ = run_cli(["k8s", "--workload", KINDS[kind], "--kind", kind, "--tier", "3"], capsys)
    docs = docs_of(out)
    assert rc == 0 and docs[-1]["kind"] == "ConfigMap" and docs.index(job_of(docs)) < len(docs) - 1
    for d in docs:
        assert list(d)[:4] in (["apiVersion", "kind", "metadata", "spec"], ["apiVersion", "kind", "metadata", "data"])
    for spec in pod_specs(docs):
        for c in [*spec["containers"], *spec.get("initContainers", [])]:
            assert next(iter(c)) == "name"
    # the text itself, not only the parsed data: `kind:` on the second line of every document
    for chunk in out.split("---\n")[1:]:
        assert chunk.splitlines()[:2] == [chunk.splitlines()[0], f"kind: {yaml.safe_load(chunk)['kind']}"]


def test_each_embedded_program_is_under_a_line_naming_its_file():
    p = plan_for("h100-ib", 3, "verl-grpo-qwen2-7b", target="pod")
    data = config_of(render_k8s.documents(p, kind="pytorchjob"))["data"]
    root = Path(__file__).resolve().parent.parent / "ncclgen" / "jobside"
    programs = {k: v for k, v in data.items() if k.endswith(".py")}
    assert set(programs) == {
        "ncclgen_preflight.py",
        "ncclgen_raywait.py",
        "ncclgen_raybind.py",
        "ncclgen_transport.py",
        "nccllines.py",  # the transport check imports it by this name
    }
    for key, text in programs.items():
        first, rest = text.split("\n", 1)
        name = key.removeprefix("ncclgen_")
        assert first == f"# ncclgen/jobside/{name}, embedded by ncclgen"
        assert rest == (root / name).read_text()  # blank lines and comments kept


# -- nothing in a pod grows with the replica count (issue 28 item 8) -------------------------------------------


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_pod_templates_do_not_grow_with_the_node_count(kind):
    sizes = []
    for nodes in (2, 64):
        docs = render_k8s.documents(plan_for("h100-ib", 3, KINDS[kind], nodes=nodes, target="pod"), kind=kind)
        specs = [yaml.safe_dump(s).replace(str(nodes), "N") for s in pod_specs(docs)]
        # the embedded programs (*.py) are ncclgen/jobside/ files, the same for any node count; their text
        # may hold the digits (nccllines.py cites NCCL's net.cc:364)
        data = {k: v for k, v in config_of(docs)["data"].items() if not k.endswith(".py")}
        config = yaml.safe_dump(data).replace(str(nodes), "N")
        sizes.append((sorted(len(s) for s in specs), len(config)))
    assert sizes[0] == sizes[1]
