"""The descriptor's kubernetes section, cross-checked: resources, the pod view (which host interfaces and
RDMA devices a pod sees, its volumes) and the pod settings, checked as the API server would
(ncclgen/load/podspec.py). Named checks sharing desccheck.Check, each problem at its key path."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from . import k8snames, podspec, quantity
from .patterns import QUANTITY

if TYPE_CHECKING:
    from .desccheck import Check
    from .kubesection import Kubernetes


def check(c: Check) -> None:
    _resources(c)
    _pod_renames(c)
    _topo_file(c)
    _volumes(c)
    check_pod_settings(c.desc.kubernetes, c.fail)


def _resources(c: Check) -> None:
    kube = c.desc.kubernetes
    for key, qty in kube.resources.items():
        path = ("kubernetes", "resources", key)
        if isinstance(qty, int) and qty < 1:
            c.fail(path, f"expected a count >= 1, got {qty}")
        if isinstance(qty, str) and not re.fullmatch(QUANTITY, qty):
            c.fail(path, f"{qty!r} is not a Kubernetes quantity (like 16, 500m, 5120Mi or 1.5Gi)")
        elif isinstance(qty, str) and quantity.value(qty) < 0:
            # The API server refuses it (kubernetes pkg/apis/core/validation ValidateNonnegativeQuantity).
            c.fail(path, f"{qty!r} is negative; a request must be 0 or more")
    if quantity.value(kube.shm_size) < 1:  # the pattern checked the syntax
        c.fail(("kubernetes", "shm_size"), f"{kube.shm_size!r}: expected a size of at least one byte, like 64Gi")
    huge = [k for k in kube.resources if k.startswith("hugepages-")]
    if huge and not {"cpu", "memory"} & set(kube.resources):
        c.fail(
            ("kubernetes", "resources", huge[0]),
            "hugepages need a cpu or memory request too; "
            "the API server rejects the pod otherwise (add memory: <quantity>)",
        )


def _pod_renames(c: Check) -> None:
    """kubernetes' pod view names only the host's own interfaces and devices."""
    kube, net = c.desc.kubernetes, c.desc.network
    netdevs = (
        {r.netdev for r in net.compute if r.netdev}
        | set(net.bootstrap_interfaces)
        | {s.name for s in net.storage if s.kind == "netdev"}
    )
    hcas = {r.hca for r in net.compute if r.hca} | {s.name for s in net.storage if s.kind == "hca"}
    for key, known, what in (("netdevs", netdevs, "interface"), ("hcas", hcas, "RDMA device")):
        mapping = getattr(kube, key)
        for name, pod_name in mapping.items():
            if name not in known:
                c.fail(
                    ("kubernetes", key, name),
                    f"{name} is not a host {what} of this descriptor (known: {', '.join(sorted(known)) or 'none'})",
                )
            if pod_name in mapping and mapping[pod_name] != pod_name:
                c.fail(
                    ("kubernetes", key, name), f"{pod_name} is itself renamed; a pod name must not be another host name"
                )
    if kube.bootstrap_match and kube.bootstrap_interfaces is None:
        c.fail(("kubernetes", "bootstrap_match"), "set kubernetes.bootstrap_interfaces with it")


def _topo_file(c: Check) -> None:
    kube = c.desc.kubernetes
    if kube.topo_file is None:
        return
    c.cite(("kubernetes", "topo_file"), kube.topo_file.source)
    if kube.topo_file.host_path and kube.topo_file.config_map:
        c.fail(("kubernetes", "topo_file"), "give host_path or config_map, not both")
    if c.desc.network.topo_file is None:
        c.fail(
            ("kubernetes", "topo_file"),
            "network.topo_file is not set: there is no topology file to bring into the pod",
        )


def _volumes(c: Check) -> None:
    """Each volume has one source and a name of its own; every source cited."""
    kube = c.desc.kubernetes
    names: set[str] = set()
    for i, v in enumerate(kube.volumes):
        path = ("kubernetes", "volumes", i)
        c.cite(path, v.source)
        if sum(x is not None for x in (v.host_path, v.config_map, v.pvc)) != 1:
            c.fail(path, "a volume needs exactly one of host_path, config_map or pvc")
        if v.name in names:
            c.fail((*path, "name"), f"volume {v.name} is declared twice")
        names.add(v.name)
    for i, sc in enumerate(kube.sidecars):
        c.cite(("kubernetes", "sidecars", i), sc.source)


def check_pod_settings(kube: Kubernetes, fail) -> None:
    """The kubernetes section's pod settings, checked as the API server would (ncclgen/load/podspec.py)."""

    def at(path: tuple, fn, *args) -> None:
        try:
            fn(*args)
        except podspec.Invalid as exc:
            fail(("kubernetes", *path), str(exc))

    for i, v in enumerate(kube.volumes):
        if v.pvc is not None:
            at(("volumes", i, "pvc"), podspec.subdomain, v.pvc, "PersistentVolumeClaim name")
        if v.mount_path is not None:
            at(("volumes", i, "mount_path"), podspec.abs_path, v.mount_path, "mount path")
            at(("volumes", i, "mount_path"), podspec.check_mount, v.mount_path, "mount path")
    vols = [podspec.from_descriptor(v) for v in kube.volumes]
    for i in range(1, len(vols)):  # the error names the later of two clashing volumes (the first clash)
        try:
            podspec.check_volumes(vols[: i + 1])
        except podspec.Invalid as exc:
            fail(("kubernetes", "volumes", i), str(exc))
            break
    names: set[str] = set()
    for i, text in enumerate(kube.secret_env):
        at(("secret_env", i), podspec.parse_secret_env, text)
        name = text.partition("=")[0]
        if name in names:
            fail(("kubernetes", "secret_env", i), f"{name} is taken from a Secret twice")
        names.add(name)
    for i, name in enumerate(kube.image_pull_secrets):
        at(("image_pull_secrets", i), podspec.subdomain, name, "Secret name")
    for key, value in kube.labels.items():
        at(("labels", key), k8snames.label_key, key, "label key")
        at(("labels", key), podspec.label_value, value, "label value")
    for key in kube.annotations:
        at(("annotations", key), k8snames.annotation_key, key, "annotation key")
    at(("annotations",), k8snames.check_annotations_size, kube.annotations, "annotations")
    for key, message in k8snames.node_selector_errors(kube.node_selector):
        fail(("kubernetes", "node_selector", key), message)
    for i, t in enumerate(kube.tolerations):
        for name, message in k8snames.toleration_errors(t.key, t.operator, t.value):
            fail(("kubernetes", "tolerations", i, name), message)
    if kube.affinity is not None:
        for path, message in podspec.affinity_errors(kube.affinity):
            fail(("kubernetes", "affinity", *path), message)
