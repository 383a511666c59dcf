"""The committed reference docs equal freshly generated ones (docs/tiers.md, descriptor.md, cli.md,
descriptor.schema.json), and the generators cover every rule, condition, key and command.

Regenerate after an intended change, then review the diff before committing it:
    python tools/gendocs.py
(or NCCLGEN_REGEN_GOLDEN=1 python -m pytest -q tests/test_docs.py, which runs the same).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import jsonschema
import pytest

from ncclgen import datapaths
from ncclgen.cli import COMMANDS
from ncclgen.load import descriptor, yamlio
from ncclgen.plan import rules
from tools import gendocs as docs

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fresh_rules():
    """rules.rule_file is cached per process; clear it around tests that point it elsewhere."""
    rules.rule_file.cache_clear()
    yield
    rules.rule_file.cache_clear()


def test_committed_docs_are_current(capsys):
    if os.environ.get("NCCLGEN_REGEN_GOLDEN") == "1":
        assert docs.main([]) == 0
    code = docs.main(["--check"])
    err = capsys.readouterr().err
    assert code == 0, err  # err names each stale file and says: python tools/gendocs.py


def test_editing_rules_yaml_without_regenerating_fails_the_check(tmp_path, monkeypatch, capsys, fresh_rules):
    edited = tmp_path / "rules.yaml"
    text = Path(datapaths.data("rules.yaml")).read_text()
    assert 'value: "4"' in text
    edited.write_text(text.replace('value: "4"', 'value: "8"', 1))
    real = datapaths.data
    monkeypatch.setattr(datapaths, "data", lambda name: str(edited) if name == "rules.yaml" else real(name))
    assert [rel for rel, _ in docs.stale(str(ROOT))] == ["docs/tiers.md"]
    assert docs.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "docs/tiers.md is stale; regenerate with `python tools/gendocs.py`" in err
    assert "+| 2 | `NCCL_IB_QPS_PER_CONNECTION` | [ib-qps](#ib-qps) | `8` |" in err  # the diff shows the edit


def test_check_reports_a_missing_file_and_writing_fixes_it(tmp_path, capsys):
    root = tmp_path / "checkout"
    shutil.copytree(ROOT / "docs", root / "docs")
    (root / "docs/cli.md").unlink()
    assert docs.main(["--check", "--root", str(root)]) == 1
    assert "docs/cli.md is stale" in capsys.readouterr().err
    assert docs.main(["--root", str(root)]) == 0
    assert docs.main(["--check", "--root", str(root)]) == 0


def test_every_rule_and_every_not_emitted_variable_is_in_tiers_md():
    text = (ROOT / "docs/tiers.md").read_text()
    for r in rules.load_rules():
        assert f"### {r.id}\n\n- variable: `{r.var}`\n" in text
        assert f"- why: {' '.join(r.reason.split())}\n" in text
    for n in rules.not_emitted():
        assert f"| `{n.var}` |" in text


def test_not_emitted_variables_are_never_emitted_by_a_rule():
    emitted = {r.var for r in rules.load_rules()}
    assert not emitted & {n.var for n in rules.not_emitted()}


def test_every_condition_and_derivation_has_words():
    assert set(docs.CONDITIONS) == {f.name for f in dataclasses.fields(rules.When)}
    for name, fn in rules.DERIVATIONS.items():
        assert fn.__doc__ and fn.__doc__.strip(), f"derivation {name} needs a docstring (docs/tiers.md shows it)"


def test_condition_text_reads_like_the_rule():
    by_id = {r.id: r for r in rules.load_rules()}
    assert (
        docs.condition_text(by_id["ib-hca-exact"].when) == "fabric is `infiniband` or `roce`; net plugin is not `gib`"
    )
    assert docs.condition_text(by_id["cuda-device-order"].when) == "always"
    assert docs.condition_text(by_id["ib-qps"].when) == "fabric is `infiniband` or `roce`; at least 2 nodes"


def test_descriptor_md_documents_every_key_with_type_default_and_bounds():
    text = (ROOT / "docs/descriptor.md").read_text()
    schema = descriptor.schema()
    for name, node in [("Descriptor", schema), *schema["$defs"].items()]:
        assert f"\n## {name}\n" in text
        for key in node["properties"]:
            assert f"| `{key}` |" in text.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0], (name, key)
    assert "| `gpus_per_node` | integer, 1..64 | **required** | number of GPUs per node |" in text
    assert "| `bind_memory` | boolean | `true` |" in text
    assert "- [Rail](#rail): `network.compute[]`" in text
    assert "- [EnvSetting](#envsetting): `vendor_env[]`, `env[]`" in text


def test_committed_schema_is_what_ncclgen_schema_prints_and_accepts_every_preset():
    committed = json.loads((ROOT / "docs/descriptor.schema.json").read_text())
    assert committed == descriptor.schema()
    validator = jsonschema.Draft202012Validator(committed)
    folder = Path(datapaths.bundled("clusters"))
    presets = sorted(folder.glob("*.yaml"))
    assert presets
    for path in presets:
        assert path.read_text().startswith("# yaml-language-server: $schema=../docs/descriptor.schema.json\n"), path
        errors = list(validator.iter_errors(yamlio.load_file(str(path)).data))
        assert not errors, (path.name, [e.message for e in errors])


def test_cli_md_covers_every_command_and_ignores_the_terminal_width(monkeypatch):
    text = (ROOT / "docs/cli.md").read_text()
    for name, (_, _, summary) in COMMANDS.items():
        assert f"\n## ncclgen {name}\n\n{summary}\n" in text
    monkeypatch.setenv("COLUMNS", "40")
    narrow = docs.cli_md()
    monkeypatch.setenv("COLUMNS", "250")
    assert docs.cli_md() == narrow


def test_docs_main_outside_a_checkout_asks_for_root(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(docs, "__file__", str(tmp_path / "site-packages/ncclgen/docs.py"))
    assert docs.main(["--check"]) == 2
    assert "is not an ncclgen checkout; pass --root" in capsys.readouterr().err
