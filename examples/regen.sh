#!/usr/bin/env bash
# Regenerates the rendered examples: for each bundled workload, examples/<workload>/ gets a copy of the
# workload file and what ncclgen renders from it on the h100-ib preset at tier 3 (job.sh: sbatch
# script, job.yaml: Kubernetes manifests, explain.txt: every variable with its reason and source).
# Without workload names it also renders examples/kustomize/base/job.yaml, the base of the kustomize
# overlay example (examples/kustomize/README.md).
# tests/test_examples.py fails until this is rerun after a change; review `git diff examples/` before
# committing.
#
# Usage (from anywhere in the checkout):
#   bash examples/regen.sh                   every bundled workload
#   bash examples/regen.sh bench verl-sft    only these
#   bash examples/regen.sh --into DIR ...    write DIR/examples/... instead (the test compares that)
set -euo pipefail
checkout=$(cd "$(dirname "$0")/.." && pwd)
base=$checkout
if [[ ${1:-} == --into ]]; then
  base=$(cd "$2" && pwd)
  shift 2
fi
all=0
if (($# == 0)); then
  all=1
  for f in "$checkout"/ncclgen/data/workloads/*.yaml; do
    set -- "$@" "$(basename "$f" .yaml)"
  done
fi

# Only flags decide what is rendered: no project defaults from the caller's environment or folder.
unset NCCLGEN_CLUSTER NCCLGEN_TIER NCCLGEN_WORKLOAD NCCLGEN_CLUSTERS
cd "$base"   # paths below are relative: the scripts name their own -o path in their header
ncclgen=("${PYTHON:-python3}" -m ncclgen)
flags=(--cluster h100-ib --tier 3)
for w in "$@"; do
  mkdir -p "examples/$w"
  cp "$checkout/ncclgen/data/workloads/$w.yaml" "examples/$w/workload.yaml"
  "${ncclgen[@]}" slurm "${flags[@]}" --workload "$w" -o "examples/$w/job.sh"
  "${ncclgen[@]}" k8s "${flags[@]}" --workload "$w" -o "examples/$w/job.yaml"
  "${ncclgen[@]}" explain "${flags[@]}" --workload "$w" > "examples/$w/explain.txt"
  echo "examples/$w: workload.yaml job.sh job.yaml explain.txt"
done
if ((all)); then
  mkdir -p examples/kustomize/base
  "${ncclgen[@]}" k8s "${flags[@]}" --workload verl-grpo-qwen2-7b --name grpo \
    --volume pvc:checkpoints:/checkpoints --volume hostpath:/lustre/datasets:/data:ro \
    --service-account verl-trainer --secret-env WANDB_API_KEY=wandb:api-key \
    -o examples/kustomize/base/job.yaml
  echo "examples/kustomize/base: job.yaml"
fi
