"""Name and value patterns shared by the descriptor's sections (regular expressions, matched ASCII-only)."""

from __future__ import annotations

DNS1123 = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
# Kubernetes qualified resource name: optional DNS-subdomain prefix + "/" + name (k8s.io/apimachinery
# validation.IsQualifiedName), e.g. nvidia.com/gpu, rdma/ib, vpc.amazonaws.com/efa, hugepages-2Mi.
RESOURCE_NAME = (
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
)
QUANTITY = r"[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?"
VERSION = r"[0-9]{1,6}(\.[0-9]{1,6}){1,3}"
# What `python -c "import torch; print(torch.__version__)"` prints: 2.13.0, 2.6.0+cu124, and NGC's
# 2.6.0a0+ecf3bae40a (PEP 440 pre/dev release and local version).
TORCH_VERSION = (
    VERSION + r"((a|b|rc)[0-9]{1,6})?(\.post[0-9]{1,6})?(\.dev[0-9]{1,9})?(\+[A-Za-z0-9]+([._][A-Za-z0-9]+)*)?"
)
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
IFNAME = r"[A-Za-z0-9_.:@-]{1,15}"  # Linux IFNAMSIZ is 16 with the NUL
HCA = r"[A-Za-z0-9_.-]{1,63}"
