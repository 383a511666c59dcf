"""Property (issue 15, class 7): whatever a user hands any entry point, ncclgen exits 0, 1 or 2; on 2
its stderr is error lines only (one for everything but a descriptor, which lists each problem), each
naming the file with its line for file content; never a traceback; nothing written to -o on failure; a
1 MiB input is answered like any other (how long it takes is measured in benchmarks/big_inputs.py).

Entry points: CLI arguments (env, explain, slurm, k8s, lint, validate, clusters, monitor summary), a
descriptor, a workload, ncclgen.yaml, lint input from a file and from stdin, `monitor summary` input.
Runs in-process through ncclgen.cli.main (the console script's function). Deterministic for CI:
derandomized, a fixed number of examples per entry point (about 20 s in all on 2 cores).
"""

from __future__ import annotations

import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclgen import datapaths
from ncclgen.cli import main
from ncclgen.errors import _UNPRINTABLE

FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
LOCAL_CI = (Path(datapaths.bundled("clusters")) / "local-ci.yaml").read_text()
WORKLOAD = (Path(datapaths.bundled("workloads")) / "bench.yaml").read_text()
WHOLE_FILE = (
    "empty document",
    "larger than",
    "binary data",
    "not UTF-8",
    ": is a",
    "no such file",
    "expected a mapping, got",
    "cannot read",
    "no samples in",
    "more problem(s) not shown",
)

HOSTILE = [
    "",
    "0",
    "010",
    "0x10",
    "1_0",
    "1:20",
    "-1",
    "1" * 5000,
    "\x00",
    "\x1b[2J",
    "\r",
    "\u0085",
    "\u2028",
    "\udcff",
    "$(touch PWNED)",
    "`id`",
    "'",
    '"',
    "\\",
    "\n",
    "\t",
    "{",
    "[",
    "]",
    "}",
    "&a",
    "*a",
    "!!python/object:os.system",
    "<<EOF",
    "#",
    "é",
    "\u0661",
    "a" * 300,
    "BASH_ENV",
    "LD_PRELOAD=/x",
    "NCCL_IB_HCA==mlx5_0",
    ".nan",
    "~",
    "null",
    "yes",
    "- x",
    ": y",
    "? z",
    "%TAG",
]
text = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=12))


