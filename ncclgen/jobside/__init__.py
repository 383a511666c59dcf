"""Programs that run on the nodes, inside the job: embedded into sbatch scripts and ConfigMaps.

Each module here is standard library only (plus Ray where it talks to Ray), imports nothing from
ncclgen, and runs as `python3 -c "$PROGRAM" ...` or `python3 file.py ...` on a node that has no
ncclgen installed. `source(name)` returns a module's text for embedding; `compact=True` drops
docstrings, comments and blank lines (the program is for the node, its documentation is here).
"""

import io
import os
import tokenize


def source(name: str, compact: bool = False) -> str:
    """The text of jobside module ``name`` (e.g. "raywait"; a file with its suffix, e.g. "node.sh"),
    embedded into jobs at render time."""
    file = name if "." in name else f"{name}.py"
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), file), encoding="utf-8") as fh:
        text = fh.read()
    return _compact(text) if compact else text


def _compact(text: str) -> str:
    """The program without docstrings, comments and blank lines; same tokens otherwise, so it runs
    the same (tokenize keeps every line's layout, unlike ast.unparse, whose output varies by Python)."""
    drop: set[int] = set()  # line numbers to remove entirely
    cuts: dict[int, int] = {}  # line -> column where a trailing comment starts
    lines = text.splitlines()
    prev, depth = tokenize.NEWLINE, 0
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif (
            tok.type == tokenize.STRING
            and depth == 0
            and prev in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
            and lines[tok.end[0] - 1][tok.end[1] :].strip() == ""
        ):
            # A string statement on its own line(s): a docstring (module, class or function).
            drop.update(range(tok.start[0], tok.end[0] + 1))
        elif tok.type == tokenize.COMMENT:
            cuts[tok.start[0]] = tok.start[1]
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            prev = tok.type
    out = []
    for i, line in enumerate(lines, 1):
        if i in drop:
            continue
        if i in cuts:
            line = line[: cuts[i]].rstrip()
        if line.strip():
            out.append(line)
    return "\n".join(out) + "\n"
