"""Knowledge per release (issue 31 item 1): NCCL 2.32.6 and PyTorch 2.14.0/2.14.1/2.15.0, from the wheels.

The release tables are generated (tools/nccl_wheel_names.py --extend, tools/torch_wheel_names.py) and committed,
so these tests read no network. On main 0ddb3a1 the KB covered NCCL <= 2.32.3 and PyTorch 2.13.0: the 10 names
2.32.6 added were errors ('not read by NCCL 2.32.3'), TORCH_FR_DUMP_ON_TIMEOUT was 'use TORCH_NCCL_...'.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclgen.lint import knowledge as kb
from ncclgen.lint import lint_pairs, lint_text
from ncclgen.load import descriptor

NEW_IN_2_32_6 = (
    "NCCL_CE_BATCH_CAPTURE_ENABLE",
    "NCCL_CFT_MC_TEAM_SIZE",
    "NCCL_CFT_UC_TEAM_SIZE",
    "NCCL_GIN_GDAKI_CQ_TYPE",
    "NCCL_GIN_GDAKI_Q_COUNTER",
    "NCCL_NVLS_FIFO_LAYOUT",
    "NCCL_RMA_RANK_STRIDE",
    "NCCL_RUBIN_SM_BW",
    "NCCL_SYMK_LL_SCRATCH_SIZE",
    "NCCL_SYM_GENK_ENABLE",
)
NEW_IN_TORCH_2_15 = {
    "TORCH_FR_DUMP_ON_TIMEOUT": "1",
    "TORCH_FR_WAIT_TIMEOUT_DUMP_MILSEC": "20000",
    "TORCH_NCCL_TEARDOWN_ON_TIMEOUT": "1",
    "TORCH_NCCL2_RECONFIGURE_SHRINK_GROW": "1",
    "TORCH_WATCHDOG_POLL_INTERVAL_SECS": "0.5",
    "TORCH_WATCHDOG_HEALTH_INTERVAL_SECS": "10",
    "TORCH_WATCHDOG_STUCK_ACTION": "abort",
    "TORCH_DIST_NAN_CHECK": "1",
    "TORCH_DIST_USE_NCCL2": "0",
}
KB = Path(kb.kb_dir())


def table(name: str) -> tuple[list[str], dict[str, set[str]]]:
    rows = [ln.split("\t") for ln in (KB / name).read_text().splitlines() if not ln.startswith("#")]
    versions = rows[0][1:]
    return versions, {r[0]: {v for v, x in zip(versions, r[1:]) if x == "1"} for r in rows[1:]}


def cluster(nccl: str, torch: str) -> descriptor.Descriptor:
    import dataclasses

    base = descriptor.load_cluster("h100-ib")
    return dataclasses.replace(base, software=dataclasses.replace(base.software, nccl=nccl, torch=torch))


def found(env: dict[str, str], target: descriptor.Descriptor | None = None) -> list[tuple[str, str, str]]:
    return [(f.variable, f.code, f.severity) for f in lint_pairs([(k, v, None) for k, v in env.items()], target)]


def test_the_knowledge_base_records_the_releases_it_covers():
    nccl, _ = table("nccl-releases.tsv")
    torch, _ = table("torch-releases.tsv")
    assert kb.KB_COVERS["nccl"] == tuple(nccl) and kb.KB_VERSIONS["nccl"] == "2.32.6"
    assert kb.KB_COVERS["torch"] == tuple(torch) == ("2.13.0", "2.14.0", "2.14.1", "2.15.0")
    assert "nvidia-nccl-cu13==2.32.6" in (KB / "nccl-releases.tsv").read_text().splitlines()[1]


def test_2_32_6_adds_exactly_the_ten_names_and_drops_none():
    _, names = table("nccl-releases.tsv")
    added = {n for n, vs in names.items() if "2.32.6" in vs and "2.32.3" not in vs}
    dropped = {n for n, vs in names.items() if "2.32.3" in vs and "2.32.6" not in vs}
    assert added == set(NEW_IN_2_32_6) and dropped == set()
    for name in NEW_IN_2_32_6:
        info = kb.lookup(name)
        assert info is not None and info.first_version == "2.32.6" and "nvidia-nccl-cu13 2.32.6" in info.source


def test_lint_of_every_new_name_gives_no_error():
    env = dict.fromkeys(NEW_IN_2_32_6, "1") | NEW_IN_TORCH_2_15
    text = "".join(f"export {k}={v}\n" for k, v in env.items())
    assert [f for f in lint_text(text, "new.sh") if f.severity == "error"] == []


def test_fr_dump_on_timeout_gets_no_replace_advice():
    for f in lint_text("export TORCH_FR_DUMP_ON_TIMEOUT=1\n", "fr.sh"):
        assert "TORCH_NCCL_DUMP_ON_TIMEOUT" not in f.fix and f.code != "NG001", f


def test_torch_rows_match_the_released_wheels():
    """For every covered PyTorch release: the KB says a torch name is read exactly when the wheel reads it."""
    versions, names = table("torch-releases.tsv")
    wrong = []
    for v in versions:
        for name, held in names.items():
            info = kb.lookup(name)
            if info is None:
                wrong.append((v, name, "missing from the KB"))
            elif kb.read_in(info, kb.KB_VERSIONS["nccl"], v) != (v in held):
                wrong.append((v, name, f"KB read={v not in held}"))
    assert wrong == []


def test_fr_dump_dynamic_file_name_is_read_even_by_2_13():
    info = kb.lookup("TORCH_FR_DUMP_DYNAMIC_FILE_NAME")
    assert info is not None and kb.read_in(info, "2.30.7", "2.13.0")
    assert found({"TORCH_FR_DUMP_DYNAMIC_FILE_NAME": "1"}, cluster("2.30.7", "2.13.0")) == []


def test_avoid_record_streams_is_silently_ignored_by_2_15():
    info = kb.lookup("TORCH_NCCL_AVOID_RECORD_STREAMS")
    assert info is not None and (info.status, info.last_version) == ("removed", "2.14.1")
    [f] = lint_pairs([("TORCH_NCCL_AVOID_RECORD_STREAMS", "1", 1)], cluster("2.30.7", "2.15.0"))
    assert (f.code, f.severity) == ("NG003", "error") and "silently ignored" in f.message
    assert "deprecated with a warning" not in f.message
    assert found({"TORCH_NCCL_AVOID_RECORD_STREAMS": "1"}, cluster("2.30.7", "2.14.1"))[0][1:] == ("NG003", "info")


def test_a_2_15_name_on_2_13_points_at_the_name_2_13_reads():
    [f] = lint_pairs([("TORCH_FR_DUMP_ON_TIMEOUT", "1", 1)], cluster("2.30.7", "2.13.0"))
    assert (f.code, f.severity) == ("NG014", "error") and "PyTorch 2.13.0" in f.message
    assert f.fix.startswith("use TORCH_NCCL_DUMP_ON_TIMEOUT=1")


def test_names_past_the_knowledge_are_unknown_warnings_not_not_read():
    """A cluster declaring NCCL 2.33.0 / PyTorch 2.16.0: a name the KB lacks may be one they added."""
    newer = cluster("2.33.0", "2.16.0")
    for name in ("NCCL_SOMETHING_2_33_ADDED", "TORCH_FR_SOMETHING_NEW"):
        [f] = lint_pairs([(name, "1", 1)], newer)
        assert (f.code, f.severity) == ("NG001", "warning"), f
        assert "unknown to ncclgen's knowledge" in f.message and "not read by" not in f.message
        assert "to 2.32.6" in f.message or "to 2.15.0" in f.message
        assert "tools/" in f.fix and "_wheel_names.py" in f.fix
    [f] = lint_pairs([("NCCL_SOMETHING_2_33_ADDED", "1", 1)], cluster("2.32.6", "2.15.0"))
    assert (f.code, f.severity) == ("NG001", "error")  # within the knowledge: really not read


@pytest.mark.parametrize(
    ("nccl", "torch"),
    [("2.21.5", "2.6.0"), ("2.30.7", "2.13.0")],
)
def test_messages_cite_the_versions_of_the_cluster_in_hand(nccl, torch):
    [f] = lint_pairs([("NCCL_NOT_A_THING", "1", 1)], cluster(nccl, torch))
    assert f"NCCL {nccl}" in f.message and f"PyTorch {torch}" in f.message
    assert "2.32" not in f.message and "2.15" not in f.message


@pytest.mark.parametrize(
    ("torch", "use", "expected"),
    [
        ("2.15.0", None, "ProcessGroupNCCL2"),
        ("2.15.0", "0", "ProcessGroupNCCL"),
        ("2.15.0", "1", "ProcessGroupNCCL2"),
        ("2.14.1", None, "ProcessGroupNCCL"),
        ("2.14.0", "1", "ProcessGroupNCCL2"),
        ("2.13.0", "1", "ProcessGroupNCCL"),
    ],
)
def test_the_nccl_backend_each_release_builds(torch, use, expected):
    assert kb.nccl_backend(torch, use)[0] == expected


def test_explain_says_which_backend_the_job_runs(tmp_path):
    from click.testing import CliRunner

    from ncclgen.cli import cli

    text = Path(descriptor.resolve("h100-ib")).read_text().replace('torch: "2.13.0"', 'torch: "2.15.0"')
    path = tmp_path / "c.yaml"
    path.write_text(text)
    out = CliRunner().invoke(cli, ["explain", "--cluster", str(path)]).output
    assert "PyTorch 'nccl' backend: ProcessGroupNCCL2" in out and "distributed_c10d.py:961-966" in out
    out = CliRunner().invoke(cli, ["explain", "--cluster", str(path), "--set", "TORCH_DIST_USE_NCCL2=0"]).output
    assert "PyTorch 'nccl' backend: ProcessGroupNCCL (legacy" in out


def test_a_descriptor_newer_than_the_knowledge_warns_for_pytorch_too(tmp_path):
    text = Path(descriptor.resolve("h100-ib")).read_text().replace('torch: "2.13.0"', 'torch: "2.16.0"')
    path = tmp_path / "c.yaml"
    path.write_text(text)
    _, warnings = descriptor.load_checked(str(path))
    assert any("PyTorch 2.16.0 is newer than ncclgen's knowledge base (PyTorch 2.15.0)" in str(w) for w in warnings)
    assert descriptor.load_checked(str(descriptor.resolve("h100-ib")))[1] == []
