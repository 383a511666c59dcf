"""Platform views and net plugins (issue 11): every bundled preset, rendered for the host (Slurm/env) and
for a pod on its Kubernetes flavour, contains what the vendor's own current recipe requires
(tests/data/platforms/vendor_required.yaml, each entry citing its vendor file); pod manifests still pass
the strict CRD, typed-model and pod-rule checks (tests/k8s_validate.py); plugins load loudly; lint knows
the platform."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import k8s_validate as kv
import pytest
import yaml

from ncclgen import lint, plan
from ncclgen.errors import UserError
from ncclgen.load import descriptor, plugins, views
from ncclgen.load.workload import load_workload
from ncclgen.render import k8s as render_k8s

REQUIRED = yaml.safe_load((Path(__file__).parent / "data" / "platforms" / "vendor_required.yaml").read_text())
WORKLOAD = "verl-grpo-qwen2-7b"
CASES = [(c, t) for c, views_ in REQUIRED.items() for t in views_]


def build(cluster, target, tier=1, **kw):
    desc = cluster if isinstance(cluster, descriptor.Descriptor) else descriptor.load_cluster(cluster)
    return plan.build(desc, load_workload(WORKLOAD), tier, target=target, **kw)


def pod_templates(docs):
    job = docs[0]  # the job first, then its ConfigMap
    if job["kind"] == "RayJob":
        spec = job["spec"]["rayClusterSpec"]
        return [spec["headGroupSpec"]["template"]] + [g["template"] for g in spec.get("workerGroupSpecs", [])]
    return [r["template"] for r in job["spec"]["pytorchReplicaSpecs"].values()]


@pytest.mark.parametrize("cluster,target", CASES)
def test_render_contains_the_vendors_required_elements(cluster, target):
    want = REQUIRED[cluster][target]
    assert want["source"]  # every expectation cites the vendor file it was read from
    p = build(cluster, target, want.get("tier", 1))
    env = p.env_dict()
    for name, value in want.get("env", {}).items():
        assert env.get(name) == value, (cluster, target, name, env.get(name))
    for name in want.get("env_absent", []):
        assert name not in env, (cluster, target, name, env[name])
    if target == "host":
        return
    docs = render_k8s.documents(p, image="example.com/verl-efa:1" if cluster == "aws-p5" else None)
    for d in docs:
        kv.validate(d)
    for t in pod_templates(docs):
        spec, meta = t["spec"], t["metadata"]
        main = spec["containers"][0]
        rendered = {e["name"]: e["value"] for e in main["env"]}
        assert {k: rendered.get(k) for k in env} == {k: render_k8s._kubelet_literal(v) for k, v in env.items()}
        for key, value in want.get("annotations", {}).items():
            assert meta["annotations"].get(key) == value, key
        host_paths = {v["hostPath"]["path"]: v["name"] for v in spec["volumes"] if "hostPath" in v}
        mounted = {m["name"]: m["mountPath"] for m in main["volumeMounts"]}
        for host, path in want.get("host_paths", {}).items():
            assert host in host_paths and mounted.get(host_paths[host]) == path, (host, path)
        cms = {v["name"]: v["configMap"]["name"] for v in spec["volumes"] if "configMap" in v}
        for cm, path in want.get("config_maps", {}).items():
            vol = next(n for n, c in cms.items() if c == cm)
            assert mounted[vol] == path
        sidecars = {c["name"]: c for c in spec.get("initContainers", []) + spec["containers"][1:]}
        for name, s in want.get("sidecars", {}).items():
            got = sidecars[name]
            assert got["image"] == s["image"]
            assert got["securityContext"]["capabilities"]["add"] == s["capabilities"]
            assert (got.get("restartPolicy") == "Always") == s["native"]
            assert got in spec.get("initContainers", []) if s["native"] else got in spec["containers"]
        req = main["resources"]["requests"]
        for res, qty in want.get("resources", {}).items():
            assert req.get(res) == qty and main["resources"]["limits"][res] == qty, (res, req)
        for res in want.get("resources_absent", []):
            assert res not in req
        if "host_network" in want:
            assert spec.get("hostNetwork", False) == want["host_network"]


@pytest.mark.parametrize("cluster", sorted(descriptor.available()))
def test_pod_view_renders_valid_manifests_for_every_preset(cluster):
    image = "example.com/verl-efa:1"  # aws-p5's pods load aws-ofi-nccl from the image: one must be named
    for kind in ("pytorchjob", "rayjob"):
        for d in render_k8s.documents(build(cluster, "pod", 3), kind=kind, image=image):
            kv.validate(d)
    desc = descriptor.load_cluster(cluster)
    sft = plan.build(desc, load_workload("verl-sft"), 3, target="pod")  # torchrun: a TrainJob too
    docs = render_k8s.documents(sft, kind="trainjob", image=image)
    for d in docs:
        kv.validate(d)
    text = yaml.safe_dump_all(docs)
    for s in views.view(desc, "pod").kubernetes.sidecars:  # the platform's sidecars reach every kind
        assert f"name: {s.name}" in text


def test_every_plugin_preset_fails_loudly_when_its_plugin_is_missing():
    """NCCL_NET=<registered name> for plugins whose name is stable; where there is none (rdma-sharp), the
    library file goes to the preflight, and the net stays NCCL's own IB (no silent socket fallback)."""
    seen = set()
    for name in descriptor.available():
        desc = descriptor.load_cluster(name)
        plugin = plugins.get(desc.network.net_plugin)
        if plugin is None:
            continue
        seen.add(plugin.id)
        for target in ("host", "pod"):
            p = build(desc, target)
            loaded = views.plugin_of(p.cluster)
            if loaded is None:
                assert target == "pod" and desc.kubernetes.net_plugin == "none"
                continue
            env = p.env_dict()
            assert ("LD_LIBRARY_PATH" in env) == (plugin.load == "ld_library_path")
            assert ("NCCL_NET_PLUGIN" in env) == (plugin.load == "net_plugin")
            if plugin.net_name:
                assert env["NCCL_NET"] == plugin.net_name
            else:
                assert desc.network.fabric in ("infiniband", "roce") and "NCCL_NET" not in env
            files = views.plugin_files(p.cluster)
            assert files and all(f.startswith(p.cluster.network.plugin_dir + "/") for f in files)
            assert all(
                str(e.origin).startswith("plugin ") for e in p.env if e.name in ("LD_LIBRARY_PATH", "NCCL_NET_PLUGIN")
            )
    assert seen == {"tcpxo", "aws-ofi-nccl", "rdma-sharp"}


