#!/usr/bin/env bash
# Install everything the tests need, then run all of them. This is the README's test command and
# what .ci/run executes (as root, on a fresh Debian 12 with Python 3.11).
#   - Debian packages: Slurm daemons + munge (the tests start a real 2-node cluster themselves),
#     numactl (per-rank binding), shellcheck (every rendered script is checked), kubernetes-client
#     (`kubectl kustomize` runs the kustomize example offline; tests/test_kustomize_example.py).
#   - a virtualenv at .venv with ncclgen and its test and bench extras (torch 2.13.0 CPU, numpy, ray,
#     pytest, hydra, ...), and each verl release ncclgen knows under .venv/verl/VERSION (pip install
#     --no-deps --target).
# Extra arguments go to pytest, e.g. `bash tests/run.sh -k plan`.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pair in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge numactl:numactl \
            shellcheck:shellcheck kubectl:kubernetes-client; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
if ((${#need[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "tests/run.sh: missing Debian packages: ${need[*]} (run as root, or install them)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # The daemons' postinst scripts try to start services; policy-rc.d denies that in containers,
  # which is what we want: the tests start their own private cluster.
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

py=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  "$py" -m venv .venv
fi
# pip warns about every missing local index folder of this machine's pip.conf; keep real errors.
quiet_pip() { .venv/bin/python -m pip "$@" 2> >(grep -v 'is ignored: it is neither a file' >&2); }
quiet_pip install -q --upgrade pip >/dev/null
quiet_pip install -q -c tests/constraints.txt -e ".[test,bench,dev]"
# The verl releases ncclgen knows (ncclgen/data/verl), each in its own folder without dependencies:
# tests/test_verl.py composes and validates the bundled workloads against them.
for v in $(.venv/bin/python -c 'from ncclgen.load import verl; print(*verl.releases())'); do
  [[ -f .venv/verl/$v/verl/version/version ]] || quiet_pip install -q --no-deps --target ".venv/verl/$v" "verl==$v"
done
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/python -m pytest "$@"
