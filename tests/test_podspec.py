"""Pod settings (ncclgen/load/podspec.py): every value checked as the API server would, from the
descriptor's kubernetes section (file:line, key path) and from `ncclgen k8s` options (one line, exit 2).

The regexes are the API server's (k8s.io/apimachinery pkg/util/validation); each refused case below is a
value the API server refuses too, and each accepted one a value it accepts.
"""

from __future__ import annotations

import pytest
from test_descriptor import edit, line_of, write

from ncclgen.errors import UserError
from ncclgen.load import descriptor, podspec


def test_volume_forms_and_stable_names():
    v = podspec.parse_volume("pvc:train-data:/data")
    assert (v.kind, v.source, v.mount_path, v.read_only) == ("pvc", "train-data", "/data", False)
    assert v.volume() == {"name": "pvc-train-data", "persistentVolumeClaim": {"claimName": "train-data"}}
    assert v.mount() == {"name": "pvc-train-data", "mountPath": "/data"}
    h = podspec.parse_volume("hostpath:/lustre/models:/lustre/models:ro")
    assert h.volume() == {"name": "hostpath-lustre-models", "hostPath": {"path": "/lustre/models", "type": "Directory"}}
    assert h.mount() == {"name": "hostpath-lustre-models", "mountPath": "/lustre/models", "readOnly": True}
    c = podspec.parse_volume("configmap:hydra-conf:/conf")
    assert c.volume() == {"name": "configmap-hydra-conf", "configMap": {"name": "hydra-conf"}}
    assert c.mount()["readOnly"] is True
    # Names that would collide if only sanitised get a hash of the source: /a-b and /a/b differ.
    a, b = podspec.parse_volume("hostpath:/a-b:/x"), podspec.parse_volume("hostpath:/a/b:/y")
    assert a.name != b.name and b.name == "hostpath-a-b"
    assert podspec.parse_volume("pvc:a.b:/x").name != podspec.parse_volume("pvc:a-b:/y").name
    long = podspec.parse_volume("hostpath:/" + "x" * 300 + ":/x")
    assert len(long.name) <= 63 and long.name == podspec.parse_volume("hostpath:/" + "x" * 300 + ":/y").name


@pytest.mark.parametrize(
    "text, message",
    [
        ("pvc:Data:/d", "is not a DNS-1123 subdomain"),
        ("pvc:d_x:/d", "is not a DNS-1123 subdomain"),
        ("configmap:-c:/d", "is not a DNS-1123 subdomain"),
        ("pvc:d:rel/path", "must be an absolute path"),
        ("hostpath:lustre:/d", "must be an absolute path"),
        ("pvc:d:/a/../b", "must not contain '..'"),
        ("pvc:d:/", "root"),
        ("pvc:d:/dev/shm", "overlaps /dev/shm"),
        ("pvc:d:/etc", "overlaps /etc/ncclgen"),
        ("nfs:server:/d", "expected pvc:CLAIM"),
        ("pvc:d", "expected pvc:CLAIM"),
        ("pvc:d:/x:rw", "expected pvc:CLAIM"),
        ("pvc:d:/x\ny", "control character"),
    ],
)
def test_bad_volume(text, message):
    with pytest.raises(podspec.Invalid, match=message):
        podspec.parse_volume(text)


def test_duplicate_and_nested_mounts_refused():
    vols = [podspec.parse_volume(t) for t in ("pvc:a:/data", "pvc:b:/data/")]
    with pytest.raises(podspec.Invalid, match="mount path /data is used twice"):
        podspec.check_volumes(vols)
    with pytest.raises(podspec.Invalid, match="nested"):
        podspec.check_volumes([podspec.parse_volume(t) for t in ("pvc:a:/data", "pvc:b:/data/x")])
    with pytest.raises(podspec.Invalid, match="mounted twice"):
        podspec.check_volumes([podspec.parse_volume(t) for t in ("pvc:a:/x", "pvc:a:/y")])


