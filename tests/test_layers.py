"""The architecture, enforced: load -> plan -> lint -> render -> pipeline -> cli, no arrow back.

Every `import` in the package (function-level ones included) is resolved to the ncclgen sub-package
it names; a module may import only from its own layer or those below. ncclgen/jobside/ runs on the
nodes without ncclgen installed, so it imports nothing from ncclgen at all.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "ncclgen"
# Lower numbers are lower layers. Shared utilities sit at 0.
LAYERS = {
    "__init__": 0,
    "__main__": 7,
    "errors": 0,
    "record": 0,  # the dataclass decorator every layer uses
    "datapaths": 0,
    "trust": 1,  # reads the user's config with the load layer's YAML reader
    "output": 0,
    "optionspec": 0,  # command-line options declared on dataclass fields (Request, the scheduler options)
    "load": 1,
    "plan": 2,
    "lint": 3,
    "render": 4,
    "node": 4,
    "scaffold": 4,
    "pipeline": 5,
    "triage": 5,  # reads logs; checks a cause against a plan built through the pipeline
    "cli": 6,
}


def _layer(parts: tuple[str, ...]) -> str:
    """The layer of an ncclgen sub-path; names imported from the package root (`__version__`) are root's."""
    if not parts or (not (PKG / parts[0]).exists() and not (PKG / f"{parts[0]}.py").exists()):
        return "__init__"
    return parts[0]


def _imports(path: Path) -> list[tuple[tuple[str, ...], int]]:
    """(ncclgen sub-path, line) for each import of an ncclgen module in ``path``."""
    rel = path.relative_to(PKG).with_suffix("").parts
    here = rel[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                target = base + tuple((node.module or "").split(".")) if node.module else base
                names = [(*target, a.name) for a in node.names] if not node.module else [target]
            elif (node.module or "").split(".")[0] == "ncclgen":
                names = [tuple(node.module.split(".")[1:])]
            else:
                continue
            out += [(tuple(p for p in n if p), node.lineno) for n in names]
        elif isinstance(node, ast.Import):
            out += [
                (tuple(a.name.split(".")[1:]), node.lineno) for a in node.names if a.name.split(".")[0] == "ncclgen"
            ]
    return out


def test_no_module_imports_from_a_layer_above():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).with_suffix("").parts
        mine = _layer(rel)
        if mine == "jobside":
            continue
        for target, line in _imports(path):
            theirs = _layer(target)
            if theirs == "jobside":  # embedded text, read through jobside.source()
                continue
            assert theirs in LAYERS, f"{path.relative_to(ROOT)}:{line}: unknown layer {theirs!r} (add it to LAYERS)"
            assert mine in LAYERS, f"{path.relative_to(ROOT)}: unknown layer {mine!r} (add it to LAYERS)"
            if LAYERS[theirs] > LAYERS[mine]:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {mine} imports {'.'.join(target)} (layer above)")
    assert bad == []


def test_jobside_programs_import_nothing_from_ncclgen():
    # A sibling in ncclgen/jobside/ is allowed: the renderers ship it beside the program (the transport
    # check reads NCCL's lines through nccllines.py).
    for path in sorted((PKG / "jobside").glob("*.py")):
        assert [i for i in _imports(path) if i[0][0] != "jobside"] == [], path.name


def test_the_layer_check_catches_an_upward_import(tmp_path):
    """The check itself can fail: a load module importing the CLI is reported."""
    fake = PKG / "load" / "_layer_probe.py"
    fake.write_text("from ..cli import common\n", encoding="utf-8")
    try:
        assert _imports(fake) == [(("cli",), 1)]
        assert LAYERS[_layer(("cli", "common"))] > LAYERS["load"]
    finally:
        fake.unlink()
