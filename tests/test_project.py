"""`ncclgen init` (the scaffolded repository really validates and lints), `ncclgen diff`, and the
pre-commit hooks in .pre-commit-hooks.yaml (their entries run real commands)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import skip_or_fail

from ncclgen import datapaths, plan
from ncclgen.cli import main
from ncclgen.load import descriptor, workload
from ncclgen.plan import rules

ROOT = Path(__file__).resolve().parent.parent
H100 = Path(datapaths.bundled("clusters")) / "h100-ib.yaml"
# A scaffold placeholder line: `key: TODO  # e.g. EXAMPLE` or `- {... TODO ...}  # e.g. EXAMPLE`.
TODO_LINE = re.compile(r"^(\s*(?:- |[A-Za-z_]+: ))(.*\bTODO\b.*?)\s+# e\.g\. (.*)$")


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """The CLI entry point in-process (fast); returns (exit status, stdout, stderr)."""
    try:
        code = main(list(args))
    except SystemExit as exc:  # `validate` exits 2 by itself, as it does from the console script
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """A real subprocess, outside this checkout's ./clusters and without $NCCLGEN_* defaults."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NCCLGEN_")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def fill_todos(text: str) -> str:
    """Replace each TODO value with the example on its line, as a user copying the examples would."""
    out = []
    for line in text.splitlines(keepends=True):
        m = TODO_LINE.match(line.rstrip("\n"))
        out.append(f"{m.group(1)}{m.group(3)}\n" if m else line)
    return "".join(out)


# -- init ---------------------------------------------------------------------------------------------

EXPECTED = [
    "clusters/lab.yaml",
    "ncclgen.yaml",
    "schema/descriptor.schema.json",
    "ci/check.sh",
    ".github/workflows/ncclgen.yml",
    "workloads/README.md",
]


def test_init_writes_the_repository_layout(tmp_path, capsys):
    code, out, err = cli(capsys, "init", str(tmp_path / "repo"), "--name", "lab")
    assert (code, err) == (0, "")
    for rel in EXPECTED:
        assert (tmp_path / "repo" / rel).is_file(), rel
        assert f"wrote {tmp_path / 'repo' / rel}" in out
    assert os.access(tmp_path / "repo" / "ci/check.sh", os.X_OK)
    project = yaml.safe_load((tmp_path / "repo" / "ncclgen.yaml").read_text())
    assert project == {"cluster": "lab", "tier": 1, "workload": workload.DEFAULT}
    schema = (tmp_path / "repo" / "schema/descriptor.schema.json").read_text()
    assert json.loads(schema) == descriptor.schema()
    flow = yaml.safe_load((tmp_path / "repo" / ".github/workflows/ncclgen.yml").read_text())
    assert any(step.get("run") == "bash ci/check.sh" for step in flow["jobs"]["check"]["steps"])


def test_scaffold_fails_validation_at_the_first_todo_and_passes_with_the_examples(tmp_path, capsys):
    cli(capsys, "init", str(tmp_path), "--name", "lab")
    path = tmp_path / "clusters/lab.yaml"
    text = path.read_text()
    assert text.startswith("# yaml-language-server: $schema=../schema/descriptor.schema.json\n")
    code, out, err = cli(capsys, "validate", str(path))
    first_int_todo = next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith("  gpus_per_node:"))
    assert code == 2 and out == ""
    assert err.startswith(f"ncclgen: error: {path}:{first_int_todo}:") and "node.gpus_per_node" in err
    # every placeholder a type check refuses is named at once, one line each, in file order
    lines = err.splitlines()
    assert len(lines) > 1 and all("'TODO'" in line for line in lines), err
    numbers = [int(line.split(f"{path}:")[1].split(":")[0]) for line in lines]
    assert numbers == sorted(numbers)

    filled = fill_todos(text)
    assert "TODO" not in re.sub(r"#.*", "", filled)  # every placeholder had an example
    path.write_text(filled)
    code, out, err = cli(capsys, "validate", str(path))
    # valid for Slurm; validate says what `ncclgen k8s` would refuse until the kubernetes lines are set (issue 31)
    assert code == 0 and all("`ncclgen k8s` would refuse" in line for line in err.splitlines()), err
    assert "ok (lab: 8x H100-SXM5-80GB, infiniband" in out
    # The examples are the reference preset's facts, so the filled file describes the same node.
    ex, got = descriptor.load(str(H100)), descriptor.load(str(path))
    assert [(n.id, n.cpus) for n in got.node.numa_nodes] == [(n.id, n.cpus) for n in ex.node.numa_nodes]
    assert got.node.gpus == ex.node.gpus

    def rail(r):
        return (r.hca, r.port, r.netdev, r.gbps, r.gpus, r.numa)

    assert [rail(r) for r in got.network.compute] == [rail(r) for r in ex.network.compute]
    assert [s.name for s in got.network.storage] == [s.name for s in ex.network.storage]


