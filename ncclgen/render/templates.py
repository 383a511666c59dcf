"""The jinja2 environment of the sbatch templates (templates/slurm/), and their precompiled form.

Compiling the templates (lexing, parsing, Python code generation) was a fifth of a render. The
compiled code is generated at build time by tools/compile_templates.py into ncclgen/render/compiled/
(plain modules, byte-compiled by pip like the rest of the package; jinja2's ModuleLoader), with the
sha256 of each template and the jinja2 version it was made with. It is used only when both still
hold; otherwise (a template edited in a checkout, another jinja2) the templates are compiled as
before. tests/test_templates_compiled.py fails when the stored code differs from a fresh compile.
No cache is written anywhere at run time (issue 25: a writable cache is a way into every render).
"""

from __future__ import annotations

import functools
import hashlib
import os
import textwrap
from typing import Any

from .. import datapaths
from . import shell

COMPILED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compiled")

# bash's ${#ARRAY[@]} would open a jinja comment; the templates have no jinja comments.
OPTIONS: dict[str, Any] = {
    "autoescape": False,
    "keep_trailing_newline": True,
    "trim_blocks": True,
    "lstrip_blocks": True,
    "comment_start_string": "<%#",
    "comment_end_string": "#%>",
}


def heredoc(program: Any) -> str:
    """The `heredoc` filter: the program text, newline-terminated (its delimiter starts no line of it)."""
    text: str = program.text
    return text if text.endswith("\n") else text + "\n"


def wrap_comment(text: str, indent: int = 0, width: int = 100) -> str:
    """The `wrap_comment` filter: a comment's text in lines of at most ``width`` characters, each after
    ``indent`` spaces and '# ' (the template writes the first line's); a longer word stays whole."""
    lines = textwrap.wrap(text, width - indent - 2, break_long_words=False, break_on_hyphens=False)
    return ("\n" + " " * indent + "# ").join(lines)


def sources() -> dict[str, str]:
    """Template name (as get_template takes it) -> sha256 of its text, for every template."""
    root = datapaths.bundled("templates")
    out = {}
    for folder in sorted(os.listdir(root)):
        if not os.path.isdir(os.path.join(root, folder)):
            continue  # templates live in a folder per scheduler (slurm/)
        for name in sorted(os.listdir(os.path.join(root, folder))):
            if name.endswith(".j2"):
                with open(os.path.join(root, folder, name), "rb") as fh:
                    out[f"{folder}/{name}"] = hashlib.sha256(fh.read()).hexdigest()
    return out


def _compiled_is_current(jinja2_version: str) -> bool:
    try:
        from .compiled import JINJA2, SOURCES
    except ImportError:
        return False
    return jinja2_version == JINJA2 and sources() == SOURCES


def build(*, compiled: bool) -> Any:
    """A jinja2 Environment for the templates, from the precompiled modules when ``compiled``."""
    import jinja2

    loader: jinja2.BaseLoader
    if compiled:
        loader = jinja2.ModuleLoader(COMPILED)
    else:
        loader = jinja2.FileSystemLoader(datapaths.bundled("templates"))
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, **OPTIONS)
    env.filters.update(
        q=shell.quote,
        qa=shell.quote_always,
        args=shell.args,
        args_lines=shell.args_lines,
        sbatch_value=shell.sbatch_value,
        heredoc=heredoc,
        wrap_comment=wrap_comment,
    )
    return env


@functools.lru_cache(maxsize=1)
def environment() -> Any:
    """One environment per process (it keeps the templates it loaded): precompiled when current."""
    import jinja2

    return build(compiled=_compiled_is_current(jinja2.__version__))
