"""Property: whatever bytes `ncclgen validate` is given, it exits 0 or 2, never prints a traceback,
and every line it prints on stderr is one printable `ncclgen: error|warning: FILE...` line (all the
errors of a file are reported at once, one line each; warnings never change the exit status).

Inputs: arbitrary YAML documents (nested dicts/lists/scalars dumped with yaml.safe_dump), mutations of
a valid descriptor (a value replaced, a key dropped or added, a line deleted, duplicated or cut), and
arbitrary bytes. Runs in-process through ncclgen.cli.main, the function the console script calls, so a
few hundred examples stay fast on 2 cores.
"""

from __future__ import annotations

import copy
import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclgen import datapaths
from ncclgen.cli import main
from ncclgen.load import yamlio

VALID_FILE = Path(datapaths.bundled("clusters")) / "h100-ib.yaml"
VALID_TEXT = VALID_FILE.read_text()
VALID_DATA = yamlio.load_text(VALID_TEXT, "h100-ib.yaml").data

FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20))
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=16,
)


def dump(value) -> bytes:
    # allow_unicode=False escapes everything outside ASCII, lone surrogates included
    return yaml.dump(value, Dumper=yaml.CSafeDumper, allow_unicode=False, sort_keys=False).encode("ascii")


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "descriptor.yaml"


def validate(path: Path, content: bytes) -> None:
    """Run `ncclgen validate path` on ``content`` and check the contract of a CLI run."""
    path.write_bytes(content)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(["validate", str(path)])
        except SystemExit as exc:  # validate exits 2 itself after printing one line per bad file
            code = exc.code
    stderr = err.getvalue()
    assert "Traceback" not in stderr
    assert code in (0, 2), (code, stderr)
    assert stderr == "" or stderr.endswith("\n"), stderr
    lines = stderr.splitlines()
    assert all(line.isprintable() for line in lines), stderr
    warnings = [line for line in lines if line.startswith(f"ncclgen: warning: {path}:")]
    errors = [line for line in lines if line.startswith(f"ncclgen: error: {path}")]
    assert len(warnings) + len(errors) == len(lines), stderr
    assert len(lines) <= 51, stderr  # at most 50 problems and a count of the rest
    if code == 0:
        assert not errors and out.getvalue().startswith(f"{path}: ok (")
    else:
        assert out.getvalue() == "" and errors and not warnings, stderr


@settings(FUZZ, max_examples=100)
@given(document=values)
def test_arbitrary_yaml_documents(target, document):
    validate(target, dump(document))


def paths(node, prefix=()):
    """Every key path into ``node`` (dict keys and list indexes), parents before children."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield (*prefix, key)
        yield from paths(child, (*prefix, key))


VALID_PATHS = list(paths(VALID_DATA))
# Near-miss values reach the cross-field checks (duplicate or overlapping CPUs, missing GPUs, unknown
# source ids...) that random structures rarely get past the type checks to.
near_miss = st.one_of(
    st.integers(-2, 10),
    st.sampled_from(["0-3", "3-1", "0-55,112-167", "", "mlx5_0", "auto", "dgx-guide", "nope", "2.30"]),
)


@st.composite
def mutated_descriptor(draw) -> object:
    """The valid h100-ib data with one value replaced, one key removed or one key added, anywhere."""
    data = copy.deepcopy(VALID_DATA)
    path = draw(st.sampled_from(VALID_PATHS))
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    action = draw(st.sampled_from(["replace", "near-miss", "drop", "add"]))
    if action == "replace":
        parent[path[-1]] = draw(values)
    elif action == "near-miss":
        parent[path[-1]] = draw(near_miss)
    elif action == "drop":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[draw(st.text(max_size=12))] = draw(values)
    else:
        parent.append(copy.deepcopy(parent[path[-1]]))  # a duplicated list item
    return data


@settings(FUZZ, max_examples=150)
@given(document=mutated_descriptor())
def test_mutated_descriptors(target, document):
    validate(target, dump(document))


@st.composite
def edited_text(draw) -> bytes:
    """The valid file's text with a line deleted or duplicated, or cut short at any character."""
    lines = VALID_TEXT.splitlines(keepends=True)
    i = draw(st.integers(0, len(lines) - 1))
    action = draw(st.sampled_from(["delete", "duplicate", "cut"]))
    if action == "delete":
        del lines[i]
    elif action == "duplicate":
        lines.insert(i, lines[i])
    else:
        return VALID_TEXT[: draw(st.integers(0, len(VALID_TEXT)))].encode()
    return "".join(lines).encode()


@settings(FUZZ, max_examples=100)
@given(content=edited_text())
def test_edited_descriptor_text(target, content):
    validate(target, content)


@settings(FUZZ, max_examples=100)
@given(content=st.binary(max_size=300))
def test_arbitrary_bytes(target, content):
    validate(target, content)


def test_the_contract_check_accepts_a_valid_file(target):
    """The unmodified preset passes through validate(), so the properties above test real runs."""
    validate(target, VALID_TEXT.encode())
