"""A pod's QoS class by the API server's rule, for tests: a port of GetPodQOS
(kubernetes/kubernetes@0c4236dde84053bf6261946652105ca0ee87acc8 pkg/apis/core/v1/helper/qos/qos.go).

Only cpu and memory count (GPUs, RDMA devices and hugepages do not). Requests and limits are summed over
all containers, init containers included (native sidecars are init containers); a quantity of zero is
ignored. BestEffort: no cpu or memory request or limit anywhere. Guaranteed: every container has both a
cpu and a memory limit, and the summed requests equal the summed limits, resource by resource.
Burstable: anything else. Before that, the API server defaults a container's missing requests to its
limits (pkg/apis/core/v1/defaults.go, SetDefaults_Pod), as the kubelet sees the pod.
"""

from __future__ import annotations

from decimal import Decimal

SUPPORTED = ("cpu", "memory")
_SUFFIX = {
    "": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip


def quantity(text) -> Decimal:
    """A Kubernetes quantity (16, '500m', '200Gi') as a number."""
    s = str(text)
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if suffix and s.endswith(suffix):
            return Decimal(s[: -len(suffix)]) * _SUFFIX[suffix]
    return Decimal(s)


def pod_qos(spec: dict) -> str:
    """Guaranteed, Burstable or BestEffort for a pod spec (containers and initContainers)."""
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for c in [*spec.get("containers", []), *spec.get("initContainers", [])]:
        res = c.get("resources") or {}
        lim = res.get("limits") or {}
        req = {**lim, **(res.get("requests") or {})}  # defaulting: requests default to limits
        for name, q in req.items():
            if name in SUPPORTED and quantity(q) > 0:
                requests[name] = requests.get(name, Decimal(0)) + quantity(q)
        found = set()
        for name, q in lim.items():
            if name in SUPPORTED and quantity(q) > 0:
                found.add(name)
                limits[name] = limits.get(name, Decimal(0)) + quantity(q)
        if not found >= set(SUPPORTED):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(n) == q for n, q in requests.items()) and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"
