"""NCCL releases with no source tag (2.31.2, 2.32.3, 2.32.6): their source files and failure texts, read from the
released libnccl.so.2 (tools/nccl_release_strings.py -> ncclgen/data/triage/nccl-release-strings.tsv).

The lines below are built from the texts the table holds (a format with its conversions filled in), as NCCL's
logger prints them: 'host:pid:tid [dev] file:line NCCL WARN text' and 'host:pid:tid [dev] NCCL INFO text'.
"""

from __future__ import annotations

import pytest
import triage_json

from ncclgen.triage import catalogue

TABLE = catalogue.DATA / "nccl-release-strings.tsv"


def rows(kind: str) -> dict[str, tuple[str, str]]:
    out = {}
    for line in TABLE.read_text().splitlines():
        if not line.startswith(("#", "kind\t")):
            k, text, first, last = line.split("\t")
            if k == kind:
                out[text] = (first, last)
    return out


def triage(tmp_path, *lines: str) -> dict:
    return triage_json.triage(tmp_path, "\n".join(lines) + "\n")


def test_header_names_the_wheels_and_the_base_release():
    head = TABLE.read_text().splitlines()[:6]
    assert "nvidia-nccl-cu12==2.32.3" in head[1] and "nvidia-nccl-cu13==2.32.6" in head[1]
    assert "base: nvidia-nccl-cu12==2.30.7" in head[2]
    # the base is the newest release nccl-warn.tsv reads from source
    assert "newest v2.30.7-1" in (catalogue.DATA / "nccl-warn.tsv").read_text().splitlines()[2]
    assert head[5] == "kind\ttext\tfirst\tlast"


def test_no_text_of_the_source_table_is_listed_again():
    tagged = {fmt for _lvl, fmt, _where in catalogue.nccl_rows()}
    assert rows("format") and not tagged & set(rows("format"))


@pytest.mark.parametrize(
    "path", ["ras/diagnostics_xid.cc", "transport/multicast.cc", "misc/crypt.cc", "enqueue/task_sched/task_sched.cc"]
)
def test_a_file_new_in_2_32_is_nccls_own(path):
    """Files no tagged release has, named by 2.32's library: a WARN from them is NCCL's, not a net plugin's."""
    assert path in rows("file")
    assert catalogue.source_stem(path) in catalogue.nccl_files()
    assert "net_fastsocket" not in catalogue.nccl_files()  # a plugin's file stays a plugin's


def test_a_warning_from_a_new_file_is_classified_by_its_words(tmp_path):
    line = "n1:10:20 [0] transport/multicast.cc:88 NCCL WARN Failed to obtain the MC team"
    assert "Failed to obtain the MC team" in rows("format")
    data = triage(tmp_path, line)
    assert data["status"] == "cause"
    assert data["first"]["signature"] == "fabric-manager"
    assert data["first"]["nccl_source"] == "NVIDIA/nccl src/transport/multicast.cc:88"
    assert "plugin_source" not in data["first"]


def test_a_2_32_text_is_found_without_a_file_and_says_where_it_was_read():
    text = "NET/IB: mlx5_0: RTR failed (110) for QP devIndex=0 qp_num=1234 localGidIndex=3 (port still down or GID not yet registered) (send comm=0x1)"
    fmt = next(f for f in rows("format") if f.startswith("NET/IB: %s: RTR failed"))
    found = catalogue.nccl_source(text, "INFO")
    assert found is not None
    assert found[0] == fmt and found[1] == f"libnccl.so.2 {rows('format')[fmt][0]}" and found[2] == "ib-qp-setup"
    assert catalogue.nccl_source(text, "WARN") == found  # a library's text: its level is not known


def test_an_info_failure_alone_is_a_suspect_and_a_timeout_after_it_makes_it_the_cause(tmp_path):
    info = "n1:10:21 [0] NCCL INFO NET/IB: mlx5_0: RTR failed (110) for QP devIndex=0 qp_num=12 localGidIndex=3 (port still down or GID not yet registered) (send comm=0x1)"
    assert triage(tmp_path, info)["status"] == "clean"
    timeout = (
        "[rank0]:[E1207 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 "
        "milliseconds before timing out."
    )
    data = triage(tmp_path, info, timeout)
    assert data["first"]["line"] == info
    assert data["first"]["signature"] == "ib-qp-setup"


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        (
            "Xid 79 detected on GPU 0000:18:00.0 on host n1. The NVIDIA Xid catalog recommends resetting the affected GPU.",
            "gpu-hardware",
        ),
        (
            "Xid 43 detected on GPU 0000:18:00.0 on host n1. No user action or further investigation is required for this Xid.",
            "nccl-advice",
        ),
        (
            "SXid 20034 detected on NVSwitch 3 on host n1. See the NVIDIA Fabric Manager documentation for the recommended response: x",
            "fabric-manager",
        ),
        ("NVLink: inactive link(s) on rank(s) 3 across 8 ranks in comm 0x1", "fabric-manager"),
        ("ECC: uncorrected volatile errors on rank(s) 5 (worst=2) across 8 ranks in comm 0x1", "gpu-hardware"),
        ("RAS diagnostics collective initialization failed (3); continuing with empty local response", "nccl-advice"),
    ],
)
def test_2_32_ras_diagnostics_texts(text, cls):
    """2.32's RAS diagnostics (ras/diagnostics_*.cc) relay Xid/SXid events and GPU health; their own trouble is
    context, not an aborted communicator (the /ras/ file rule said so before). The texts are 2.32.6's .rodata
    formats with values filled in; the health reports are not worded as failures, so the table does not hold them."""
    assert catalogue.class_of("WARN", text, "src/ras/diagnostics_xid.cc:10") == cls
