"""What a shell text puts in the environment: every way a script, env file or Slurm option sets a variable.

Read without running anything, from lint/shell.py's words: assignments (alone or as a command's prefix),
`export`/`declare -x`/`typeset -x`/`readonly`/`local` (several per command), `export -n`/`unset`
(removal), `env [-u NAME] NAME=V cmd`, `srun`/`sbatch`/`salloc --export=LIST` and `#SBATCH --export=`
lines, `bash -c '...'` strings, inside `if`/`for`/`while`/`case`, functions, `( )`, `{ }`, `&&`/`||`.
A form whose result cannot be known here (a value from `$(...)` or `$X`, an expanded name, `eval`, a
sourced file, `--export-file`) is returned as a note, "not checked: ...", never skipped silently.
"""

from __future__ import annotations

import re
import shlex

from ..errors import UserError
from ..plan import flightrec
from . import sanitise
from .shell import Scanner

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SEPARATORS = frozenset(";&|()")
# Words that open or close a compound command, or prefix a command without changing its environment.
KEYWORDS = frozenset(
    [
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "do",
        "done",
        "while",
        "until",
        "case",
        "esac",
        "{",
        "}",
        "!",
        "time",
        "coproc",
    ]
)
WRAPPERS = frozenset(
    ["exec", "command", "builtin", "nohup", "nice", "sudo", "numactl", "taskset", "timeout", "stdbuf", "xargs"]
)
DECLARERS = frozenset(("export", "declare", "typeset", "readonly", "local"))
LAUNCHERS = frozenset(("srun", "sbatch", "salloc"))
SHELLS = frozenset(("bash", "sh", "dash", "zsh", "ksh"))
SBATCH_LINE = re.compile(r"^[ \t]*#SBATCH[ \t]+(.*)$", re.M)
# ncclgen's own sbatch script starts every step with `bash -c 'eval "$NCCLGEN_NODE_SH"'`, the node program
# ncclgen/jobside/node.sh read into the variable from a quoted heredoc. That eval is read as checked when
# the heredoc holds this ncclgen's node.sh byte for byte (as it embeds it: compact) and nothing else assigns
# the variable: node.sh sets only ncclgen's own names, PATH and PYTHONPATH, and stops the job where the
# workload's setup changed a name the plan owns (NCCL_*, TORCH_NCCL_*, ...), so the eval adds no NCCL or PyTorch setting.
NODE_EVAL = ("eval", "$NCCLGEN_NODE_SH")
NODE_HEREDOC = re.compile(
    r"^IFS= read -r -d '' NCCLGEN_NODE_SH <<'NCCLGEN_NODE_SH_EOF' \|\| true\n(.*?)^NCCLGEN_NODE_SH_EOF$", re.S | re.M
)

Pair = tuple[str, "str | None", "int | None"]


class Reading:
    """The assignments of one environment, in order, and the notes on what could not be read."""

    def __init__(self, node_program: bool = False) -> None:
        self.pairs: list[Pair] = []
        self.notes: list[tuple[int, str | None, str]] = []  # (line, variable or None, what)
        self.node_program = node_program  # the text holds ncclgen's node.sh as it ships (NODE_EVAL)

    def set(self, key: str, value: str | None, line: int, dynamic: bool, how: str = "") -> None:
        # ncclgen's own flight-recorder folder (plan/flightrec.py): a path no rule judges beyond its name, made
        # per job by ${SLURM_JOB_ID:-local} alone, is read as written
        if dynamic and key in flightrec.NAMES and value and not re.search(r"[$`]", value.replace(flightrec.JOB, "")):
            dynamic = False
        self.pairs.append((key, None if dynamic else value, line))
        if dynamic:
            self.notes.append((line, key, f"{key}'s value{how} comes from an expansion ($..., `...`): not known here"))

    def unset(self, key: str) -> None:
        self.pairs = [p for p in self.pairs if p[0] != key]

    def assignment(self, word: str, dynamic: bool, line: int, how: str = "") -> bool:
        """Record ``word`` if it is NAME=value (or NAME+=value); False when it is no assignment."""
        key, eq, value = word.partition("=")
        if not eq:
            return False
        if key.endswith("+") and NAME_RE.fullmatch(key[:-1]):
            self.notes.append((line, key[:-1], f"{key[:-1]}+= appends to a value not known here"))
            self.pairs.append((key[:-1], None, line))
            return True
        if NAME_RE.fullmatch(key) or sanitise.looks_like_name(key):  # lint reports the odd character
            self.set(key, value, line, dynamic, how)
            return True
        if "$" in key or "`" in key:
            self.notes.append((line, None, f"'{word}': the variable's name comes from an expansion"))
            return True
        return False


def _holds_node_program(text: str) -> bool:
    """True when ``text`` reads ncclgen's node.sh, unchanged, into NCCLGEN_NODE_SH and assigns it nowhere else."""
    if "NCCLGEN_NODE_SH" not in text:
        return False
    from ..jobside import source

    found = NODE_HEREDOC.findall(text)
    others = re.findall(r"\bNCCLGEN_NODE_SH\+?=|\bread\b[^\n]*\bNCCLGEN_NODE_SH\b", text)
    return found == [source("node.sh", compact=True)] and len(others) == 1