def test_registered_names_are_the_plugins_own():
    assert plugins.get("tcpxo").net_name == "FasTrak"  # fastrak_plugin.cc:359
    assert plugins.get("aws-ofi-nccl").net_name == "Libfabric"  # nccl_ofi_interface_nvidia.cpp:662


def test_plugin_only_variables_leave_with_their_plugin(tmp_path):
    """A pod without the plugin gets none of its variables, nor what would load it."""
    text = Path(descriptor.available()["gcp-a3-mega"]).read_text()
    path = tmp_path / "gke-no-plugin.yaml"
    path.write_text(text.replace("  flavour: gke\n", "  flavour: gke\n  net_plugin: none\n"))
    env = build(descriptor.load(str(path)), "pod").env_dict()
    assert not [n for n in env if n.startswith(("NCCL_FASTRAK_", "NCCL_SHIMNET_"))]
    assert "LD_LIBRARY_PATH" not in env and "NCCL_NET" not in env and "NCCL_TUNER_CONFIG_PATH" not in env
    assert env["NCCL_SOCKET_IFNAME"] == "=eth0"


def test_oci_vendor_omit_drops_the_generic_min_ctas_rule():
    env = build("oci-bm-gpu-h100-8", "host", 3).env_dict()
    assert "NCCL_MIN_CTAS" not in env
    assert build("dgx-h100", "host", 3).env_dict()["NCCL_MIN_CTAS"] == "16"  # the rule still applies elsewhere


