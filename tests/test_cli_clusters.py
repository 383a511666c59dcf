"""`ncclgen clusters list|show`, `validate` and `schema` through the real CLI.

Bad input must end as ONE line on stderr naming the file (and key path, line:col where there is one),
exit status 2 and no traceback; the bad-input corpus in tests/data/bad/ marks the line each error must
name with a trailing `# <- error` comment.

Golden file: tests/golden/clusters-show-h100-ib.txt. After an intended change to `clusters show`, run
    NCCLGEN_REGEN_GOLDEN=1 python -m pytest -q tests/test_cli_clusters.py
and review the diff before committing it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import goldens
import jsonschema
import pytest

from ncclgen import datapaths
from ncclgen.cli import main
from ncclgen.load import descriptor, yamlio

TESTS = Path(__file__).parent
BAD = TESTS / "data" / "bad"
GOLDEN = TESTS / "golden" / "clusters-show-h100-ib.txt"
BUNDLED = Path(datapaths.bundled("clusters"))
PRESETS = sorted(p.stem for p in BUNDLED.glob("*.yaml"))


def start_cli(*args: str, cwd: Path) -> subprocess.Popen:
    """The real entry point in a subprocess, outside any ./clusters and without $NCCLGEN_CLUSTERS."""
    env = {k: v for k, v in os.environ.items() if k != "NCCLGEN_CLUSTERS"}
    return subprocess.Popen(
        [sys.executable, "-m", "ncclgen", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
    )


def finish(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return finish(start_cli(*args, cwd=cwd))


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("ncclgen: error: ")
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# -- golden `clusters show` -------------------------------------------------------------------------


def test_clusters_show_h100_ib_matches_golden(tmp_path):
    proc = run_cli("clusters", "show", "h100-ib", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    goldens.check(GOLDEN, proc.stdout)


def test_clusters_show_is_deterministic(tmp_path):
    runs = [start_cli("clusters", "show", "oci-bm-gpu-h100-8", cwd=tmp_path) for _ in range(2)]
    first, second = (finish(p).stdout for p in runs)
    assert first and first == second


# -- the bad-input corpus -----------------------------------------------------------------------------

# file -> (key path the error names or None for a whole-file error, words of the message)
CORPUS = {
    "syntax-error.yaml": (None, "YAML syntax error: did not find expected ',' or ']'"),
    "empty.yaml": (None, "empty document, expected a mapping"),
    "top-level-list.yaml": (None, "expected a mapping, got a list"),
    "unknown-key.yaml": ("node.gpus_per_nod", "unknown key 'gpus_per_nod' (did you mean 'gpus_per_node'?)"),
    "wrong-type.yaml": ("node.gpus_per_node", "expected an integer, got str 'eight'"),
    "version-float.yaml": ("software.nccl", "expected a string, got float 2.3 (put it in quotes)"),
    "out-of-range.yaml": ("node.gpus_per_node", "expected a value >= 1, got 0"),
    "bad-cpulist.yaml": ("node.numa_nodes[1].cpus", "'4-7,x' does not match a cpuset list"),
    "duplicate-gpu.yaml": ("node.gpus[1].index", "GPU 0 is listed twice"),
    "duplicate-key.yaml": ("node.gpus_per_node", "duplicate key"),
    "bad-resource-name.yaml": ("kubernetes.resources.RDMA/ib device", "is not a Kubernetes resource name"),
    "alias-bomb.yaml": ("a5", "document expands to more than 200000 values (YAML alias bomb?)"),
    "deep-nesting.yaml": (None, "nested more than 64 levels deep"),
    "self-alias.yaml": ("name", "nested more than 64 levels deep (a YAML alias refers to itself?)"),
    "binary.yaml": (None, "binary data (NUL byte), expected a YAML file"),
    "tab-indent.yaml": (None, "YAML syntax error: tabs are not allowed in YAML indentation"),
}


def test_corpus_table_covers_every_file():
    assert sorted(CORPUS) == sorted(p.name for p in BAD.iterdir())


def marked_line(path: Path) -> int | None:
    """The 1-based line carrying `# <- error`, or None (binary and empty files have no line)."""
    if b"\0" in path.read_bytes():
        return None
    hits = [i for i, ln in enumerate(path.read_text().splitlines(), 1) if ln.endswith("# <- error")]
    assert len(hits) <= 1, path
    return hits[0] if hits else None


@pytest.fixture(scope="module")
def corpus_runs(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """`ncclgen validate FILE` for every corpus file, started together: the CPUs overlap the
    interpreter start-ups that dominate these runs."""
    cwd = tmp_path_factory.mktemp("corpus")
    procs = {name: start_cli("validate", str(BAD / name), cwd=cwd) for name in sorted(CORPUS)}
    return {name: finish(proc) for name, proc in procs.items()}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_bad_file_is_one_line_exit_2(corpus_runs, name):
    key_path, words = CORPUS[name]
    path = BAD / name
    line = marked_line(path)
    where = f"{path}:{line}:" if line else f"{path}: "
    err = assert_one_line_error(corpus_runs[name], where, words)
    if key_path:
        assert f": {key_path}: " in err


@pytest.mark.parametrize("name", ["wrong-type.yaml", "binary.yaml"])
def test_clusters_show_reports_bad_files_the_same_way(tmp_path, name):
    path = BAD / name
    assert_one_line_error(run_cli("clusters", "show", str(path), cwd=tmp_path), str(path), CORPUS[name][1])


def test_alias_bomb_fails_fast():
    """Billion laughs (9^9 values if expanded) is refused, never expanded (timed in benchmarks/big_inputs.py)."""
    with pytest.raises(yamlio.UserError, match="alias bomb"):
        descriptor.load(str(BAD / "alias-bomb.yaml"))


def test_directory_missing_file_and_unknown_name(tmp_path):
    missing = tmp_path / "nope.yaml"
    cases = {  # argv -> what the one error line must contain
        ("validate", str(BAD)): f"{BAD}: is a directory, expected a YAML file",
        ("validate", str(missing)): f"{missing}: no such file",
        ("clusters", "show", str(missing)): f"{missing}: no such descriptor file",
        ("clusters", "show", "h100-bi"): "unknown cluster 'h100-bi' (did you mean 'h100-ib'?); available: "
        + ", ".join(PRESETS),
    }
    procs = {argv: start_cli(*argv, cwd=tmp_path) for argv in cases}
    for argv, proc in procs.items():
        assert_one_line_error(finish(proc), cases[argv])


def test_validate_mixed_files_reports_each_and_exits_2(tmp_path):
    good = BUNDLED / "h100-ib.yaml"
    proc = run_cli("validate", str(good), str(BAD / "wrong-type.yaml"), str(BAD / "empty.yaml"), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == f"{good}: ok (h100-ib: 8x H100-SXM5-80GB, infiniband, CPUs 0-223)\n"
    assert len(proc.stderr.splitlines()) == 2 and "Traceback" not in proc.stderr


def test_validate_every_bundled_preset(tmp_path):
    proc = run_cli("validate", *sorted(str(p) for p in BUNDLED.glob("*.yaml")), cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert len(proc.stdout.splitlines()) == len(PRESETS)


# -- `ncclgen schema` ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def schema(tmp_path_factory) -> dict:
    proc = run_cli("schema", cwd=tmp_path_factory.mktemp("schema"))
    assert (proc.returncode, proc.stderr) == (0, "")
    return json.loads(proc.stdout)


def test_schema_is_valid_json_schema_and_accepts_every_preset(schema):
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for name in PRESETS:
        data = yamlio.load_file(str(BUNDLED / f"{name}.yaml")).data
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]
        assert errors == [], name


def test_schema_rejects_what_the_loader_rejects(schema):
    """The schema is generated from the same dataclasses, so an editor flags the same mistakes."""
    validator = jsonschema.Draft202012Validator(schema)
    for name in (
        "unknown-key.yaml",
        "wrong-type.yaml",
        "out-of-range.yaml",
        "version-float.yaml",
        "bad-resource-name.yaml",
    ):
        text = (BAD / name).read_text().replace("  # <- error", "")
        data = yamlio.load_text(text, name).data
        assert not validator.is_valid(data), name


# -- `clusters list` and the --cluster search order ---------------------------------------------------


def invoke(capsys, *args: str) -> tuple[int, str, str]:
    """In-process CLI (ncclgen.cli.main) for the search-order cases, which need many short runs."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_clusters_list_shows_every_preset(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NCCLGEN_CLUSTERS", raising=False)
    code, out, err = invoke(capsys, "clusters", "list")
    assert (code, err) == (0, "")
    rows = out.splitlines()
    assert rows[0].split() == ["NAME", "GPUS", "GPU", "MODEL", "FABRIC", "SOURCE"]
    listed = {row.split()[0]: row for row in rows[1:]}
    assert sorted(listed) == PRESETS
    assert listed["local-ci"].split()[1:4] == ["2", "FAKE-H100", "tcp"]
    assert listed["aws-p5"].split()[3] == "efa"
    assert "INVALID" not in out


