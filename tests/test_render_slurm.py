"""`ncclgen slurm`: the rendered sbatch script, checked by bash, shellcheck, Slurm itself, and by running
it with stand-ins for srun/scontrol/ray/torchrun/python3 that record what they receive.

Why stand-ins here: the real 2-node runs live in tests/test_slurm_e2e.py and take a minute each; the
script's own logic (quoting, the wait -n fail-fast paths, exit codes, clean-up) can be run in
milliseconds by letting PATH shims play srun and Ray. No Slurm or Ray is needed except where marked.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import goldens
import pytest
import yaml
from conftest import skip_or_fail

from ncclgen import __version__, jobside
from ncclgen.cli import main
from ncclgen.errors import UserError
from ncclgen.jobside import raybind, raywait
from ncclgen.load import cpuset, descriptor, workload
from ncclgen.pipeline import make_plan, request
from ncclgen.plan import preflight
from ncclgen.render import slurm as render_slurm

CLUSTERS = sorted(descriptor.available())
WORKLOADS = sorted(workload.bundled())
TIERS = (1, 2, 3)
MATRIX = list(itertools.product(CLUSTERS, TIERS, WORKLOADS))
GOLDEN = Path(__file__).resolve().parent / "golden" / "slurm"
HOSTILE = "/tmp/$(touch PWNED) `touch PWNED2` \"dq\" 'sq' ; touch PWNED3 * ?[a] ${HOME} a,b=c \\ \nnewline"


def render(capsys, *args: str) -> str:
    """The real CLI in-process (same code path as the console script); returns stdout."""
    rc = main(["slurm", *args])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


def run_cli(*args: str, cwd=None):
    """The real console entry point in a subprocess: exit status, stdout, stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "ncclgen", "slurm", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        skip_or_fail(f"{tool} is not installed (apt-get install {tool})")
    return path


def env_section(script: str) -> str:
    """The plan's export block: from the template's `# ==== Environment` marker to the launcher
    plumbing (or the first blank line when there is none)."""
    start = script.index("# ==== Environment")
    rest = script[start:]
    ends = [i for i in (rest.find("# Launcher plumbing"), rest.find("\n\n")) if i >= 0]
    return rest[: min(ends)]


def bash_env(section: str) -> dict[str, str]:
    """Run shell text in a clean bash and return the environment it exports (env -0, no regex)."""
    out = subprocess.run(
        ["env", "-i", "bash", "-c", section + "\nexec env -0"], capture_output=True, check=True, timeout=30
    ).stdout.decode()
    env = dict(item.split("=", 1) for item in out.split("\0") if item)
    for name in ("PWD", "SHLVL", "_"):  # bash's own
        env.pop(name, None)
    return env


# --- the whole matrix ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def matrix(tmp_path_factory) -> dict[tuple, Path]:
    """Every bundled cluster x tier x workload, rendered once through the CLI code path."""
    folder = tmp_path_factory.mktemp("matrix")
    out = {}
    for cluster, tier, wl in MATRIX:
        path = folder / f"{cluster}-t{tier}-{wl}.sh"
        assert main(["slurm", "--cluster", cluster, "--tier", str(tier), "--workload", wl, "-o", str(path)]) == 0
        out[cluster, tier, wl] = path
    return out


def test_every_render_passes_bash_n(matrix):
    for key, path in matrix.items():
        r = subprocess.run([need("bash"), "-n", str(path)], capture_output=True, text=True, check=False)
        assert r.returncode == 0, f"{key}: {r.stderr}"


def test_every_render_is_shellcheck_clean(matrix):
    shellcheck = need("shellcheck")
    paths = [str(p) for p in matrix.values()]
    batches = [paths[i::2] for i in range(2)]  # CI has 2 cores; one shellcheck per core

    def check(batch):
        return subprocess.run([shellcheck, "-S", "style", *batch], capture_output=True, text=True, check=False)

    with ThreadPoolExecutor(2) as pool:
        for r in pool.map(check, batches):
            assert r.returncode == 0, r.stdout + r.stderr


def test_every_render_exports_only_in_the_batch_shell_with_a_labelled_comment(matrix):
    for key, path in matrix.items():
        text = path.read_text()
        code = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
        assert "--export=" in code
        assert set(re.findall(r"--export=(\S*)", code)) == {"ALL"}, key
        plan_exports = env_section(text).splitlines()
        for line in text.splitlines():
            if line.startswith("export "):
                # `export NAME='value'  # tier 1, rule-id` (the plan) or `# why` (launcher plumbing)
                label = r"  # (tier [123], \S|override, )" if line in plan_exports else r"  # \S"
                assert re.search(label, line), f"{key}: {line!r} has no label comment"
        assert path.stat().st_mode & 0o777 == 0o755, key


