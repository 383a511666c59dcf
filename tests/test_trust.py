"""Project folders as teams keep them (issue 32 item 1): ownership decides, as git's safe.directory does.

A project made by `ncclgen init` under umask 002 (group-writable, as team folders are) renders for its
own cluster; a file another user owns is refused with exit 2 and one line that says what, why and how
to allow it, and is never skipped for a default; the user's own config or $NCCLGEN_SAFE_DIRECTORIES
allows a folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_project import fill_todos

ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534
needs_root = pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")


def ncclgen(*args: str, cwd: Path, umask: int = 0o022, **env: str) -> subprocess.CompletedProcess:
    """The console command in a subprocess with ``umask``, without the caller's NCCLGEN_* settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NCCLGEN_")}
    clean.update(PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(cwd / ".no-config"), **env)
    return subprocess.run(
        [sys.executable, "-m", "ncclgen", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=clean,
        timeout=300,
        preexec_fn=lambda: os.umask(umask),
    )


def one_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture
def project(tmp_path) -> Path:
    """`ncclgen init` under umask 002 in a folder of our own, its TODOs filled with the examples."""
    tmp_path.chmod(0o775)
    proc = ncclgen("init", "proj3", cwd=tmp_path, umask=0o002)
    assert proc.returncode == 0, proc.stderr
    proj = tmp_path / "proj3"
    cluster = proj / "clusters" / "proj3.yaml"
    cluster.write_text(fill_todos(cluster.read_text()))
    os.chmod(cluster, 0o664)
    (proj / "workloads" / "mine.yaml").write_text(
        "launcher: torchrun\nnodes: 2\ncommand: [python3, train.py]\ndescription: ours\n"
    )
    os.chmod(proj / "workloads" / "mine.yaml", 0o664)
    return proj


def test_init_under_umask_002_renders_for_its_own_cluster(project):
    assert oct(project.stat().st_mode & 0o777) == "0o775"
    assert oct((project / "clusters").stat().st_mode & 0o777) == "0o775"
    proc = ncclgen("slurm", "--workload", "mine", "-o", "job.sh", cwd=project, umask=0o002)
    assert proc.returncode == 0, proc.stderr
    job = (project / "job.sh").read_text()
    assert "--cluster proj3" in job and "--workload mine" in job  # its own cluster and workload
    assert "not reading" not in proc.stderr


def test_init_prints_no_cd_to_the_current_folder(tmp_path):
    proc = ncclgen("init", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "cd ." not in proc.stdout and "next: replace the TODOs in it, then ncclgen validate" in proc.stdout


def test_init_under_umask_000_makes_no_folder_others_can_write(tmp_path):
    tmp_path.chmod(0o755)
    proc = ncclgen("init", "p", cwd=tmp_path, umask=0o000)
    assert proc.returncode == 0, proc.stderr
    for folder in ("p", "p/clusters", "p/workloads", "p/.github/workflows"):
        assert not (tmp_path / folder).stat().st_mode & 0o002, folder


@needs_root
@pytest.mark.parametrize("what", ["ncclgen.yaml", "clusters/proj3.yaml", "clusters", "workloads/mine.yaml"])
def test_a_file_another_user_owns_is_refused_with_one_line(project, what):
    os.chown(project / what, NOBODY, -1)
    proc = ncclgen("slurm", "--workload", "mine", cwd=project)
    line = one_line(proc)
    assert line.startswith("ncclgen: error: ") and "not reading it" in line
    assert f"uid {NOBODY}" in line  # why
    assert "safe_directories" in line and "NCCLGEN_SAFE_DIRECTORIES" in line  # how to allow it


@needs_root
def test_a_refused_name_is_never_replaced_by_the_bundled_preset(project):
    """A planted ./clusters/h100-ib.yaml must not turn into the bundled h100-ib (a silent other job)."""
    planted = project / "clusters" / "h100-ib.yaml"
    planted.write_text((project / "clusters" / "proj3.yaml").read_text().replace("proj3", "h100-ib"))
    os.chown(planted, NOBODY, -1)
    assert "h100-ib.yaml: not reading it" in one_line(ncclgen("env", "--cluster", "h100-ib", cwd=project))


@needs_root
def test_a_world_writable_project_folder_is_refused(project):
    (project / "clusters").chmod(0o777)
    assert "anyone can replace" in one_line(ncclgen("env", cwd=project))


@needs_root
@pytest.mark.parametrize("how", ["config", "env", "star", "named"])
def test_the_user_allows_a_team_folder(project, how):
    os.chown(project / "clusters" / "proj3.yaml", NOBODY, -1)
    env = {}
    args = ["env"]
    if how in ("config", "star"):
        config = project / ".no-config" / "ncclgen" / "config.yaml"
        config.parent.mkdir(parents=True)
        allowed = '"*"' if how == "star" else str(project.parent)
        config.write_text(f"safe_directories: [{allowed}]\n")
    elif how == "env":
        env["NCCLGEN_SAFE_DIRECTORIES"] = f"/nonexistent:{project}"
    else:
        args += ["--cluster", "./clusters/proj3.yaml"]
    proc = ncclgen(*args, cwd=project, **env)
    assert proc.returncode == 0, proc.stderr
    assert "NCCL_IB_HCA" in proc.stdout


def test_a_bad_user_config_is_one_line_at_its_position(tmp_path):
    (tmp_path / "clusters").mkdir()
    config = tmp_path / ".no-config" / "ncclgen" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("safe_directory: [x]\n")
    (tmp_path / "ncclgen.yaml").write_text("tier: 2\n")
    os.chmod(tmp_path, 0o755)
    os.chmod(tmp_path / "ncclgen.yaml", 0o646)  # refused, so the config is read
    line = one_line(ncclgen("env", cwd=tmp_path))
    assert "config.yaml:1:1: safe_directory: unknown key" in line and "did you mean 'safe_directories'" in line


@needs_root
def test_clusters_list_marks_a_refused_file(project):
    os.chown(project / "clusters" / "proj3.yaml", NOBODY, -1)
    proc = ncclgen("clusters", "list", cwd=project)
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("proj3 "))
    assert "REFUSED" in row and "not reading it" in row
