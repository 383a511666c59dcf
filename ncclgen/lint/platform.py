"""Platform checks: a pod's environment must not name interfaces or RDMA devices that exist only on the
host (the descriptor's pod view renames them: kubernetes.netdevs, kubernetes.hcas,
kubernetes.bootstrap_interfaces). NCCL treats a user-set NCCL_SOCKET_IFNAME that matches nothing as a
hard error at init (NCCL v2.30.7 src/misc/socket.cc, src/bootstrap.cc) and silently drops NCCL_IB_HCA
entries that match no device (src/transport/net_ib/init.cc), so either way the job does not run as
planned. Plugin-only variables without their plugin are NG011 warnings of the linter's scope check,
which sees the pod view's net_plugin.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..load.descriptor import Descriptor

CODE = "NG017"
NAME_TOKEN = re.compile(r"[A-Za-z0-9_.@-]+")


def host_only_findings(name: str, value: str | None, cluster: Descriptor) -> list[tuple]:
    """(code, severity, message, fix) for host-only names in ``value`` of a pod's variable ``name``."""
    from ..load import views

    if value is None:
        return []
    names = views.host_only_names(cluster)
    bad = [tok for tok in NAME_TOKEN.findall(value) if tok in names]
    if not bad:
        return []
    pod = [names[b] for b in bad]
    fix = (
        f"in a pod use {', '.join(p for p in pod if p)}"
        if all(pod)
        else "use the names the pod sees (kubernetes.bootstrap_interfaces / netdevs / hcas)"
    )
    seen = ", ".join(dict.fromkeys(p for p in pod if p))
    return [
        (
            CODE,
            "error",
            f"{name} names {', '.join(dict.fromkeys(bad))}: only the {cluster.name} host has "
            f"that name; a pod ({cluster.kubernetes.flavour}) does not see it" + (f" and uses {seen}" if seen else ""),
            fix,
        )
    ]