def test_every_render_exports_exactly_the_plan_env(matrix):
    for (cluster, tier, wl), path in matrix.items():
        if wl not in ("verl-grpo-qwen2-7b", "verl-sft"):  # same template code for the others
            continue
        want = make_plan(request(cluster, tier, wl, None, (), False)).env_dict()
        assert bash_env(env_section(path.read_text())) == want, (cluster, tier, wl)


def test_render_is_byte_deterministic_across_processes(tmp_path):
    """Two processes (different hash seeds) give the same bytes, for both launchers."""
    for wl in ("verl-grpo-qwen2-7b", "verl-sft"):
        args = ("--cluster", "h100-ib", "--tier", "3", "--workload", wl, "--monitor")
        first, second = run_cli(*args), run_cli(*args)
        assert first[0] == 0, first[2]
        assert first == second


def test_rendering_imports_no_heavy_module():
    """`ncclgen slurm` runs on login nodes: no kubernetes client, torch, Ray or NVML import."""
    prog = textwrap.dedent("""
        import contextlib, io, sys
        from ncclgen.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            for wl in ("verl-grpo-qwen2-7b", "verl-sft"):
                assert main(["slurm", "--cluster", "h100-ib", "--tier", "3", "--workload", wl, "--monitor"]) == 0
        print(sorted({m.split(".")[0] for m in sys.modules} & {"kubernetes", "torch", "ray", "pynvml"}))
        """)
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120, check=False)
    assert (r.returncode, r.stdout) == (0, "[]\n"), r.stderr


# --- golden files (examples/ hold the h100-ib renders; this one covers local-ci) -------------------


def test_golden_local_ci(capsys):
    """The local-ci render the end-to-end tests run, reviewed. The version is masked so a release bump
    does not touch the golden."""
    got = render(capsys, "--cluster", "local-ci", "--tier", "3", "--workload", "verl-grpo-qwen2-7b")
    goldens.check(
        GOLDEN / "local-ci-t3-verl-grpo-qwen2-7b.sh", got.replace(f"ncclgen {__version__}:", "ncclgen VERSION:")
    )


# --- hostile input --------------------------------------------------------------------------------


def test_hostile_job_name_is_quoted_and_shellcheck_clean(capsys, tmp_path):
    name = "x $(touch PWNED) `touch PWNED2` \"q\" 'q' ; rm -rf * #c \\b"
    text = render(capsys, "--cluster", "local-ci", "--job-name", name)
    (line,) = [ln for ln in text.splitlines() if ln.startswith("#SBATCH --job-name=")]
    # sbatch's own parser: shell quoting, and a backslash escapes the next character even inside quotes
    assert line == "#SBATCH --job-name=" + shlex.quote(name).replace("\\", "\\\\")
    path = tmp_path / "job.sh"
    path.write_text(text)
    r = subprocess.run([need("shellcheck"), "-S", "style", str(path)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout


@pytest.mark.parametrize("flag", ["--job-name", "--partition", "--account", "--qos"])
def test_control_characters_in_sbatch_values_are_one_line_errors(tmp_path, flag):
    out = tmp_path / "job.sh"
    rc, stdout, stderr = run_cli("--cluster", "local-ci", flag, "a\nb", "-o", str(out))
    assert rc == 2 and stdout == ""
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert f"{flag} 'a\\nb': control characters" in stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_regenerate_comment_cannot_be_escaped_by_a_newline(capsys):
    text = render(capsys, "--cluster", "local-ci", "--set", "NCCL_DEBUG_FILE=a\ntouch PWNED")
    lines = text.splitlines()
    (i,) = [i for i, ln in enumerate(lines) if ln.startswith("# Regenerate:")]
    assert lines[i].endswith("--set $'NCCL_DEBUG_FILE=a\\ntouch PWNED'")
    assert lines[i + 1] == "# Run with: sbatch <this file>"


def test_output_file_is_atomic_and_bad_flags_are_one_line(tmp_path):
    out = tmp_path / "job.sh"
    for args, expect in (
        (("--cluster", "no-such-cluster"), "unknown cluster"),
        (("--tier", "4"), "--tier"),
        (("--nodes", "0"), "--nodes"),
        (("--time", "90 minutes"), "--time '90 minutes': expected [D-]HH:MM:SS"),
        (("--set", "NCCL_NO_SUCH_THING=1"), "NCCL_NO_SUCH_THING"),
    ):
        rc, stdout, stderr = run_cli(*args, "-o", str(out))
        assert (rc, stdout) == (2, ""), (args, stderr)
        assert stderr.count("\n") == 1 and expect in stderr and "Traceback" not in stderr, (args, stderr)
        assert list(tmp_path.iterdir()) == [], args  # neither the file nor a temp file
    rc, _, stderr = run_cli("--cluster", "local-ci", "-o", str(out))
    assert rc == 0, stderr
    assert out.stat().st_mode & 0o777 == 0o755 and out.read_text().startswith("#!/bin/bash\n")


def test_extra_sbatch_cannot_redefine_what_ncclgen_sets(tmp_path):
    doc = yaml.safe_load(Path(descriptor.resolve("local-ci")).read_text())

    def variant(name, extra):
        doc["slurm"]["extra_sbatch"] = extra
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc))
        return str(path)

    rc, _, stderr = run_cli("--cluster", variant("bad", {"time": "1:00:00"}))
    assert rc == 2 and "slurm.extra_sbatch.time: --time is set by ncclgen: use ncclgen slurm --time" in stderr
    rc, _, stderr = run_cli("--cluster", variant("gres", {"gres": "gpu:h100:2"}))
    assert rc == 2 and "slurm.extra_sbatch.gres: --gres=gpu:h100:2 asks for GPUs" in stderr, stderr
    rc, _, stderr = run_cli("--cluster", variant("typo", {"mail-typ": "END"}))
    assert rc == 2 and "sbatch has no option --mail-typ (did you mean 'mail-type'?)" in stderr, stderr
    for requeue in ("", True):  # `requeue: ""` was the only way before flags took `true`
        rc, stdout, stderr = run_cli(
            "--cluster", variant("good", {"requeue": requeue, "mail-type": "END", "nice": 10}), "--workload", "bench"
        )
        assert rc == 0, stderr
        for line in ("--requeue", "--mail-type=END", "--nice=10", "--signal=B:USR1@300", "--open-mode=append"):
            assert f"#SBATCH {line}\n" in stdout, line
        assert "trap ncclgen_requeue USR1\n" in stdout