def parse_shell(text: str, name: str, node_program: bool | None = None) -> Reading:
    """Every assignment that reaches an environment in ``text``, and notes on the forms not read."""
    out = Reading(_holds_node_program(text) if node_program is None else node_program)
    for line, words in Scanner(text, name).lines():
        for command in _commands(words):
            _command(command, line, out, name)
    for m in SBATCH_LINE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        try:
            words = [(w, False) for w in shlex.split(m.group(1), comments=True)]
        except ValueError:
            out.notes.append((line, None, "#SBATCH line with an unclosed quote"))
            continue
        _launcher(words, line, out)
    out.pairs.sort(key=lambda p: p[2] or 0)
    out.notes.sort(key=lambda n: (n[0], n[2]))
    return out


def _commands(words: list[tuple[str, bool]]) -> list[list[tuple[str, bool]]]:
    """Split one logical line into simple commands at ; & | ( ), dropping compound-command keywords."""
    out: list[list[tuple[str, bool]]] = [[]]
    for word, dynamic in words:
        if not dynamic and word in SEPARATORS:
            out.append([])
        elif not out[-1] and not dynamic and word in KEYWORDS:
            continue
        else:
            out[-1].append((word, dynamic))
    return [c for c in out if c]


def _command(words: list[tuple[str, bool]], line: int, out: Reading, name: str) -> None:
    """One simple command: its prefix assignments, then what the command itself sets."""
    i = 0
    while i < len(words) and out.assignment(words[i][0], words[i][1], line):
        i += 1
    rest = words[i:]
    if not rest:
        return
    head = rest[0][0]
    if head in ("for", "select", "function", "case", "[[", "[", "test", "echo", "printf", "<<", "<<<"):
        return
    if head in WRAPPERS:
        _wrapped(rest, line, out, name)
    elif head in DECLARERS:
        _declare(rest, line, out)
    elif head == "unset":
        for word, _ in rest[1:]:
            if not word.startswith("-"):
                out.unset(word)
    elif head == "env":
        _env(rest[1:], line, out, name)
    elif head in LAUNCHERS:
        _launcher(rest, line, out)
    elif head in (".", "source"):
        what = rest[1][0] if len(rest) > 1 else ""
        out.notes.append((line, None, f"'{head} {what}': a sourced file is not read"))
    elif head == "eval" and not (out.node_program and tuple(w for w, _ in rest) == NODE_EVAL):
        out.notes.append((line, None, "eval: the text it runs is built at run time"))
    elif head in SHELLS:
        _shell_c(rest, line, out, name)


def _wrapped(words: list[tuple[str, bool]], line: int, out: Reading, name: str) -> None:
    """`exec env A=1 cmd`, `nohup srun --export=... cmd`: the wrapped command from its first known word."""
    for k, (word, _) in enumerate(words[1:], 1):
        if word in ("env", *LAUNCHERS, *DECLARERS):
            _command(words[k:], line, out, name)
            return


def _declare(words: list[tuple[str, bool]], line: int, out: Reading) -> None:
    """export/declare/typeset/readonly/local: -n (export) and +x (declare) un-export; -f/-p set nothing."""
    head, flags = words[0][0], ""
    names: list[tuple[str, bool]] = []
    for word, dynamic in words[1:]:
        if word.startswith(("-", "+")) and not names and "=" not in word:
            flags += word
            continue
        names.append((word, dynamic))
    if "f" in flags or ("p" in flags and not names):
        return
    if (head == "export" and "n" in flags) or "+x" in flags:
        for word, _ in names:
            out.unset(word.partition("=")[0])
        return
    if set(flags) & set("aA"):
        return  # arrays never reach the environment
    for word, dynamic in names:
        out.assignment(word, dynamic, line)


def _env(words: list[tuple[str, bool]], line: int, out: Reading, name: str) -> None:
    """`env [-i] [-u NAME] NAME=V ... cmd`: the assignments are the command's environment."""
    k = 0
    while k < len(words):
        word, dynamic = words[k]
        if word in ("-u", "--unset") and k + 1 < len(words):
            k += 2
        elif word.startswith(("-S", "--split-string")):
            out.notes.append((line, None, "env -S: the split string is not read"))
            return
        elif (word.startswith("-") and "=" not in word) or out.assignment(word, dynamic, line):
            k += 1
        else:
            _command(words[k:], line, out, name)
            return


def _launcher(words: list[tuple[str, bool]], line: int, out: Reading) -> None:
    """srun/sbatch/salloc (or an #SBATCH line's options): each NAME=V of --export=LIST or --export LIST."""
    for k, (word, dynamic) in enumerate(words):
        if word.startswith("--export-file"):
            out.notes.append((line, None, f"'{word}': the exported file is not read"))
        elif word.startswith("--export="):
            _export_list(word[len("--export=") :], dynamic, line, out)
        elif word == "--export" and k + 1 < len(words):
            _export_list(words[k + 1][0], words[k + 1][1], line, out)


def _export_list(value: str, dynamic: bool, line: int, out: Reading) -> None:
    for item in value.split(","):
        if "=" in item:
            out.assignment(item, dynamic, line, how=" (in --export)")


def _shell_c(words: list[tuple[str, bool]], line: int, out: Reading, name: str) -> None:
    """`bash -c 'export A=1; cmd'`: the string is read as a script of its own, at this line."""
    flags = [w for w, _ in words[1:]]
    if "-c" not in flags:
        return
    k = flags.index("-c") + 1
    if k >= len(flags):
        return
    if words[k + 1][1]:
        out.notes.append((line, None, f"{words[0][0]} -c: the command string is built from an expansion"))
        return
    try:
        inner = parse_shell(flags[k], name, out.node_program)
    except UserError:
        out.notes.append((line, None, f"{words[0][0]} -c: the command string is not valid shell"))
        return
    out.pairs += [(n, v, line) for n, v, _ in inner.pairs]
    out.notes += [(line, var, msg) for _, var, msg in inner.notes]