def test_init_never_overwrites_without_force(tmp_path, capsys):
    cli(capsys, "init", str(tmp_path), "--name", "lab")
    (tmp_path / "ncclgen.yaml").write_text("tier: 3\n")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    code, out, err = cli(capsys, "init", str(tmp_path), "--name", "lab")
    assert code == 2 and out == ""
    assert (
        err == f"ncclgen: error: {tmp_path / 'clusters/lab.yaml'}: already exists; not overwriting it (use --force)\n"
    )
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    code, _, err = cli(capsys, "init", str(tmp_path), "--name", "lab", "--force")
    assert (code, err) == (0, "")
    assert (tmp_path / "ncclgen.yaml").read_text() != "tier: 3\n"


def test_init_checks_everything_before_writing_anything(tmp_path, capsys):
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci/check.sh").write_text("mine\n")
    code, _, err = cli(capsys, "init", str(tmp_path), "--name", "lab")
    assert code == 2 and "ci/check.sh: already exists" in err
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["ci", "ci/check.sh"]


@pytest.mark.parametrize("name", ["Lab", "a_b", "-x", "a.b"])
def test_init_rejects_a_name_that_is_not_a_dns_label(tmp_path, capsys, name):
    code, out, err = cli(capsys, "init", str(tmp_path), "--name", name)
    assert code == 2 and out == "" and "--name" in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_init_default_name_is_the_folder_name_quoted_in_yaml(tmp_path, capsys):
    # 'true' and '123' are DNS-1123 labels that bare YAML would read as a boolean and an integer.
    for name in ("true", "123"):
        cli(capsys, "init", str(tmp_path / name))
        project = yaml.safe_load((tmp_path / name / "ncclgen.yaml").read_text())
        assert project["cluster"] == name
        text = fill_todos((tmp_path / name / f"clusters/{name}.yaml").read_text())
        (tmp_path / name / f"clusters/{name}.yaml").write_text(text)
        assert descriptor.load(str(tmp_path / name / f"clusters/{name}.yaml")).name == name