def test_container_image_reaches_every_srun(capsys):
    image = "nvcr.io#nvidia/pytorch:25.01-py3"
    for wl in ("verl-grpo-qwen2-7b", "verl-sft"):
        text = render(capsys, "--cluster", "h100-ib", "--workload", wl, "--monitor", "--container-image", image)
        sruns = [ln for ln in text.splitlines() if re.match(r"\s*(RAY_ADDRESS=\S+ )?srun ", ln)]
        assert len(sruns) == (6 if wl == "verl-grpo-qwen2-7b" else 2) + 1  # + the preflight step
        monitor = [ln for ln in sruns if "NCCLGEN_MONITOR" in ln]
        assert len(monitor) == 1 and "--container" not in monitor[0]  # the monitor runs on the host
        for ln in sruns:
            if ln not in monitor:
                assert " " + shlex.quote(f"--container-image={image}") + " " in ln, ln
                assert ' --container-name="ncclgen-$SLURM_JOB_ID"' in ln, ln


def test_descriptor_container_image_and_mounts(tmp_path, capsys):
    doc = yaml.safe_load(Path(descriptor.available()["h100-ib"]).read_text())
    doc["slurm"].update(
        container_image="nvcr.io#nvidia/pytorch:25.01-py3",
        container_mounts=["/data:/data:ro", "/home/me/my runs:/runs"],
    )
    good = tmp_path / "pyxis.yaml"
    good.write_text(yaml.safe_dump(doc))
    text = render(capsys, "--cluster", str(good), "--workload", "verl-sft")
    steps = [ln for ln in text.splitlines() if ln.lstrip().startswith("srun ")]
    assert len(steps) == 2  # the preflight runs in the job's container too
    for step in steps:
        assert "--container-image=nvcr.io#nvidia/pytorch:25.01-py3" in step
        assert shlex.quote("--container-mounts=/data:/data:ro,/home/me/my runs:/runs") in step
    doc["slurm"]["container_mounts"] = ["/a,/b:/c"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(UserError, match=r"slurm\.container_mounts\[0\].*must not contain ','"):
        descriptor.load(str(bad))


# --- running the script with stand-ins -----------------------------------------------------------

SHIMS = {
    # Plays a step's behaviour from the environment: block (until the script's clean-up kills it),
    # exit:N, after:SECONDS:N, or await:NAME:COUNT (exit 0 once COUNT stand-ins NAME were called: the
    # background steps have really started, as a readiness check would see).
    "act.sh": """
        act() {
          case "$1" in
            block) exec sleep "$SHIM_SLEEP" ;;
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
          export SLURMD_NODENAME=$1 SLURM_NODEID=$((${1#node} - 1)) SLURM_PROCID=$2 SLURM_STEP_NUM_NODES=${#nodes[@]}
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
          "show job") echo "JobId=${!#} JobName=x WorkDir=$PWD StdErr=$PWD/ncclgen-${!#}.out StdIn=/dev/null StdOut=$PWD/ncclgen-${!#}.out Power=" ;;
          *) echo "scontrol shim: unexpected $*" >&2; exit 1 ;;
        esac
        """,
    "ray": """
        NAME=ray; . "$SHIM_DIR/act.sh"; record "$@"
        if [[ " $* " == *" --head "* ]]; then act "$SHIM_RAY_HEAD"; else act "$SHIM_RAY_WORKER"; fi
        """,
    # The preflight (python3 -c PROGRAM SPEC, the spec a JSON object) is recorded as "preflight".
    "python3": """
        NAME=python3; [[ $1 == -c && $3 == '{"v":'* ]] && NAME=preflight
        . "$SHIM_DIR/act.sh"; record "$@"
        if [[ $NAME == preflight ]]; then act "$SHIM_PREFLIGHT"; fi
        if [[ $1 == -c && $3 == wait ]]; then act "$SHIM_WAIT"; fi
        if [[ $1 == -c && $3 == watch ]]; then act "$SHIM_WATCH"; fi
        if [[ $1 == -c && $3 == */ncclgen-monitor-* ]]; then act "${SHIM_MONITOR:-block}"; fi
        act "$SHIM_DRIVER"
        """,
    "torchrun": """
        NAME=torchrun; . "$SHIM_DIR/act.sh"; record "$@"
        act "$SHIM_DRIVER"
        """,
    # scancel --signal=TERM JOB: every step process gets TERM (the stand-ins that block are this run's
    # unique `sleep`s).
    "scancel": """
        NAME=scancel; . "$SHIM_DIR/act.sh"; record "$@"
        pkill -TERM -f "^sleep $SHIM_SLEEP\\$" || true
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
        (tmp_path / "tmp").mkdir()
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


HOSTILE_ARGV = [
    "python3",
    "-c",
    "pass",
    "$(touch PWNED)",
    "`touch PWNED2`",
    "a'b\"c",
    "; touch PWNED3",
    "*",
    "new\nline",
    "x,y=z",
    "",
    "${HOME}",
]


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
def test_hostile_values_arrive_byte_exact_and_execute_nothing(capsys, tmp_path, launcher):
    script, plan = local_ci(capsys, tmp_path, launcher, HOSTILE_ARGV, sets=[f"NCCL_DEBUG_FILE={HOSTILE}"], monitor=True)
    run = Run(tmp_path, script).finish()
    assert run.rc == 0, run.stderr
    assert not list(tmp_path.rglob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))
    if launcher == "torchrun":
        (args, env), _second_node = run.calls("torchrun")
        assert args[-len(HOSTILE_ARGV) :] == HOSTILE_ARGV
    else:  # the driver: python3 is the program the shim plays, the rest its arguments
        ((args, env),) = [c for c in run.calls("python3") if c[0][:2] == ["-c", "pass"]]
        assert args == HOSTILE_ARGV[1:]
    assert env["NCCL_DEBUG_FILE"] == HOSTILE
    for name, value in plan.env_dict().items():  # the whole plan reached the launched program
        assert env[name] == value, name
    assert run.leftovers() == []


def test_torchrun_line_and_binding_program(capsys, tmp_path):
    script, plan = local_ci(capsys, tmp_path, "torchrun", ["python3", "train.py"], monitor=True)
    run = Run(tmp_path, script, SHIM_DRIVER="await:python3:1").finish()  # the monitor started
    assert run.rc == 0, run.stderr
    calls = run.calls("torchrun")
    assert len(calls) == 2  # one agent per node, in one step
    for args, _ in calls:
        assert args == [
            "--nnodes=2",
            *plan.launch.torchrun_options(),
            "--rdzv-endpoint=127.0.0.1:29500",
            "--rdzv-id=4242",
            "bash",
            "-c",
            render_slurm.launchmod.bind_wrapper(plan.binding, plan.launch.bind_memory).rstrip("\n"),
            "ncclgen-bind",
            "python3",
            "train.py",
        ]
    sruns = [a for a, _ in run.calls("srun")]
    launch = [a for a in sruns if "torchrun" in a]
    assert launch == [
        ["--nodes=2", "--ntasks-per-node=1", "--kill-on-bad-exit=1", "--export=ALL", "torchrun", *calls[0][0]]
    ]
    monitors = [a for a, _ in run.calls("python3")]
    assert len(monitors) == 2  # one per node
    for monitor in monitors:
        assert monitor == [
            "-c",
            jobside.source("monitor").rstrip("\n"),
            f"{run.work}/ncclgen-monitor-4242-{{node}}.jsonl",
            "5",
        ]
    assert run.leftovers() == []


def test_ray_bring_up_order_hook_file_and_driver(capsys, tmp_path):
    script, _plan = local_ci(capsys, tmp_path, "ray", ["python3", "driver.py"])
    run = Run(tmp_path, script, SHIM_DRIVER="await:python3:3").finish()  # check, watchdog, driver
    assert run.rc == 0, run.stderr
    starts = {tuple(a[:2]): a for a, _ in run.calls("ray")}
    head = starts["start", "--head"]
    assert head == [
        "start",
        "--head",
        "--port=6379",
        "--num-gpus=2",
        "--num-cpus=2",
        "--disable-usage-stats",
        "--node-ip-address=127.0.0.1",
        "--include-dashboard=false",
        "--block",
    ]
    (worker,) = [a for a in starts.values() if a is not head]
    assert worker == [
        "start",
        "--address=127.0.0.1:6379",
        "--dashboard-agent-listen-port=52366",
        "--num-gpus=2",
        "--num-cpus=2",
        "--disable-usage-stats",
        "--block",
    ]
    py = {a[2] if a[0] == "-c" else "driver": (a, env) for a, env in run.calls("python3")}
    assert py["wait"][0][3:] == ["127.0.0.1:6379", "2", "4", "300"]
    assert py["wait"][0][1] == jobside.source("raywait", compact=True).rstrip("\n")
    assert py["watch"][0][3:] == ["127.0.0.1:6379", "2", "2"]
    driver_args, driver_env = py["driver"]
    assert driver_args == ["driver.py"] and driver_env["RAY_ADDRESS"] == "127.0.0.1:6379"
    assert float(driver_env["NCCLGEN_T0"]) > 0
    # tier 3: each ray start step wrote the hook module node-locally, and workers will import it
    hook = tmp_path / "tmp" / "ncclgen-4242" / "ncclgen_raybind.py"
    assert hook.read_text() == jobside.source("raybind", compact=True)
    assert driver_env["__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR"] == "ncclgen_raybind.hook"
    assert driver_env["PYTHONPATH"] == str(hook.parent)
    assert raybind.parse_map(driver_env["NCCLGEN_GPU_CPUS"]) == {"0": {0}, "1": {1}}
    assert run.leftovers() == []


@pytest.mark.parametrize(
    "behaviour, rc, message",
    [
        ({"SHIM_DRIVER": "exit:7"}, 7, None),
        ({"SHIM_WAIT": "exit:3"}, 3, "the Ray cluster is not ready"),
        (
            {"SHIM_WAIT": "block", "SHIM_RAY_WORKER": "exit:1"},
            4,
            "the Ray step on node2 ended (status 1) while the Ray cluster was starting",
        ),
        ({"SHIM_DRIVER": "block", "SHIM_WATCH": "after:0.2:5"}, 5, "the Ray watchdog ended"),
        (
            {"SHIM_DRIVER": "block", "SHIM_RAY_HEAD": "after:1:1"},
            4,
            "the Ray step on node1 ended (status 1) before the driver",
        ),
        ({"SHIM_NODES": "3"}, 2, "this script is for 2 node(s) x 2 GPUs; the job has 3 x 8"),
        ({"SLURM_GPUS_ON_NODE": "1"}, 2, "the job has 2 x 1"),
        ({"SHIM_NODE_ADDR": "no-such-host.invalid"}, 2, "no IPv4 address for the head node node1"),
    ],
    ids=[
        "driver-status",
        "not-ready",
        "worker-dies-in-bring-up",
        "watchdog",
        "head-dies-later",
        "resized-job",
        "fewer-gpus",
        "unresolvable-head",
    ],
)
def test_ray_fail_fast_exit_codes(capsys, tmp_path, behaviour, rc, message):
    script, _ = local_ci(capsys, tmp_path, "ray", ["python3", "driver.py"])
    run = Run(tmp_path, script, **behaviour).finish()
    assert run.rc == rc, run.stderr
    if message:
        assert message in run.stderr
    assert run.leftovers() == []  # the EXIT trap ended every step


def test_head_node_name_is_resolved_to_ipv4(capsys, tmp_path):
    script, _ = local_ci(capsys, tmp_path, "torchrun", ["python3", "train.py"])
    run = Run(tmp_path, script, SHIM_NODE_ADDR="localhost").finish()
    assert run.rc == 0, run.stderr
    for args, _ in run.calls("torchrun"):
        assert "--rdzv-endpoint=127.0.0.1:29500" in args


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
def test_sigterm_to_the_batch_script_ends_every_step(capsys, tmp_path, launcher):
    script, _ = local_ci(capsys, tmp_path, launcher, ["python3", "work.py"], monitor=True)
    run = Run(tmp_path, script, SHIM_DRIVER="block")
    deadline = time.monotonic() + 20
    while not run.started("work.py"):
        assert time.monotonic() < deadline and run.proc.poll() is None, "the launch never started"
        time.sleep(0.05)
    run.proc.send_signal(signal.SIGTERM)
    run.finish()
    assert run.rc == 143
    assert run.leftovers() == []


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
@pytest.mark.parametrize("requeue_rc", [0, 1])
def test_requeue_signal_stops_the_steps_then_requeues(capsys, tmp_path, launcher, requeue_rc):
    wl = tmp_path / f"{launcher}.yaml"
    wl.write_text(
        yaml.safe_dump(
            {
                "name": "shim-requeue",
                "description": "shim test",
                "launcher": launcher,
                "nodes": 2,
                "command": ["python3", "work.py"],
            }
        )
    )
    script = render(
        capsys,
        "--cluster",
        "local-ci",
        "--tier",
        "3",
        "--workload",
        str(wl),
        "--requeue",
        "--signal",
        "B:USR1@60",
        "--monitor",
    )
    run = Run(tmp_path, script, SHIM_DRIVER="block", SHIM_REQUEUE_RC=str(requeue_rc))
    deadline = time.monotonic() + 20
    while not run.started("work.py"):
        assert time.monotonic() < deadline and run.proc.poll() is None, "the launch never started"
        time.sleep(0.05)
    time.sleep(1)  # every stand-in has exec'd its `sleep` (a later one would miss the scancel stand-in's TERM)
    t0 = time.monotonic()
    run.proc.send_signal(signal.SIGUSR1)
    run.finish()
    assert time.monotonic() - t0 < 10  # the steps ended at TERM: no wait for the 50 s grace
    assert "ncclgen: SIGUSR1: time limit in 60 s; stopping the steps (SIGTERM), then requeueing job 4242" in run.stderr
    assert [a for a, _ in run.calls("scancel")] == [["--signal=TERM", "4242"]]
    assert (tmp_path / "log" / "scontrol-requeue").read_text() == "requeued\n"
    if requeue_rc:
        assert run.rc == 1 and "scontrol requeue 4242 failed" in run.stderr
    else:
        assert run.rc == 0, run.stderr
    assert run.leftovers() == []


def test_torchrun_step_status_is_the_job_status(capsys, tmp_path):
    script, _ = local_ci(capsys, tmp_path, "torchrun", ["python3", "train.py"])
    assert Run(tmp_path, script, SHIM_DRIVER="exit:9").finish().rc == 9


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
def test_preflight_step_runs_on_every_node_with_the_plans_checks(capsys, tmp_path, launcher):
    script, plan = local_ci(capsys, tmp_path, launcher, ["python3", "work.py"])
    run = Run(tmp_path, script, SHIM_DRIVER="await:preflight:1" if launcher == "torchrun" else "exit:0").finish()
    assert run.rc == 0, run.stderr
    (args, _), _second_node = run.calls("preflight")
    assert args == [
        "-c",
        jobside.source("preflight", compact=True).rstrip("\n"),
        preflight.encode(preflight.spec(plan)),
    ]
    (step,) = [a for a, _ in run.calls("srun") if a[-1] == args[-1]]
    assert step[:3] == ["--nodes=2", "--ntasks-per-node=1", "--export=ALL"]


@pytest.mark.parametrize("launcher", ["torchrun", "ray"])
def test_failed_preflight_ends_the_job_before_the_launch(capsys, tmp_path, launcher):
    script, _ = local_ci(capsys, tmp_path, launcher, ["python3", "work.py"], monitor=True)
    run = Run(tmp_path, script, SHIM_PREFLIGHT="exit:6").finish()
    assert run.rc == preflight.EXIT_PROBLEMS == 6
    assert "ncclgen: ERROR: the preflight failed (lines above); nothing was launched" in run.stderr
    assert run.calls("torchrun") == run.calls("ray") == run.calls("python3") == run.calls("ncclgen") == []
    assert run.leftovers() == []


def test_no_preflight_leaves_the_step_out(capsys, tmp_path):
    wl = tmp_path / "w.yaml"
    wl.write_text(
        yaml.safe_dump(
            {"name": "w", "description": "d", "launcher": "torchrun", "nodes": 2, "command": ["python3", "work.py"]}
        )
    )
    script = render(capsys, "--cluster", "local-ci", "--tier", "3", "--workload", str(wl), "--no-preflight")
    assert "NCCLGEN_PREFLIGHT" not in script and "exit 6" not in script
    assert re.search(r"# Regenerate: ncclgen slurm .* --no-preflight$", script, re.M)
    run = Run(tmp_path, script).finish()
    assert run.rc == 0 and run.calls("preflight") == [] and len(run.calls("torchrun")) == 2, run.stderr  # one per node


# --- the real Slurm -------------------------------------------------------------------------------


@pytest.mark.slurm
@pytest.mark.parametrize("cluster", CLUSTERS)
def test_sbatch_test_only_accepts_every_render(slurm_cluster, tmp_path, cluster):
    """The 2 test nodes declare 224 CPUs and gpu:h100:8; --nodes 2 fits the 4-node workload in."""
    for tier, wl in itertools.product(TIERS, WORKLOADS):
        path = tmp_path / f"{tier}-{wl}.sh"
        assert (
            main(
                [
                    "slurm",
                    "--cluster",
                    cluster,
                    "--tier",
                    str(tier),
                    "--workload",
                    wl,
                    "--partition",
                    "debug",
                    "--nodes",
                    "2",
                    "-o",
                    str(path),
                ]
            )
            == 0
        )
        rc, stderr = slurm_cluster.test_only(path)
        assert rc == 0 and "to start at" in stderr, f"{cluster} tier {tier} {wl}: {stderr}"


@pytest.mark.slurm
def test_slurm_reads_a_hostile_job_name_byte_exact(slurm_cluster, tmp_path):
    name = "x $(touch PWNED) `b` \"q\" 'q' ; * #c \\b"
    path = tmp_path / "job.sh"
    assert main(["slurm", "--cluster", "local-ci", "--job-name", name, "-o", str(path)]) == 0
    job = slurm_cluster.sbatch(path, "--hold", cwd=tmp_path)
    try:
        shown = subprocess.run(
            ["scontrol", "show", "job", "-o", job], env=slurm_cluster.env, capture_output=True, text=True, check=True
        ).stdout
    finally:
        slurm_cluster.cancel(job)
    assert re.search(r"\bJobName=(.*) UserId=", shown).group(1) == name
    assert not list(tmp_path.glob("PWNED*"))


# --- the Ray hook (ncclgen/raybind.py) -----------------------------------------------------------


def test_hook_map_parses_like_ncclgen_cpuset():
    for cluster in CLUSTERS:
        p = make_plan(request(cluster, 3, "verl-sft", None, (), False))
        parsed = raybind.parse_map(render_slurm.launchmod.gpu_cpu_map(p.binding))
        assert parsed == {str(b.gpu): cpuset.parse(b.cpus) for b in p.binding}, cluster
    for bad in ("", "0", "x=1", "0=a", "0=3-1", "0=1-"):
        with pytest.raises(ValueError):
            raybind.parse_map(bad)


def test_hook_wrapper_binds_to_the_first_assigned_gpu(capsys):
    seen, bound = [], []

    class Manager:  # a stand-in with the shape of Ray's NvidiaGPUAcceleratorManager
        @staticmethod
        def set_current_process_visible_accelerator_ids(ids):
            seen.append(list(ids))

    wrapped = raybind.wrap(
        Manager.set_current_process_visible_accelerator_ids,
        {"0": {0}, "1": {1, 2}},
        setaffinity=lambda pid, cpus: bound.append((pid, cpus)),
    )
    wrapped(["1", "0"])
    wrapped([])
    wrapped(["7"])
    assert seen == [["1", "0"], [], ["7"]]  # Ray's own work always runs
    assert bound == [(0, {1, 2})]
    assert "GPU 7 is not in NCCLGEN_GPU_CPUS" in capsys.readouterr().err


def test_hook_fails_soft_when_ray_internals_changed(capsys):
    class Changed:
        pass

    assert raybind.install(Changed, {"0": {0}}) is False
    assert "has no set_current_process_visible_accelerator_ids" in capsys.readouterr().err


def test_hook_binds_through_the_real_ray_method():
    """Ray 2.60's own class, in a child process (affinity is per process)."""
    prog = textwrap.dedent("""
        import os, ncclgen.jobside.raybind as h
        h.hook()
        import ray._private.accelerators as acc
        manager = acc.get_accelerator_manager_for_resource("GPU")
        for gpu in ("1", "0"):
            manager.set_current_process_visible_accelerator_ids([gpu])
            print(gpu, sorted(os.sched_getaffinity(0)), os.environ["CUDA_VISIBLE_DEVICES"])
        h.hook()  # a second call must not wrap twice
        print(manager.set_current_process_visible_accelerator_ids.ncclgen_wrapped.__name__)
        """)
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    cpus = sorted(os.sched_getaffinity(0))[:2]
    env = {**os.environ, "NCCLGEN_GPU_CPUS": f"0={cpus[0]};1={cpus[1]}"}
    r = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"1 [{cpus[1]}] 1",
        f"0 [{cpus[0]}] 0",
        "set_current_process_visible_accelerator_ids",
    ]


def test_hook_without_map_warns_and_returns(monkeypatch, capsys):
    monkeypatch.delenv("NCCLGEN_GPU_CPUS", raising=False)
    raybind.hook()
    assert "NCCLGEN_GPU_CPUS is not set" in capsys.readouterr().err


# --- the readiness check / watchdog (ncclgen/raywait.py) -----------------------------------------


def test_census_counts_alive_nodes_and_their_gpus():
    nodes = [
        {"Alive": True, "Resources": {"GPU": 8.0, "CPU": 1.0}},
        {"Alive": False, "Resources": {"GPU": 8.0}},
        {"Alive": True, "Resources": {"CPU": 4.0}},
    ]
    assert raywait.census(nodes) == (2, 8)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_wait_times_out_with_one_clear_line_and_exit_3():
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, raywait.__file__, "wait", f"127.0.0.1:{free_port()}", "2", "16", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 3 and time.monotonic() - t0 < 30
    assert r.stderr == ("ncclgen: ERROR: Ray cluster not ready after 1 s (want 2 nodes/16 GPUs, have 0 nodes/0 GPUs)\n")


def test_bad_usage_exits_2():
    r = subprocess.run(
        [sys.executable, raywait.__file__, "wait", "x:1", "2"], capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 2 and r.stderr.startswith("usage:")


@pytest.mark.slow
def test_wait_and_watch_against_a_real_two_node_ray_cluster(tmp_path):
    """Real Ray 2.60 (no Slurm): a head and a worker on this host, as the fake Slurm nodes run them.
    ready -> exit 0; asking for more -> exit 3 with what is there; a SIGTERMed worker raylet (which
    leaves `ray start --block` running, see the module docstring) -> the watchdog exits 5."""
    ray_bin = Path(sys.executable).with_name("ray")
    if not ray_bin.exists():
        skip_or_fail("the ray CLI is not installed next to this Python (pip install 'ray[default]')")
    port = free_port()
    temp = Path(f"/tmp/ncg-{os.getpid()}")  # short: Ray's AF_UNIX socket paths are limited to ~107 bytes
    common = ["--num-gpus=2", "--num-cpus=1", "--disable-usage-stats", "--block"]
    head = subprocess.Popen(
        [
            str(ray_bin),
            "start",
            "--head",
            f"--port={port}",
            "--include-dashboard=false",
            f"--temp-dir={temp}",
            f"--ray-client-server-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}",
            *common,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    worker = subprocess.Popen(
        [str(ray_bin), "start", f"--address=127.0.0.1:{port}", f"--dashboard-agent-listen-port={free_port()}", *common],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )

    def waiter(*args, timeout=240):
        return subprocess.run(
            [sys.executable, raywait.__file__, *args], capture_output=True, text=True, timeout=timeout, check=False
        )

    try:
        r = waiter("wait", f"127.0.0.1:{port}", "2", "4", "180")
        assert r.returncode == 0, r.stderr
        assert re.fullmatch(r"ncclgen: Ray cluster ready: 2 nodes, 4 GPUs after \d+\.\d s\n", r.stdout)
        r = waiter("wait", f"127.0.0.1:{port}", "3", "6", "5")
        assert r.returncode == 3 and "(want 3 nodes/6 GPUs, have 2 nodes/4 GPUs)" in r.stderr
        watch = subprocess.Popen(
            [sys.executable, raywait.__file__, "watch", f"127.0.0.1:{port}", "2", "0.5"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(5)  # connected and watching
        assert watch.poll() is None, watch.communicate()
        raylets = subprocess.run(
            ["pgrep", "-s", str(worker.pid), "-x", "raylet"], capture_output=True, text=True, check=False
        ).stdout.split()
        assert len(raylets) == 1, raylets
        os.kill(int(raylets[0]), signal.SIGTERM)
        _, err = watch.communicate(timeout=90)
        assert watch.returncode == 5, err
        assert "Ray watchdog: only 1/2 Ray nodes alive" in err
    finally:
        for proc in (worker, head):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in (worker, head):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)
