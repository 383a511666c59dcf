"""One policy for environment names (issue 33), in every source: --set, --set-unchecked, --pass-env,
--secret-env, a descriptor's env/vendor_env, a workload's env, and lint. Names are ASCII identifiers; a
confusable character (Cyrillic 'С', a zero-width space, a fullwidth letter) is named by its code point;
names that change how Slurm's clients start (SLURM_*, SRUN_*, SBATCH_*, SALLOC_*) are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclgen.cli import main
from ncclgen.load import envnames

ROOT = Path(__file__).resolve().parent.parent
CYR = "NCCL_IB_H\u0421A"  # the C is U+0421 CYRILLIC CAPITAL LETTER ES
ZWSP = "NCCL_\u200bDEBUG"
ES = "U+0421 CYRILLIC CAPITAL LETTER ES"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(
    "argv",
    [
        ["env", "--set", f"{CYR}=mlx5_0"],
        ["env", "--set-unchecked", f"{CYR}=mlx5_0"],
        ["slurm", "--pass-env", CYR],
        ["k8s", "--secret-env", f"{CYR}=s:k"],
    ],
)
def test_a_confusable_name_is_refused_naming_its_code_point_in_every_flag(capsys, argv):
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert ES in err and "not an environment variable name" in err


def test_a_zero_width_space_is_named_not_shown_raw(capsys):
    rc, _, err = run(capsys, "env", "--set", f"{ZWSP}=INFO")
    assert rc == 2 and "U+200B ZERO WIDTH SPACE" in err and "\u200b" not in err


def _descriptor(tmp_path: Path, env: str) -> Path:
    text = (ROOT / "clusters" / "h100-ib.yaml").read_text()
    path = tmp_path / "c.yaml"
    path.write_text(text + "env:\n" + env)
    return path


def test_a_descriptor_env_name_with_a_cyrillic_letter_is_located_and_named(capsys, tmp_path):
    path = _descriptor(tmp_path, f"  - {{name: {CYR}, value: mlx5_0, reason: r}}\n")
    line = len(path.read_text().splitlines())
    rc, _, err = run(capsys, "env", "--cluster", str(path))
    assert rc == 2 and f"{path}:{line}:" in err and "env[0].name" in err and ES in err, err


@pytest.mark.parametrize("name", ["SLURM_JOB_NUM_NODES", "SRUN_CPUS_PER_TASK", "SBATCH_EXPORT", "SALLOC_PARTITION"])
def test_slurm_client_names_are_refused_even_opted_in(capsys, tmp_path, name):
    """SLURM_JOB_NUM_NODES exported before the script reads it made the preflight check one node of two."""
    path = _descriptor(tmp_path, f"  - {{name: {name}, value: '1', reason: r, unchecked: true}}\n")
    line = len(path.read_text().splitlines())
    rc, out, err = run(capsys, "slurm", "--cluster", str(path))
    assert rc == 2 and out == "" and f"{path}:{line}:" in err and "env[0].name" in err and "may not be set" in err
    rc, out, err = run(capsys, "env", "--set-unchecked", f"{name}=1")
    assert rc == 2 and f"--set-unchecked {name}: may not be set" in err
    rc, out, err = run(capsys, "slurm", "--workload", "verl-sft", "--pass-env", name)
    assert rc == 2 and out == "" and f"--pass-env {name}" in err


def test_every_slurm_prefix_cites_the_man_page_section():
    data = envnames.policy()
    prefixes = dict(data.prefixes)
    for prefix in ("SLURM_", "SRUN_", "SBATCH_", "SALLOC_"):
        assert prefix in prefixes
    text = (ROOT / "ncclgen" / "data" / "envnames.yaml").read_text()
    assert text.count("INPUT ENVIRONMENT VARIABLES") >= 4


@pytest.mark.parametrize(
    "name, expected",
    [
        ("NCCL_DEBUG", None),
        ("_X1", None),
        ("1X", "starts with a digit"),
        ("", "empty"),
        ("A B", "U+0020 SPACE"),
        ("\ufeffNCCL_DEBUG", "U+FEFF ZERO WIDTH NO-BREAK SPACE (a byte order mark)"),
        ("NCCL_\uff24EBUG", "U+FF24 FULLWIDTH LATIN CAPITAL LETTER D"),
    ],
)
def test_name_problem(name, expected):
    got = envnames.name_problem(name)
    assert got is None if expected is None else expected in got
