#!/bin/bash
# The device checks that need a GPU, as one script (the device machine is lent for minutes at a time):
# discover, doctor, bench with NCCL beside monitor, one real NCCL init under the transport check, and a
# real collective timeout with the flight recorder. Everything it prints and writes goes to OUT
# (default /tmp/ncclgen-device) as run.log and device.tar.gz; tests/data/device/ keeps what a test reads.
#   bash tools/device/check.sh            # in the repository root, on a node with an NVIDIA GPU
set -u
OUT=${OUT:-/tmp/ncclgen-device}
W=$OUT/w
mkdir -p "$W/fr-default" "$W/fr-plan" /tmp/ncclgen-nccl
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
exec > >(tee "$OUT/run.log") 2>&1
step() { echo; echo "=== $* ($(date -u +%T))"; }

step machine
nvidia-smi -L; nvidia-smi topo -m; uname -r
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))'
NCCL_VERSION=$(python3 -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())))')
find /sys/class/infiniband -maxdepth 1 2>&1 | head; lsmod 2>/dev/null | grep -E 'nvidia_peermem|nv_peer' || echo "no peermem module listed"

step discover
timeout 60 python3 -m ncclgen discover --name device -o "$W/discover.yaml"; echo "rc=$?"
cat "$W/discover.yaml"
step doctor
timeout 60 python3 -m ncclgen doctor --cluster "$W/discover.yaml"; echo "rc=$?"
timeout 60 python3 -m ncclgen doctor --cluster "$W/discover.yaml" --format json > "$W/doctor.json"; echo "rc=$?"

step "bench (nccl) beside monitor"
timeout 60 python3 -m ncclgen monitor --interval 0.5 -o "$W/monitor.jsonl" &
MON=$!
CL=(); [[ -s $W/discover.yaml ]] && CL=(--cluster "$W/discover.yaml")
timeout 120 torchrun --nproc-per-node=1 -m ncclgen bench --sizes 8:256M --iters 10 --warmup 3 "${CL[@]}" \
  --json "$W/bench.json"; echo "rc=$?"
kill -TERM "$MON"; wait "$MON"; echo "monitor rc=$?"
timeout 30 python3 -m ncclgen monitor summary "$W/monitor.jsonl"; echo "rc=$?"

step "NCCL init under the transport check (warn)"
printf '{"v":1,"mode":"warn","debug_file":"/tmp/ncclgen-nccl/%%h.%%p.log","net":"Socket","nccl":"%s"}\n' \
  "$NCCL_VERSION" > "$W/transport.json"
cat "$W/transport.json"
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT NCCL_DEBUG_FILE=/tmp/ncclgen-nccl/%h.%p.log \
  timeout 120 python3 ncclgen/jobside/transport.py @"$W/transport.json" -- \
  torchrun --nproc-per-node=1 tools/device/nccl_init.py; echo "rc=$?"
mkdir -p "$W/nccl-init"; cp /tmp/ncclgen-nccl/*.log "$W/nccl-init/" 2>/dev/null; ls -la "$W/nccl-init"
step "NCCL init, every subsystem (no check)"
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALL NCCL_DEBUG_FILE="$W/nccl-all.%h.%p.log" \
  timeout 120 torchrun --nproc-per-node=1 tools/device/nccl_init.py; echo "rc=$?"

step "collective timeout, torch defaults (where does the flight recorder dump?)"
env -u XDG_CACHE_HOME HOME="$W/fr-default" FR_WAIT_S=40 timeout 90 python3 tools/device/fr_timeout.py; echo "rc=$?"
find "$W/fr-default" -type f | head
step "collective timeout, the plan's flight-recorder settings"
TORCH_FR_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE="$W/fr-plan/nccl_trace_rank_" \
  FR_WAIT_S=40 timeout 90 python3 tools/device/fr_timeout.py; echo "rc=$?"
ls -la "$W/fr-plan"
step "fr_trace reads the dumps"
timeout 60 python3 -m torch.distributed.flight_recorder.fr_trace -j "$W/fr-plan"; echo "rc=$?"
timeout 60 python3 -m torch.distributed.flight_recorder.fr_trace "$W/fr-plan"; echo "rc=$?"
D=$(find "$W/fr-default" -type f -name '*trace_rank_*' -printf '%h\n' | head -1)
[[ -n $D ]] && { timeout 60 python3 -m torch.distributed.flight_recorder.fr_trace -j "$D"; echo "rc=$?"; }

step finished
tar -C "$OUT" -czf "$OUT/device.tar.gz" w
ls -la "$OUT"
