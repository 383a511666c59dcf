"""An installed wheel carries clusters/, templates/ and the package data, and renders the same bytes
as the checkout, from a folder that is not a checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), ROOT],
        check=True,
        capture_output=True,
        text=True,
    )
    (path,) = out.glob("ncclgen-*.whl")
    return path


@pytest.mark.slow
def test_wheel_carries_bundled_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for rel in (
        "ncclgen/_bundled/clusters/h100-ib.yaml",
        "ncclgen/_bundled/clusters/local-ci.yaml",
        "ncclgen/_bundled/templates/slurm/ray.sh.j2",
        "ncclgen/data/rules.yaml",
        "ncclgen/data/workloads/verl-grpo-qwen2-7b.yaml",
        "ncclgen/data/kb/nccl.tsv",
        "ncclgen/jobside/raybind.py",
        "ncclgen/jobside/raywait.py",
        "ncclgen/jobside/compacted.py",
        "ncclgen/triage/compiled.py",
        "ncclgen/load/compiled/__init__.py",
        "ncclgen/render/compiled/__init__.py",
    ):
        assert rel in names, rel
    assert not any(n.startswith(("tests/", "examples/")) for n in names)


@pytest.mark.slow
def test_installed_wheel_renders_like_the_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    args = ["-m", "ncclgen", "slurm", "--cluster", "h100-ib", "--tier", "3"]
    installed = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    probe = subprocess.run(
        [sys.executable, "-c", "import ncclgen; print(ncclgen.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert probe.startswith(str(site))  # the wheel's copy, not the checkout
    checkout = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, check=True)
    assert installed.stdout == checkout.stdout
    # the wheel's bundled files (clusters under ncclgen/_bundled) are the ones precompiled: no PyYAML is needed
    code = "import sys, ncclgen.cli as c; c.main(sys.argv[1:]); print('yaml' in sys.modules, file=sys.stderr)"
    probe_yaml = subprocess.run(
        [sys.executable, "-c", code, *args[2:]], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert probe_yaml.stderr.strip() == "False", probe_yaml.stderr