def call(argv, *, stdin: bytes | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:  # validate exits through sys.exit with its status
                code = exc.code
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()


def check(argv, code: int, out: str, err: str, *, file: str | None = None, many: bool = False) -> None:
    """The contract of one run; ``file``: the file whose content was fuzzed (its errors carry a line)."""
    assert "Traceback" not in err and "Traceback" not in out, err
    assert code in ((0, 1, 2, 3) if argv[0] == "lint" else (0, 1, 2)), (argv, code, err)  # lint: 3 = not all read
    lines = err.splitlines()
    assert not any(_UNPRINTABLE.search(line) for line in lines), repr(err)  # no control characters
    if code == 2:
        errors = [line for line in lines if line.startswith("ncclgen: error: ")]
        assert errors and all(
            line.startswith(("ncclgen: error: ", "ncclgen: warning: ", "ncclgen: info: ")) for line in lines
        ), err
        assert many or len(errors) == 1, err
        for line in errors:
            if file is not None and file in line and not any(w in line for w in WHOLE_FILE):
                rest = line.split(file, 1)[1]
                assert rest[:1] == ":" and rest[1:2].isdigit(), f"no line:col for file content: {line}"


def write(path: Path, data: str | bytes) -> str:
    if os.path.lexists(path):
        os.unlink(path)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    path.write_bytes(data)
    return str(path)


def mutate(base: str, edits) -> str:
    lines = base.splitlines()
    for kind, index, value in edits:
        i = index % len(lines)
        if kind == "value" and ":" in lines[i]:
            key = lines[i].split(":", 1)[0]
            lines[i] = f"{key}: {value}"
        elif kind == "insert":
            lines.insert(i, value)
        elif kind == "delete":
            del lines[i]
        else:
            lines[i] = lines[i] + value
    return "\n".join(lines) + "\n"


edits = st.lists(
    st.tuples(st.sampled_from(["value", "insert", "delete", "append"]), st.integers(0, 200), text),
    min_size=1,
    max_size=3,
)


# -- CLI arguments -------------------------------------------------------------------------------------

COMMANDS = [
    ["env"],
    ["explain"],
    ["slurm"],
    ["k8s"],
    ["env", "--format", "json"],
    ["clusters", "show"],
    ["validate"],
    ["lint"],
    ["monitor", "summary"],
    ["diff"],
]
OPTIONS = ["--cluster", "--tier", "--workload", "--nodes", "--set", "--format", "-o", "--debug", "--"]


@settings(FUZZ, max_examples=120)
@given(
    command=st.sampled_from(COMMANDS),
    args=st.lists(
        st.one_of(st.sampled_from(OPTIONS), st.sampled_from(["local-ci", "h100-ib", "3", "bench"]), text), max_size=6
    ),
)
def test_cli_arguments(tmp_path, command, args):
    out_file = tmp_path / "out.txt"
    if out_file.exists():
        out_file.unlink()
    argv = [*command, *args]
    if command[0] != "validate" and "-o" not in args:
        argv += ["-o", str(out_file)] if command[0] in ("slurm", "k8s", "env") else []
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code, out, err = call(argv)
    finally:
        os.chdir(cwd)
    check(argv, code, out, err, many=command[0] == "validate")
    if code != 0:
        assert not out_file.exists(), "something written to -o on failure"


# -- file contents ----------------------------------------------------------------------------------------


@settings(FUZZ, max_examples=80)
@given(changes=edits)
def test_descriptor(tmp_path, changes):
    path = write(tmp_path / "c.yaml", mutate(LOCAL_CI, changes))
    out_file = tmp_path / "job.sh"
    if out_file.exists():
        out_file.unlink()
    for argv in (["validate", path], ["slurm", "--cluster", path, "--workload", "bench", "-o", str(out_file)]):
        code, out, err = call(argv)
        check(argv, code, out, err, file=path, many=True)
        if argv[0] == "slurm" and code != 0:
            assert not out_file.exists()


@settings(FUZZ, max_examples=60)
@given(changes=edits)
def test_workload(tmp_path, changes):
    path = write(tmp_path / "w.yaml", mutate(WORKLOAD, changes))
    argv = ["k8s", "--cluster", "local-ci", "--workload", path]
    check(argv, *call(argv), file=path)


@settings(FUZZ, max_examples=40)
@given(
    content=st.one_of(
        text, st.builds(lambda k, v: f"{k}: {v}\n", st.sampled_from(["cluster", "tier", "workload", "x"]), text)
    )
)
def test_project_file(tmp_path, content):
    write(tmp_path / "ncclgen.yaml", content)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        os.environ.pop("NCCLGEN_CLUSTER", None)
        code, out, err = call(["env"])
    finally:
        os.chdir(cwd)
    check(["env"], code, out, err, file="ncclgen.yaml")


lint_lines = st.lists(
    st.one_of(
        text,
        st.builds(
            lambda k, v: f"{k}={v}",
            st.sampled_from(
                ["NCCL_DEBUG", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_BUFFSIZE", "export NCCL_ALGO", "X"]
            ),
            text,
        ),
        st.sampled_from(
            [
                "cat <<EOF",
                'echo "$((1<<2))"',
                "EOF",
                '{"env": [',
                "env:",
                "- name: NCCL_DEBUG",
                "  value: INFO",
                "---",
                "'",
                '"',
            ]
        ),
    ),
    max_size=8,
)


@settings(FUZZ, max_examples=80)
@given(lines=lint_lines, via_stdin=st.booleans())
def test_lint_input(tmp_path, lines, via_stdin):
    content = "\n".join(lines) + "\n"
    if via_stdin:
        argv = ["lint", "--cluster", "local-ci", "-"]
        code, out, err = call(argv, stdin=content.encode("utf-8", "surrogateescape"))
        check(argv, code, out, err, file="<stdin>")
    else:
        path = write(tmp_path / "in.env", content)
        argv = ["lint", path]
        check(argv, *call(argv), file=path)


record = st.fixed_dictionaries(
    {
        "hostname": text,
        "gpu": st.one_of(st.integers(), text),
        "util_gpu_pct": st.one_of(st.none(), st.floats(allow_nan=True), text),
    }
)


@settings(FUZZ, max_examples=40)
@given(lines=st.lists(st.one_of(record.map(lambda r: __import__("json").dumps(r)), text), min_size=1, max_size=5))
def test_monitor_summary(tmp_path, lines):
    path = write(tmp_path / "m.jsonl", "\n".join(lines) + "\n")
    argv = ["monitor", "summary", path]
    check(argv, *call(argv), file=path)


# -- 1 MiB inputs (timed in benchmarks/big_inputs.py) ------------------------------------------------------------------------------

MIB = 1 << 20
BIG_INPUTS = {
    "lint-unclosed-quote": ("in.sh", lambda: '"\n' + "NCCL_DEBUG=INFO\n" * ((MIB - 2) // 16), ["lint"]),
    "lint-env": ("in.env", lambda: "NCCL_DEBUG=INFO\n" * (MIB // 16 - 1), ["lint"]),
    "lint-json": (
        "in.json",
        lambda: '{"env": [' + ",".join(['{"name": "NCCL_DEBUG", "value": "INFO"}'] * (MIB // 40 - 2)) + "]}",
        ["lint"],
    ),
    "lint-manifest": ("in.yaml", lambda: "env:\n" + "- {name: NCCL_DEBUG, value: INFO}\n" * (MIB // 34 - 1), ["lint"]),
    "lint-heredoc": ("in.sh", lambda: "cat <<EOF\n" + "x\n" * (MIB // 2 - 10), ["lint"]),
    "descriptor-comment": (
        "c.yaml",
        lambda: LOCAL_CI + ("#" + "x" * 98 + "\n") * ((MIB - len(LOCAL_CI)) // 100),
        ["validate"],
    ),
    "descriptor-list": (
        "c.yaml",
        lambda: (
            LOCAL_CI + "env:\n" + "  - {name: NCCL_DEBUG, value: INFO, reason: r}\n" * ((MIB - len(LOCAL_CI)) // 50)
        ),
        ["validate"],
    ),
    # the largest descriptor read (yamlio.MAX_BYTES, 256 KiB), every entry an error to report
    "descriptor-list-256k": (
        "c.yaml",
        lambda: (
            LOCAL_CI
            + "env:\n"
            + "  - {name: NCCL_DEBUG, value: INFO, reason: r}\n" * ((MIB // 4 - len(LOCAL_CI)) // 50)
        ),
        ["validate"],
    ),
    "monitor": (
        "m.jsonl",
        lambda: '{"hostname": "h", "gpu": 0, "util_gpu_pct": 90}\n' * (MIB // 50),
        ["monitor", "summary"],
    ),
}


@pytest.mark.parametrize("case", sorted(BIG_INPUTS))
def test_a_1mib_input_is_answered(tmp_path, case):
    name, make, command = BIG_INPUTS[case]
    data = make()
    assert MIB * (0.2 if case.endswith("256k") else 0.9) < len(data) <= MIB, len(data)
    path = write(tmp_path / name, data)
    code, out, err = call([*command, path])
    check(command, code, out, err, file=path, many=command == ["validate"])
