#!/bin/bash
# The Slurm node's launch entry (bin/ncclgen_transport = ncclgen/jobside/transport_entry.sh) around a real NCCL init on a GPU: the launch starts first, the check
# beside it reads NCCL's own lines. Three runs: as planned (the node's real net), a plan that
# expects InfiniBand (the check stops the launch, exit 7), and NCCL_NET=IB where there is none (NCCL's
# WARN reaches the log, the launch's own status is kept). Output: OUT/launch-entry.log.
#   bash tools/device/launch_entry.sh     # in the repository root, on a node with an NVIDIA GPU
# shellcheck disable=SC2009  # the process table is printed on purpose, columns and all
set -u
OUT=${OUT:-/tmp/ncclgen-device}
mkdir -p "$OUT"
exec > >(tee "$OUT/launch-entry.log") 2>&1
step() { echo; echo "=== $* ($(date -u +%T.%N))"; }

D=$(mktemp -d)
mkdir -p "$D/bin"
cp ncclgen/jobside/transport.py ncclgen/jobside/nccllines.py "$D/"
cp ncclgen/jobside/transport_entry.sh "$D/bin/ncclgen_transport"
chmod 0700 "$D/bin/ncclgen_transport"
NV=$(python3 -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())))')
export NCCLGEN_DIR=$D NCCLGEN_NODE=device NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT PYTHONUNBUFFERED=1
export NCCL_DEBUG_FILE=/tmp/ncclgen-nccl-$$/%h.%p.log # a folder that does not exist yet: the entry makes it
spec() { printf '{"v":1,"mode":"on","debug_file":"%s","net":"%s","hcas":%s,"gdr":%s,"nccl":"%s"}\n' \
  "$NCCL_DEBUG_FILE" "$1" "$2" "$3" "$NV" >"$D/transport.json"; cat "$D/transport.json"; }
tree() { sleep "$1"; ps -eo pid,ppid,pgid,ni,etimes,args | grep -E 'transport[.]py|torchru[n]|nccl_ini[t]' | cut -c1-160; }

step "as planned (net Socket): runs to the end, one summary line"
spec Socket '[]' false
tree 4 &
time timeout 180 "$D/bin/ncclgen_transport" torchrun --nproc-per-node=1 tools/device/nccl_init.py
echo "rc=$? (expected 0)"
wait

step "the plan expects IB on mlx5_0:1 with GPUDirect RDMA: the check stops the launch"
spec IB '["mlx5_0:1"]' true
time timeout 180 "$D/bin/ncclgen_transport" torchrun --nproc-per-node=1 tools/device/nccl_init.py
echo "rc=$? (expected 7)"
sleep 1
ps -eo pid,args | grep -E 'torchru[n]|nccl_ini[t]' || echo "nothing of the launch left running"

step "NCCL_NET=IB where there is no InfiniBand: NCCL fails init, its WARN reaches the log"
spec IB '[]' false
time NCCL_NET=IB timeout 180 "$D/bin/ncclgen_transport" torchrun --nproc-per-node=1 tools/device/nccl_init.py
echo "rc=$? (expected torchrun's non-zero status)"

step "the debug files the check read"
ls -la "${NCCL_DEBUG_FILE%/*}"
mkdir -p "$OUT/launch-entry-nccl"
cp "${NCCL_DEBUG_FILE%/*}"/*.log "$OUT/launch-entry-nccl/" 2>/dev/null
step finished
