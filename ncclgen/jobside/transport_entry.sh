#!/usr/bin/env bash
# ncclgen-transport-entry: bin/ncclgen_transport in each node's private folder (written by node.sh); the
# launch step runs its command through it. The launch under the transport check (exit 7 on a difference
# from the plan); the folder is bin/.. node.sh sources it (no bash of its own; it exits that shell), and
# it runs alone too (`bash bin/ncclgen_transport COMMAND...`).
ncclgen_dir=${NCCLGEN_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
if [[ $1 == *.sh && -f $ncclgen_dir/$1 ]]; then set -- bash "$ncclgen_dir/$1" "${@:2}"; fi
# NCCL writes its lines to this folder only if it exists when a rank starts NCCL (the name is read
# indirectly: the plan's export stays the script's only line naming it)
ncclgen_nccl=NCCL_DEBUG
ncclgen_nccl+=_FILE
ncclgen_nccl=${!ncclgen_nccl:-}
# (one process: -m gives the last folder, the one shared, its mode whatever the umask)
# shellcheck disable=SC2174
[[ $ncclgen_nccl != */* || -d ${ncclgen_nccl%/*} ]] || mkdir -p -m 1777 "${ncclgen_nccl%/*}" 2>/dev/null || true
# The launch first, in its own process group (set -m), then the check beside it (below): the ranks do not
# wait for Python to start. Not niced: a failed node's step must end as soon as its launch has. This shell
# keeps the launch's status; the check exits 7 once it stopped the launch over a difference.
# python3 -S: the check needs only the standard library, so the image's site-packages (.pth files)
# are not read at every node's start.
ncclgen_since=${EPOCHREALTIME/,/.}
set -m
"$@" &
ncclgen_launch=$!
# Job control only for the launch's own process group: with it on, bash prints a job notice ('[2]+ Terminated
# sleep ...') for the timer below at a moment of its choosing, into the job's log.
set +m
# torchrun's own log lines name its pid, not its node (as in node.sh)
[[ ${1##*/} != torchrun ]] || echo "ncclgen: torchrun on node ${SLURMD_NODENAME:-$HOSTNAME} is pid $ncclgen_launch" >&2
ncclgen_signalled=0
for ncclgen_sig in TERM INT HUP; do
  trap 'ncclgen_signalled=1; kill -s '"$ncclgen_sig"' -- "-$ncclgen_launch" 2>/dev/null' "$ncclgen_sig"
done
# The check's Python starts a second after the launch (NCCL writes nothing sooner: the ranks' own Python
# and CUDA start first), or as soon as the launch ends: it reads the files whenever it starts, and the
# node's CPUs go to the launch first. `wait -n` ends when either ends or a trapped signal arrives.
ncclgen_after=${NCCLGEN_CHECK_AFTER_S:-1}
[[ $ncclgen_after =~ ^[0-9]{1,4}(\.[0-9]{1,3})?$ ]] || ncclgen_after=1
sleep "$ncclgen_after" &
ncclgen_timer=$!
while ((!ncclgen_signalled)) && kill -0 "$ncclgen_launch" 2>/dev/null && kill -0 "$ncclgen_timer" 2>/dev/null; do
  wait -n 2>/dev/null || true
done
kill "$ncclgen_timer" 2>/dev/null || true
wait "$ncclgen_timer" 2>/dev/null || true # (bash's job notice for it, not the program's output)
python3 -S "$ncclgen_dir/transport.py" "@$ncclgen_dir/transport.json" \
  --pid "$ncclgen_launch" "$ncclgen_since" &
ncclgen_check=$!
# The exit status of PID: a signal this shell trapped ends `wait` early, so wait again until PID is gone.
# 2>/dev/null: bash's own job notices ('[1]+ Terminated ...'), not the program's output.
ncclgen_status() {
  local rc=0
  wait "$1" 2>/dev/null || rc=$?
  while kill -0 "$1" 2>/dev/null; do wait "$1" 2>/dev/null && rc=0 || rc=$?; done
  return "$rc"
}
ncclgen_rc=0
ncclgen_status "$ncclgen_launch" || ncclgen_rc=$?
ncclgen_problems=0
ncclgen_status "$ncclgen_check" || ncclgen_problems=$?
if ((ncclgen_problems == 7)); then exit 7; fi
ncclgen_node=${NCCLGEN_NODE:-${SLURMD_NODENAME:-$HOSTNAME}}
# (a step cancelled or killed: the check may have ended with it, nothing to say)
((ncclgen_problems == 0 || ncclgen_signalled)) ||
  echo "ncclgen: transport: node $ncclgen_node: not checked: the check ended with status $ncclgen_problems" >&2
exit "$ncclgen_rc"
