# ncclgen-node: runs first in every step of an ncclgen sbatch script, on every node, then becomes the
# step's program. It keeps one private folder per node and job, writes the node programs there once,
# runs the workload's setup once per node (the first step on the node runs it, later steps wait for it
# under a lock and take what it exported), and never splices setup text into a command line: the
# lines are a file, run by a child bash.
#
# Usage (the batch script's ncclgen_step): bash -c 'eval "$NCCLGEN_NODE_SH"' ncclgen-node [--host] PROGRAM [ARG...]
#   --host    a step outside any container (the GPU monitor): its own folder, no setup
#   PROGRAM   a program written to the folder (NAME.py runs with python3, NAME.sh with bash; an ARG
#             before `--` that reads @NAME becomes @FOLDER/NAME), or any command, run as it is
#   preflight.py @SPEC -- PROGRAM [ARG...]
#             the launch behind this node's preflight: PROGRAM starts only once the checks passed; a
#             failed check leaves preflight.failed in the folder and ends the task with its status
#   --preflight-status
#             the status of this node's failed preflight in this job, else 0 (the batch script asks
#             once a launch step failed: srun's own status then says only that a task was killed)
# Environment (from the batch script): NCCLGEN_JOB_KEY, a random key per job (32 hex digits: the
# folder's name holds it, so no other user can take the name or plant files in it); NCCLGEN_FILES,
# "NAME=VARIABLE ..." (each file's text is in VARIABLE: node programs, the setup lines as setup.sh,
# the Ray hook module under pythonpath/, executables under bin/). The program sees none of them.
set -euo pipefail
ncclgen_node=${SLURMD_NODENAME:?ncclgen-node: not in a Slurm step}
ncclgen_where=node
if [[ ${1:-} == --host ]]; then
  ncclgen_where=host
  shift
fi
ncclgen_fail() {
  echo "ncclgen: ERROR: node $ncclgen_node: $1" >&2
  # This task's exit ends the step (--kill-on-bad-exit), and srun can end before the line above reached it
  # (seen under load: the job FAILED with the line missing); a second first lets it through.
  sleep 1
  exit "${2:-1}"
}

