#!/usr/bin/env python3
"""The source files and log texts of NCCL releases that have no source tag, read from their released library.

Usage (run by hand; CI downloads nothing, so no test runs it):
  pip download --no-deps -d wheels nvidia-nccl-cu12==2.30.7 nvidia-nccl-cu12==2.31.2 nvidia-nccl-cu12==2.32.3
  pip download --no-deps -d wheels nvidia-nccl-cu13==2.32.6
  python tools/nccl_release_strings.py --base wheels/nvidia_nccl_cu12-2.30.7-*.whl \\
      wheels/nvidia_nccl_cu12-2.31.2-*.whl wheels/nvidia_nccl_cu12-2.32.3-*.whl wheels/nvidia_nccl_cu13-2.32.6-*.whl \\
      > ncclgen/data/triage/nccl-release-strings.tsv

Why: nccl-warn.tsv (tools/nccl_warn_strings.py) is built from NVIDIA/nccl's source tags, and the releases after
the newest tag (2.31.2, 2.32.3, 2.32.6 when this was written) have none. Their libnccl.so.2 is the primary source
left. Two facts come out of it:
- the source files that log (WARN/INFO/TRACE pass __FILE__, a path under src/ such as "ras/diagnostics_xid.cc",
  which lands in .rodata): a WARN line names its file, and triage takes a WARN from a file NCCL does not have for
  a net plugin's, so a file new in 2.32 (transport/multicast.cc, misc/crypt.cc) must be known as NCCL's own;
- the texts new since the base release (the newest tagged one, whose texts nccl-warn.tsv already holds): each
  .rodata string shaped like a message and worded as a failure (the words nccl-warn.tsv keeps an INFO text by;
  triage reads an NCCL INFO line only when it has them, and a WARN line by its own file). The binary does not say at which level a text is printed, nor where
  (the call's file and line are immediates in code); the table says so (level '?'), and triage classifies these
  texts by their words alone (ncclgen/data/triage/classes.yaml rules without a file).
Strings are read as the linker left them: NUL-terminated runs; a text the linker stored as the tail of a longer
one is not seen on its own. A path is kept from its first lower-case letter (the byte before a string can be
any constant). Only paths and texts go into the table, never code.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import nccl_wheel_names as wheels  # the ELF reader and the wheel opener
from nccl_warn_strings import INFO_FAILURE  # the words of a text that reports a failure

from ncclgen.triage import catalogue  # nccl-warn.tsv's reader

STRING = re.compile(rb"[\t\n\x20-\x7e]{4,}(?=\0)")
PATH = re.compile(r"[a-z][a-z0-9_]*(?:/[a-z0-9_]+)*\.(?:cc|cu|cpp|c|h)$")
# A message: two words, a space between them, and no path or identifier shape alone
MESSAGE = re.compile(r"[A-Za-z]{2,}[,:]? [A-Za-z%(]")
NOT_MESSAGE = re.compile(r"^(?:/|\.\./)|^[\w.:/-]+$|^\s")
MIN_LENGTH = 16


def strings(elf: bytes) -> set[str]:
    """Every NUL-terminated printable string of the library's .rodata."""
    rodata = wheels._sections(elf)[".rodata"]
    return {m.group(0).decode("ascii") for m in STRING.finditer(rodata)}


def source_paths(found: set[str]) -> set[str]:
    """The __FILE__ paths under src/ among ``found`` (build-tree absolute paths and ../include skipped)."""
    out = set()
    for s in found:
        if s.startswith(("/", "..")) or "\n" in s or " " in s:
            continue
        if m := PATH.search(s):
            out.add(m.group(0))
    return out


def escaped(text: str) -> str:
    """The text as nccl-warn.tsv writes a format: C escapes as a source file spells them."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace('"', '\\"')


def messages(found: set[str]) -> set[str]:
    """The strings of ``found`` shaped like a message that reports a failure."""
    return {
        s
        for s in found
        if len(s) >= MIN_LENGTH and MESSAGE.search(s) and INFO_FAILURE.search(s) and not NOT_MESSAGE.search(s)
    }


def known_formats() -> set[str]:
    """The formats nccl-warn.tsv holds already (read from the tagged sources)."""
    return {fmt for _level, fmt, _where in catalogue.nccl_rows()}


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def table(base: str, paths: list[str]) -> str:
    base_version, base_elf = wheels.wheel_library(base)
    base_strings = strings(base_elf)
    read = sorted(((*wheels.wheel_library(p), wheels.wheel_package(p)) for p in paths), key=lambda r: version_key(r[0]))
    per = {version: strings(elf) for version, elf, _pkg in read}
    versions = [version for version, _elf, _pkg in read]
    rows: dict[tuple[str, str], list[str]] = {}
    known = known_formats()
    for version in versions:
        for path in source_paths(per[version]):
            rows.setdefault(("file", path), []).append(version)
        for text in messages(per[version] - base_strings):
            if (fmt := escaped(text)) not in known:
                rows.setdefault(("format", fmt), []).append(version)
    wheels_read = "; ".join(f"{pkg}=={v}" for v, _elf, pkg in read)
    lines = [
        "# The source files that log, and the failure texts new since the base release, of NCCL releases with no",
        f"# source tag, read from libnccl.so.2's .rodata in the PyPI wheels {wheels_read} (pip download --no-deps);",
        f"# base: {wheels.wheel_package(base)}=={base_version}, the newest release nccl-warn.tsv reads from source.",
        "# Level and call site are not in a binary: triage classifies these texts by their words.",
        "# Generated by tools/nccl_release_strings.py; do not edit by hand.",
        "kind\ttext\tfirst\tlast",
    ]
    for (kind, text), seen in sorted(rows.items()):
        lines.append(f"{kind}\t{text}\t{seen[0]}\t{seen[-1]}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the wheel of the newest release nccl-warn.tsv reads from source")
    ap.add_argument("wheels", nargs="+", help="the wheels of the releases after it")
    args = ap.parse_args(argv)
    sys.stdout.write(table(args.base, args.wheels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