def with_description(name: str, description: str) -> str:
    text = (BUNDLED / f"{name}.yaml").read_text()
    old = next(ln for ln in text.splitlines() if ln.startswith("description:"))
    return text.replace(old, f"description: {description}")


def test_cluster_search_order(tmp_path, monkeypatch, capsys):
    """$NCCLGEN_CLUSTERS (colon-separated, in order) beats ./clusters, which beats the bundled presets."""
    env_a, env_b, work = tmp_path / "a", tmp_path / "b", tmp_path / "work"
    for folder in (env_a, env_b, work / "clusters"):
        folder.mkdir(parents=True)
    (env_a / "h100-ib.yaml").write_text(with_description("h100-ib", "from NCCLGEN_CLUSTERS a"))
    (env_b / "h100-ib.yaml").write_text(with_description("h100-ib", "from NCCLGEN_CLUSTERS b"))
    (work / "clusters" / "h100-ib.yaml").write_text(with_description("h100-ib", "from ./clusters"))
    monkeypatch.chdir(work)

    def shown() -> str:
        code, out, err = invoke(capsys, "clusters", "show", "h100-ib")
        assert (code, err) == (0, "")
        return out.splitlines()[0]

    monkeypatch.setenv("NCCLGEN_CLUSTERS", f"{env_a}:{env_b}")
    assert shown() == "h100-ib: from NCCLGEN_CLUSTERS a"
    (env_a / "h100-ib.yaml").unlink()
    assert shown() == "h100-ib: from NCCLGEN_CLUSTERS b"
    monkeypatch.delenv("NCCLGEN_CLUSTERS")
    assert shown() == "h100-ib: from ./clusters"
    (work / "clusters" / "h100-ib.yaml").unlink()
    assert shown().startswith("h100-ib: 8x H100 SXM")

    code, out, _ = invoke(capsys, "clusters", "list")
    assert code == 0 and str(BUNDLED / "h100-ib.yaml") in out


def test_clusters_list_marks_an_invalid_descriptor(tmp_path, monkeypatch, capsys):
    """One broken file in a search folder must not hide the others."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NCCLGEN_CLUSTERS", str(tmp_path))
    (tmp_path / "broken.yaml").write_text((BAD / "wrong-type.yaml").read_text())
    code, out, err = invoke(capsys, "clusters", "list")
    assert (code, err) == (0, "")
    broken = next(row for row in out.splitlines() if row.startswith("broken "))
    assert "INVALID" in broken and "expected an integer" in broken
    assert {row.split()[0] for row in out.splitlines()[1:]} == set(PRESETS) | {"broken"}


def test_unknown_cluster_lists_what_is_available(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NCCLGEN_CLUSTERS", str(tmp_path))
    (tmp_path / "site-a.yaml").write_text(
        with_description("local-ci", "a site").replace("name: local-ci", "name: site-a")
    )
    code, out, err = invoke(capsys, "clusters", "show", "nosuch")
    assert (code, out) == (2, "")
    assert err.strip() == (
        "ncclgen: error: --cluster: unknown cluster 'nosuch'; available: " + ", ".join(sorted([*PRESETS, "site-a"]))
    )
