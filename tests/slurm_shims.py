"""Stand-ins for srun, scontrol, ray, torchrun and python3 that record what they receive, and a runner
for a rendered sbatch script under them (tests/test_slurm_script_run.py, tests/test_env_scrub.py).

Why stand-ins: the real 2-node runs live in tests/test_slurm_e2e.py and take a minute each; the
script's own logic (quoting, the fail-fast paths, exit codes, clean-up, ncclgen/jobside/node.sh) runs in
milliseconds when PATH shims play srun and Ray. The srun stand-in follows srun's own rules where the
script relies on them: one task per node of the step, SLURM_NODEID counting the step's nodes (measured
on Slurm 22.05), --kill-on-bad-exit=1 ending every task when one exits non-zero.
"""

from __future__ import annotations

import random
import subprocess
import textwrap
import time
from pathlib import Path

import yaml

from ncclgen.cli import main
from ncclgen.pipeline import make_plan, request


def render(capsys, *args: str) -> str:
    """The real CLI in-process (same code path as the console script); returns stdout."""
    rc = main(["slurm", *args])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


SHIMS = {
    # Plays a step's behaviour from the environment: block (until the script's clean-up kills it),
    # exit:N, after:SECONDS:N, or await:NAME:COUNT (exit 0 once COUNT stand-ins NAME were called: the
    # background steps have really started, as a readiness check would see).
    "act.sh": """
        act() {
          case "$1" in
            block) [[ ! -e $SHIM_LOG/scancelled ]] || exit 143; exec sleep "$SHIM_SLEEP" ;;
            exit:*) exit "${1#exit:}" ;;
            after:*) local rest=${1#after:}; sleep "${rest%%:*}"; exit "${rest#*:}" ;;
            await:*)
              local spec=${1#await:} i
              for ((i = 0; i < 400; i++)); do
                (($(compgen -G "$SHIM_LOG/${spec%%:*}.*.argv" | wc -l) >= ${spec#*:})) && exit 0
                sleep 0.05
              done
              echo "shim: timed out awaiting $spec" >&2; exit 98 ;;
          esac
          echo "shim: bad behaviour $1" >&2; exit 99
        }
        record() { printf '%s\\0' "$@" > "$SHIM_LOG/$NAME.$$.argv"; env -0 > "$SHIM_LOG/$NAME.$$.env"; }
        """,
    # srun: record, then run the command here once per node of the step, as Slurm would: -w NODE, or
    # --nodes=N of the SHIM_NODES nodes (less --exclude), each task with SLURMD_NODENAME, SLURM_NODEID
    # (the node's index in the job) and SLURM_PROCID; --kill-on-bad-exit=1 ends every task when one
    # exits non-zero. srun options all start with '-'; only -w takes a separate value.
    "srun": """
        NAME=srun; . "$SHIM_DIR/act.sh"; record "$@"
        nodes=() count=1 exclude="" kill_bad=0
        while (($#)) && [[ $1 == -* ]]; do
          case $1 in
            -w) nodes=("$2"); shift ;;
            --nodes=*) count=${1#--nodes=} ;;
            --exclude=*) exclude=${1#--exclude=} ;;
            --kill-on-bad-exit=1) kill_bad=1 ;;
          esac
          shift
        done
        if ((${#nodes[@]} == 0)); then
          for ((i = 1; i <= SHIM_NODES; i++)); do [[ node$i == "$exclude" ]] || nodes+=("node$i"); done
          nodes=("${nodes[@]:0:count}")
        fi
        task() {
          export SLURMD_NODENAME=$1 SLURM_NODEID=$2 SLURM_PROCID=$2 SLURM_STEP_NUM_NODES=${#nodes[@]}
          shift 2
          exec "$@"
        }
        if ((${#nodes[@]} == 1)); then task "${nodes[0]}" 0 "$@"; fi
        pids=()
        trap 'kill -TERM "${pids[@]}" 2>/dev/null; exit 143' TERM
        for i in "${!nodes[@]}"; do task "${nodes[i]}" "$i" "$@" & pids+=("$!"); done
        status=0
        for _ in "${pids[@]}"; do
          wait -n && continue
          rc=$?
          ((status)) || status=$rc
          if ((kill_bad)); then kill -KILL "${pids[@]}" 2>/dev/null; fi
        done
        exit "$status"
        """,
    "scontrol": """
        case "$1 $2" in
          "show hostnames") for ((i = 1; i <= SHIM_NODES; i++)); do echo "node$i"; done ;;
          "show node") echo "NodeName=${!#} Arch=x86_64 NodeAddr=$SHIM_NODE_ADDR NodeHostName=vm Version=22.05.8" ;;
          "requeue 4242") echo requeued >> "$SHIM_LOG/scontrol-requeue"; exit "${SHIM_REQUEUE_RC:-0}" ;;
          "show job")  # one field group a line, as scontrol prints it without -o
            printf '   WorkDir=%s\n   StdErr=%s\n   StdIn=/dev/null\n   StdOut=%s\n   Power=\n' "$PWD" \
              "${SHIM_STDOUT:-$PWD/ncclgen-$3.out}" "${SHIM_STDOUT:-$PWD/ncclgen-$3.out}" ;;
          *) echo "scontrol shim: unexpected $*" >&2; exit 1 ;;
        esac
        """,
    "ray": """
        NAME=ray; . "$SHIM_DIR/act.sh"; record "$@"
        if [[ " $* " == *" --head "* ]]; then act "$SHIM_RAY_HEAD"; else act "$SHIM_RAY_WORKER"; fi
        """,
    # ncclgen's node programs (python3 FOLDER/NAME.py ARGS, from ncclgen/jobside/node.sh) are recorded
    # under their own name: preflight, raywait, monitor; anything else is the workload's program.
    "python3": """
        [[ $1 != -S ]] || shift  # an interpreter option before the program (node programs run with -S)
        # The transport check (transport.py @SPEC --pid PID SINCE), started beside the launch by its
        # wrapper (bin/ncclgen_transport), which keeps the launch's status: the stand-in finds nothing
        # to stop, as the real check when NCCL's lines match the plan.
        if [[ $1 == */transport.py && $3 == --pid ]]; then
            NAME=transport; . "$SHIM_DIR/act.sh"; record "$@"; exit 0
        fi
        NAME=python3
        case $1 in */preflight.py) NAME=preflight ;; */raywait.py) NAME=raywait ;; */monitor.py) NAME=monitor ;; esac
        . "$SHIM_DIR/act.sh"; record "$@"
        if [[ $NAME == preflight ]]; then act "$SHIM_PREFLIGHT"; fi
        if [[ $NAME == raywait && $2 == wait ]]; then act "$SHIM_WAIT"; fi
        if [[ $NAME == raywait && $2 == watch ]]; then act "$SHIM_WATCH"; fi
        if [[ $NAME == monitor ]]; then act "${SHIM_MONITOR:-block}"; fi
        act "$SHIM_DRIVER"
        """,
    "torchrun": """
        NAME=torchrun; . "$SHIM_DIR/act.sh"; record "$@"
        act "$SHIM_DRIVER"
        """,
    # scancel --signal=TERM JOB: every step process gets TERM (the stand-ins that block are this run's
    # unique `sleep`s). Real Slurm signals each step's whole cgroup, so a stand-in that was still starting
    # ends too: a flag file stops those not yet blocking, and the TERM is repeated for one between its
    # check of the flag and its exec (on a loaded machine that gap let one sleep on past the test's timeout).
    "scancel": """
        NAME=scancel; . "$SHIM_DIR/act.sh"; record "$@"
        : > "$SHIM_LOG/scancelled"
        for _ in 1 2 3 4 5 6 7 8 9 10; do pkill -TERM -f "^sleep $SHIM_SLEEP\\$" || true; sleep 0.1; done
        """,
    "ncclgen": """
        NAME=ncclgen; . "$SHIM_DIR/act.sh"; record "$@"
        act block
        """,
}


