"""The precompiled templates (ncclgen/render/templates.py): stored code equal to a fresh compile, used
only while every template's hash and the jinja2 version hold, and rendering exactly what the templates
compiled at run time render."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from ncclgen import pipeline
from ncclgen.render import slurm, templates

ROOT = Path(__file__).resolve().parent.parent


def test_stored_code_is_a_fresh_compile_of_the_templates():
    r = subprocess.run(
        [sys.executable, str(ROOT / "tools/compile_templates.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_stale_module_is_reported(tmp_path, monkeypatch):
    """--check can fail: one stored module changed by a byte."""
    stored = next(Path(templates.COMPILED).glob("tmpl_*.py"))
    copy = tmp_path / "compiled"
    copy.mkdir()
    for p in Path(templates.COMPILED).glob("*.py"):
        (copy / p.name).write_bytes(p.read_bytes() + (b"#" if p.name == stored.name else b""))
    monkeypatch.setattr(templates, "COMPILED", str(copy))
    monkeypatch.setattr(sys, "argv", ["compile_templates.py", "--check"])
    sys.path.insert(0, str(ROOT))
    try:
        from tools import compile_templates
    finally:
        sys.path.remove(str(ROOT))
    assert compile_templates.main() == 1


def test_the_compiled_modules_are_used_while_current():
    templates.environment.cache_clear()
    assert isinstance(templates.environment().loader, jinja2.ModuleLoader)


@pytest.mark.parametrize(
    "edit",
    [
        lambda m, real=templates.sources: m.setattr(
            templates, "sources", lambda: {**real(), "slurm/_env.sh.j2": "0" * 64}
        ),
        lambda m: m.setattr(jinja2, "__version__", "99.0.0"),
    ],
    ids=["template edited", "other jinja2"],
)
def test_a_changed_template_or_jinja2_compiles_the_templates(monkeypatch, edit):
    edit(monkeypatch)
    templates.environment.cache_clear()
    try:
        assert isinstance(templates.environment().loader, jinja2.FileSystemLoader)
    finally:
        templates.environment.cache_clear()


@pytest.mark.parametrize("workload", ["verl-grpo-qwen2-7b", "verl-sft", "bench"])
def test_both_forms_render_the_same_script(monkeypatch, workload):
    script = slurm.build(pipeline.make_plan(pipeline.request("h100-ib", 3, workload)), slurm.Options())
    out = {}
    for compiled in (True, False):
        monkeypatch.setattr(templates, "environment", lambda c=compiled: templates.build(compiled=c))
        out[compiled] = slurm.render(script)
    assert out[True] == out[False]
    assert out[True].startswith("#!/bin/bash")