@pytest.mark.parametrize(
    "text, message",
    [
        ("WANDB_API_KEY", "expected NAME=SECRET:KEY"),
        ("WANDB_API_KEY=wandb", "expected NAME=SECRET:KEY"),
        ("1X=s:k", "not an environment variable name"),
        ("X=S:k", "not a DNS-1123 subdomain"),
        ("X=s:k/y", "not a valid key"),
        ("X=s:", "not a valid key"),
    ],
)
def test_bad_secret_env(text, message):
    with pytest.raises(podspec.Invalid, match=message):
        podspec.parse_secret_env(text)


def test_secret_env_is_a_reference():
    s = podspec.parse_secret_env("WANDB_API_KEY=wandb:api-key")
    assert s.env() == {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}}


def test_merge_command_line_over_descriptor():
    base = podspec.PodSettings(
        labels={"team": "a"},
        service_account="sa1",
        image_pull_secrets=("reg",),
        volumes=(podspec.parse_volume("pvc:data:/data"),),
    )
    got = podspec.merge(
        base,
        volumes=["hostpath:/lustre:/lustre"],
        service_account="sa2",
        labels=["team=b", "kueue.x-k8s.io/queue-name=gpu"],
        annotations=["a.io/x=$(y) `z`"],
        image_pull_secrets=["reg", "reg2"],
        secret_env=["K=s:k"],
        priority_class="high",
    )
    assert [v.name for v in got.volumes] == ["pvc-data", "hostpath-lustre"]
    assert got.labels == {"team": "b", "kueue.x-k8s.io/queue-name": "gpu"}
    assert got.annotations == {"a.io/x": "$(y) `z`"}
    assert got.pod_spec() == {
        "serviceAccountName": "sa2",
        "priorityClassName": "high",
        "imagePullSecrets": [{"name": "reg"}, {"name": "reg2"}],
    }


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"volumes": ["pvc:x:/data"]}, "^--volume: mount path /data is used twice"),
        ({"labels": ["team"]}, "^--label: --label 'team': expected KEY=VALUE"),
        ({"labels": ["a/b/c=x"]}, "^--label: label key 'a/b/c'"),
        ({"labels": ["x=" + "v" * 64]}, "^--label x: value"),
        ({"labels": ["x=-v"]}, "is not a label value"),
        ({"labels": ["app.kubernetes.io/name=x"]}, "ncclgen sets this label itself"),
        ({"annotations": ["=x"]}, "^--annotation: annotation key ''"),
        ({"annotations": ["k=" + "v" * (256 * 1024)]}, "256 KiB"),
        ({"secret_env": ["NCCL_DEBUG=s:k"]}, "the plan already sets NCCL_DEBUG"),
        ({"secret_env": ["K=s:k", "K=t:k"]}, "set twice"),
        ({"service_account": "My_SA"}, "^--service-account: ServiceAccount name 'My_SA'"),
        ({"priority_class": "a..b"}, "^--priority-class: PriorityClass name"),
        ({"scheduler_name": "Volcano"}, "^--scheduler-name: scheduler name"),
        ({"image_pull_secrets": ["reg/x"]}, "^--image-pull-secret: Secret name"),
    ],
)
def test_merge_refuses(kwargs, message):
    base = podspec.PodSettings(volumes=(podspec.parse_volume("pvc:data:/data"),))
    with pytest.raises(UserError, match=message):
        podspec.merge(base, reserved_labels=["app.kubernetes.io/name"], env_names=["NCCL_DEBUG"], **kwargs)


POD = """\
kubernetes:
  source: a
  volumes:
    - {name: data, pvc: train-data, mount_path: /data}
    - {name: lustre, host_path: /lustre, host_path_type: Directory, mount_path: /lustre, read_only: true}
  service_account: trainer
  priority_class: high
  scheduler_name: volcano
  image_pull_secrets: [regcred]
  labels: {kueue.x-k8s.io/queue-name: gpu-queue}
  annotations: {k8s.v1.cni.cncf.io/networks: ib-net}
  secret_env: ["WANDB_API_KEY=wandb:api-key"]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions:
              - {key: agentpool, operator: In, values: [gpu]}
    podAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          podAffinityTerm:
            topologyKey: ib/torset
            labelSelector: {matchLabels: {app.kubernetes.io/name: job}}
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: kubernetes.io/hostname
          labelSelector:
            matchExpressions: [{key: app.kubernetes.io/name, operator: Exists}]
"""


