"""The NCCL/PyTorch knowledge base: every TSV row loads, the facts the linter relies on are there, and
the value-syntax and version logic behaves like NCCL v2.30.7 / PyTorch 2.13.0.

tests/golden/kb-reference-names.txt is a copy of the variable names in the reference notes the KB was
built from (nccl-env.tsv, nccl-env-deprecated.tsv, torch-nccl-env.tsv); it is input, not output, and
stays at v2.30.7: those notes stop there. The primary check of the NCCL names is the release table
(ncclgen/data/kb/nccl-releases.tsv, generated from the PyPI wheels 2.28.3-2.32.6 by
tools/nccl_wheel_names.py): test_version_windows_match_the_released_libraries holds the KB's version
windows to it, release by release, up to KB_VERSIONS["nccl"] (2.32.6).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ncclgen.lint import knowledge as kb

NAMES = Path(__file__).parent / "golden" / "kb-reference-names.txt"
NET_PLUGINS = ("aws-ofi-nccl", "gib", "tcpx", "tcpxo", "rdma-sharp")  # descriptor network.net_plugin


def info(name: str) -> kb.VarInfo:
    found = kb.lookup(name)
    assert found is not None, name
    return found


# -- the data --------------------------------------------------------------------------------------


@pytest.mark.parametrize("file", kb.KB_FILES)
def test_every_row_of_every_file_parses(file):
    rows = kb.load_file(os.path.join(kb.kb_dir(), file))
    assert len(rows) > 10
    for v in rows.values():
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", v.name)
        assert v.meaning and v.source, v.name
        if v.status == "removed":
            assert v.last_version, v.name
        if v.status == "deprecated":
            assert v.replacement, v.name
        if v.status == "invented":
            assert not v.first_version and not v.last_version, v.name


def test_files_cite_the_versions_read():
    for file in kb.KB_FILES:
        head = Path(kb.kb_dir(), file).read_text().split("\nname\t", 1)[0]
        assert "v2.30.7-1 (commit 73cf1122)" in head and "PyTorch 2.13.0" in head, file


def test_a_malformed_row_is_reported_with_file_and_line(tmp_path):
    good = Path(kb.kb_dir(), "torch.tsv").read_text().splitlines()
    header_at = next(i for i, line in enumerate(good) if line.startswith("name\t"))
    bad = [*good[: header_at + 2], good[header_at + 1].replace("\tint\t", "\tinteger\t", 1)]
    path = tmp_path / "bad.tsv"
    path.write_text("\n".join(bad) + "\n")
    with pytest.raises(ValueError, match=rf"bad\.tsv:{header_at + 3}: type 'integer'"):
        kb.load_file(str(path))


def test_reference_names_are_all_known():
    names = [line.strip() for line in NAMES.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert len(names) > 300
    assert [n for n in names if kb.lookup(n) is None] == []


def test_all_vars_is_loaded_once():
    assert kb.all_vars() is kb.all_vars()
    with pytest.raises(TypeError):
        kb.all_vars()["NCCL_X"] = None  # read-only view: nobody edits the shared KB by accident


def test_defaults_are_valid_values_of_their_own_variable():
    bad = {
        n: (v.default, kb.check_value(v, v.default))
        for n, v in kb.all_vars().items()
        if v.default and v.status != "invented" and kb.check_value(v, v.default)
    }
    assert bad == {}


def test_replacements_name_real_variables():
    for v in kb.all_vars().values():
        target = v.replacement.removeprefix("see ").split(":")[0].split("=")[0].split("/")[0]
        if v.status in ("deprecated", "removed", "invented") and re.fullmatch(r"[A-Z][A-Z0-9_]+", target):
            assert kb.lookup(target) is not None and kb.lookup(target).status != "invented", v.name


def test_vocabularies():
    for v in kb.all_vars().values():
        assert set(v.managed_by) <= set(NET_PLUGINS), v.name
        assert re.fullmatch(
            r"any|socket|ib|roce|infiniband|(plugin|contrib):[a-z0-9_,-]+|torch-backend:(legacy|nccl2)", v.scope
        ), v.name
        if v.syntax in ("hca-list", "ifname-list"):
            assert v.max in (16, 32), v.name


def test_sample_lookups():
    hca = info("NCCL_IB_HCA")
    assert (hca.reader, hca.syntax, hca.max, hca.scope, hca.documented) == ("nccl", "hca-list", 32, "ib", True)
    assert info("NCCL_SOCKET_IFNAME").max == 16
    buf = info("NCCL_BUFFSIZE")
    assert (buf.type, buf.default, buf.managed_by) == ("size", "4194304", ("aws-ofi-nccl",))
    debug = info("NCCL_DEBUG")
    assert debug.choices == ("VERSION", "WARN", "INFO", "ABORT", "TRACE") and debug.default == ""
    assert info("NCCL_IB_GID_INDEX").scope == "roce"
    assert info("NCCL_SOCKET_NTHREADS").scope == "socket"
    assert info("FI_EFA_FORK_SAFE").managed_by == ("aws-ofi-nccl",)
    assert info("GLOO_SOCKET_IFNAME").reader == "gloo"
    assert info("CUDA_DEVICE_MAX_CONNECTIONS").reader == "cuda"
    assert kb.lookup("PATH") is None and kb.lookup("NCCL_NOPE") is None


def test_undocumented_knobs_are_marked():
    gin = info("NCCL_GIN_ENABLE")
    assert not gin.documented and not gin.meaning_verified and gin.meaning.startswith("(from the name only)")
    assert info("NCCL_IB_TIMEOUT").documented


def test_invented_names_are_flagged():
    for name in ("NCCL_TIMEOUT", "NCCL_FP16_ENABLE", "NCCL_FP16_BIAS_CORRECTION", "NCCL_MAX_RINGS"):
        v = info(name)
        assert v.status == "invented"
        assert not kb.read_in(v, "2.30.7") and not kb.read_in(v, "2.5")
    assert "init_process_group(timeout=" in info("NCCL_TIMEOUT").replacement
    assert info("NCCL_MAX_RINGS").replacement == "NCCL_MAX_CTAS"


@pytest.mark.parametrize(
    "alias,target",
    [
        ("NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_ASYNC_ERROR_HANDLING"),
        ("NCCL_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT"),
        ("TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE"),
        ("TORCH_NCCL_TRACE_CPP_STACK", "TORCH_FR_CPP_STACK"),
        ("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE"),
        ("NCCL_MIN_NRINGS", "NCCL_MIN_CTAS"),
        ("NCCL_MAX_NCHANNELS", "NCCL_MAX_CTAS"),
    ],
)
def test_aliases_resolve_to_their_replacement(alias, target):
    a = info(alias)
    assert a.status == "deprecated" and a.replacement == target
    assert info(target).status == "active"
    assert a.type == info(target).type  # the alias takes the same values


def test_removed_and_dead_names():
    ll = info("NCCL_LL_THRESHOLD")
    # 'see NAME: why', not 'NAME': NCCL_PROTO takes protocol names, so a threshold's value does not carry over
    assert (ll.status, ll.last_version) == ("removed", "2.4.8") and ll.replacement.startswith("see NCCL_PROTO:")
    assert info("NCCL_GRAPH_HELPER_DISABLE").status == "dead"
    assert info("NCCL_NET_GDR_READ").status == "active"  # not deprecated, despite folklore


# -- value syntax ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,why",
    [
        ("abc", "not a number: NCCL's strtoll turns it into 0"),
        ("12abc", "trailing 'abc' is ignored: NCCL reads 12"),
        ("010", "octal"),
        ("", "empty"),
        ("99999999999999999999", "64-bit range"),
        ("0x", "trailing 'x' is ignored: NCCL reads 0"),
    ],
)
def test_nccl_int_values_that_nccl_misreads(value, why):
    assert why in kb.check_value(info("NCCL_IB_QPS_PER_CONNECTION"), value)


@pytest.mark.parametrize("value", ["0x10", "16", " 16", "+16", "0", "00"])
def test_nccl_int_values_that_are_fine(value):
    assert kb.check_value(info("NCCL_P2P_NET_CHUNKSIZE"), value) is None


def test_strtoll_matches_c():
    assert kb.strtoll("0x1F") == (31, "", 16)
    assert kb.strtoll("-010") == (-8, "", 8)
    assert kb.strtoll("  42 ") == (42, " ", 10)
    assert kb.strtoll("08") == (0, "8", 8)
    assert kb.strtoll("x1") == (None, "x1", 10)


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
def test_strtoll_reads_every_int64_in_decimal_and_hex(n):
    assert kb.strtoll(str(n))[:2] == (n, "")
    assert kb.strtoll(("-" if n < 0 else "") + hex(abs(n)))[:2] == (n, "")


@pytest.mark.parametrize(
    "name,value,ok",
    [
        ("NCCL_IB_TIMEOUT", "22", True),
        ("NCCL_IB_TIMEOUT", "0", False),
        ("NCCL_IB_TIMEOUT", "32", False),
        ("NCCL_IB_GID_INDEX", "-1", True),
        ("NCCL_IB_GID_INDEX", "255", True),
        ("NCCL_IB_GID_INDEX", "256", False),
        ("NCCL_SOCKET_NTHREADS", "16", True),
        ("NCCL_SOCKET_NTHREADS", "17", False),
        ("NCCL_SOCKET_NTHREADS", "0", False),
        ("NCCL_NTHREADS", "96", True),
        ("NCCL_NTHREADS", "100", False),
        ("NCCL_NTHREADS", "1024", False),
        ("NCCL_MAX_CTAS", "64", True),
        ("NCCL_MAX_CTAS", "65", False),
        ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3", True),
        ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "4", False),
        ("NCCL_IB_SL", "15", True),
        ("NCCL_IB_SL", "16", False),
        ("NCCL_IB_SL", "-1", True),  # 4-bit SL
        ("NCCL_IB_TC", "255", True),
        ("NCCL_IB_TC", "256", False),
        ("NCCL_IB_TC", "-1", True),  # 8-bit TC
    ],
)
def test_ranges(name, value, ok):
    found = kb.classify(info(name), value)
    assert (found is None) == ok, found
    if not ok:
        assert found[0] == "range"


@pytest.mark.parametrize(
    "name,value,ok",
    [
        ("NCCL_DEBUG", "INFO", True),
        ("NCCL_DEBUG", "info", True),
        ("NCCL_DEBUG", "VERBOSE", False),
        ("NCCL_NET_GDR_LEVEL", "PIX", True),
        ("NCCL_NET_GDR_LEVEL", "5", True),  # legacy ints (>4 = SYS)
        ("NCCL_NET_GDR_LEVEL", "pix", False),  # strcmp: case-sensitive
        ("NCCL_P2P_LEVEL", "NVL", True),
        ("NCCL_P2P_LEVEL", "NVLINK", False),
        ("NCCL_LAUNCH_MODE", "group", True),
        ("NCCL_SOCKET_FAMILY", "af_inet", False),
        ("NCCL_DEBUG_SUBSYS", "INIT,NET", True),
        ("NCCL_DEBUG_SUBSYS", "^COLL", True),
        ("NCCL_DEBUG_SUBSYS", "INIT,NETWORK", False),
        ("NCCL_PROTO", "simple", True),
        ("NCCL_PROTO", "^LL128", True),
        ("NCCL_PROTO", "LL,LL128,Simple", True),
        ("NCCL_PROTO", "LL256", False),
        ("NCCL_PROTO", "allreduce:simple;broadcast:LL", True),
        ("NCCL_PROTO", "allreduce:simple;bcast:LL", False),
        ("NCCL_ALGO", "Ring,Tree", True),
        ("NCCL_ALGO", "COLLNETCHAIN", True),
        ("NCCL_ALGO", "ring,mesh", False),
        ("NCCL_SET_THREAD_NAME", "T", True),
        ("NCCL_SET_THREAD_NAME", "yes", False),
        ("TORCH_NCCL_BLOCKING_WAIT", "yes", True),
        ("TORCH_NCCL_BLOCKING_WAIT", "F", True),
        ("TORCH_NCCL_BLOCKING_WAIT", "maybe", False),
        ("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "abc", False),
        ("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "0x10", False),
        ("NCCL_NETDEVS_POLICY", "MAX:2", True),
        ("NCCL_NETDEVS_POLICY", "MIN:2", False),
        ("NCCL_CTA_POLICY", "EFFICIENCY|ZERO", True),
        ("NCCL_CTA_POLICY", "FAST", False),
        ("NCCL_COMM_ID", "10.0.0.1:29500", True),
        ("NCCL_COMM_ID", "10.0.0.1", False),
        ("NCCL_IB_HCA", "=mlx5_0:1,mlx5_3:1", True),
        ("NCCL_IB_HCA", "=^mlx5_1", False),
        ("NCCL_IB_HCA", "mlx5_0:x", False),
        ("NCCL_IB_HCA", "mlx5_0,^mlx5_1", False),
        ("NCCL_IB_HCA", ",".join(f"mlx5_{i}" for i in range(33)), False),
        ("NCCL_SOCKET_IFNAME", "e", False),
        ("NCCL_SOCKET_IFNAME", "^docker,lo", True),
        ("NCCL_SOCKET_IFNAME", ",".join(f"eth{i}" for i in range(17)), False),
    ],
)
def test_enums_lists_and_patterns(name, value, ok):
    assert (kb.check_value(info(name), value) is None) == ok


def test_case_hint_for_level_names():
    assert "write PIX" in kb.check_value(info("NCCL_NET_GDR_LEVEL"), "pix")


def test_same_value_follows_the_reader():
    assert kb.same_value(info("NCCL_BUFFSIZE"), "0x400000", "4194304")
    assert kb.same_value(info("NCCL_DEBUG_SUBSYS"), "ENV,init,BOOTSTRAP", "INIT,BOOTSTRAP,ENV")
    assert kb.same_value(info("TORCH_FR_CPP_STACK"), "no", "false")
    assert not kb.same_value(info("NCCL_NET_GDR_LEVEL"), "pix", "PIX")


# -- versions --------------------------------------------------------------------------------------


def test_version_tuple():
    assert kb.version_tuple("2.30.7") == (2, 30, 7)
    assert kb.version_tuple("v2.30.7-1") == (2, 30, 7)
    with pytest.raises(ValueError):
        kb.version_tuple("2.x")


@pytest.mark.parametrize(
    "name,version,read",
    [
        ("NCCL_MIN_CTAS", "2.16.5", False),
        ("NCCL_MIN_CTAS", "2.17.1", True),
        ("NCCL_MIN_CTAS", "2.17", True),
        ("NCCL_MIN_CTAS", "2.30.7", True),
        ("NCCL_SHM_USE_CUDA_MEMCPY", "2.30.7", False),
        ("NCCL_SHM_USE_CUDA_MEMCPY", "2.30.4", True),
        ("NCCL_SHM_USE_CUDA_MEMCPY", "2.13.3", False),
        ("NCCL_IB_GDR_LEVEL", "2.3.7", True),
        ("NCCL_IB_GDR_LEVEL", "2.4.2", False),
        ("NCCL_NET_GDR_LEVEL", "2.3.7", False),
        ("NCCL_NET_GDR_LEVEL", "2.4.2", True),
        ("NCCL_IB_HCA", "2.3.5", True),  # older than the first public tag: always
        ("TORCH_NCCL_BLOCKING_WAIT", "2.3.5", True),  # not gated by the NCCL version
    ],
)
def test_version_gating(name, version, read):
    assert kb.read_in(info(name), version) is read


RELEASES = Path(kb.kb_dir()) / "nccl-releases.tsv"


def release_table() -> tuple[list[str], dict[str, set[str]]]:
    """tools/nccl_wheel_names.py --table: which released libnccl holds which NCCL_* literal."""
    rows = [line.rstrip("\n").split("\t") for line in RELEASES.read_text().splitlines() if not line.startswith("#")]
    versions = rows[0][1:]
    return versions, {r[0]: {v for v, x in zip(versions, r[1:]) if x == "1"} for r in rows[1:]}


def test_version_windows_match_the_released_libraries():
    """Every release in the table (PyPI wheels 2.28.3 .. the KB's version): the KB says a name is read
    exactly when that release's library holds its literal. A wrong first/last version fails here."""
    versions, table = release_table()
    assert kb.KB_VERSIONS["nccl"] in versions
    wrong = []
    for v in versions:
        if kb.compare_versions(v, kb.KB_VERSIONS["nccl"]) > 0:
            continue
        read = {n for n, i in kb.all_vars().items() if i.reader == "nccl" and kb.read_in(i, v)}
        held = {n for n, vs in table.items() if v in vs}
        wrong += [(v, n, "KB says read, library lacks it") for n in sorted(read - held)]
        wrong += [(v, n, "library holds it, KB says not read") for n in sorted(held - read)]
    assert wrong == []


def test_kb_covers_the_newest_release_in_the_table():
    """NCCL 2.32.3 (issue 16): 35 names added and 2 dropped since 2.30.7, each with its version window."""
    versions, table = release_table()
    assert kb.KB_VERSIONS["nccl"] == versions[-1]
    added = {n for n, vs in table.items() if "2.32.3" in vs and "2.30.7" not in vs}
    dropped = {n for n, vs in table.items() if "2.30.7" in vs and "2.32.3" not in vs}
    assert len(added) == 35 and dropped == {"NCCL_MLOPART_RDMA_ENABLE", "NCCL_NET_GDR_MLOPART"}
    rail = info("NCCL_IB_RAIL_POLICY")
    assert rail.first_version == "2.32.3" and not kb.read_in(rail, "2.31.2") and kb.read_in(rail, "2.32.3")
    assert info("NCCL_IB_PKEY_VALUE").first_version == "2.31.2"
    mlo = info("NCCL_NET_GDR_MLOPART")
    assert (mlo.status, mlo.last_version) == ("removed", "2.31.2")
    assert kb.read_in(mlo, "2.30.7") and not kb.read_in(mlo, "2.32.3")
    once = info("NCCL_TOPO_SCATTER_START_NET")  # read by 2.31.2 alone
    assert [v for v in versions if kb.read_in(once, v)] == ["2.31.2"]


def test_new_names_say_their_values_are_unchecked():
    """No tagged source after v2.30.7-1: rows read only from the wheel claim no type, default or meaning."""
    for name in ("NCCL_IB_RAIL_POLICY", "NCCL_CFT_ENABLE", "NCCL_TOPO_SCATTER_START_NET"):
        v = info(name)
        assert (v.type, v.default, v.meaning_verified, v.documented) == ("string", "", False, False)
        assert "nccl-releases.tsv" in v.source and v.meaning.startswith("(from the name only)")


def test_socket_poll_timeout_is_first_read_by_2_29_2():
    info_ = info("NCCL_SOCKET_POLL_TIMEOUT_MSEC")
    assert info_.first_version == "2.29.2"
    assert not kb.read_in(info_, "2.28.9") and kb.read_in(info_, "2.29.2")
    assert release_table()[1]["NCCL_SOCKET_POLL_TIMEOUT_MSEC"] >= {"2.29.2"}
    assert "2.28.9" not in release_table()[1]["NCCL_SOCKET_POLL_TIMEOUT_MSEC"]


def test_reshard_rows_cite_the_commit_that_introduced_them():
    """NCCL_RESHARD_* come from contrib/nccl_m2n, a rename made after v2.30.7 (NVIDIA/nccl 99932967);
    v2.30.7's contrib/nccl_xfer reads NCCLXFER_RESHARD_* instead."""
    reshard = [v for n, v in kb.all_vars().items() if n.startswith("NCCL_RESHARD_")]
    assert len(reshard) == 8
    for v in reshard:
        assert "master@99932967" in v.source and "v2.30.7 contrib/nccl_m2n" not in v.source, v.name
        assert kb.lookup("NCCLXFER_" + v.name[len("NCCL_") :]).source.startswith(
            "NVIDIA/nccl v2.30.7-1 contrib/nccl_xfer/"
        )


# -- suggestions -----------------------------------------------------------------------------------


def test_suggest_finds_the_real_name_and_never_an_invented_one():
    assert kb.suggest("NCCL_MIN_CHANNELS")[0] == "NCCL_MIN_NCHANNELS"
    assert kb.suggest("NCCL_SOCKET_IFNAM")[0] == "NCCL_SOCKET_IFNAME"
    assert "NCCL_MAX_RINGS" not in kb.suggest("NCCL_MAX_RING")
    assert kb.suggest("HF_HOME") == []
