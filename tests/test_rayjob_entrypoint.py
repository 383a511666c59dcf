"""The RayJob's driver runs exactly the argv the Slurm script runs, byte for byte.

A RayJob's `spec.entrypoint` is a string that three parsers see before the driver starts:

1. KubeRay's submitter (ray-project/kuberay@v1.7.0 ray-operator/controllers/ray/common/job.go
   BuildJobSubmitCommand, rayjob_controller.go configureSubmitterContainer): the trimmed entrypoint is
   pasted between `ray job submit ... --` and `;`, the words joined with spaces and run by
   `/bin/bash -ce --` as the submitter container's args (so the kubelet's `$(VAR)` expansion applies too);
2. `ray job submit` (ray 2.60.0 ray/dashboard/modules/job/cli.py) joins the words it received after
   `--` again with `subprocess.list2cmdline`, which quotes only spaces, tabs and double quotes;
3. Ray's job supervisor (ray/dashboard/modules/job/job_supervisor.py `_exec_entrypoint`) runs that string
   with `subprocess.Popen(..., shell=True)`: `/bin/sh -c`.

ncclgen's entrypoint is therefore a fixed string that none of them can change (`bash` and a path in the
ConfigMap), and the driver's argv is in the ConfigMap as a script that exactly one bash parses, quoted
as the sbatch script quotes it.

Stand-ins, because no Kubernetes API server, KubeRay or Ray cluster can run here: the kubelet's
expansion (a re-implementation of k8s third_party/forked/golang/expansion), the ConfigMap mount (a
directory holding the rendered data), the submitter's `ray` (a bash function recording the words bash
passed it) and what `ray job submit` and the supervisor do with them (the real `subprocess.list2cmdline`,
then the real /bin/sh through `subprocess.run(shell=True)`, as Popen does). The submitter's shell is the
real bash; the driver is printf, which writes back each argument it received.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import subprocess

import pytest
import yaml
from test_render_k8s import docs_of, job_of, kubelet_expand, plan_for

from ncclgen.render import k8s as render_k8s

# Control characters (ESC, CR, NUL, NEL) are refused when the workload is read (tests/test_hostile.py).
HOSTILE = [
    "$(touch {tmp}/pwned-dollar)",
    "`touch {tmp}/pwned-backtick`",
    "$HOME",
    "${HOME}",
    "~",
    "~/x",
    "~root",
    "${oc.env:USER}",
    "${oc.env:HOME,/tmp}",
    "trainer.experiment_name=${now:%Y-%m-%d_%H-%M-%S}",
    "data.train_files=$HOME/data/gsm8k/train.parquet",
    "+trainer.tags=[a,b]",
    "key='quoted value'",
    "'",
    '"',
    "\\",
    "\\\\",
    'a"b',
    'a\\"b',
    "a\\",
    "\\n",
    "a\nb",
    "line1\nline2\n",
    "a\tb",
    " lead",
    "trail ",
    "",
    " ",
    "*",
    "?",
    "[ab]",
    "{a,b}",
    "a;b",
    "a|b",
    "a&b",
    "a&&b",
    "a>b",
    "<in",
    "!",
    "!!",
    "#x",
    "a #x",
    "%s",
    "a b c",
    "$$",
    "$1",
    "$@",
    "$*",
    "$#",
    "$?",
    "$(VAR)",
    "$$(VAR)",
    "$(RAY_ADDRESS)",
    "-c",
    "--",
    "x=$(y)",
    '"$(id)"',
    "'$(id)'",
    "ü日本",
    "ray job stop",
    "; rm -rf {tmp}/canary",
]


def kuberay_submitter_args(entrypoint: str, job_id: str = "rayjob-x-abc12") -> str:
    """The submitter container's args[0] as KubeRay v1.7.0 builds it (K8sJobMode): BuildJobSubmitCommand's
    words joined by spaces. The wait loop's health probe (a Python one-liner) is reduced to `true`."""
    address = "http://rayjob-x-head-svc.default.svc.cluster.local:8265"
    words = [
        "until",
        "true",
        ">/dev/null",
        "2>&1",
        ";",
        "do",
        "echo",
        '"Waiting for Ray Dashboard GCS"',
        ";",
        "sleep",
        "2",
        ";",
        "done",
        ";",
        "if",
        "!",
        "ray",
        "job",
        "status",
        "--address",
        address,
        job_id,
        ">/dev/null",
        "2>&1",
        ";",
        "then",
        "ray",
        "job",
        "submit",
        "--address",
        address,
        "--no-wait",
        "--submission-id",
        job_id,
        "--",
        entrypoint.strip(),
        ";",
        "fi",
        ";",
        "ray",
        "job",
        "logs",
        "--address",
        address,
        "--follow",
        job_id,
    ]
    return " ".join(words)


