"""Hostile-input corpus (issue 15): each class of input that once ran code, hung, changed a value or
printed a traceback, with the behaviour ncclgen must keep: one line on stderr, exit 2, nothing written.

Classes: 1 variable names that run code; 2 tracebacks; 3 hangs on non-regular files; 5 characters that
change values; 6 the smaller ones (YAML 1.1 integers, non-ASCII digits, control characters in messages).
The linter's parser (class 4) is covered in test_lint_parser.py, the fuzz (7) in test_fuzz_entry.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ncclgen import datapaths
from ncclgen.cli import main

ROOT = Path(__file__).resolve().parent.parent
LOCAL_CI = (Path(datapaths.bundled("clusters")) / "local-ci.yaml").read_text()
WORKLOAD = (Path(datapaths.bundled("workloads")) / "bench.yaml").read_text()
POLICY = yaml.safe_load((Path(datapaths.data("envnames.yaml"))).read_text())
BIG = "1" * 5000  # beyond Python's 4,300-digit int() limit


def run(capsys, *argv) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # `validate` exits through sys.exit with its status
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc: int, err: str) -> str:
    """The single stderr line of a refusal (asserting there is exactly one and no traceback)."""
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("ncclgen: error: "), err
    assert "Traceback" not in err
    assert err.rstrip("\n").isprintable(), repr(err)
    return err


def descriptor(tmp_path, extra: str = "", *, replace: tuple[str, str] | None = None, name="c.yaml") -> str:
    text = LOCAL_CI if replace is None else LOCAL_CI.replace(*replace)
    assert replace is None or text != LOCAL_CI
    path = tmp_path / name
    path.write_text(text + extra)
    return str(path)


def workload(tmp_path, extra: str = "", *, replace: tuple[str, str] | None = None) -> str:
    text = WORKLOAD if replace is None else WORKLOAD.replace(*replace)
    path = tmp_path / "w.yaml"
    path.write_text(text + extra)
    return str(path)


def env_entry(group: str, name: str, value: str = "x", extra: str = "") -> str:
    return f"{group}:\n  - name: {name}\n    value: {value!r}\n    reason: test\n{extra}"


# -- 1. variable names that run code ----------------------------------------------------------------------

REFUSED = [e["name"] for e in POLICY["refuse"]] + [
    "LD_PRELOAD",
    "LD_AUDIT",
    "LD_DEBUG_OUTPUT",
    "BASH_FUNC_x",
    "LUA_INIT_5_4",
]
PATHS = [e["name"] for e in POLICY["paths"]]


def test_policy_data_cites_a_source_and_reason_for_every_name():
    for section in ("refuse", "prefixes", "paths"):
        for entry in POLICY[section]:
            assert entry["reason"] and entry["source"], entry
    assert {"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PYTHONSTARTUP", "PYTHONINSPECT"} <= set(REFUSED)
    # other interpreters a job may start (a Ray dashboard's node, a JVM tool, perl in a setup script)
    assert {"PERL5OPT", "RUBYOPT", "NODE_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "ZDOTDIR"} <= set(REFUSED)
    assert {"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "NCCL_NET_PLUGIN"} <= set(PATHS)


@pytest.mark.parametrize("name", REFUSED)
@pytest.mark.parametrize("group", ["env", "vendor_env"])
def test_descriptor_refuses_names_that_run_code(tmp_path, capsys, name, group):
    path = descriptor(tmp_path, env_entry(group, name, "$(touch PWNED)", "    unchecked: true\n"))
    rc, out, err = run(capsys, "slurm", "--cluster", path, "--workload", "bench")
    err = one_line_error(rc, err)
    assert f"c.yaml:{LOCAL_CI.count(chr(10)) + 2}:" in err and f"{group}[0].name: {name} may not be set" in err
    assert out == ""


@pytest.mark.parametrize(
    "name", ["BASH_ENV", "LD_PRELOAD", "PYTHONSTARTUP", "PS4", "NODE_OPTIONS", "PERL5OPT", "LUA_INIT_5_4"]
)
def test_workload_and_set_refuse_names_that_run_code(tmp_path, capsys, name):
    wl = workload(tmp_path, env_entry("env", name, "/tmp/x", "    unchecked: true\n"))
    rc, out, err = run(capsys, "k8s", "--cluster", "local-ci", "--workload", wl)
    assert "w.yaml:" in one_line_error(rc, err) and out == ""
    rc, out, err = run(capsys, "slurm", "--cluster", "local-ci", "--set", f"{name}=/tmp/x")
    assert f"--set {name}: may not be set" in one_line_error(rc, err) and out == ""


@pytest.mark.parametrize("name", PATHS)
def test_search_paths_and_plugins_need_the_opt_in(tmp_path, capsys, name):
    rc, out, err = run(
        capsys, "env", "--cluster", descriptor(tmp_path, env_entry("env", name, "/opt/x")), "--workload", "bench"
    )
    assert "opt in with unchecked: true" in one_line_error(rc, err)
    path = descriptor(tmp_path, env_entry("env", name, "/opt/x", "    unchecked: true\n"), name="d.yaml")
    rc, out, err = run(capsys, "explain", "--cluster", path, "--workload", "bench")
    assert rc == 0, err
    assert name in out and "[unchecked: opted in by the author" in out


def test_a_plugin_set_to_none_loads_nothing_and_needs_no_opt_in(tmp_path, capsys):
    rc, out, err = run(
        capsys,
        "env",
        "--cluster",
        descriptor(tmp_path, env_entry("env", "NCCL_NET_PLUGIN", "none")),
        "--workload",
        "bench",
    )
    assert rc == 0 and "export NCCL_NET_PLUGIN=none\n" in out, err


def test_the_name_list_agrees_with_the_knowledge_base():
    from ncclgen.lint import knowledge as kb
    from ncclgen.load import envnames

    kb.lookup("NCCL_DEBUG")
    assert set(kb._VARS) <= envnames.known_names()


def test_names_outside_the_knowledge_base_need_the_opt_in(tmp_path, capsys):
    rc, _, err = run(
        capsys, "env", "--cluster", descriptor(tmp_path, env_entry("env", "HF_HOME", "/data")), "--workload", "bench"
    )
    assert "HF_HOME: no NCCL, PyTorch or plugin variable" in one_line_error(rc, err)
    wl = workload(tmp_path, env_entry("env", "HF_HOME", "/data", "    unchecked: true\n"))
    rc, out, err = run(capsys, "env", "--cluster", "local-ci", "--workload", wl)
    assert rc == 0 and "export HF_HOME=/data\n" in out, err


# -- 2. tracebacks: one line and exit 2 instead -----------------------------------------------------------


def _monitor_file(tmp_path, text: str) -> str:
    path = tmp_path / "m.jsonl"
    path.write_text(text)
    return str(path)


def _lint_file(tmp_path, text: str, name="in.env") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


TRACEBACK_CASES = {
    "set-big-int-nccl": lambda t: ["env", "--cluster", "local-ci", "--set", f"NCCL_IB_TIMEOUT={BIG}"],
    "set-big-int-torch": lambda t: ["env", "--cluster", "local-ci", "--set", f"TORCH_NCCL_BLOCKING_WAIT={BIG}"],
    "lint-big-int-env": lambda t: ["lint", _lint_file(t, f"NCCL_IB_TIMEOUT={BIG}\n")],
    "lint-big-int-json": lambda t: [
        "lint",
        _lint_file(t, f'{{"env": [{{"name": "NCCL_IB_TIMEOUT", "value": {BIG}}}]}}', "in.json"),
    ],
    "lint-deep-json": lambda t: ["lint", _lint_file(t, '{"env": ' + "[" * 100000 + "]" * 100000 + "}", "in.json")],
    "descriptor-version": lambda t: ["env", "--cluster", descriptor(t, replace=('nccl: "2.30.7"', f'nccl: "2.{BIG}"'))],
    "descriptor-big-int": lambda t: ["validate", descriptor(t, replace=("gpus_per_node: 2", f"gpus_per_node: {BIG}"))],
    "monitor-big-int": lambda t: ["monitor", "summary", _monitor_file(t, f'{{"hostname": "h", "gpu": {BIG}}}\n')],
    "monitor-deep": lambda t: ["monitor", "summary", _monitor_file(t, "[" * 100000 + "]" * 100000 + "\n")],
    "monitor-not-utf8": lambda t: ["monitor", "summary", _monitor_file(t, "\udcff")],
    "monitor-nan": lambda t: [
        "monitor",
        "summary",
        _monitor_file(t, '{"hostname": "h", "gpu": 0, "util_gpu_pct": NaN}\n'),
    ],
    "bench-big-max": lambda t: ["bench", "--sizes", f"8:{BIG}"],
    "bench-big-min": lambda t: ["bench", "--sizes", f"{BIG}:1G"],
    "out-dev-full": lambda t: ["slurm", "--cluster", "local-ci", "-o", "/dev/full"],
    "out-proc": lambda t: ["slurm", "--cluster", "local-ci", "-o", "/proc/self/status"],
    "out-proc-new": lambda t: ["slurm", "--cluster", "local-ci", "-o", "/proc/self/new.sh"],
    "out-empty": lambda t: ["slurm", "--cluster", "local-ci", "-o", ""],
    "out-long-name": lambda t: ["slurm", "--cluster", "local-ci", "-o", str(t / ("a" * 300))],
    "out-non-utf8-name": lambda t: ["slurm", "--cluster", "local-ci", "-o", str(t / "x\udcff.sh")],
    "set-non-utf8-with-o": lambda t: [
        "slurm",
        "--cluster",
        "local-ci",
        "--set",
        "NCCL_DEBUG_FILE=\udcff",
        "-o",
        str(t / "job.sh"),
    ],
    "k8s-non-utf8-with-o": lambda t: [
        "k8s",
        "--cluster",
        "local-ci",
        "--set",
        "NCCL_DEBUG_FILE=\udcff",
        "-o",
        str(t / "job.yaml"),
    ],
    "env-non-utf8-with-o": lambda t: [
        "env",
        "--cluster",
        "local-ci",
        "--set",
        "NCCL_DEBUG_FILE=\udcff",
        "-o",
        str(t / "job.env"),
    ],
}


@pytest.mark.parametrize("case", sorted(TRACEBACK_CASES))
def test_no_traceback(tmp_path, capsys, case, monkeypatch):
    if case == "monitor-not-utf8":
        (tmp_path / "m.jsonl").write_bytes(b'{"hostname": "h\xff", "gpu": 0}\n')
        argv = ["monitor", "summary", str(tmp_path / "m.jsonl")]
    else:
        argv = TRACEBACK_CASES[case](tmp_path)
    before = sorted(os.listdir(tmp_path))
    rc, out, err = run(capsys, *argv)
    if case == "lint-big-int-env":  # a finding, not an input error: exit 1 with the finding
        assert rc == 1 and "outside the 64-bit range" in out and "Traceback" not in err, (out, err)
        return
    one_line_error(rc, err)
    assert sorted(os.listdir(tmp_path)) == before  # nothing written, no temporary file left


# -- 3. hangs: non-regular files are refused without a blocking open -------------------------------------


def _ncclgen(cwd, *argv, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NCCLGEN_CLUSTER", None)
    return subprocess.run(
        [sys.executable, "-m", "ncclgen", *argv],
        cwd=cwd,
        env=env,
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=30,
    )


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


HANG_CASES = {
    "project-file": (lambda t: _fifo(t / "ncclgen.yaml"), ["env"], "ncclgen.yaml: is a FIFO"),
    "clusters-dir": (
        lambda t: (t / "clusters").mkdir() or _fifo(t / "clusters" / "evil.yaml"),
        ["env", "--cluster", "evil"],
        "evil.yaml: is a FIFO",
    ),
    "descriptor": (lambda t: _fifo(t / "c.yaml"), ["validate", "c.yaml"], "c.yaml: is a FIFO"),
    "workload": (
        lambda t: _fifo(t / "w.yaml"),
        ["env", "--cluster", "local-ci", "--workload", "./w.yaml"],
        "w.yaml: is a FIFO",
    ),
    "lint": (lambda t: _fifo(t / "in.env"), ["lint", "in.env"], "in.env: is a FIFO"),
    "lint-device": (lambda t: None, ["lint", "/dev/zero"], "/dev/zero: is a device"),
    "monitor-summary": (lambda t: _fifo(t / "m.jsonl"), ["monitor", "summary", "m.jsonl"], "m.jsonl: is a FIFO"),
    "lint-cluster": (lambda t: _fifo(t / "c.yaml"), ["lint", "--cluster", "./c.yaml", "-"], "c.yaml: is a FIFO"),
}


@pytest.mark.parametrize("case", sorted(HANG_CASES))
def test_non_regular_files_are_refused_without_hanging(tmp_path, case):
    make, argv, message = HANG_CASES[case]
    make(tmp_path)
    proc = _ncclgen(tmp_path, *argv)
    one_line_error(proc.returncode, proc.stderr)
    assert message in proc.stderr


def test_clusters_list_shows_a_fifo_as_invalid_without_hanging(tmp_path):
    (tmp_path / "clusters").mkdir()
    _fifo(tmp_path / "clusters" / "evil.yaml")
    proc = _ncclgen(tmp_path, "clusters", "list")
    assert proc.returncode == 0 and "evil.yaml (is a FIFO" in proc.stdout, proc.stderr


def test_stdin_is_still_read_where_dash_is_allowed(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "ncclgen", "lint", "-"],
        input="NCCL_DEBUG=INFO\n",
        text=True,
        capture_output=True,
        timeout=30,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.returncode == 0 and "1 variable(s) checked" in proc.stdout, proc.stderr


# -- 5. characters that change values ---------------------------------------------------------------------

ESCAPES = {"NUL": "\\0", "NEL": "\\N", "LS": "\\L", "PS": "\\P", "ESC": "\\e", "CR": "\\r", "BEL": "\\a", "C1": "\\x9b"}


@pytest.mark.parametrize("char", sorted(ESCAPES))
@pytest.mark.parametrize("where", ["env-value", "description", "reason", "workload-command"])
def test_yaml_escapes_that_change_values_are_refused(tmp_path, capsys, char, where):
    esc = ESCAPES[char]
    if where == "workload-command":
        wl = workload(tmp_path, replace=('"20"]', f'"2{esc}0"]'))
        argv = ["slurm", "--cluster", "local-ci", "--workload", wl]
        at = "w.yaml:"
    else:
        if where == "description":
            path = descriptor(tmp_path, replace=(LOCAL_CI.splitlines()[17], f'description: "CI{esc} x"'))
        else:
            value, reason = ("a" + esc + "b", "test") if where == "env-value" else ("1", "r" + esc)
            path = descriptor(tmp_path, f'env:\n  - {{name: NCCL_DEBUG, value: "{value}", reason: "{reason}"}}\n')
        argv = ["slurm", "--cluster", path, "--workload", "bench"]
        at = "c.yaml:"
    rc, out, err = run(capsys, *argv)
    err = one_line_error(rc, err)
    assert at in err and "control character" in err and out == ""


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029"])
def test_raw_unicode_line_breaks_are_refused_with_their_position(tmp_path, capsys, char):
    path = descriptor(tmp_path, replace=(LOCAL_CI.splitlines()[17], f'description: "x{char}y"'))
    rc, _, err = run(capsys, "validate", path)
    assert f"c.yaml:18:16: character U+{ord(char):04X}" in one_line_error(rc, err)


@pytest.mark.parametrize("char", ["\0", "\x85", "\u2028", "\x1b", "\r"])
@pytest.mark.parametrize("command", ["slurm", "k8s", "env"])
def test_set_values_that_would_change_are_refused_by_both_renderers(tmp_path, capsys, char, command):
    out_file = tmp_path / "out"
    rc, _out, err = run(
        capsys, command, "--cluster", "local-ci", "--set", f"NCCL_DEBUG_FILE=a{char}b", "-o", str(out_file)
    )
    assert "NCCL_DEBUG_FILE" in one_line_error(rc, err) and not out_file.exists()


@pytest.mark.parametrize("command", ["slurm", "k8s"])
def test_tab_and_newline_still_arrive_byte_exact(capsys, command):
    rc, out, err = run(capsys, command, "--cluster", "local-ci", "--set", "NCCL_DEBUG_FILE=a\tb\nc")
    assert rc == 0, err
    if command == "k8s":
        values = [e["value"] for d in yaml.safe_load_all(out) if d for e in _envs(d) if e["name"] == "NCCL_DEBUG_FILE"]
        assert values and set(values) == {"a\tb\nc"}
    else:
        assert "export NCCL_DEBUG_FILE=$'a\\tb\\nc'" in out or "NCCL_DEBUG_FILE='a\tb\nc'" in out


def _envs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "env" and isinstance(v, list):
                yield from (e for e in v if isinstance(e, dict) and "value" in e)
            else:
                yield from _envs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _envs(v)


# -- 6. smaller ones ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["02", "0600", "0x2", "0o2", "0b10", "1_0", "1:20", "+0x2"])
def test_yaml11_integers_are_refused_where_a_count_is_meant(tmp_path, capsys, text):
    rc, _, err = run(capsys, "validate", descriptor(tmp_path, replace=("gpus_per_node: 2", f"gpus_per_node: {text}")))
    assert "c.yaml:25:18: node.gpus_per_node: " in one_line_error(rc, err)
    assert "not a plain decimal integer" in err or "got str" in err  # 0o2 is a string to YAML 1.1


@pytest.mark.parametrize("text", ["1_0.5", "1:20.5", ".nan", ".inf"])
def test_yaml11_floats_that_change_are_refused(tmp_path, capsys, text):
    rc, _, err = run(
        capsys,
        "validate",
        descriptor(tmp_path, replace=("gpu_model: FAKE-H100", f"gpu_model: FAKE-H100\n  nvlink_gbps: {text}")),
    )
    assert "node.nvlink_gbps" in one_line_error(rc, err)


def test_quoted_leading_zeros_stay_strings(tmp_path, capsys):
    path = descriptor(tmp_path, env_entry("env", "NCCL_IB_TC", "0106"))
    rc, out, err = run(capsys, "env", "--cluster", path, "--workload", "bench")
    assert rc in (0, 2) and "384" not in out + err and "70" not in out  # never read as octal


@pytest.mark.parametrize(
    "field,old,new",
    [
        ("slurm.mem", "exclusive: false", "exclusive: false\n  mem: \u0661\u0668\u0660\u0660G"),
        ("node.numa_nodes[0].cpus", 'cpus: "0"', 'cpus: "\u0660"'),
        ("software.nccl", 'nccl: "2.30.7"', 'nccl: "\u0662.30.7"'),
        ("node.gpus[0].pci_bus_id", "{index: 0, numa: 0}", "{index: 0, numa: 0, pci_bus_id: '0000:1b:00.\u0660'}"),
    ],
)
def test_non_ascii_digits_are_refused(tmp_path, capsys, field, old, new):
    rc, _, err = run(capsys, "slurm", "--cluster", descriptor(tmp_path, replace=(old, new)), "--workload", "bench")
    assert f": {field}: " in one_line_error(rc, err)


@pytest.mark.parametrize("hostile", ["\x1b[2J\x1b[H", "a\rFAKE", "\x9b31m", "a\u2028b"])
def test_error_lines_carry_no_raw_control_characters(tmp_path, capsys, hostile):
    for argv in (
        ["env", "--cluster", hostile],
        ["env", "--cluster", "local-ci", "--workload", hostile],
        ["env", "--cluster", "local-ci", "--set", f"{hostile}=1"],
        ["validate", str(tmp_path / hostile)],
    ):
        rc, _out, err = run(capsys, *argv)
        one_line_error(rc, err)
        assert "\x1b" not in err and "\r" not in err and "\x9b" not in err


def test_cli_empty_workload_is_an_error_not_the_default(capsys):
    rc, out, err = run(capsys, "env", "--cluster", "local-ci", "--workload", "")
    assert "--workload" in one_line_error(rc, err) and out == ""
    rc, out, err = run(capsys, "env", "--cluster", "")
    assert "--cluster" in one_line_error(rc, err) and out == ""


@pytest.mark.parametrize(
    "where,value", [("network", "[]"), ("network", '["lo,eth0"]'), ("network", '["^lo"]'), ("kubernetes", "[]")]
)
def test_bootstrap_interfaces_must_name_real_interfaces(tmp_path, capsys, where, value):
    if where == "network":
        path = descriptor(tmp_path, replace=("bootstrap_interfaces: [lo]", f"bootstrap_interfaces: {value}"))
    else:
        path = descriptor(tmp_path, f"kubernetes:\n  bootstrap_interfaces: {value}\n")
    rc, out, err = run(capsys, "env", "--cluster", path, "--workload", "bench")
    assert f"{where}.bootstrap_interfaces" in one_line_error(rc, err) and "NCCL_SOCKET_IFNAME" not in out


@pytest.mark.parametrize(
    "written",
    ["name: local-ci", "name:\n  local-ci", "name: >-\n  local-ci", "name: 'local-ci' # c", 'name: "local-ci"'],
)
def test_init_from_discover_with_name_writes_a_valid_descriptor_or_refuses(tmp_path, capsys, written):
    found = tmp_path / "found.yaml"
    found.write_text(LOCAL_CI.replace("name: local-ci", written, 1))
    assert "name: local-ci" in LOCAL_CI
    rc, out, err = run(capsys, "init", str(tmp_path / "repo"), "--from-discover", str(found), "--name", "renamed")
    if rc == 0:
        rc, out, err = run(capsys, "validate", str(tmp_path / "repo" / "clusters" / "renamed.yaml"))
        assert rc == 0 and "renamed" in out, err
    else:
        assert "--name: cannot rename" in one_line_error(rc, err) and not (tmp_path / "repo").exists()


@pytest.mark.parametrize(
    "name", ["NVTX_INJECTION64_PATH", "PYTHONPYCACHEPREFIX", "OPENSSL_CONF", "PERL5LIB", "NODE_PATH"]
)
def test_code_loading_paths_need_the_opt_in_and_the_refusal_claims_no_plugin(capsys, name):
    """Names that make a library or interpreter load code from a folder (like PYTHONPATH) need --set-unchecked;
    the refusal says ncclgen's plugin data sets a name only where it does (LD_LIBRARY_PATH, the plugins)."""
    rc, out, err = run(capsys, "slurm", "--cluster", "local-ci", "--set", f"{name}=/tmp/x")
    line = one_line_error(rc, err)
    assert f"--set-unchecked {name}=VALUE" in line and "plugin data" not in line and out == ""
    rc, out, err = run(capsys, "slurm", "--cluster", "local-ci", "--set", "LD_LIBRARY_PATH=/tmp/x")
    assert "ncclgen's own plugin data sets it" in one_line_error(rc, err)
