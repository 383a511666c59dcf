"""`ncclgen explain` says which QoS class `ncclgen k8s` pods get from the descriptor and which keys make
them Guaranteed (issue 32 item 3). No vendor publishes pod cpu/memory figures for the other presets:
Oracle's BM.GPU.H100.8 nccl-tests MPIJob worker (oracle-quickstart/oci-hpc-oke@9fc64ca9
manifests/nccl-tests/kueue/BM.GPU.H100.8.yaml) and Azure's InfiniBand pod examples (Azure/aks-rdma-infiniband@8029ede9
website/docs/configurations/01-network-operator.md) request GPUs and RDMA devices only, and Google's tcpxo-daemon sidecar has no requests, so those
presets stay BestEffort (Burstable on GKE even with figures) and explain names kubernetes.resources.cpu
and .memory. The class explain states is the one the API server computes for the rendered pods
(tests/k8s_qos.py, a port of GetPodQOS)."""

from __future__ import annotations

import re

import pytest
from k8s_qos import pod_qos
from test_k8s_pods import docs_of, image_for, plan_for, pod_specs, with_resources

from ncclgen.cli import main
from ncclgen.load import descriptor
from ncclgen.render import k8s as render_k8s


def explain_pods(capsys, cluster: str) -> str:
    assert main(["explain", "--cluster", cluster]) == 0
    out = capsys.readouterr().out
    block = re.search(r"\n  kubernetes pods \(ncclgen k8s\): (.*?)(?=\n  \S|\n\S|\Z)", out, re.S)
    assert block, out
    return " ".join(block.group(1).split())


@pytest.mark.parametrize("cluster", sorted(descriptor.available()))
def test_explain_states_the_class_the_api_server_computes(capsys, cluster):
    said = explain_pods(capsys, cluster)
    p = plan_for(cluster, 1, "verl-grpo-qwen2-7b", target="pod")
    text = render_k8s.render(p, kind="rayjob", image=image_for(cluster))
    (qos,) = {pod_qos(spec) for spec in pod_specs(docs_of(text))}
    assert said.startswith(f"QoS {qos}")
    if qos != "Guaranteed":
        assert "kubernetes.resources.cpu (whole CPUs) and kubernetes.resources.memory" in said or "sidecar" in said


def test_gke_says_the_sidecar_keeps_pods_burstable_even_with_figures(capsys, tmp_path):
    said = explain_pods(capsys, "gcp-a3-mega")
    assert said.startswith("QoS BestEffort") and "sidecar tcpxo-daemon" in said and "stay Burstable even then" in said
    path = with_resources(tmp_path, "gcp-a3-mega", cpu=200, memory="1800Gi")
    assert explain_pods(capsys, path).startswith("QoS Burstable, not Guaranteed: sidecar tcpxo-daemon")


def test_setting_both_keys_makes_explain_and_pods_guaranteed(capsys, tmp_path):
    path = with_resources(tmp_path, "h100-ib", cpu=200, memory="1800Gi")
    assert explain_pods(capsys, path).startswith("QoS Guaranteed (200 CPUs, 1800Gi memory")
    text = render_k8s.render(plan_for(path, 1, "verl-grpo-qwen2-7b", target="pod"), kind="rayjob")
    assert {pod_qos(spec) for spec in pod_specs(docs_of(text))} == {"Guaranteed"}
