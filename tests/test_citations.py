"""Every file:line a rule cites exists at its tag or in its wheel (issue 31 item 3), checked without network
against tests/data/citations/cited-lines.txt, which tools/citations.py extracts from the fetched NVIDIA/nccl
clone and the torch/verl wheels. A citation to a line that is not in the extract (it does not exist there, or
the extract is stale) fails; so does a rule whose cited line is blank or a lone brace."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import citations  # noqa: E402

EXTRACT = ROOT / "tests" / "data" / "citations" / "cited-lines.txt"


def extract() -> dict[tuple[str, str], str]:
    rows = [ln.split("\t", 2) for ln in EXTRACT.read_text().splitlines() if not ln.startswith("#")]
    return {(origin, where): text for origin, where, text in rows}


@pytest.mark.parametrize(("rule", "source"), citations.rule_sources(), ids=[r for r, _ in citations.rule_sources()])
def test_each_cited_line_exists_at_its_tag(rule, source):
    lines = extract()
    cited = citations.cited(source) + citations.vendor_cited(source)
    missing = [f"{o} {f}:{n}" for o, f, n in cited if (o, f"{f}:{n}") not in lines]
    assert missing == [], f"{rule}: cited lines not at their tag (rerun tools/citations.py?): {missing[:5]}"


def test_the_corrected_reasons_cite_lines_that_say_so():
    lines = extract()
    assert "PATH_P2C" in lines[("nccl 2.30.7", "src/graph/paths.cc:511")]
    assert '"IB_GID_INDEX", -1' in lines[("nccl 2.21.5", "src/transport/net_ib.cc:80")]
    assert '"IB_GID_INDEX", 0' in lines[("nccl 2.20.5", "src/transport/net_ib.cc:80")]
    assert "minCTAs %d is larger than maxCTAs" in lines[("nccl 2.30.7", "src/init.cc:2191")]
    assert (
        "enum ErrorHandlingMode"
        in lines[("torch 2.13.0", "torch/include/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp:167")]
    )
    assert "(8, 9)" in lines[("verl 0.9.1", "verl/trainer/constants_ppo.py:49")]
    azure = (
        "git Azure/ai-infrastructure-on-azure@a01b07318f46",
        "infrastructure_validations/slurm/NCCL/configs/hopper.conf:27",
    )
    assert lines[azure] == "export NCCL_IB_QPS_PER_CONNECTION=4"
    oracle = ("git oracle-quickstart/oci-hpc@c929c9b4", "samples/gpu/nccl_run_allreduce_H100.sbatch:75")
    assert "not recommended while running jobs" in lines[oracle]
    gcp = (
        "git GoogleCloudPlatform/cluster-toolkit@1047080375af",
        "examples/machine-learning/a3-megagpu-8g/nccl-tests/run-nccl-tests.sh:35",
    )
    assert lines[gcp] == "export NCCL_FASTRAK_CTRL_DEV=enp0s12"


def test_the_parser_reads_the_forms_rules_use():
    got = citations.cited("NCCL v2.30.7 src/graph/paths.cc:465 (note, 1), 511 (x; v2.29.2-1); v2.27.3-1 src/a.cc:1-2")
    assert got == [
        ("nccl 2.30.7", "src/graph/paths.cc", 465),
        ("nccl 2.30.7", "src/graph/paths.cc", 511),
        ("nccl 2.27.3", "src/a.cc", 1),
        ("nccl 2.27.3", "src/a.cc", 2),
    ]
