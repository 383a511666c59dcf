"""Platform sidecars as Kubernetes data (GKE's tcpxo-daemon, ...); render/k8s.py adds them to every pod
template (the pod view's volumes go through ncclgen/load/podspec.py with --volume's). Which elements a
platform needs is data (the descriptor's `kubernetes` section and ncclgen/data/plugins.yaml), merged by
ncclgen/load/views.py.

Native sidecars are initContainers with restartPolicy: Always (Kubernetes >= 1.29, the form Google
recommends for the tcpxo-daemon: GoogleCloudPlatform/container-engine-accelerators@992db8125755
gpudirect-tcpxo/best-practice.md): they start before the job's container and stop when it ends, so a
finished job's pod completes.
"""

from __future__ import annotations

from ..load.descriptor import Kubernetes, Sidecar

# Startup probe of a sidecar with startup_file: Google's example values (best-practice.md): up to
# 1 + 6 x 5 s for the daemon to write its health file before the pod fails.
PROBE = {
    "initialDelaySeconds": 1,
    "periodSeconds": 5,
    "timeoutSeconds": 1,
    "successThreshold": 1,
    "failureThreshold": 6,
}


def sidecars(kube: Kubernetes, escape=lambda s: s) -> tuple[list[dict], list[dict]]:
    """(native sidecars for initContainers, plain extra containers). ``escape`` protects values from the
    kubelet's $(VAR) expansion."""
    native: list[dict] = []
    plain: list[dict] = []
    for s in kube.sidecars:
        (native if s.native else plain).append(_container(s, escape))
    return native, plain


def _container(s: Sidecar, escape) -> dict:
    c: dict = {"name": s.name, "image": s.image}
    if s.command:
        c["command"] = [escape(a) for a in s.command]
    if s.args:
        c["args"] = [escape(a) for a in s.args]
    if s.env:
        c["env"] = [{"name": k, "value": escape(v)} for k, v in s.env.items()]
    security: dict = {}
    if s.capabilities:
        security["capabilities"] = {"add": list(s.capabilities)}
    if s.privileged:
        security["privileged"] = True
    if security:
        c["securityContext"] = security
    if s.mounts:
        c["volumeMounts"] = [
            {"name": m.volume, "mountPath": m.path, **({"readOnly": True} if m.read_only else {})} for m in s.mounts
        ]
    if s.native:
        c["restartPolicy"] = "Always"
    if s.startup_file:
        c["startupProbe"] = {"exec": {"command": ["cat", s.startup_file]}, **PROBE}
    return c
