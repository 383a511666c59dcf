"""Where each NCCL log line the transport check reads is printed, per release: file:line@tag.

    python tools/nccl_line_formats.py [NCCL_GIT_DIR]

NCCL_GIT_DIR: a clone of NVIDIA/nccl with its release tags (default: the mirror the `fetch` tool leaves
at /work/.mirror/NVIDIA+nccl/repo). For every release in ncclgen/data/kb/nccl-releases.tsv it looks
up tag v<release>-1 and prints one comment line per format: the table at the top of
ncclgen/jobside/nccllines.py is this script's output, pasted. A release without a tag in the clone
(2.31.2 and 2.32.3 at the time of writing) is listed as such: its lines were not read from source.
Developer tool, not shipped in the wheel.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_GIT = "/work/.mirror/NVIDIA+nccl/repo"

# key -> (git grep -E pattern, pathspecs): the statement that prints the line (or builds its text).
FORMATS: dict[str, tuple[str, tuple[str, ...]]] = {
    "prefix": (r'"%s:%d:%d "', ("src/debug.cc",)),
    "info": (r"NCCL INFO ", ("src/debug.cc",)),
    "warn": (r"NCCL WARN ", ("src/debug.cc",)),
    "file%h": (r"case 'h'", ("src/debug.cc",)),
    "linebuf": (r"setlinebuf\(file\)", ("src/debug.cc",)),
    "subsys": (r'"NCCL_DEBUG_SUBSYS"|NCCL_DEBUG_SUBSYS,', ("src/debug.cc",)),
    "version": (r'INFO\(NCCL_ALL, ?"%s", ?VERSION_STRING\)', ("src/init.cc",)),
    "net": (r'"Using network %s"', ("src/init.cc",)),
    "plugin": (r'"NET/Plugin: Loaded net plugin %s \(v1[0-9]\)"', ("src/plugin/net",)),
    "nofile": (r"Plugin: Could not find:", ("src/plugin/plugin_open.cc",)),
    "ib": (r'"NET/IB : Using%s %s; OOB', ("src/transport",)),
    "ibdev": (r'" \[%d\]%s:%d', ("src/transport/net_ib.cc", "src/transport/net_ib")),
    "socket": (r'"NET/Socket : Using%s"', ("src/transport/net_socket.cc",)),
    "send": (r"\[send\] via NET/%s/%d%s", ("src/transport/net.cc",)),
    "recv": (r"\[receive\] via NET/%s/%d%s", ("src/transport/net.cc",)),
    "gdr": (r'\? "/GDRDMA"', ("src/transport/net.cc",)),
    "p2p": (r'"Channel %02d/%01d : %d\[%d\] -> %d\[%d\] via P2P/', ("src/transport/p2p.cc",)),
    "shm": (r'"Channel %02d : %d\[%d\] -> %d\[%d\] via SHM/', ("src/transport/shm.cc",)),
    "comm": (r'"comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d', ("src/init.cc",)),
    "complete": (r"- Init COMPLETE", ("src/init.cc",)),
    "rings": (r'"Connected all rings', ("src/transport/generic.cc",)),
}


def releases() -> list[str]:
    with open(ROOT / "ncclgen/data/kb/nccl-releases.tsv", encoding="utf-8") as fh:
        header = next(line for line in fh if not line.startswith("#"))
    return header.rstrip("\n").split("\t")[1:]


def grep(git: str, tag: str, pattern: str, paths: tuple[str, ...]) -> list[str]:
    run = subprocess.run(
        ["git", "-C", git, "grep", "-n", "-E", "-e", pattern, tag, "--", *paths], capture_output=True, text=True
    )
    out = []
    for line in run.stdout.splitlines():
        where = line[len(tag) + 1 :].split(":")
        out.append(f"{where[0].removeprefix('src/')}:{where[1]}")
    return out


def main(argv: list[str]) -> int:
    git = argv[0] if argv else DEFAULT_GIT
    tags = set(subprocess.run(["git", "-C", git, "tag"], capture_output=True, text=True).stdout.split())
    for release in releases():
        tag = f"v{release}-1"
        if tag not in tags:
            print(f"# {tag}: no such tag in NVIDIA/nccl's clone; formats not read from source")
            continue
        cells = []
        for key, (pattern, paths) in FORMATS.items():
            found = grep(git, tag, pattern, paths)
            cells.append(f"{key} {','.join(found) if found else '-'}")
        text = f"{tag}: " + "; ".join(cells)
        print(
            "\n".join(textwrap.wrap(text, 108, initial_indent="# ", subsequent_indent="#   ", break_on_hyphens=False))
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
