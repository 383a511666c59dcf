"""`ncclgen slurm` per-job options (issue 14): #SBATCH flags, --sbatch passthrough, log names, pyxis,
requeue, and the verl resume settings. Rendering only; test_render_slurm.py runs scripts with stand-ins
and the e2e tests run them on the local Slurm cluster."""

from __future__ import annotations

import re
import shlex

import pytest

from ncclgen.cli import main


def render(capsys, *args: str) -> tuple[str, str]:
    rc = main(["slurm", *args])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out, err


def refused(capsys, *args: str) -> str:
    rc = main(["slurm", *args])
    out, err = capsys.readouterr()
    assert (rc, out) == (2, ""), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def sbatch_lines(text: str) -> dict[str, str | None]:
    out = {}
    for line in text.splitlines():
        if line.startswith("#SBATCH "):
            opt, _, value = line[8:].partition("=")
            out[opt] = value or None
    return out


def test_per_job_options_reach_sbatch(capsys):
    text, _ = render(
        capsys,
        "--cluster",
        "h100-ib",
        "--workload",
        "bench",
        "--reservation",
        "maint window",
        "--constraint",
        "h100&ib",
        "--dependency",
        "afterok:1234",
        "--output",
        "logs/%x-%j.out",
        "--error",
        "logs/%x-%j.err",
        "--sbatch",
        "mail-type=END,FAIL",
        "--sbatch",
        "hold",
        "--sbatch",
        "--comment=two words",
    )
    got = sbatch_lines(text)
    assert got["--reservation"] == shlex.quote("maint window")
    assert got["--constraint"] == shlex.quote("h100&ib")
    assert got["--dependency"] == "afterok:1234"
    assert (got["--output"], got["--error"]) == ("logs/%x-%j.out", "logs/%x-%j.err")
    assert got["--mail-type"] == "END,FAIL" and "--hold" in got and got["--hold"] is None
    assert got["--comment"] == shlex.quote("two words")
    # The Regenerate line repeats them, so the script can be made again as it is.
    regen = next(line for line in text.splitlines() if line.startswith("# Regenerate: "))
    for part in ("--reservation 'maint window'", "--dependency afterok:1234", "--sbatch hold"):
        assert part in regen


def test_defaults_unchanged_without_the_options(capsys):
    got = sbatch_lines(render(capsys, "--cluster", "h100-ib", "--workload", "bench")[0])
    assert got["--output"] == "ncclgen-%j.out"
    for absent in ("--error", "--reservation", "--dependency", "--requeue", "--signal", "--open-mode"):
        assert absent not in got


def test_array_log_name_uses_array_id_and_index(capsys):
    got = sbatch_lines(render(capsys, "--workload", "bench", "--sbatch", "array=0-3%1")[0])
    assert (got["--array"], got["--output"]) == ("0-3%1", "ncclgen-%A_%a.out")
    got = sbatch_lines(render(capsys, "--workload", "bench", "--sbatch", "array=0-3", "--output", "a-%a.log")[0])
    assert got["--output"] == "a-%a.log"  # an explicit name is kept as given


def test_cli_sbatch_overrides_the_descriptor_and_off_switches(capsys, tmp_path):
    got = sbatch_lines(render(capsys, "--workload", "bench", "--sbatch", "requeue", "--sbatch", "no-requeue")[0])
    assert "--no-requeue" in got and "--requeue" not in got


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ("--sbatch", "reservaton=x"),
            "--sbatch reservaton: sbatch has no option --reservaton (did you mean 'reservation'?)",
        ),
        (("--sbatch", "gres=gpu:8"), "conflicts with ncclgen's own GPU request --gpus-per-node=8"),
        (("--sbatch", "gpus-per-task=1"), "--gpus-per-task conflicts with ncclgen's own GPU request"),
        (("--sbatch", "time=1:00:00"), "--time is set by ncclgen: use ncclgen slurm --time"),
        (("--sbatch", "output=x"), "use ncclgen slurm --output"),
        (("--sbatch", "requeue=yes"), "--requeue is a flag and takes no value"),
        (("--sbatch", "comment=a\nb"), "control characters"),
        (("--output", "job.sh"), "--output names the job's log (#SBATCH --output); write the script itself with -o"),
        (("--reservation", "a\nb"), "control characters"),
        (("--signal", "B:USR1@60"), "--signal: only with --requeue"),
        (("--requeue", "--signal", "USR1@60"), "expected B:USR1@SECONDS or B:USR2@SECONDS"),
        (("--requeue", "--signal", "B:USR1@5"), "30 <= SECONDS"),
        (("--container-workdir", "/w"), "--container-workdir: only with a container image"),
        (("--container-image", "img", "--container-mounts", "/a,/b"), "expected SRC[:DST[:FLAGS]] without ','"),
        (("--container-image", "img", "--container-workdir", "w"), "expected an absolute path"),
    ],
)
def test_refused_with_one_line(capsys, args, message):
    assert message in refused(capsys, "--cluster", "h100-ib", "--workload", "bench", *args)