# Stand-in for the `ray` CLI as a bash function (so the submitter's command line stays as KubeRay
# builds it): `job status` says "not submitted", `job logs` says nothing, `job submit` records the words
# bash handed it after `--`, NUL-separated.
FAKE_RAY = (
    '() { case "$2" in status) return 1;; logs) return 0;; esac; '
    'while [ "$1" != -- ]; do shift; done; shift; printf "%s\\0" "$@" > "$NCCLGEN_TEST_WORDS"; }'
)
# The driver: a sh script writing back each argument it received, NUL-terminated (no interpreter start-up).
RECORDER = "#!/bin/sh\nprintf '%s\\0' \"$@\"\n"


@pytest.fixture()
def chain(tmp_path):
    """run(entrypoint, files) -> (the argv the driver received or None, stderr)."""
    words = tmp_path / "words"
    mount = tmp_path / "etc-ncclgen"
    mount.mkdir()
    (tmp_path / "canary").write_text("")
    recorder = tmp_path / "record-argv"
    recorder.write_text(RECORDER)
    recorder.chmod(0o755)

    def run(entrypoint: str, files: dict[str, str]):
        for name, text in files.items():
            (mount / name).write_text(text, encoding="utf-8")
        if words.exists():
            words.unlink()
        # The ConfigMap is mounted at /etc/ncclgen in the pods; here it is a directory.
        entrypoint = entrypoint.replace(render_k8s.CONFIG_DIR, str(mount))
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": "/home/someone",
            "USER": "someone",
            "RAY_ADDRESS": "127.0.0.1:6379",
            "NCCLGEN_TEST_WORDS": str(words),
            "BASH_FUNC_ray%%": FAKE_RAY,
        }
        # 1. KubeRay's submitter: the kubelet expands $(VAR) in the container's args, bash -ce runs them.
        args = kubelet_expand(kuberay_submitter_args(entrypoint))
        proc = subprocess.run(["/bin/bash", "-ce", "--", args], env=env, cwd=tmp_path, capture_output=True, timeout=60)
        if proc.returncode or not words.exists():
            return None, proc.stderr
        received = words.read_bytes().split(b"\0")[:-1]
        # 2. ray job submit: list2cmdline of its words (ray/dashboard/modules/job/cli.py).
        entry = subprocess.list2cmdline([w.decode("utf-8", "surrogateescape") for w in received])
        # 3. The supervisor: Popen(entrypoint, shell=True), i.e. /bin/sh -c (job_supervisor.py).
        env.pop("BASH_FUNC_ray%%")
        driver = subprocess.run(entry, shell=True, env=env, cwd=tmp_path, capture_output=True, timeout=60)
        if driver.returncode:
            return None, driver.stderr
        return [a.decode("utf-8", "surrogateescape") for a in driver.stdout.split(b"\0")[:-1]], driver.stderr

    run.tmp = tmp_path
    run.recorder = [str(recorder)]
    return run


def hostile_argv(tmp) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in HOSTILE]


def rayjob_for(argv: list[str]):
    """The RayJob and its ConfigMap for the default Ray workload with ``argv`` as the driver's command,
    read back from the YAML text as kubectl would read it."""
    p = plan_for("h100-ib", 3, "verl-grpo-qwen2-7b")
    p = dataclasses.replace(p, launch=dataclasses.replace(p.launch, command=tuple(argv)))
    docs = docs_of(render_k8s.render(p, kind="rayjob"))
    files = {k: v for d in docs if d["kind"] == "ConfigMap" for k, v in d["data"].items()}
    return job_of(docs), files