# The folder: named by the job's random key, which only this job's processes hold (no other user can
# take the name before it exists or plant anything in it), made by `mkdir -m 0700` (private, as mktemp -d
# makes its folder; it fails where the name is taken) with the subfolders its files need, by the first
# step on the node; later steps find it by the same name. A folder of this user, never a link.
[[ ${NCCLGEN_JOB_KEY:-} =~ ^[0-9a-f]{32}$ ]] || ncclgen_fail "NCCLGEN_JOB_KEY is not this job's key" 2
ncclgen_base=${TMPDIR:-/tmp}
[[ -d $ncclgen_base && -w $ncclgen_base ]] || ncclgen_base=/tmp
NCCLGEN_DIR="$ncclgen_base/ncclgen-$NCCLGEN_JOB_KEY-$ncclgen_node-$ncclgen_where"
if [[ ! -e $NCCLGEN_DIR && ! -L $NCCLGEN_DIR ]]; then
  declare -A ncclgen_sub=()
  for ncclgen_spec in ${NCCLGEN_FILES:-}; do
    ncclgen_name=${ncclgen_spec%%=*}
    [[ $ncclgen_name != */* ]] || ncclgen_sub[$NCCLGEN_DIR/${ncclgen_name%/*}]=1
  done
  # one process for the folder and its subfolders (where another step just made it, this one fails)
  mkdir -m 0700 "$NCCLGEN_DIR" "${!ncclgen_sub[@]}" 2>/dev/null || true
fi
if [[ ! -d $NCCLGEN_DIR || -L $NCCLGEN_DIR || ! -O $NCCLGEN_DIR ]]; then
  ncclgen_fail "$NCCLGEN_DIR is not a private folder of this user" 2
fi

# The tidy-up of earlier jobs' folders (see its call below); a child of the step, never its output.
ncclgen_tidy() {
  exec {ncclgen_fd}>>"$ncclgen_tidy_lock" || return 0
  flock -n "$ncclgen_fd" || return 0 # another step on this host is at it
  local now tidy_s old key ncclgen_pattern
  ncclgen_pattern=ncclgen-$(printf '%.0s?' {1..32})-*
  printf -v now "%(%s)T" -1
  printf '%s\n' "$now" >"$ncclgen_tidy_lock" # when: later steps skip the tidy-up for a minute
  tidy_s=${NCCLGEN_TIDY_AFTER_S:-3600}
  [[ $tidy_s =~ ^[0-9]{1,9}$ ]] || tidy_s=3600 # a number, never arithmetic on raw text
  # One find lists the candidates (a ready file old enough), so a node with many folders costs no fork each.
  # (ncclgen.XXXXXXXXXX: an older ncclgen's folders)
  while IFS= read -r -d '' old; do
    # this job's folders (other nodes on the same host) stay
    [[ $old != "$ncclgen_base/ncclgen-$NCCLGEN_JOB_KEY-"* && -d $old && ! -L $old && -O $old ]] || continue
    flock -n -x "$old/alive" rm -rf -- "$old" 2>/dev/null || true
  done < <(find "$ncclgen_base" -mindepth 2 -maxdepth 2 -type f -user "$EUID" \( -path "$ncclgen_base/$ncclgen_pattern/ready" \
    -o -path "$ncclgen_base/ncclgen.??????????/ready" \) ! -newermt "@$((now - tidy_s + 1))" -printf '%h\0' 2>/dev/null)
  find "$ncclgen_base" -maxdepth 1 -name '.ncclgen-*' -user "$EUID" -xtype l -delete 2>/dev/null || true
  # NCCL's debug files of this user in the transport check's own folder (kept for `ncclgen triage`):
  # removed NCCLGEN_NCCL_KEEP_S (default 7 days) after their last line, so the folder the check scans
  # stays small. Only ncclgen's folder: a debug file set elsewhere is the user's to keep.
  key=NCCL_DEBUG
  key+=_FILE
  key=${!key:-}
  tidy_s=${NCCLGEN_NCCL_KEEP_S:-604800}
  [[ $tidy_s =~ ^[0-9]{1,9}$ ]] || tidy_s=604800
  [[ $key == /*/ncclgen-nccl/* && -d ${key%/*} && ! -L ${key%/*} ]] || return 0
  find "${key%/*}" -maxdepth 1 -type f -user "$EUID" \( -name '*.log' -o -name '*.log.claimed' \) \
    ! -newermt "@$((now - tidy_s))" -delete 2>/dev/null || true
}

# Once per folder, under its lock: the files, then the setup (its output goes to the job's log). A
# folder already `ready` (written last) is complete: a later step skips the lock.
if [[ ! -e $NCCLGEN_DIR/ready ]]; then
  exec 9>>"$NCCLGEN_DIR/lock"
  flock 9
fi
if [[ -e $NCCLGEN_DIR/failed ]]; then
  exit 1 # the first step on this node already said why
fi
if [[ ! -e $NCCLGEN_DIR/ready ]]; then
  # One chmod for all executables (a fork costs more than the writes); their folders were made with
  # this one's (or, where another step made it, are made now).
  ncclgen_dirs=() ncclgen_bins=()
  for ncclgen_spec in ${NCCLGEN_FILES:-}; do
    ncclgen_name=${ncclgen_spec%%=*}
    [[ $ncclgen_name != */* || -d $NCCLGEN_DIR/${ncclgen_name%/*} ]] || ncclgen_dirs+=("$NCCLGEN_DIR/${ncclgen_name%/*}")
    [[ $ncclgen_name != bin/* ]] || ncclgen_bins+=("$NCCLGEN_DIR/$ncclgen_name")
  done
  ((${#ncclgen_dirs[@]} == 0)) || mkdir -p -m 0700 "${ncclgen_dirs[@]}"
  for ncclgen_spec in ${NCCLGEN_FILES:-}; do
    ncclgen_var=${ncclgen_spec#*=}
    printf '%s' "${!ncclgen_var}" >"$NCCLGEN_DIR/${ncclgen_spec%%=*}"
  done
  ((${#ncclgen_bins[@]} == 0)) || chmod 0700 "${ncclgen_bins[@]}"
  if [[ $ncclgen_where == node && -f $NCCLGEN_DIR/setup.sh ]]; then
    echo "ncclgen: setup on node $ncclgen_node"
    env -0 >"$NCCLGEN_DIR/env.before"
    ncclgen_status=0
    # shellcheck disable=SC2016  # expanded by the child bash
    bash -c 'set -euo pipefail; source "$1"; env -0 >"$2"' ncclgen-setup "$NCCLGEN_DIR/setup.sh" \
      "$NCCLGEN_DIR/env.after" </dev/null || ncclgen_status=$?
    if ((ncclgen_status != 0)); then
      touch "$NCCLGEN_DIR/failed"
      ncclgen_fail "the workload's setup failed (status $ncclgen_status; its output is above); the job stops"
    fi
    [[ -f $NCCLGEN_DIR/env.after ]] || cp "$NCCLGEN_DIR/env.before" "$NCCLGEN_DIR/env.after" # it ran `exit 0`
    # What the setup exported or changed, for every step on this node (PWD, SHLVL, _ aside).
    declare -A ncclgen_before=() ncclgen_after=()
    while IFS= read -r -d '' ncclgen_kv; do ncclgen_before[${ncclgen_kv%%=*}]=${ncclgen_kv#*=}; done <"$NCCLGEN_DIR/env.before"
    while IFS= read -r -d '' ncclgen_kv; do ncclgen_after[${ncclgen_kv%%=*}]=${ncclgen_kv#*=}; done <"$NCCLGEN_DIR/env.after"
    # A name the plan owns (ncclgen/load/patterns.py PLAN_PREFIXES) that the setup set, changed or unset
    # would override the plan unchecked: one line each, and the job stops.
    ncclgen_owned='^(NCCL_|TORCH_NCCL_|TORCH_DIST|TORCH_FR_|GLOO_|UCX_|FI_)'
    ncclgen_changed=()
    for ncclgen_name in "${!ncclgen_after[@]}"; do
      [[ $ncclgen_name =~ ^[A-Za-z_][A-Za-z0-9_]*$ && ! $ncclgen_name =~ ^(PWD|OLDPWD|SHLVL|_)$ ]] || continue
      if [[ -z ${ncclgen_before[$ncclgen_name]+set} || ${ncclgen_before[$ncclgen_name]} != "${ncclgen_after[$ncclgen_name]}" ]]; then
        [[ ! $ncclgen_name =~ $ncclgen_owned ]] || ncclgen_changed+=("$ncclgen_name")
        printf 'export %s=%q\n' "$ncclgen_name" "${ncclgen_after[$ncclgen_name]}"
      fi
    done >"$NCCLGEN_DIR/setup.env"
    for ncclgen_name in "${!ncclgen_before[@]}"; do
      [[ -z ${ncclgen_after[$ncclgen_name]+set} && $ncclgen_name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
      [[ ! $ncclgen_name =~ $ncclgen_owned ]] || ncclgen_changed+=("$ncclgen_name")
      echo "unset $ncclgen_name"
    done >>"$NCCLGEN_DIR/setup.env"
    if ((${#ncclgen_changed[@]})); then
      touch "$NCCLGEN_DIR/failed"
      for ncclgen_name in "${ncclgen_changed[@]}"; do
        echo "ncclgen: ERROR: node $ncclgen_node: the workload's setup changed $ncclgen_name, a name the plan owns (set it with --set $ncclgen_name=VALUE or in the descriptor's env:)" >&2
      done
      exit 1
    fi
  fi
  # The folder the flight recorder dumps to (the plan's TORCH_FR_DUMP_TEMP_FILE without its file
  # prefix): PyTorch does not make it, and a dump it cannot write is lost without a word.
  if [[ $ncclgen_where == node && ${TORCH_FR_DUMP_TEMP_FILE:-} == /*/* ]]; then
    ncclgen_fr=${TORCH_FR_DUMP_TEMP_FILE%/*}
    [[ -d $ncclgen_fr ]] || (umask 077 && mkdir -p "$ncclgen_fr") || true
    if [[ ! -d $ncclgen_fr || ! -w $ncclgen_fr ]]; then
      : >"$NCCLGEN_DIR/failed"
      ncclgen_fail "cannot write the flight recorder's folder $ncclgen_fr (slurm.dump_dir)" 2
    fi
  fi
  : >"$NCCLGEN_DIR/ready"
  # This user's folders from earlier jobs on this node: removed once no step of theirs runs (their
  # `alive` lock is free) and their setup ended NCCLGEN_TIDY_AFTER_S (default 3600) seconds ago or more.
  # In the background, off the launch's path, by one step at a time per host (a lock file of this
  # user's beside the folders, which also holds when the last tidy-up started: at most one a minute;
  # several Slurm nodes can share a host's TMPDIR).
  ncclgen_tidy_lock="$ncclgen_base/.ncclgen.tidy.$EUID"
  ncclgen_last=0
  if [[ -f $ncclgen_tidy_lock && ! -L $ncclgen_tidy_lock && -O $ncclgen_tidy_lock ]]; then
    read -r ncclgen_last <"$ncclgen_tidy_lock" || true
    [[ $ncclgen_last =~ ^[0-9]{1,12}$ ]] || ncclgen_last=0
  elif [[ -e $ncclgen_tidy_lock || -L $ncclgen_tidy_lock ]]; then
    ncclgen_last=-1 # not this user's file: no tidy-up
  fi
  printf -v ncclgen_now "%(%s)T" -1
  if ((ncclgen_last >= 0 && ncclgen_now - ncclgen_last >= 60)); then
    (exec 9>&- && ncclgen_tidy </dev/null >/dev/null 2>&1 &) # without the folder's lock (fd 9)
  fi
fi
exec 9>&-
# Every step holds a shared lock on the folder's `alive` file while its program runs (the descriptor
# survives the exec below), so a later job's first step on this node can tell a folder still in use.
exec {ncclgen_alive}>>"$NCCLGEN_DIR/alive"
flock -s "$ncclgen_alive"

# The step's environment: what the setup exported, the Ray hook folder, ncclgen's executables.
if [[ $ncclgen_where == node && -f $NCCLGEN_DIR/setup.env ]]; then
  # shellcheck disable=SC1091  # written above
  source "$NCCLGEN_DIR/setup.env"
fi
[[ ! -d $NCCLGEN_DIR/pythonpath ]] || export PYTHONPATH="$NCCLGEN_DIR/pythonpath${PYTHONPATH:+:$PYTHONPATH}"
[[ ! -d $NCCLGEN_DIR/bin ]] || export PATH="$NCCLGEN_DIR/bin:$PATH"
export NCCLGEN_DIR
for ncclgen_spec in ${NCCLGEN_FILES:-}; do unset "${ncclgen_spec#*=}"; done
unset NCCLGEN_FILES NCCLGEN_NODE_SH

if [[ ${1:-} == --preflight-status ]]; then
  ncclgen_status=0
  [[ ! -f $NCCLGEN_DIR/preflight.failed ]] || read -r ncclgen_status <"$NCCLGEN_DIR/preflight.failed" || true
  [[ $ncclgen_status =~ ^[0-9]{1,3}$ ]] || ncclgen_status=1
  exit "$ncclgen_status"
fi
# The preflight in front of the launch, in the same step (no step of its own: one step creation and
# one node.sh less per node): this node checks itself, then its launch starts. A problem ends the task
# with the preflight's status and --kill-on-bad-exit=1 ends the others, whose launch waits for every
# node (torchrun's rendezvous, Ray's readiness check), so no rank starts.
if [[ ${1:-} == preflight.py && ${3:-} == -- && -f $NCCLGEN_DIR/preflight.py ]]; then
  ncclgen_status=0
  python3 -S "$NCCLGEN_DIR/preflight.py" "@$NCCLGEN_DIR/${2#@}" || ncclgen_status=$?
  if ((ncclgen_status != 0)); then
    # (a status from a signal is this step being stopped because another node failed first: no finding)
    if ((ncclgen_status < 128)); then
      printf '%s\n' "$ncclgen_status" >"$NCCLGEN_DIR/preflight.failed"
      # This task's exit ends the step on every node: 2 s first, so the other nodes' preflights (started
      # with this one, a fraction of a second each) still print their own problems.
      sleep 2
    fi
    exit "$ncclgen_status"
  fi
  shift 3
fi
ncclgen_program=${1:?ncclgen-node: no program}
if [[ $ncclgen_program == *.py || $ncclgen_program == *.sh ]] && [[ -f $NCCLGEN_DIR/$ncclgen_program ]]; then
  shift
  ncclgen_args=()
  while (($#)) && [[ $1 != -- ]]; do
    if [[ $1 == @* && -f $NCCLGEN_DIR/${1#@} ]]; then ncclgen_args+=("@$NCCLGEN_DIR/${1#@}"); else ncclgen_args+=("$1"); fi
    shift
  done
  ncclgen_run=(bash)
  [[ $ncclgen_program != *.py ]] || ncclgen_run=(python3)
  # The preflight needs only the standard library: -S skips reading the image's site-packages at start.
  [[ $ncclgen_program != preflight.py ]] || ncclgen_run=(python3 -S)
  exec "${ncclgen_run[@]}" "$NCCLGEN_DIR/$ncclgen_program" "${ncclgen_args[@]}" "$@"
fi
# The transport check's entry (bin/ncclgen_transport, ncclgen/jobside/transport_entry.sh) runs in this
# shell, not as a program of its own: one bash less on every node's launch. It ends the shell itself,
# with the launch's status (or 7).
if [[ ${1:-} == ncclgen_transport && -f $NCCLGEN_DIR/bin/ncclgen_transport ]]; then
  shift
  set +euo pipefail
  # shellcheck disable=SC1091  # written above
  source "$NCCLGEN_DIR/bin/ncclgen_transport"
  exit
fi
# torchrun's own log lines name its pid, not its node: this line ties the two (`ncclgen triage` reads it)
[[ ${1##*/} != torchrun ]] || echo "ncclgen: torchrun on node ${SLURMD_NODENAME:-$HOSTNAME} is pid $$" >&2
exec "$@"
