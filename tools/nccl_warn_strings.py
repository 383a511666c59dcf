#!/usr/bin/env python3
"""Extract NCCL's WARN(...) format strings from every release tag of a git clone of NVIDIA/nccl.

Usage (run by hand; CI does not have a clone of NCCL, so no test runs it):
  python tools/nccl_warn_strings.py /path/to/nccl.git > ncclgen/data/triage/nccl-warn.tsv
  python tools/nccl_warn_strings.py --check /path/to/nccl.git   # exit 1 when the table differs

Why: `ncclgen triage` recognises an NCCL WARN line by the format string that printed it, so it can name
the source file:line, and from the file and the text a cause class (ncclgen/data/triage/nccl-classes.yaml),
for any warning any release since 2.4 prints. Logs in bug reports come from old releases as often as new
ones, so every `v2.<minor>.<patch>-1` tag is read, not only the knowledge base's releases.
The table's header records the tags read and the commit of the newest, so the table can be checked
against the same source later. Only the format strings (adjacent literals joined) and where they are go
into the table, never NCCL's code. Calls whose format is not a plain literal (a macro, a variable) are skipped.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "ncclgen" / "data" / "triage" / "nccl-warn.tsv"
KB = ROOT / "ncclgen" / "data" / "kb" / "nccl-releases.tsv"  # the knowledge base's releases (its header names them)
TAG = re.compile(r"^v2\.(\d+)\.(\d+)-1$")
FIRST_MINOR = 4  # v2.3 and older predate the WARN formats of any log still seen in bug reports
# WARN( or INFO(NCCL_SUBSYS[|...], then one or more adjacent string literals (C escapes kept as written).
CALL = re.compile(r'\b(WARN|INFO)\(\s*(?:NCCL_\w+(?:\s*\|\s*NCCL_\w+)*\s*,\s*)?((?:"(?:[^"\\\n]|\\.)*"\s*)+)')
# INFO lines kept: those reporting that something failed or was not there (a resource failure NCCL reports at
# INFO, then works around or fails later with a WARN); INFO lines describing the transport are read by
# ncclgen/triage/nodes.py from their stable prefixes, not from this table.
INFO_FAILURE = re.compile(
    r"(?i)fail|error|unable|cannot|could not|couldn't|not found|no device|no usable|not supported"
)
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
SOURCE = (".cc", ".h", ".cu", ".cpp", ".c")


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, *args], check=True, capture_output=True, text=True).stdout


def release_tags(repo: str) -> list[str]:
    tags = [t for t in git(repo, "tag").split() if (m := TAG.match(t)) and int(m.group(1)) >= FIRST_MINOR]
    return sorted(tags, key=lambda t: tuple(int(x) for x in TAG.match(t).groups()))  # type: ignore[union-attr]


class Blobs:
    """One `git cat-file --batch` process for every file of every tag (a process per file took minutes)."""

    def __init__(self, repo: str):
        self.proc = subprocess.Popen(
            ["git", "--git-dir", repo, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def read(self, spec: str) -> str:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(spec.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        size = int(header[2])
        data = self.proc.stdout.read(size + 1)[:size]
        return data.decode("utf-8", "replace")


def warn_strings(repo: str, blobs: Blobs, tag: str) -> dict[tuple[str, str], str]:
    """(level, format string) -> first file:line in this tag."""
    found: dict[tuple[str, str], str] = {}
    for name in git(repo, "ls-tree", "-r", "--name-only", tag, "src").split():
        if not name.endswith(SOURCE):
            continue
        text = blobs.read(f"{tag}:{name}")
        for m in CALL.finditer(text):
            level, fmt = m.group(1), "".join(LITERAL.findall(m.group(2)))
            if fmt and (level == "WARN" or INFO_FAILURE.search(fmt)):
                found.setdefault((level, fmt), f"{name}:{text.count(chr(10), 0, m.start()) + 1}")
    return found


def kb_without_tag(tags: list[str]) -> list[str]:
    """Releases the knowledge base covers (from released wheels) that the clone has no tag for."""
    header = KB.read_text().splitlines()[1]
    kb = re.findall(r"\d+\.\d+\.\d+", header.split("==", 1)[1])
    return [r for r in kb if f"v{r}-1" not in tags]


def table(repo: str) -> str:
    tags = release_tags(repo)
    blobs = Blobs(repo)
    per = {t: warn_strings(repo, blobs, t) for t in tags}
    head = git(repo, "rev-parse", f"{tags[-1]}^{{commit}}").strip()
    version = [t[1:-2] for t in tags]
    lines = [
        "# NCCL WARN(...) format strings, and INFO(...) ones that report a failure: where the newest release printing it has the call, and the first and",
        f"# last release that prints it. Source: NVIDIA/nccl tags {tags[0]}..{tags[-1]} ({len(tags)} tags: "
        f"{' '.join(version)});",
        f"# newest {tags[-1]} = {head}; knowledge-base releases without a tag in the clone (not read): "
        f"{', '.join(kb_without_tag(tags)) or 'none'}. Generated by tools/nccl_warn_strings.py; do not edit by hand.",
        "level\tformat\twhere\tfirst\tlast",
    ]
    for key in sorted({k for d in per.values() for k in d}, key=lambda k: (k[0] != "WARN", k[1])):
        have = [t for t in tags if key in per[t]]
        where = per[have[-1]][key]
        lines.append("\t".join([key[0], key[1].replace("\t", "\\t"), where, have[0][1:-2], have[-1][1:-2]]))
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    repo = next(a for a in argv[1:] if a != "--check")
    out = table(repo)
    if not check:
        sys.stdout.write(out)
        return 0
    if out == TABLE.read_text():
        print(f"{TABLE.name} is what {repo} generates")
        return 0
    print(f"{TABLE.name} differs from what {repo} generates: regenerate it and review the diff", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
