"""ncclgen.lint: each rule with a case that fires and one that must not, the NCCL_IB_HCA /
NCCL_SOCKET_IFNAME grammar and every input format (the CLI contract and the golden: tests/test_lint_cli.py).

Descriptors: clusters/h100-ib.yaml (InfiniBand, DGX H100 layout with storage NICs mlx5_1/2/7/8) and
variants of it made with dataclasses.replace (RoCE, EFA with aws-ofi-nccl, TCP, older NCCL), so each
test states the one fact it depends on.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ncclgen import lint
from ncclgen.cli import main
from ncclgen.errors import UserError
from ncclgen.lint.knowledge import matches, parse_if_list
from ncclgen.load import descriptor

ROOT = Path(__file__).resolve().parent.parent
H100 = descriptor.load(str(ROOT / "clusters" / "h100-ib.yaml"))
EXACT_RAILS = "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"


def variant(net=None, nccl=None) -> descriptor.Descriptor:
    d = H100
    if net:
        d = dataclasses.replace(d, network=dataclasses.replace(d.network, **net))
    if nccl:
        d = dataclasses.replace(d, software=dataclasses.replace(d.software, nccl=nccl))
    return d


ROCE = variant({"fabric": "roce", "roce": descriptor.Roce(gid_index=3)})
EFA = variant(
    {
        "fabric": "efa",
        "compute": (),
        "storage": (),
        "net_plugin": "aws-ofi-nccl",
        "efa": descriptor.Efa(devices_per_node=32, gbps_per_device=100),
    }
)
TCP = variant({"fabric": "tcp", "compute": (), "storage": ()})


def run(env: dict | list, cluster=None) -> list[lint.Finding]:
    items = env.items() if isinstance(env, dict) else env
    return lint.lint_pairs([(k, v, i + 1) for i, (k, v) in enumerate(items)], cluster)


def codes(findings, variable=None) -> list[tuple[str, str]]:
    return [(f.code, f.severity) for f in findings if variable in (None, f.variable)]


# -- rules: each fires, and does not fire where it must not -------------------------------------------


def test_unknown_nccl_variable_is_an_error_with_did_you_mean():
    [f] = run({"NCCL_SOCKET_IFNAM": "eth0"})
    assert (f.code, f.severity) == ("NG001", "error")
    assert "did you mean 'NCCL_SOCKET_IFNAME'" in f.message and f.fix == "use NCCL_SOCKET_IFNAME"


def test_unknown_non_nccl_prefixed_name_is_a_warning_and_unrelated_names_are_ignored():
    assert codes(run({"TORCH_NCCL_MADE_UP": "1"})) == [("NG001", "warning")]
    assert run({"PATH": "/usr/bin", "HF_HOME": "/x", "NCCL_DEBUG": "WARN"}) == []


def test_invented_variable_names_the_real_mechanism():
    [f] = run({"NCCL_TIMEOUT": "1800"})
    assert (f.code, f.severity) == ("NG002", "error")
    assert "init_process_group(timeout=timedelta(seconds=1800))" in f.fix
    assert "nccl_timeout" not in f.fix  # verl >= 0.8 reads no timeout key (ncclgen/data/verl)
    assert codes(run({"NCCL_FP16_ENABLE": "1"})) == [("NG002", "error")]
    assert "framework" in run({"NCCL_FP16_ENABLE": "1"})[0].fix
    assert run({"NCCL_MAX_RINGS": "8"})[0].fix == "use NCCL_MAX_CTAS=8"
    assert run({"NCCL_IB_TIMEOUT": "22"}) == []


def test_removed_variable_is_an_error_with_version_and_replacement():
    [f] = run({"NCCL_LL_THRESHOLD": "0"})
    assert (f.code, f.severity) == ("NG003", "error")
    # No fix line: NCCL_PROTO takes protocol names, so "NCCL_PROTO=0" (the old fix) was not a valid value.
    # The message names the successor and the value that means what a 0 threshold meant.
    assert "2.4.8" in f.message and f.fix == "" and "NCCL_PROTO=^LL" in f.message
    assert codes(run({"NCCL_PROTO": "Simple,LL128"})) == []


def test_removed_variable_still_read_by_the_clusters_nccl_is_only_a_heads_up():
    old = variant(nccl="2.29.7")
    assert codes(run({"NCCL_SHM_USE_CUDA_MEMCPY": "1"}, old)) == [("NG003", "info")]
    assert codes(run({"NCCL_SHM_USE_CUDA_MEMCPY": "1"}, H100)) == [("NG003", "error")]


def test_deprecated_alias_is_a_warning_with_replacement():
    [f] = run({"NCCL_MIN_NRINGS": "4"})
    assert (f.code, f.severity, f.fix) == ("NG004", "warning", "use NCCL_MIN_CTAS=4")
    [f] = run({"NCCL_ASYNC_ERROR_HANDLING": "1"})
    # Same value under the new name (a valid value with the same meaning), and it says that ncclgen's own
    # tier 1 pins a different one, so following the fix next to ncclgen's output is not a surprise.
    assert (f.code, f.fix) == (
        "NG004",
        "use TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (keeps this value's meaning; "
        "ncclgen's tier 1 writes 3: see ncclgen explain)",
    )
    assert run({"NCCL_MIN_CTAS": "4", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}) == []


def test_no_deprecation_warning_while_the_replacement_is_too_new():
    assert codes(run({"NCCL_MIN_NCHANNELS": "4"}, variant(nccl="2.16.5"))) == []
    assert codes(run({"NCCL_MIN_NCHANNELS": "4"}, H100)) == [("NG004", "warning")]


def test_dead_variable():
    assert codes(run({"NCCL_GRAPH_HELPER_DISABLE": "1"})) == [("NG005", "warning")]
    assert run({"NCCL_GRAPH_REGISTER": "0"}) == []


def test_non_numeric_text_for_an_nccl_int_is_an_error():
    [f] = run({"NCCL_IB_TIMEOUT": "abc"})
    assert (f.code, f.severity) == ("NG006", "error") and "turns it into 0" in f.message
    assert "NCCL reads 12" in run({"NCCL_IB_TIMEOUT": "12abc"})[0].message
    assert run({"NCCL_IB_QPS_PER_CONNECTION": "0x4"}) == []


def test_per_function_proto_needs_nccl_2_24():
    value = "allreduce:simple;broadcast:ll"
    assert codes(run({"NCCL_PROTO": value}, variant(nccl="2.23.4"))) == [("NG006", "error")]
    assert run({"NCCL_PROTO": value}, H100) == []


def test_out_of_range():
    [f] = run({"NCCL_IB_TIMEOUT": "32"})
    assert (f.code, f.severity, f.fix) == ("NG007", "error", "use a number (decimal or 0x hex) in 1..31")
    assert run({"NCCL_IB_TIMEOUT": "22"}) == []


def test_socket_threads_times_sockets_over_64():
    [f] = [f for f in run({"NCCL_SOCKET_NTHREADS": "8", "NCCL_NSOCKS_PERTHREAD": "16"}) if f.code == "NG008"]
    assert (f.severity, f.variable, f.line, f.fix) == ("warning", "NCCL_NSOCKS_PERTHREAD", 2, "NCCL_NSOCKS_PERTHREAD=8")
    assert run({"NCCL_SOCKET_NTHREADS": "4", "NCCL_NSOCKS_PERTHREAD": "8"}) == []


def test_value_equal_to_the_default_is_info():
    [f] = run({"NCCL_IB_DISABLE": "0"})
    assert (f.code, f.severity) == ("NG009", "info")
    assert codes(run({"NCCL_BUFFSIZE": "0x400000"})) == [("NG009", "info")]  # strtoll: same 4 MiB
    assert run({"NCCL_IB_DISABLE": "1"}) == []
    assert run({"NCCL_CUMEM_ENABLE": "1"}) == []  # auto default: forcing it is not a no-op


def test_buffsize_below_default_is_called_memory_saving():
    [f] = run({"NCCL_BUFFSIZE": "1048576"})
    assert (f.code, f.severity) == ("NG010", "warning")
    assert "memory-saving" in f.message and "1 MiB" in f.message
    assert run({"NCCL_BUFFSIZE": "8388608"}) == []


def test_socket_knobs_on_verbs_and_efa_fabrics():
    for cluster in (H100, ROCE, EFA):
        assert codes(run({"NCCL_SOCKET_NTHREADS": "4"}, cluster)) == [("NG011", "warning")]
    assert run({"NCCL_SOCKET_NTHREADS": "4"}, TCP) == []
    assert run({"NCCL_SOCKET_NTHREADS": "4"}) == []  # no --cluster: fabric unknown


def test_ib_knobs_on_efa_and_tcp():
    for cluster in (EFA, TCP):
        assert codes(run({"NCCL_IB_QPS_PER_CONNECTION": "4"}, cluster)) == [("NG011", "warning")]
    assert run({"NCCL_IB_QPS_PER_CONNECTION": "4"}, ROCE) == []


def test_gid_index_on_infiniband():
    [f] = run({"NCCL_IB_GID_INDEX": "3"}, H100)
    assert (f.code, f.severity) == ("NG011", "warning") and "RoCE" in f.message
    assert run({"NCCL_IB_GID_INDEX": "3"}, ROCE) == []


def test_plugin_variables_without_the_plugin():
    assert codes(run({"FI_EFA_USE_HUGE_PAGE": "0"}, H100)) == [("NG011", "warning")]
    assert run({"FI_EFA_USE_HUGE_PAGE": "0"}, EFA) == []
    sharp = {"SHARP_COLL_LOG_LEVEL": "3"}
    assert codes(run(sharp, H100)) == [("NG011", "warning")]
    assert run(sharp, variant({"sharp": True})) == []


def test_variables_the_net_plugin_sets_itself():
    [f] = run({"NCCL_P2P_NET_CHUNKSIZE": "524288"}, EFA)
    assert (f.code, f.severity) == ("NG015", "warning") and "aws-ofi-nccl" in f.message
    assert run({"NCCL_P2P_NET_CHUNKSIZE": "524288"}, H100) == []


def test_newer_nccl_needed():
    [f] = run({"NCCL_MIN_CTAS": "8"}, variant(nccl="2.16.5"))
    assert (f.code, f.severity) == ("NG014", "error") and "needs NCCL >= 2.17;" in f.message
    assert run({"NCCL_MIN_CTAS": "8"}, variant(nccl="2.17.1")) == []


def test_duplicate_assignment():
    found = run([("NCCL_DEBUG", "INFO"), ("NCCL_DEBUG", "WARN")])
    assert codes(found) == [("NG016", "warning")] and found[0].line == 2 and "line 1" in found[0].message
    assert run([("NCCL_DEBUG", "WARN")]) == []


# -- NCCL_IB_HCA / NCCL_SOCKET_IFNAME against the descriptor ------------------------------------------


def hca(value, cluster=H100):
    return [f for f in run({"NCCL_IB_HCA": value}, cluster) if f.code == "NG012"]


def test_ib_hca_prefix_selecting_storage_nics():
    [f] = hca("mlx5")
    assert f.severity == "error" and "mlx5_1, mlx5_2, mlx5_7, mlx5_8" in f.message and "prefix" in f.message
    assert f.fix == "use NCCL_IB_HCA=" + EXACT_RAILS


def test_ib_hca_prefix_also_matching_longer_names():
    found = hca("mlx5_0,mlx5_1")
    msgs = [(f.severity, f.message) for f in found]
    assert any(s == "error" and "storage/in-band NIC(s) mlx5_1 " in m for s, m in msgs)
    assert any(s == "warning" and "also matches mlx5_10, mlx5_11" in m for s, m in msgs)
    assert any(s == "warning" and "leaves out compute rail(s) mlx5_3:1" in m for s, m in msgs)


def test_ib_hca_unknown_name_and_wrong_port():
    [f] = [f for f in hca("=mlx5_0:1,mlx5_99,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1")]
    assert f.severity == "error" and "mlx5_99 matches no HCA port" in f.message
    found = hca(EXACT_RAILS.replace("mlx5_0:1", "mlx5_0:2"))
    assert {(f.severity, "mlx5_0:2" in f.message or "mlx5_0:1" in f.message) for f in found} == {
        ("error", True),
        ("warning", True),
    }


def test_ib_hca_clean_forms():
    assert hca(EXACT_RAILS) == []
    assert hca("^=mlx5_1,mlx5_2,mlx5_7,mlx5_8") == []
    assert hca(EXACT_RAILS, ROCE) == []
    assert hca("mlx5", EFA) == []  # EFA: reported once as a transport mismatch (NG011)


def socket(value, cluster=H100):
    return [f for f in run({"NCCL_SOCKET_IFNAME": value}, cluster) if f.code == "NG013"]


def test_socket_ifname_missing_the_bootstrap_interface():
    found = socket("eth0")
    assert [f.severity for f in found] == ["error", "warning"]
    assert "bond0" in found[0].message and found[0].fix == "use NCCL_SOCKET_IFNAME==bond0"


def test_socket_ifname_port_is_ignored():
    [f] = socket("=bond0:1")
    assert f.severity == "warning" and "ignored" in f.message


def test_socket_ifname_clean_forms():
    for value in ("=bond0", "bond", "^docker,lo", "bond0,ibp"):
        assert socket(value) == [], value


# -- the grammar itself (NCCL v2.30.7 src/misc/utils.cc:189-244) ------------------------------------


def test_parse_if_list():
    assert parse_if_list("mlx5") == (False, False, [("mlx5", -1)])
    assert parse_if_list("=mlx5_0:1,mlx5_1:1") == (False, True, [("mlx5_0", 1), ("mlx5_1", 1)])
    assert parse_if_list("^=mlx5_1,mlx5_4") == (True, True, [("mlx5_1", -1), ("mlx5_4", -1)])
    assert parse_if_list("=^mlx5_1") == (False, True, [("^mlx5_1", -1)])
    assert parse_if_list("mlx5_0::0:0,,:1") == (False, False, [("mlx5_0", -1)])


@pytest.mark.parametrize(
    "value,device,port,hit",
    [
        ("mlx5", "mlx5_10", 1, True),
        ("mlx5_1", "mlx5_10", 1, True),  # prefix: mlx5_1 also matches mlx5_10..19
        ("=mlx5_1", "mlx5_10", 1, False),
        ("=mlx5_0:1,mlx5_1:1", "mlx5_0", 1, True),
        ("=mlx5_0:1,mlx5_1:1", "mlx5_0", 2, False),
        ("=mlx5_0:1", "mlx5_0", -1, True),  # IP interfaces are matched with port -1
        ("^=mlx5_1,mlx5_4", "mlx5_1", 1, False),
        ("^=mlx5_1,mlx5_4", "mlx5_10", 1, True),
        ("^mlx5_1", "mlx5_10", 1, False),
        ("=^mlx5_1", "mlx5_1", 1, False),  # wrong order: looks for a device named ^mlx5_1
        ("", "mlx5_0", 1, True),  # empty list matches everything
        ("^", "mlx5_0", 1, False),  # ... so excluding it selects nothing
    ],
)
def test_matches(value, device, port, hit):
    assert matches(value, device, port) is hit


# -- inputs ----------------------------------------------------------------------------------------


def test_shell_and_dotenv_forms():
    text = "\n".join(
        [
            "# comment",
            "export NCCL_DEBUG=INFO",
            "NCCL_IB_TIMEOUT='22'   # trailing comment",
            'export NCCL_SOCKET_IFNAME="=bond0" NCCL_IB_HCA=mlx5',
            "NCCL_ALGO=Ring python train.py --x=1",
            "export NCCL_TOPO_FILE=$HOME/topo.xml",
            "export PATH=/usr/bin",
            "export -n NCCL_PROTO",
            "NCCL_PROTO=\\",
            "Simple",
        ]
    )
    assert lint.parse_text(text, "x.env") == [
        ("NCCL_DEBUG", "INFO", 2),
        ("NCCL_IB_TIMEOUT", "22", 3),
        ("NCCL_SOCKET_IFNAME", "=bond0", 4),
        ("NCCL_IB_HCA", "mlx5", 4),
        ("NCCL_ALGO", "Ring", 5),
        ("NCCL_TOPO_FILE", None, 6),
        ("PATH", "/usr/bin", 7),
        ("NCCL_PROTO", "Simple", 9),
    ]


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r\n"), max_size=40))
def test_values_quoted_by_ncclgen_env_read_back_exactly(value):
    assert lint.parse_text(f"export NCCL_DEBUG_FILE={shlex.quote(value)}\n", "x") == [("NCCL_DEBUG_FILE", value, 1)]


def test_sbatch_script_reads_only_line_start_assignments():
    text = "\n".join(
        [
            "#!/bin/bash",
            "#SBATCH --nodes=2",
            "export NCCL_DEBUG=WARN",
            'srun bash -c "export NCCL_IB_TIMEOUT=99; python x.py"',
            "cat > run.sh <<'EOF'",
            "NCCL_IB_TIMEOUT=abc",
            "EOF",
            "  export NCCL_MIN_CTAS=8",
            'X="multi',
            'line"',
            "export NCCL_BUFFSIZE=8388608",
        ]
    )
    assert lint.parse_text(text, "job.sh") == [
        ("NCCL_DEBUG", "WARN", 3),
        ("NCCL_MIN_CTAS", "8", 8),
        ("X", "multi\nline", 9),
        ("NCCL_BUFFSIZE", "8388608", 11),
    ]


def test_kubernetes_manifest_env_lists_in_every_document():
    text = "\n".join(
        [
            "apiVersion: v1",
            "kind: ConfigMap",
            "---",
            "apiVersion: kubeflow.org/v1",
            "kind: PyTorchJob",
            "spec:",
            "  pytorchReplicaSpecs:",
            "    Worker:",
            "      template:",
            "        spec:",
            "          containers:",
            "          - name: t",
            "            env:",
            "            - name: NCCL_DEBUG",
            "              value: INFO",
            '            - {name: NCCL_IB_TIMEOUT, value: "40"}',
            "            - name: MY_POD_IP",
            "              valueFrom: {fieldRef: {fieldPath: status.podIP}}",
        ]
    )
    assert lint.parse_text(text, "job.yaml") == [
        ("NCCL_DEBUG", "INFO", 14),
        ("NCCL_IB_TIMEOUT", "40", 16),
        ("MY_POD_IP", None, 17),
    ]
    [f] = lint.lint_text(text, "job.yaml")
    assert (f.code, f.line, f.file) == ("NG007", 16, "job.yaml")


def test_each_env_list_of_a_manifest_is_its_own_environment():
    text = "\n".join(
        [
            "apiVersion: v1",
            "kind: ConfigMap",
            "data:",
            "  setup.sh: |",
            "    export NCCL_TIMEOUT=10",  # a script inside a manifest is data, not this file's env
            "---",
            "kind: RayJob",
            "spec:",
            "  head: {env: [{name: NCCL_DEBUG, value: WARN}]}",
            "  workers:",
            "  - env: [{name: NCCL_DEBUG, value: WARN}, {name: NCCL_DEBUG, value: INFO}]",
        ]
    )
    assert lint.detect(text) == "manifest"
    found = lint.lint_text(text, "job.yaml")
    assert [(f.code, f.line) for f in found] == [("NG016", 11)]


def test_json_from_ncclgen_env(capsys):
    assert main(["env", "--cluster", str(ROOT / "clusters" / "h100-ib.yaml"), "--format", "json"]) == 0
    text = capsys.readouterr().out
    pairs = lint.parse_text(text, "env.json")
    names = [e["name"] for e in json.loads(text)["env"]]
    assert [p[0] for p in pairs] == names and all(p[2] for p in pairs)
    assert not [f for f in lint.lint_text(text, "env.json", H100) if f.severity == "error"]


@pytest.mark.parametrize(
    "text,needle",
    [
        ('X="open\n', "x:1: unclosed quote"),
        ('{"env": [}', "x:1:10: JSON syntax error"),
        ('{"envs": []}', 'x: env: expected a JSON object with an "env" list'),
        ('{"env": [{"name": "A", "value": [1]}]}', "x:1: env[0].value: expected a string value"),
        ("apiVersion: v1\nkind: Pod\nspec: [", "x:4:1: YAML syntax error"),
        ("kind: x\nspec: " + "[" * 100, "nested more than 64 levels"),
    ],
)
def test_bad_input_is_one_user_error(text, needle):
    with pytest.raises(UserError) as exc:
        lint.parse_text(text, "x")
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_lint_environ_checks_only_relevant_names():
    found = lint.lint_environ(
        {"HOME": "/root", "NCCL_TIMEOUT": "10", "NCCL_DEBUG": "WARN", "NCCL_IB_DISABLE": "0"}, H100
    )
    assert [(f.variable, f.code, f.line) for f in found] == [
        ("NCCL_IB_DISABLE", "NG009", None),
        ("NCCL_TIMEOUT", "NG002", None),
    ]


def test_names_of_newer_and_older_releases_follow_the_target_version():
    """A 2.32.3 name is fine for 2.32.3 and too new for 2.30.7; a name 2.32.3 dropped is the reverse."""
    assert codes(run({"NCCL_IB_RAIL_POLICY": "x"})) == []  # the KB's newest NCCL
    assert codes(run({"NCCL_IB_RAIL_POLICY": "x"}, H100)) == [("NG014", "error")]  # h100-ib: 2.30.7
    assert codes(run({"NCCL_NET_GDR_MLOPART": "1"})) == [("NG003", "error")]
    assert codes(run({"NCCL_NET_GDR_MLOPART": "1"}, H100)) == [("NG003", "info")]
    assert codes(run({"NCCL_IB_RAIL_POLICY": "x"}, variant(nccl="2.32.3"))) == []