def test_unconfirmed_bootstrap_says_so_where_it_reaches_the_env():
    p = build("dgx-h100", "host")
    by = {e.name: e for e in p.env}
    assert "site fact to confirm" in by["NCCL_SOCKET_IFNAME"].reason
    assert (
        "site fact to confirm"
        not in {e.name: e for e in build("oci-bm-gpu-h100-8", "host").env}["NCCL_SOCKET_IFNAME"].reason
    )


def descriptor_file(tmp_path, base: str, replace_from: str, replace_to: str) -> str:
    text = Path(descriptor.available()[base]).read_text()
    assert replace_from in text
    path = tmp_path / f"{base}-edited.yaml"
    path.write_text(text.replace(replace_from, replace_to))
    return str(path)


def test_cloud_pod_without_pod_interface_names_is_refused(tmp_path):
    path = descriptor_file(tmp_path, "gcp-a3-mega", "  bootstrap_interfaces: [eth0]\n", "")
    desc = descriptor.load(path)
    build(desc, "host")  # the host view needs no pod names
    with pytest.raises(UserError, match=re.escape("declare kubernetes.bootstrap_interfaces")):
        build(desc, "pod")


def test_topology_file_must_reach_the_pod(tmp_path):
    old = "  topo_file:\n    path: /etc/topology/ndv5-topo.xml\n    config_map: ndv5-topology\n    source: aks-chart\n"
    desc = descriptor.load(descriptor_file(tmp_path, "azure-nd-h100-v5", old, ""))
    with pytest.raises(UserError, match="is a file on the node, not in the pod"):
        build(desc, "pod")
    desc = descriptor.load(
        descriptor_file(
            tmp_path,
            "azure-nd-h100-v5",
            old,
            old.replace("    config_map: ndv5-topology\n", "    host_path: /opt/microsoft/ndv5-topo.xml\n"),
        )
    )
    docs = render_k8s.documents(build(desc, "pod"))
    spec = pod_templates(docs)[0]["spec"]
    vol = next(v for v in spec["volumes"] if v["name"] == views.TOPO_VOLUME)
    assert vol["hostPath"] == {"path": "/opt/microsoft/ndv5-topo.xml", "type": "File"}
    for d in docs:
        kv.validate(d)


def test_pod_renames_must_name_host_devices(tmp_path):
    path = descriptor_file(tmp_path, "azure-nd-h100-v5", "    mlx5_ib7: mlx5_7\n", "    mlx5_ib9: mlx5_7\n")
    with pytest.raises(UserError) as exc:
        descriptor.load(path)
    msg = str(exc.value)
    assert "kubernetes.hcas.mlx5_ib9" in msg and "mlx5_ib9 is not a host RDMA device" in msg
    assert f"{Path(path).name}:" in msg


def test_lint_pod_env_with_host_only_names_is_an_error():
    manifest = textwrap.dedent("""\
        apiVersion: v1
        kind: Pod
        spec:
          containers:
          - name: x
            env:
            - {name: NCCL_SOCKET_IFNAME, value: "=enp0s12"}
            - {name: NCCL_FASTRAK_IFNAME, value: "enp6s0,eth2"}
        """)
    gcp = descriptor.load_cluster("gcp-a3-mega")
    found = [f for f in lint.lint_text(manifest, "pod.yaml", gcp) if f.code == "NG017"]
    assert [(f.variable, f.severity) for f in found] == [
        ("NCCL_SOCKET_IFNAME", "error"),
        ("NCCL_FASTRAK_IFNAME", "error"),
    ]
    assert "enp6s0" in found[1].message and "eth2" not in found[1].message.split("uses")[0]
    # The same names in an env file (a Slurm job on the VM) are right.
    env_file = "export NCCL_SOCKET_IFNAME==enp0s12\nexport NCCL_FASTRAK_IFNAME=enp6s0\n"
    assert not [f for f in lint.lint_text(env_file, "job.env", gcp) if f.code == "NG017"]
    # ncclgen's own pod render lints clean of it.
    docs = render_k8s.render(build(gcp, "pod"))
    assert not [f for f in lint.lint_text(docs, "job.yaml", gcp) if f.severity == "error"]