def test_hostile_driver_argv_round_trips_byte_for_byte(chain):
    argv = hostile_argv(chain.tmp)
    job, files = rayjob_for(chain.recorder + argv)
    got, err = chain(job["spec"]["entrypoint"], files)
    assert got == argv, err.decode(errors="replace")
    assert not list(chain.tmp.glob("pwned-*")) and (chain.tmp / "canary").exists()


@pytest.mark.parametrize("arg", HOSTILE)
def test_each_value_alone(chain, arg):
    """One at a time too: a value that breaks the chain must not hide behind another one's failure."""
    arg = arg.replace("{tmp}", str(chain.tmp))
    job, files = rayjob_for([*chain.recorder, arg])
    got, err = chain(job["spec"]["entrypoint"], files)
    assert got == [arg], err.decode(errors="replace")


def test_the_entrypoint_is_fixed_text_no_parser_changes():
    job, _files = rayjob_for(["python3", "-m", "x", "$(id)"])
    entry = job["spec"]["entrypoint"]
    assert entry == f"bash {render_k8s.CONFIG_DIR}/{render_k8s.RAY_DRIVER_SCRIPT}"
    assert shlex.split(entry) == entry.split() == subprocess.list2cmdline(entry.split()).split()
    assert set(entry) <= set("abcdefghijklmnopqrstuvwxyz0123456789-_./ ")


def test_harness_catches_the_shell_joined_entrypoint(chain):
    """The chain really re-parses: the old entrypoint (shlex.join of the argv) changes 20+ values."""
    argv = hostile_argv(chain.tmp)
    changed = []
    for arg in argv:
        got, _ = chain(shlex.join([*chain.recorder, arg]), {})
        if got != [arg]:
            changed.append(arg)
    print(f"{len(changed)} of {len(argv)} values changed meaning")
    assert len(changed) >= 20, changed
    for a in ("${oc.env:USER}", "$HOME", "~", "a\nb", f"$(touch {chain.tmp}/pwned-dollar)"):
        assert a in changed
    assert (chain.tmp / "pwned-dollar").exists() or (chain.tmp / "pwned-backtick").exists()


def test_driver_script_is_what_the_sbatch_script_would_run():
    """The ConfigMap's driver script execs the plan's command, quoted once as for one bash parse."""
    argv = ["python3", "-m", "verl.trainer.main_ppo", "trainer.experiment_name=${oc.env:USER}", "a\nb"]
    _job, files = rayjob_for(argv)
    script = files[render_k8s.RAY_DRIVER_SCRIPT]
    assert script.count("\nexec ") == 1 and all(ln.startswith("#") for ln in script.split("\nexec ")[0].splitlines())
    # bash -n parses it; the argv bash builds from it is the command (printed NUL-separated).
    probe = script.replace("\nexec ", "\nprintf '%s\\0' ", 1)
    out = subprocess.run(["bash", "-c", probe], capture_output=True, check=True).stdout
    assert out.split(b"\0")[:-1] == [a.encode() for a in argv]
    assert yaml.safe_load(yaml.safe_dump(files))[render_k8s.RAY_DRIVER_SCRIPT] == script
    assert os.path.basename(render_k8s.RAY_DRIVER_SCRIPT) == render_k8s.RAY_DRIVER_SCRIPT


def test_rayjob_and_slurm_hand_the_driver_the_same_argv(chain, capsys):
    """The two renderers agree: the Slurm script (run with tests/slurm_shims.py's srun/python3 shims)
    and the RayJob chain hand the Ray driver the same argv for every value above."""
    from slurm_shims import Run, local_ci

    values = hostile_argv(chain.tmp)
    script, _ = local_ci(capsys, chain.tmp, "ray", ["python3", "-c", "pass", *values])
    run = Run(chain.tmp, script).finish()
    assert run.rc == 0, run.stderr
    ((slurm_args, _env),) = [c for c in run.calls("python3") if c[0][:2] == ["-c", "pass"]]
    job, files = rayjob_for([*chain.recorder, "-c", "pass", *values])
    got, err = chain(job["spec"]["entrypoint"], files)
    assert got == slurm_args == ["-c", "pass", *values], err.decode(errors="replace")
