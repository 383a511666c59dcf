"""The sbatch option table (ncclgen/data/sbatch-options.tsv) and the check shared by the descriptor's
slurm.extra_sbatch and `ncclgen slurm --sbatch`."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from conftest import skip_or_fail

from ncclgen.load import sbatch


def _installed_help(tmp_path) -> str:
    """`sbatch --help` of the installed Slurm; it reads a slurm.conf first, any valid one will do."""
    if not shutil.which("sbatch"):
        skip_or_fail("sbatch not installed (apt-get install slurm-client)")
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\nSlurmctldHost=localhost\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n")
    r = subprocess.run(
        ["sbatch", "--help"],
        env={"SLURM_CONF": str(conf), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_table_covers_every_option_the_installed_sbatch_lists(tmp_path):
    text = _installed_help(tmp_path)
    listed = {long: short for short, long in re.findall(r"^\s+(?:-(\w)[, ] +)?--([a-z][a-z-]+)", text, re.M)}
    table = sbatch.options()
    assert len(listed) > 80, text
    missing = sorted(set(listed) - set(table))
    assert missing == [], f"in `sbatch --help` but not in the table: {missing}"
    for long, short in listed.items():
        if short:
            assert table[long][1] == short, long
    # `--signal=[[R][B]:]num[@time]` takes a value; `--requeue` does not; `--exclusive[=user]` may.
    args = {long: arg for long, (arg, _s) in table.items()}
    assert (args["signal"], args["requeue"], args["exclusive"]) == ("required", "none", "optional")


@pytest.mark.parametrize(
    "key,value,want",
    [
        ("requeue", True, ("requeue", None)),
        ("requeue", "", ("requeue", None)),  # the older spelling stays a flag
        ("requeue", False, ("no-requeue", None)),
        ("--mail-type", "END", ("mail-type", "END")),
        ("array", "0-3%1", ("array", "0-3%1")),
        ("nice", 10, ("nice", "10")),
        ("gres", "nic:1", ("gres", "nic:1")),
        ("exclusive", True, None),  # descriptor field
    ],
)
def test_accepted(key, value, want):
    if want is None:
        with pytest.raises(sbatch.SbatchOptionError, match=re.escape("slurm.exclusive")):
            sbatch.check(key, value)
    else:
        assert sbatch.check(key, value) == want


@pytest.mark.parametrize(
    "key,value,message",
    [
        ("reservaton", "x", "sbatch has no option --reservaton (did you mean 'reservation'?)"),
        ("C", "h100", "use the long option name: constraint"),
        ("time", "1:00:00", "--time is set by ncclgen: use ncclgen slurm --time"),
        ("output", "logs/%j.out", "use ncclgen slurm --output"),
        ("requeue", "yes", "--requeue is a flag and takes no value: write it as `requeue: true`"),
        ("begin", True, "--begin needs a value"),
        ("hold", False, "--hold has no 'off' form"),
        ("parsable", True, "changes what the sbatch command does"),
        ("comment", "a\nb", "control characters"),
        (
            "gres",
            "nic:1,gpu:h100:8",
            "--gres=nic:1,gpu:h100:8 asks for GPUs (gpu:h100:8), which conflicts with "
            "ncclgen's own GPU request --gpus-per-node=h100:8",
        ),
        ("gpus", "16", "--gpus conflicts with ncclgen's own GPU request --gpus-per-node=h100:8"),
        ("gpus-per-task", "1", "conflicts with ncclgen's own GPU request"),
    ],
)
def test_refused_with_the_reason(key, value, message):
    with pytest.raises(sbatch.SbatchOptionError) as e:
        sbatch.check(key, value, gpu_request="h100:8")
    assert message in str(e.value)


def test_parse_cli():
    assert sbatch.parse_cli("requeue") == ("requeue", True)
    assert sbatch.parse_cli("mail-type=END,FAIL") == ("mail-type", "END,FAIL")
    assert sbatch.parse_cli("comment=a=b") == ("comment", "a=b")
    assert sbatch.parse_cli("comment=") == ("comment", "")