class Run:
    """One run of a rendered script under the shims: exit status, output, and what the shims saw."""

    def __init__(self, tmp_path: Path, script: str, **behaviour: str):
        self.dir = tmp_path
        self.log = tmp_path / "log"
        self.log.mkdir()
        shim_dir = tmp_path / "bin"
        shim_dir.mkdir()
        for name, body in SHIMS.items():
            (shim_dir / name).write_text("#!/bin/bash\n" + textwrap.dedent(body))
            (shim_dir / name).chmod(0o755)
        self.sleep = f"29.{random.randrange(10**8):08d}"  # unique: finds leftover processes of this run
        env = {
            "PATH": f"{shim_dir}:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "TMPDIR": str(tmp_path / "tmp"),
            "SHIM_DIR": str(shim_dir),
            "SHIM_LOG": str(self.log),
            "SHIM_SLEEP": self.sleep,
            "SHIM_NODES": "2",
            "SHIM_NODE_ADDR": "127.0.0.1",
            "SHIM_RAY_HEAD": "block",
            "SHIM_RAY_WORKER": "block",
            "SHIM_WAIT": "await:ray:2",
            "SHIM_WATCH": "block",
            "SHIM_DRIVER": "exit:0",
            "SHIM_PREFLIGHT": "exit:0",
            "SLURM_JOB_ID": "4242",
            "SLURM_JOB_NODELIST": "node[1-2]",
            "SLURM_JOB_NUM_NODES": "2",
            "SLURM_GPUS_ON_NODE": "8",
        }
        env.update(behaviour)
        env["SLURM_JOB_NUM_NODES"] = env["SHIM_NODES"]
        (tmp_path / "tmp").mkdir(exist_ok=True)
        self.work = tmp_path / "work"
        self.work.mkdir()
        path = tmp_path / "job.sh"
        path.write_text(script)
        self.proc = subprocess.Popen(
            ["bash", str(path)], cwd=self.work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def finish(self, timeout: float = 30):
        self.stdout, self.stderr = self.proc.communicate(timeout=timeout)
        self.rc = self.proc.returncode
        return self

    def started(self, last_arg: str) -> bool:
        """Whether some stand-in was called with ``last_arg`` last (argv files are written in one go)."""
        return any(p.read_bytes().endswith(f"\0{last_arg}\0".encode()) for p in self.log.glob("*.argv"))

    def calls(self, name: str) -> list[tuple[list[str], dict[str, str]]]:
        out = []
        for argv in sorted(self.log.glob(f"{name}.*.argv")):
            args = argv.read_bytes().decode().split("\0")[:-1]
            env_file = argv.with_suffix(".env")
            env = (
                dict(e.split("=", 1) for e in env_file.read_bytes().decode().split("\0") if e)
                if env_file.exists()
                else {}
            )
            out.append((args, env))
        return out

    def leftovers(self) -> list[str]:
        deadline = time.monotonic() + 5
        while True:
            left = subprocess.run(
                ["pgrep", "-f", f"sleep {self.sleep}"], capture_output=True, text=True, check=False
            ).stdout.split()
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.05)


def local_ci(capsys, tmp_path, launcher: str, command: list[str], sets=(), monitor=False):
    """A local-ci tier 3 script for a workload running ``command``, and the plan it was made from."""
    wl = tmp_path / f"{launcher}.yaml"
    wl.write_text(
        yaml.safe_dump(
            {
                "name": f"shim-{launcher}",
                "description": "shim test",
                "launcher": launcher,
                "nodes": 2,
                "command": command,
            }
        )
    )
    args = ["--cluster", "local-ci", "--tier", "3", "--workload", str(wl)]
    args += [a for s in sets for a in ("--set", s)] + ["--monitor"] * monitor
    return render(capsys, *args), make_plan(request("local-ci", 3, str(wl), None, tuple(sets), False))
