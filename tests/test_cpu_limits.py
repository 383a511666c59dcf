"""CPU ids and counts past Linux's NR_CPUS (8192) and non-ASCII digits in cpusets are errors at file:line:col."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclgen.cli import main
from ncclgen.load import cpuset, descriptor

PRESET = descriptor.resolve("h100-ib")


def _line(starts: str) -> int:
    """The preset's line that starts (after indentation) with ``starts``: where an error must point."""
    lines = Path(PRESET).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.lstrip().startswith(starts))


AT = f":{_line('- {id: 0, cpus:')}:21:"  # NUMA node 0's cpus value
SLURM = _line("slurm:")  # the cpus_per_task line is inserted after it


def _variant(tmp_path, old: str, new: str):
    text = Path(PRESET).read_text(encoding="utf-8")
    assert text.count(old) == 1
    path = tmp_path / "c.yaml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "where", "words"),
    [
        ('cpus: "0-55,112-167"', 'cpus: "0-55,112-167,65535"', AT + " node.numa_nodes[0].cpus:", "at most 8192 CPUs"),
        (
            "slurm:\n",
            "slurm:\n  cpus_per_task: 65536\n",
            f":{SLURM + 1}:18: slurm.cpus_per_task:",
            "<= 8192, got 65536",
        ),
        (
            'cpus: "0-55,112-167"',
            'cpus: "0-55,112-16\u0663"',
            AT + " node.numa_nodes[0].cpus:",
            "U+0663 ARABIC-INDIC",
        ),
        ('cpus: "0-55,112-167"', 'cpus: "0-55,112-\uff11\uff16\uff17"', AT, "U+FF11 FULLWIDTH DIGIT ONE"),
    ],
)
def test_error_at_file_line_col(tmp_path, capsys, old, new, where, words):
    path = _variant(tmp_path, old, new)
    with pytest.raises(SystemExit) as exit_:
        main(["validate", str(path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}{where}" in err and words in err, err


def test_cpuset_parse_names_the_character_and_the_limit():
    with pytest.raises(ValueError, match=r"'٣' is U\+0663 ARABIC-INDIC DIGIT THREE, not ASCII"):
        cpuset.parse("0-٣")
    with pytest.raises(ValueError, match="Linux allows at most 8192 CPUs"):
        cpuset.parse("0-8192")
    assert len(cpuset.parse("0-8191")) == 8192
