"""Apptainer/Singularity as the Slurm container runtime (ncclgen/render/apptainer.py): image references,
binds, the argv before each step's program, the descriptor key, and the stand-in's own argv checks
(tests/apptainer_standin.py, used by tests/test_apptainer_e2e.py on the local Slurm cluster)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ncclgen.cli import main
from ncclgen.errors import UserError
from ncclgen.load import descriptor
from ncclgen.render import apptainer

STANDIN = Path(__file__).resolve().parent / "apptainer_standin.py"


@pytest.mark.parametrize(
    ("ref", "want", "noted"),
    [
        ("/shared/verl.sif", "/shared/verl.sif", False),
        ("./verl.sif", "./verl.sif", False),
        ("docker://verlai/verl:latest", "docker://verlai/verl:latest", False),
        ("oras://ghcr.io/org/img:1", "oras://ghcr.io/org/img:1", False),
        ("verlai/verl:latest", "docker://verlai/verl:latest", True),
        ("nvcr.io/nvidia/pytorch:25.01-py3", "docker://nvcr.io/nvidia/pytorch:25.01-py3", True),
        ("nvcr.io#nvidia/pytorch:25.01-py3", "docker://nvcr.io/nvidia/pytorch:25.01-py3", True),
    ],
)
def test_image_references(ref, want, noted):
    fixed, note = apptainer.image_ref(ref)
    assert fixed == want and (note is not None) == noted


@pytest.mark.parametrize("ref", ["", "a b", "dockerd://verl:dev", "podman://x"])
def test_bad_images_are_refused(ref):
    with pytest.raises(UserError, match="container image"):
        apptainer.image_ref(ref)


@pytest.mark.parametrize("bind", ["/lustre", "/lustre:/data", "/lustre:/data:ro", "/a:/b:rw"])
def test_binds_ok(bind):
    assert apptainer.check_bind(bind) == bind


@pytest.mark.parametrize("bind", ["", ":/d", "/a:", "/a:/b:ro+rprivate", "/a:/b,/c:/d", "/a:/b:ro:x", "/a\n"])
def test_binds_refused(bind):
    with pytest.raises(UserError, match="Apptainer binds"):
        apptainer.check_bind(bind)


def test_every_step_runs_under_apptainer_exec_nv(capsys):
    args = ["slurm", "--cluster", "local-ci", "--workload", "bench", "--container-runtime", "apptainer"]
    assert main([*args, "--container-image", "/img/v.sif", "--container-mounts", "/data:/data:ro"]) == 0
    out = capsys.readouterr().out
    # every container step is an ncclgen_step, whose srun runs the runtime's wrapper before node.sh
    assert "  local container=(apptainer exec --nv --bind /data:/data:ro /img/v.sif)\n" in out
    assert "--container-image=" not in out and "--container-name" not in out
    assert not [line for line in out.split("# ==== Programs")[0].splitlines() if line.lstrip().startswith("srun ")]


def test_singularity_and_the_ld_library_path_it_would_drop(capsys):
    """The plan's LD_LIBRARY_PATH (GCP's TCPXO plugin folder) reaches the program only under the prefix."""
    args = ["slurm", "--cluster", "gcp-a3-mega", "--container-image", "/img/v.sif"]
    assert main([*args, "--container-runtime", "singularity"]) == 0
    out = capsys.readouterr().out
    assert 'export SINGULARITYENV_LD_LIBRARY_PATH="$LD_LIBRARY_PATH"' in out and "(singularity exec --nv " in out
    assert main(args) == 0  # pyxis: LD_LIBRARY_PATH reaches the container as it is
    assert "ENV_LD_LIBRARY_PATH" not in capsys.readouterr().out


def test_the_descriptor_chooses_the_runtime(tmp_path, capsys):
    doc = yaml.safe_load(Path(descriptor.available()["local-ci"]).read_text())
    doc["slurm"].update(container_runtime="apptainer", container_image="/img/v.sif")
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["slurm", "--cluster", str(path), "--workload", "bench"]) == 0
    assert "(apptainer exec --nv /img/v.sif)" in capsys.readouterr().out
    doc["slurm"]["container_runtime"] = "docker"
    path.write_text(yaml.safe_dump(doc))
    assert main(["slurm", "--cluster", str(path), "--workload", "bench"]) == 2
    assert "slurm.container_runtime" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["run", "/i.sif", "true"], "only `apptainer exec`"),
        (["exec", "--gpus", "/i.sif", "true"], "unknown flag: --gpus"),
        (["exec", "--nv", "--bind", "/nonexistent-src:/d", "/i.sif", "true"], "doesn't exist"),
        (["exec", "--nv", "--bind", "/tmp:/d:rprivate", "/i.sif", "true"], "invalid bind"),
        (["exec", "--nv", "verl:latest", "true"], "not a URI or a path"),
        (["exec", "--nv", "/i.sif"], "requires at least 2 arg"),
    ],
)
def test_the_standin_refuses_what_apptainer_refuses(argv, why):
    r = subprocess.run([sys.executable, str(STANDIN), *argv], capture_output=True, text=True, timeout=30)
    assert r.returncode == 255 and why in r.stderr


def test_the_standin_runs_the_command_with_apptainers_environment(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/host/lib", "APPTAINERENV_NCCL_X": "1"}
    probe = "import os; print(os.environ.get('LD_LIBRARY_PATH'), os.environ.get('NCCL_X'), os.getcwd())"
    argv = ["exec", "--nv", "-B", f"{tmp_path}:/x:ro", "--pwd", str(tmp_path), "docker://a/b:1"]
    r = subprocess.run(
        [sys.executable, str(STANDIN), *argv, sys.executable, "-c", probe], capture_output=True, text=True, env=env
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["None", "1", str(tmp_path)]


def test_a_runtime_without_an_image_is_refused(capsys):
    assert main(["slurm", "--cluster", "local-ci", "--container-runtime", "apptainer"]) == 2
    err = capsys.readouterr().err
    assert "--container-runtime: only with a container image" in err and len(err.splitlines()) == 1
