"""Name and value patterns shared by the descriptor's sections (regular expressions, matched ASCII-only)."""

from __future__ import annotations

DNS1123 = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
# Kubernetes qualified resource name: optional DNS-subdomain prefix + "/" + name (k8s.io/apimachinery
# validation.IsQualifiedName), e.g. nvidia.com/gpu, rdma/ib, vpc.amazonaws.com/efa, hugepages-2Mi.
RESOURCE_NAME = (
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
)
# A Kubernetes quantity as the API server parses it (k8s.io/apimachinery pkg/api/resource/quantity.go,
# kubernetes/apimachinery@357557a6: the grammar at lines 39-51, ParseQuantity): an optional sign, a number
# (12, 1.5, 1. or .5) and a suffix: binarySI (Ki..Ei), decimalSI (n, u, m, none, k, M, G, T, P, E) or a
# decimal exponent (e3, E-2; whole only, as parseQuantityString reads digits after the sign). So 16, 500m,
# 1.5Gi and 12e6 are quantities, 32 GB, 1K, 1e and 1KiB are not. Whether a value suits its resource (not
# negative, whole CPUs) is checked where it is read (load/quantity.py).
_NUMBER = r"([0-9]+(\.[0-9]*)?|\.[0-9]+)"
QUANTITY = rf"[+-]?{_NUMBER}([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?"
VERSION = r"[0-9]{1,6}(\.[0-9]{1,6}){1,3}"
# What `python -c "import torch; print(torch.__version__)"` prints: 2.13.0, 2.6.0+cu124, and NGC's
# 2.6.0a0+ecf3bae40a (PEP 440 pre/dev release and local version).
TORCH_VERSION = (
    VERSION + r"((a|b|rc)[0-9]{1,6})?(\.post[0-9]{1,6})?(\.dev[0-9]{1,9})?(\+[A-Za-z0-9]+([._][A-Za-z0-9]+)*)?"
)
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# The names whose values the plan owns: NCCL reads NCCL_* (src/misc/param.cc ncclGetEnv), PyTorch
# TORCH_NCCL_*, TORCH_DISTRIBUTED_* and TORCH_FR_* (torch/csrc/distributed/c10d), gloo GLOO_*, UCX and
# libfabric (the NCCL net plugins' transports) UCX_* and FI_*. The Slurm script removes the unplanned ones
# from the submitting environment, and a workload's setup may not set or unset any of them.
PLAN_PREFIXES = ("NCCL_", "TORCH_NCCL_", "TORCH_DIST", "TORCH_FR_", "GLOO_", "UCX_", "FI_")
IFNAME = r"[A-Za-z0-9_.:@-]{1,15}"  # Linux IFNAMSIZ is 16 with the NUL
HCA = r"[A-Za-z0-9_.-]{1,63}"
# An #SBATCH value (partition, account, qos, constraint): printable ASCII without spaces. A newline would
# end the #SBATCH line and a tab or space split it; checked where the descriptor names it, so the error
# is at its file:line:col, not at the --partition the user never typed.
SBATCH_WORD = r"[!-~]+"
SBATCH_WORD_DOC = "a Slurm name without spaces or control characters"
# A container image reference: printable ASCII without spaces (the distribution reference grammar is a
# subset: github.com/distribution/reference regexp.go), so never empty, never a space, a tab or a
# zero-width character.
IMAGE = r"[!-~]+"
IMAGE_DOC = "an image reference without spaces or control characters, e.g. verlai/verl:latest"