def test_descriptor_pod_settings(tmp_path):
    d = descriptor.load(write(tmp_path, edit("kubernetes:\n  source: a\n", POD)))
    ps = d.kubernetes.pod_settings()
    assert [v.name for v in ps.volumes] == ["data", "lustre"]
    assert [v.volume() for v in ps.volumes] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "train-data"}},
        {"name": "lustre", "hostPath": {"path": "/lustre", "type": "Directory"}},
    ]
    assert [v.mount() for v in ps.volumes] == [
        {"name": "data", "mountPath": "/data"},
        {"name": "lustre", "mountPath": "/lustre", "readOnly": True},
    ]
    assert ps.secret_env == (podspec.SecretEnv("WANDB_API_KEY", "wandb", "api-key"),)
    spec = ps.pod_spec()
    assert spec["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "agentpool", "operator": "In", "values": ["gpu"]}]}]
            }
        },
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": "ib/torset",
                        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "job"}},
                    },
                }
            ]
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "Exists"}]},
                }
            ]
        },
    }
    assert spec["serviceAccountName"] == "trainer" and spec["schedulerName"] == "volcano"


@pytest.mark.parametrize(
    "old, new, path, message",
    [
        ("pvc: train-data,", "pvc: Train,", "kubernetes.volumes[0].pvc", "not a DNS-1123 subdomain"),
        ("mount_path: /data}", "mount_path: /a/../data}", "kubernetes.volumes[0].mount_path", "must not contain '..'"),
        ("mount_path: /lustre,", "mount_path: /data,", "kubernetes.volumes[1]", "mount path /data is used twice"),
        (
            "pvc: train-data,",
            "pvc: train-data, host_path: /x,",
            "kubernetes.volumes[0]",
            "exactly one of host_path, config_map or pvc",
        ),
        ("service_account: trainer", "service_account: Trainer", "kubernetes.service_account", "a DNS-1123 subdomain"),
        ("[regcred]", "[Reg]", "kubernetes.image_pull_secrets[0]", "not a DNS-1123 subdomain"),
        (
            "queue-name: gpu-queue",
            "queue-name: -gpu",
            "kubernetes.labels.kueue.x-k8s.io/queue-name",
            "is not a label value",
        ),
        ("k8s.v1.cni.cncf.io/networks: ib", "a/b/c: ib", "kubernetes.annotations.a/b/c", "not a DNS-1123"),
        (
            '"WANDB_API_KEY=wandb:api-key"',
            '"WANDB_API_KEY=wandb"',
            "kubernetes.secret_env[0]",
            "expected NAME=SECRET:KEY",
        ),
        (
            "operator: In, values: [gpu]",
            "operator: In, values: []",
            "kubernetes.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].values",
            "needs at least one value",
        ),
        (
            "operator: In, values: [gpu]",
            "operator: Has, values: [gpu]",
            "kubernetes.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].operator",
            "expected one of",
        ),
        ("topologyKey: ib/torset", "topologyKey: ib/tor/set", "podAffinityTerm.topologyKey", "prefix"),
        ("operator: Exists}]", "operator: Exists, values: [x]}]", "matchExpressions[0].values", "takes no values"),
        ("weight: 100", "weight: 101", "weight", "<= 100"),
    ],
)
def test_descriptor_pod_setting_errors(tmp_path, old, new, path, message):
    text = edit("kubernetes:\n  source: a\n", POD)
    text = edit(old, new, text)
    file = write(tmp_path, text)
    with pytest.raises(UserError) as exc:
        descriptor.load(file)
    err = str(exc.value)
    assert path in err and message in err, err
    assert err.startswith(f"{file}:{line_of(text, new)}:"), err