def _discovered(tmp_path: Path) -> Path:
    """A real `ncclgen discover` output: the DGX H100 sysfs fixture with a FAKE NVML (no GPU here)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import fake_nvml
    import sysfs_fixtures

    from ncclgen.node import discover

    layout = sysfs_fixtures.dgx_h100(tmp_path / "sysfs")
    text = discover.discover(
        str(layout.root),
        backend=fake_nvml.FakeNvml.from_layout(layout),
        hostname="dgx-001",
        software={k: (v, "test") for k, v in (("nccl", "2.30.7"), ("torch", "2.13.0"), ("cuda", "12.9"))},
    )
    path = tmp_path / "node.yaml"
    path.write_text(text)
    return path


def test_init_from_discover_keeps_the_discovered_facts(tmp_path, capsys):
    node = _discovered(tmp_path)
    code, out, err = cli(capsys, "init", str(tmp_path / "repo"), "--from-discover", str(node))
    assert (code, err) == (0, ""), err
    written = (tmp_path / "repo/clusters/dgx-001.yaml").read_text()
    assert written == "# yaml-language-server: $schema=../schema/descriptor.schema.json\n" + node.read_text()
    assert "replace the TODOs" not in out
    assert yaml.safe_load((tmp_path / "repo/ncclgen.yaml").read_text())["cluster"] == "dgx-001"


def test_init_from_discover_with_a_new_name_renames_the_descriptor(tmp_path, capsys):
    node = _discovered(tmp_path)
    code, _, err = cli(capsys, "init", str(tmp_path / "repo"), "--from-discover", str(node), "--name", "prod-a")
    assert (code, err) == (0, "")
    path = tmp_path / "repo/clusters/prod-a.yaml"
    assert descriptor.load(str(path)).name == "prod-a"
    assert path.read_text().count("# guess:") == node.read_text().count("# guess:")  # comments kept


def test_init_from_discover_refuses_an_invalid_file(tmp_path, capsys):
    bad = tmp_path / "node.yaml"
    bad.write_text(H100.read_text().replace("gpus_per_node: 8", "gpus_per_node: 9"))
    code, out, err = cli(capsys, "init", str(tmp_path / "repo"), "--from-discover", str(bad))
    assert code == 2 and out == "" and f"{bad}:" in err and "node.gpus" in err
    assert not (tmp_path / "repo").exists()


def test_check_sh_passes_shellcheck(tmp_path, capsys):
    if shutil.which("shellcheck") is None:
        skip_or_fail("shellcheck is not installed")
    cli(capsys, "init", str(tmp_path), "--name", "lab")
    proc = subprocess.run(["shellcheck", str(tmp_path / "ci/check.sh")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.slow  # about 30 ncclgen processes: 3 tiers x (env, slurm, k8s) each piped into lint
def test_ci_check_fails_on_the_scaffold_and_passes_once_filled(tmp_path, capsys):
    """The scaffolded CI end to end: validate, TODO check, schema check, env/slurm/k8s | lint per tier."""
    cli(capsys, "init", str(tmp_path), "--name", "lab")
    proc = run("bash", "ci/check.sh", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "clusters/lab.yaml:" in proc.stderr and "node.gpus_per_node" in proc.stderr

    cluster = tmp_path / "clusters/lab.yaml"
    cluster.write_text(fill_todos(cluster.read_text()).replace('"H100-SXM5-80GB"', "TODO"))
    proc = run("bash", "ci/check.sh", cwd=tmp_path)
    assert proc.returncode == 1 and "gpu_model: TODO" in proc.stdout and "replace the TODO" in proc.stderr

    cluster.write_text(fill_todos(cluster.read_text()).replace("gpu_model: TODO", "gpu_model: H100-SXM5-80GB"))
    # The pods of an InfiniBand cluster need the host network (or in-pod names) and an RDMA resource: with
    # the scaffold's kubernetes lines still commented, the k8s render refuses them, naming the keys.
    proc = run("bash", "ci/check.sh", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "clusters/lab.yaml:" in proc.stderr and "kubernetes.host_network" in proc.stderr
    assert "kubernetes.resources" in proc.stderr
    text = cluster.read_text()
    for line in ("  # resources: {rdma/rdma_shared_device_a: 1}", "  # host_network: true"):
        assert line in text
        text = text.replace(line, line.replace("# ", "", 1))
    cluster.write_text(text)
    proc = run("bash", "ci/check.sh", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("ci/check.sh: 1 descriptor(s) ok")

    (tmp_path / "schema/descriptor.schema.json").write_text("{}\n")
    proc = run("bash", "ci/check.sh", cwd=tmp_path)
    assert proc.returncode == 1 and "descriptor.schema.json is stale" in proc.stderr


# -- pre-commit hooks ---------------------------------------------------------------------------------


def hooks() -> dict[str, dict]:
    return {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}


def run_hook(hook: dict, files: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """As pre-commit runs a hook: the entry split like a shell would, then the matching file names."""
    matching = [f for f in files if re.search(hook["files"], f)]
    return run(*shlex.split(hook["entry"]), *matching, cwd=cwd)


def test_hooks_are_complete_and_name_real_commands(capsys):
    hs = hooks()
    assert set(hs) == {"ncclgen-validate", "ncclgen-lint"}
    for h in hs.values():
        assert {"id", "name", "entry", "language", "files"} <= set(h)
        assert h["language"] == "python"  # pre-commit pip-installs this repository for it
        sub = h["name"].split()[1]
        assert f"ncclgen {sub}" in h["entry"]
        code, out, _ = cli(capsys, sub, "--help")
        assert code == 0 and out.startswith(f"Usage: ncclgen {sub}")


def test_validate_hook_matches_descriptors_and_runs(tmp_path):
    h = hooks()["ncclgen-validate"]
    assert re.search(h["files"], "clusters/h100-ib.yaml") and re.search(h["files"], "clusters/x.yml")
    assert not re.search(h["files"], "clusters/sub/x.yaml") and not re.search(h["files"], "ncclgen.yaml")
    (tmp_path / "clusters").mkdir()
    shutil.copy(H100, tmp_path / "clusters/a.yaml")
    (tmp_path / "clusters/b.yaml").write_text(H100.read_text().replace("fabric: infiniband", "fabric: ib"))
    proc = run_hook(h, ["clusters/a.yaml", "README.md"], tmp_path)
    assert proc.returncode == 0 and "clusters/a.yaml: ok" in proc.stdout
    proc = run_hook(h, ["clusters/a.yaml", "clusters/b.yaml"], tmp_path)
    assert proc.returncode == 2 and "clusters/b.yaml:" in proc.stderr and "network.fabric" in proc.stderr


def test_lint_hook_fails_on_invented_variables_and_passes_rendered_env(tmp_path, capsys):
    h = hooks()["ncclgen-lint"]
    assert re.search(h["files"], "prod.env") and re.search(h["files"], "jobs/train.sbatch")
    assert not re.search(h["files"], "clusters/h100-ib.yaml")
    code, out, _ = cli(capsys, "env", "--cluster", str(H100), "--tier", "3")
    assert code == 0
    (tmp_path / "good.env").write_text(out)
    (tmp_path / "seed.env").write_text("export NCCL_TIMEOUT=1800\nexport NCCL_FP16_ENABLE=1\n")
    assert run_hook(h, ["good.env"], tmp_path).returncode == 0
    proc = run_hook(h, ["good.env", "seed.env"], tmp_path)
    assert proc.returncode == 1 and "NCCL_TIMEOUT" in proc.stdout + proc.stderr


# -- diff ---------------------------------------------------------------------------------------------


def test_diff_tier_1_vs_3_shows_the_tier_2_and_3_additions(capsys):
    code, out, err = cli(capsys, "diff", "--cluster", "h100-ib", "--tier", "1", "--vs-tier", "3")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"ncclgen diff: h100-ib tier 1 -> h100-ib tier 3 (workload {workload.DEFAULT}, 2 node(s))"
    added = [ln[2:].split("=")[0] for ln in lines if ln.startswith("+ ")]
    # h100-ib is InfiniBand with 8 rails, the default workload runs on 2 nodes: tier 2 adds the
    # multi-node IB settings, tier 3 the CTA floor and the affinity switch that goes with binding.
    assert added == ["NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_TIMEOUT", "NCCL_MIN_CTAS", "NCCL_IGNORE_CPU_AFFINITY"]
    assert not [ln for ln in lines if ln.startswith(("- ", "~ NCCL"))]
    by_id = {r.id: r for r in rules.load_rules()}
    qps = lines.index("+ NCCL_IB_QPS_PER_CONNECTION=4    [tier 2, rule ib-qps]")
    assert lines[qps + 1] == "    why: " + " ".join(by_id["ib-qps"].reason.split())
    assert lines[qps + 2] == "    source: " + by_id["ib-qps"].source
    assert "+ NCCL_MIN_CTAS=16    [tier 3, rule min-ctas]" in lines
    assert "~ binding: off -> on" in out
    assert (
        lines[-1] == "0 changed, 4 added, 0 removed, 12 unchanged"
    )  # 10: NCCL_NET=IB (issue 21), NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE (transport check) are tier 1


def test_diff_the_other_way_lists_removals_with_the_reason_of_the_side_that_has_them(capsys):
    code, out, _ = cli(capsys, "diff", "--tier", "3", "--vs-tier", "1", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["added"] == [] and doc["changed"] == []
    removed = {e["name"]: e for e in doc["removed"]}
    assert set(removed) == {
        "NCCL_IB_QPS_PER_CONNECTION",
        "NCCL_IB_TIMEOUT",
        "NCCL_MIN_CTAS",
        "NCCL_IGNORE_CPU_AFFINITY",
    }
    assert removed["NCCL_MIN_CTAS"]["origin"] == "rule min-ctas" and removed["NCCL_MIN_CTAS"]["tier"] == 3
    assert doc["binding"] == {"from": True, "to": False, "ranks": []}


def test_diff_of_two_descriptors_differing_in_hcas_shows_nccl_ib_hca_changed(tmp_path, capsys):
    changed = tmp_path / "h100-ib.yaml"
    changed.write_text(H100.read_text().replace("hca: mlx5_0,", "hca: mlx5_12,"))
    code, out, err = cli(capsys, "diff", "--cluster", str(H100), "--vs-cluster", str(changed), "--tier", "3")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(f"ncclgen diff: {H100} tier 3 -> {changed} tier 3")
    old = "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"
    assert lines[1] == f"~ NCCL_IB_HCA: {old} -> {old.replace('mlx5_0:', 'mlx5_12:')}    [tier 1, rule ib-hca-exact]"
    assert [ln for ln in lines if ln[:2] in ("+ ", "- ", "~ ")] == [lines[1], lines[4]]
    assert lines[4].startswith("~ binding: local rank(s) 0 bind")  # rank 0's rail changed
    assert lines[-1].startswith("1 changed, 0 added, 0 removed")


def test_diff_of_identical_sides_reports_no_change(capsys):
    code, out, _ = cli(capsys, "diff", "--cluster", "local-ci", "--tier", "2", "--vs-cluster", "local-ci")
    n = len(plan.build(descriptor.load_cluster("local-ci"), workload.load_workload(workload.DEFAULT), 2).env)
    assert code == 0 and out.splitlines()[1:] == [f"0 changed, 0 added, 0 removed, {n} unchanged"]


def test_diff_without_a_second_side_is_a_usage_error(capsys):
    code, out, err = cli(capsys, "diff", "--tier", "1")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "--vs-tier" in err


def test_diff_lints_both_sides(tmp_path, capsys):
    code, out, err = cli(capsys, "diff", "--vs-tier", "2", "--set", "NCCL_TIMEOUT=1800")
    assert code == 2 and out == "" and "NCCL_TIMEOUT" in err and len(err.splitlines()) == 1
