"""Programs that run on the nodes, inside the job: embedded into sbatch scripts and ConfigMaps.

Each module here is standard library only (plus Ray where it talks to Ray), imports nothing from
ncclgen, and runs as `python3 -c "$PROGRAM" ...` or `python3 file.py ...` on a node that has no
ncclgen installed. `source(name)` returns a module's text for embedding; `compact=True` drops
docstrings, comments and blank lines (the program is for the node, its documentation is here): an
sbatch script exports every node program to each step, so its size is paid on every node's launch.
"""

import os
import zlib


def source(name: str, compact: bool = False) -> str:
    """The text of jobside module ``name`` (e.g. "raywait"; a file with its suffix, e.g. "node.sh"),
    embedded into jobs at render time."""
    file = name if "." in name else f"{name}.py"
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), file), encoding="utf-8") as fh:
        text = fh.read()
    if not compact:
        return text
    try:
        from .compacted import TEXTS  # tools/compact_jobside.py
    except ImportError:  # (while that tool writes it)
        TEXTS = {}
    stored = TEXTS.get(name)
    if stored is not None and stored[0] == checksum(text):
        return stored[1]
    return compact_text(name, text)


def checksum(text: str) -> str:
    """CRC-32 and length of a program's text: a stored compact text is used only for this text."""
    raw = text.encode("utf-8")
    return f"{zlib.crc32(raw):08x}:{len(raw)}"


def compact_text(name: str, text: str) -> str:
    """``text`` (the program ``name``) compacted: tokenize for Python, whole comment lines for bash."""
    return _compact_shell(text) if name.endswith(".sh") else _compact(text)


def _compact_shell(text: str) -> str:
    """A bash program without its comment lines and blank lines (the #! line kept). Only whole lines
    go: the programs here hold no heredoc and no quoted string across lines, so no such line is data
    (tests/test_jobside_compact.py checks that bash parses both texts to the same commands)."""
    lines = text.splitlines()
    keep = [line for n, line in enumerate(lines) if (n == 0 and line.startswith("#!")) or not _comment_or_blank(line)]
    return "\n".join(keep) + "\n"


def _comment_or_blank(line: str) -> bool:
    stripped = line.lstrip()
    return not stripped or stripped.startswith("#")


def _compact(text: str) -> str:
    """The program without docstrings, comments and blank lines; same tokens otherwise, so it runs
    the same (tokenize keeps every line's layout, unlike ast.unparse, whose output varies by Python).
    Imported here: a render takes the stored texts (compacted.py) and needs neither module."""
    import io
    import tokenize

    drop: set[int] = set()  # line numbers to remove entirely
    cuts: dict[int, int] = {}  # line -> column where a trailing comment starts
    docs: dict[int, int] = {}  # first line of a docstring -> its column
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
            docs[tok.start[0]] = tok.start[1]
        elif tok.type == tokenize.COMMENT:
            cuts[tok.start[0]] = tok.start[1]
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            prev = tok.type
    out: list[str] = []
    pending = -1  # the column of a dropped docstring that may have been its block's only statement
    for i, line in enumerate(lines, 1):
        if i in docs:
            pending = docs[i]
        if i in drop:
            continue
        if i in cuts:
            line = line[: cuts[i]].rstrip()
        if not line.strip():
            continue
        if pending > 0 and len(line) - len(line.lstrip()) < pending:
            out.append(" " * pending + "pass")  # (a class whose body was its docstring)
        pending = -1
        out.append(line)
    if pending > 0:
        out.append(" " * pending + "pass")
    return "\n".join(out) + "\n"