def test_registry_image_rewritten_with_a_note_and_one_named_container(capsys):
    text, err = render(
        capsys,
        "--workload",
        "bench",
        "--container-image",
        "nvcr.io/nvidia/pytorch:25.01-py3",
        "--container-workdir",
        "/workspace",
        "--container-mounts",
        "/lustre:/lustre",
        "--container-mounts",
        "/scratch",
    )
    assert err == (
        "ncclgen: note: container image 'nvcr.io/nvidia/pytorch:25.01-py3' written as "
        "'nvcr.io#nvidia/pytorch:25.01-py3': pyxis/enroot take [USER@][REGISTRY#]IMAGE[:TAG], and "
        "with '/' after the registry enroot would look the image up on Docker Hub\n"
    )
    # every step (the preflight, the torchrun step) is an ncclgen_step: srun with these options
    steps = [ln for ln in text.splitlines() if ln.lstrip().startswith("ncclgen_step ")]
    assert len(steps) == 2
    srun = text[text.index("srun=(\n") : text.index("\n  )\n", text.index("srun=(\n"))].split()
    assert srun[2:] == [
        "--export=ALL",
        shlex.quote("--container-image=nvcr.io#nvidia/pytorch:25.01-py3"),
        '--container-name="ncclgen-$SLURM_JOB_ID"',
        "--container-mounts=/lustre:/lustre,/scratch",
        "--container-workdir=/workspace",
    ]
    _, err = render(capsys, "--workload", "bench", "--container-image", "nvcr.io#nvidia/pytorch:25.01-py3")
    assert err == ""


def test_requeue_renders_signal_append_and_the_handler(capsys):
    text, _ = render(capsys, "--workload", "bench", "--requeue", "--signal", "B:USR2@600")
    got = sbatch_lines(text)
    assert (got["--signal"], got["--open-mode"]) == ("B:USR2@600", "append") and "--requeue" in got
    assert "trap ncclgen_requeue USR2\n" in text
    assert 'scancel --signal=TERM "$SLURM_JOB_ID"' in text and 'scontrol requeue "$SLURM_JOB_ID"' in text
    assert "end=$((SECONDS + 590))" in text  # grace: the warning less 10 s for the requeue itself


VERL_OK = ("--", "trainer.default_local_dir=/lustre/ck/grpo")


def test_requeue_of_a_verl_job_adds_resume_auto(capsys):
    text, _ = render(capsys, "--workload", "verl-grpo-qwen2-7b", "--requeue", *VERL_OK)
    driver = text[text.index("-- ray-driver.sh --") :].split(" &\n")[0]
    assert re.search(
        r"trainer\.save_freq=20 .*trainer\.default_local_dir=/lustre/ck/grpo "
        r"trainer\.resume_mode=auto",
        " ".join(driver.split()),
    ), driver
    plain, _ = render(capsys, "--workload", "verl-grpo-qwen2-7b", *VERL_OK)
    assert "resume_mode" not in plain  # only with --requeue


@pytest.mark.parametrize(
    "extra, message",
    [
        ((), "trainer.default_local_dir must be an absolute folder on storage every node shares"),
        (("--", "trainer.default_local_dir=ck"), "trainer.default_local_dir must be an absolute folder"),
        (
            ("--", "trainer.default_local_dir=/ck", "trainer.save_freq=-1"),
            "trainer.save_freq=-1 saves none; add `-- trainer.save_freq=N`",
        ),
        (
            ("--", "trainer.default_local_dir=/ck", "trainer.resume_mode=disable"),
            "trainer.resume_mode=disable would not resume",
        ),
    ],
)
def test_requeue_of_a_verl_job_needs_checkpoints(capsys, extra, message):
    assert message in refused(capsys, "--workload", "verl-grpo-qwen2-7b", "--requeue", *extra)


@pytest.mark.slurm
def test_sbatch_test_only_accepts_the_per_job_options(slurm_cluster, tmp_path):
    """Each option as rendered, checked by the real sbatch against the local cluster: a reservation and
    a job to depend on exist there, and the nodes carry the features h100 and ib."""
    import subprocess

    env = slurm_cluster.env
    # Deleted below, in any case: while it exists, jobs outside it cannot use the nodes (the tests
    # share one cluster and run one at a time).
    subprocess.run(
        [
            "scontrol",
            "create",
            "reservation",
            "ReservationName=ncclgen-maint",
            "Nodes=ALL",
            "StartTime=now",
            "Duration=30",
            "Users=root",
            "Flags=IGNORE_JOBS",
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=30,
    )
    hold = tmp_path / "hold.sh"
    hold.write_text("#!/bin/bash\ntrue\n")
    held = slurm_cluster.sbatch(hold, "--hold", cwd=tmp_path)
    try:
        cases = [
            ("--reservation", "ncclgen-maint"),
            ("--constraint", "h100&ib"),
            ("--dependency", f"afterok:{held}"),
            ("--output", "logs/%x-%j.out", "--error", "logs/%x-%j.err"),
            ("--sbatch", "array=0-3%1"),
            ("--sbatch", "mail-type=END,FAIL", "--sbatch", "comment=per job", "--sbatch", "nice=10"),
            ("--requeue", "--signal", "B:USR1@600"),
            ("--container-image", "nvcr.io/nvidia/pytorch:25.01-py3"),  # srun options: sbatch ignores them
        ]
        for i, args in enumerate(cases):
            path = tmp_path / f"job{i}.sh"
            assert (
                main(
                    [
                        "slurm",
                        "--cluster",
                        "local-ci",
                        "--workload",
                        "bench",
                        "--partition",
                        "debug",
                        "--time",
                        "00:10:00",
                        "-o",
                        str(path),
                        *args,
                    ]
                )
                == 0
            )
            rc, stderr = slurm_cluster.test_only(path)
            assert rc == 0 and "to start at" in stderr, f"{args}: {stderr}"
        bad = tmp_path / "bad.sh"
        assert (
            main(["slurm", "--cluster", "local-ci", "--workload", "bench", "--constraint", "a100", "-o", str(bad)]) == 0
        )
        rc, stderr = slurm_cluster.test_only(bad)
        assert rc != 0 and "Invalid feature specification" in stderr  # the check can fail
    finally:
        slurm_cluster.cancel(held)
        subprocess.run(
            ["scontrol", "delete", "ReservationName=ncclgen-maint"],
            env=env,
            check=True,
            capture_output=True,
            timeout=30,
        )