def test_lint_plugin_only_variable_without_its_plugin_is_a_warning():
    manifest = "env:\n- {name: SHARP_COLL_LOG_LEVEL, value: '3'}\n"
    azure = descriptor.load_cluster("azure-nd-h100-v5")  # its pods carry no SHARP plugin
    pod = [f for f in lint.lint_text(manifest, "pod.yaml", azure) if f.variable == "SHARP_COLL_LOG_LEVEL"]
    assert [(f.code, f.severity) for f in pod] == [("NG011", "warning")]
    host = lint.lint_text("export SHARP_COLL_LOG_LEVEL=3\n", "job.env", azure)
    assert not [f for f in host if f.code == "NG011"]  # the HPC image's host loads it


def test_slurm_script_puts_the_plugin_folder_in_front_of_the_loader_path():
    """`ncclgen slurm --cluster gcp-a3-mega` loads FasTrak: the exported LD_LIBRARY_PATH, run by bash, starts
    with Google's VM folder and keeps what the job already had; NCCL_NET makes a missing plugin fatal."""
    import subprocess

    from ncclgen.render import slurm as render_slurm

    p = build("gcp-a3-mega", "host")
    script = render_slurm.render_plan(p, render_slurm.Options())
    line = next(ln for ln in script.splitlines() if ln.startswith("export LD_LIBRARY_PATH="))
    for before, after in (("", "/var/lib/tcpxo/lib64"), ("/opt/x", "/var/lib/tcpxo/lib64:/opt/x")):
        env = {"PATH": "/usr/bin:/bin", **({"LD_LIBRARY_PATH": before} if before else {})}
        out = subprocess.run(
            ["bash", "-c", f'{line}\nprintf %s "$LD_LIBRARY_PATH"'], env=env, capture_output=True, text=True, check=True
        ).stdout
        assert out == after
    assert "export NCCL_NET='FasTrak'" in script
    # A pod's loader path is the container's own, exactly Google's value.
    assert build("gcp-a3-mega", "pod").env_dict()["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64"


def test_gate_refuses_a_host_interface_set_for_a_pod():
    from ncclgen import pipeline

    with pytest.raises(UserError, match=r"NG017|only the gcp-a3-mega host"):
        pipeline.make_plan(pipeline.request("gcp-a3-mega", sets=("NCCL_SOCKET_IFNAME==enp0s12",), target="pod"))
    pipeline.make_plan(pipeline.request("gcp-a3-mega", sets=("NCCL_SOCKET_IFNAME==enp0s12",), target="host"))


def test_pyxis_container_gets_the_tcpxo_folder_mounted():
    """cluster-toolkit mounts /var/lib/tcpxo/lib64 into the pyxis container next to LD_LIBRARY_PATH."""
    from ncclgen.render import slurm as render_slurm

    p = build("gcp-a3-mega", "host")
    script = render_slurm.render_plan(p, render_slurm.Options(container_image="nvcr.io#nvidia/pytorch:25.01-py3"))
    assert "--container-mounts=/var/lib/tcpxo/lib64:/var/lib/tcpxo/lib64" in script
    assert "--container-mounts" not in render_slurm.render_plan(
        build("aws-p5", "host"), render_slurm.Options(container_image="nvcr.io#nvidia/pytorch:25.01-py3")
    )  # AWS's images carry aws-ofi-nccl themselves


def test_sidecar_mount_of_an_undeclared_volume_is_refused(tmp_path):
    text = Path(descriptor.available()["oci-bm-gpu-h100-8"]).read_text()
    path = tmp_path / "oke-sidecar.yaml"
    path.write_text(
        text.replace(
            "  source: oke-hostnet\n# Oracle",
            "  sidecars:\n    - name: probe\n"
            "      image: busybox\n      mounts: [{volume: devinf, path: /x}, "
            "{volume: nope, path: /y}]\n  source: oke-hostnet\n# Oracle",
        )
    )
    desc = descriptor.load(str(path))
    with pytest.raises(UserError, match="probe mounts volume 'nope'"):
        build(desc, "pod")


# The net each bundled preset plans, per view (issue 21 item 1). None: azure's host view loads the
# rdma-sharp plugin, whose net registers as a release-dependent IBext_v<N>; its pod has no plugin.
PLANNED_NET = {
    ("aws-p5", "host"): "Libfabric",
    ("aws-p5", "pod"): "Libfabric",
    ("azure-nd-h100-v5", "host"): None,
    ("azure-nd-h100-v5", "pod"): "IB",
    ("dgx-h100", "host"): "IB",
    ("dgx-h100", "pod"): "IB",
    ("gcp-a3-mega", "host"): "FasTrak",
    ("gcp-a3-mega", "pod"): "FasTrak",
    ("h100-ib", "host"): "IB",
    ("h100-ib", "pod"): "IB",
    ("local-ci", "host"): "Socket",
    ("local-ci", "pod"): "Socket",
    ("oci-bm-gpu-h100-8", "host"): "IB",
    ("oci-bm-gpu-h100-8", "pod"): "IB",
}


def test_every_preset_and_view_pins_the_net_it_plans():
    """Tier 1 sets NCCL_NET to the planned net (NCCL then skips every other one and fails at init instead
    of falling back to Socket), with a reason and a source that `explain` prints."""
    assert {k[0] for k in PLANNED_NET} == set(descriptor.available())
    for (name, target), want in PLANNED_NET.items():
        for tier in (1, 3):
            env = {e.name: e for e in build(name, target, tier).env}
            got = env.get("NCCL_NET")
            assert (got.value if got else None) == want, (name, target, tier)
            if got is not None:
                assert got.tier == 1 and got.reason and got.source, (name, target)
    ib = {e.name: e for e in build("h100-ib", "host").env}["NCCL_NET"]
    assert "net_ib/common.cc:193-194" in ib.source and "src/plugin/net.cc:321-348" in ib.source
    assert "Failed to initialize any NET plugin" in ib.reason


def test_lint_flags_an_nccl_net_the_plan_does_not_provide():
    """NG024: a name other than the planned net (case-insensitive, as NCCL compares); none where the name
    is release-dependent (rdma-sharp's IBext_v<N>) or without a cluster."""

    def ng024(cluster, value):
        desc = descriptor.load_cluster(cluster) if cluster else None
        return [f for f in lint.lint_text(f"NCCL_NET={value}\n", "job.env", desc) if f.code == "NG024"]

    for (name, target), want in PLANNED_NET.items():
        if want is not None and target == "host":
            assert not ng024(name, want) and not ng024(name, want.lower())
    (f,) = ng024("h100-ib", "Socket")
    assert f.severity == "error" and f.fix == "NCCL_NET=IB" and "h100-ib plans (IB" in f.message
    assert ng024("aws-p5", "AWS Libfabric")[0].fix == "NCCL_NET=Libfabric"  # the pre-v1.13.0-aws name
    assert ng024("local-ci", "IB") and ng024("gcp-a3-mega", "Socket")
    assert not ng024("azure-nd-h100-v5", "IBext_v8") and not ng024(None, "Bogus")
