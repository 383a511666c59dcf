#!/usr/bin/env python3
"""List the NCCL_* environment-variable names a released libnccl can read, from its wheel.

Usage:
  pip download --no-deps -d wheels nvidia-nccl-cu12==2.32.3      # and the other releases compared
  python tools/nccl_wheel_names.py wheels/nvidia_nccl_cu12-2.32.3-*.whl > names-2.32.3.txt
  python tools/nccl_wheel_names.py --table wheels/*.whl > ncclgen/data/kb/nccl-releases.tsv
  # a new release (2.32.6 ships only as nvidia-nccl-cu13; its 2.32.3 names equal cu12's): add its column
  pip download --no-deps -d wheels nvidia-nccl-cu13==2.32.6
  python tools/nccl_wheel_names.py --extend ncclgen/data/kb/nccl-releases.tsv wheels/nvidia_nccl_cu13-2.32.6-*.whl

How: libnccl reads its variables with ncclGetEnv("NCCL_...") / NCCL_PARAM(Name, "NAME", ...), whose
macro pastes "NCCL_" "NAME" into one string literal; every such literal lands, NUL-terminated, in the
library's .rodata section. This reads lib/libnccl.so.2 straight out of the wheel (a zip), parses the
ELF64 section headers (pure Python, no binutils) and keeps every NCCL_[A-Z0-9_]+ name that ends a
NUL-terminated .rodata string. "Ends" rather than "is": the linker packs some literals with no NUL
before them (2.30.7 holds "...virtual_switch_linksNCCL_IPC_USE_ABSTRACT_SOCKET"). The price is a few
names that end an assert() expression or a message without being variables: NOT_VARIABLES lists them,
each checked against NVIDIA/nccl v2.30.7-1 source.

--kb-stubs TABLE prints knowledge-base rows for the names the table has and the knowledge base lacks (the
version window from the table, everything else "unknown"), to be reviewed and appended to nccl.tsv.

--extend TABLE rewrites TABLE in place with the wheels' columns added (or replaced), keeping the columns
of the releases already read, so refreshing the knowledge base needs only the new release's wheel.

--table writes one row per name: the name and, for each wheel given (ordered by version), 1 when that
release's library holds the literal, else 0. ncclgen/data/kb/nccl-releases.tsv is that table, committed so
the tests never download anything; tests/test_knowledge.py checks the knowledge base against it.
"""

from __future__ import annotations

import argparse
import re
import struct
import sys
import zipfile

LIB = re.compile(r"(^|/)lib/libnccl\.so(\.\d+)*$")
NAME = re.compile(rb"(NCCL_[A-Z0-9_]*[A-Z0-9])\0")
# Whole .rodata strings shaped like a name that no release reads from the environment.
NOT_VARIABLES = {
    "NCCL_COMM_PROPERTIES_INITIALIZER": "macro named in a message (src/dev_runtime.cc:1468)",
    "NCCL_CONFIG_INITIALIZER": "macro named in a message (nccl.h ncclConfig_t initializer)",
    "NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER": "macro named in a message (src/dev_runtime.cc:1508)",
    "NCCL_SIM_INFO_INITIALIZER": "macro named in a message (nccl.h ncclSimInfo_t initializer)",
    "NCCL_ENCRYPTION_CONFIG_INITIALIZER": "macro named in a message (2.32: encryption config initializer)",
    "NCCL_GIN_CONNECTION_FULL": "enum value ending an assert/message (src/gin/gin_host.cc:141)",
    "NCCL_GIN_CONNECTION_RAIL": "enum value ending an assert/message, as NCCL_GIN_CONNECTION_FULL",
    "NCCL_IB_MAX_DEVS_PER_NIC": "constant ending an assert() (src/transport/net_ib/p2p_resiliency.cc:776)",
    "NCCL_IB_RECV_WR_ID_DUMMY": "constant ending an assert() (src/transport/net_ib/p2p_resiliency.cc:318)",
    "NCCL_IB_RESILIENCY_PORT_RECOVERY_ACK_MSG_ID": "constant ending an assert() "
    "(src/transport/net_ib/p2p_resiliency_recovery.cc:666)",
}


def _sections(elf: bytes) -> dict[str, bytes]:
    """Section name -> bytes of an ELF64 little-endian file."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise ValueError("not an ELF64 little-endian library")
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx]
    names = elf[strtab[4] : strtab[4] + strtab[5]]
    out = {}
    for h in headers:
        name = names[h[0] : names.index(b"\0", h[0])].decode()
        if h[1] != 8:  # SHT_NOBITS (.bss) has no bytes in the file
            out[name] = elf[h[4] : h[4] + h[5]]
    return out


def names_in_library(elf: bytes) -> set[str]:
    """Every NCCL_* name that ends a NUL-terminated .rodata string, less NOT_VARIABLES."""
    rodata = _sections(elf)[".rodata"]
    return {m.group(1).decode() for m in NAME.finditer(rodata)} - set(NOT_VARIABLES)


def wheel_package(path: str) -> str:
    """'nvidia-nccl-cu13' from 'nvidia_nccl_cu13-2.32.6-py3-none-manylinux_2_27_x86_64.whl'."""
    return path.rsplit("/", 1)[-1].split("-", 1)[0].replace("_", "-")


def wheel_library(path: str) -> tuple[str, bytes]:
    """(version, libnccl bytes) of an nvidia-nccl-cuXX wheel."""
    version = re.search(r"-(\d+\.\d+\.\d+)(\.post\d+)?-", path.rsplit("/", 1)[-1])
    if not version:
        raise ValueError(f"{path}: no version in the wheel's file name")
    with zipfile.ZipFile(path) as whl:
        libs = [n for n in whl.namelist() if LIB.search(n)]
        if not libs:
            raise ValueError(f"{path}: no lib/libnccl.so in the wheel")
        return version.group(1), whl.read(sorted(libs)[0])


def kb_stubs(table_path: str) -> list[str]:
    """Knowledge-base rows (ncclgen/data/kb/nccl.tsv columns) for every name of the release table that the
    knowledge base does not know yet: the version window from the table, value type unknown ('string',
    not checked), meaning from the name only, until someone reads the source and fills them in."""
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))
    from ncclgen.lint import knowledge as kb

    packages, per = read_table(table_path)
    versions = list(per)
    out = []
    for name in sorted(set().union(*per.values())):
        if kb.lookup(name) is not None:
            continue
        held = [v for v in versions if name in per[v]]
        last = "" if held[-1] == versions[-1] else held[-1]
        status = "removed" if last else "active"
        words = name[len("NCCL_") :].lower().replace("_", " ")
        window = (
            f"first in {held[0]}"
            if not last
            else (f"only in {held[0]}" if held[0] == last else f"in {held[0]} to {last}")
        )
        meaning = (
            f"(from the name only) {words}; {window} (libnccl .rodata); no tagged NVIDIA/nccl source "
            "reads it, so its values are not checked"
        )
        wheels = "; ".join(
            sorted({f"{packages[v]} " + ", ".join(h for h in held if packages[h] == packages[v]) for v in held})
        )
        source = f"{wheels} libnccl.so.2 .rodata (ncclgen/data/kb/nccl-releases.tsv)"
        out.append(
            "\t".join(
                [
                    name,
                    "nccl",
                    "string",
                    "",
                    "",
                    "",
                    "",
                    "none",
                    held[0],
                    last,
                    status,
                    "",
                    "any",
                    "",
                    "no",
                    "no",
                    "no",
                    "",
                    "",
                    meaning,
                    source,
                ]
            )
        )
    return out


WHEELS_LINE = re.compile(r"# Generated by tools/nccl_wheel_names.py .*?from the PyPI wheels (.*) \(pip download")


def read_table(path: str) -> tuple[dict[str, str], dict[str, set[str]]]:
    """(version -> PyPI package, version -> names) of a --table file; its second line names the wheels
    ('nvidia-nccl-cu12==2.28.3, 2.28.7; nvidia-nccl-cu13==2.32.6'), the format tools/nccl_warn_strings.py
    also reads."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    packages: dict[str, str] = {}
    found = WHEELS_LINE.match(lines[1])
    for group in found.group(1).split("; ") if found else ():
        package, versions = group.split("==")
        packages.update({v: package for v in versions.split(", ")})
    rows = [ln.split("\t") for ln in lines if not ln.startswith("#")]
    versions = rows[0][1:]
    names = {v: {r[0] for r in rows[1:] if r[1 + i] == "1"} for i, v in enumerate(versions)}
    return {v: packages.get(v, "nvidia-nccl-cu12") for v in versions}, names


def table(per: dict[str, set[str]], packages: dict[str, str]) -> list[str]:
    """The --table text: two comment lines (the second names every wheel read), a header, one 0/1 row
    per name."""
    versions = sorted(per, key=lambda v: tuple(int(p) for p in v.split(".")))
    groups: list[tuple[str, list[str]]] = []
    for v in versions:
        if groups and groups[-1][0] == packages[v]:
            groups[-1][1].append(v)
        else:
            groups.append((packages[v], [v]))
    out = [
        "# NCCL_* names ending a string literal in libnccl's .rodata, per release: 1 = present.",
        "# Generated by tools/nccl_wheel_names.py --table/--extend from the PyPI wheels "
        + "; ".join(f"{p}==" + ", ".join(vs) for p, vs in groups)
        + " (pip download --no-deps); do not edit by hand.",
        "\t".join(["name", *versions]),
    ]
    for name in sorted(set().union(*per.values())):
        out.append("\t".join([name] + ["1" if name in per[v] else "0" for v in versions]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", action="store_true", help="one row per name, one 0/1 column per wheel")
    ap.add_argument("--extend", metavar="TABLE", help="add the wheels' columns to TABLE (a --table output), in place")
    ap.add_argument(
        "--kb-stubs",
        metavar="TABLE",
        help="print knowledge-base rows for the names of TABLE (a --table output) it lacks",
    )
    ap.add_argument("wheels", nargs="*")
    args = ap.parse_args(argv)
    if args.kb_stubs:
        print("\n".join(kb_stubs(args.kb_stubs)))
        return 0
    packages, per = read_table(args.extend) if args.extend else ({}, {})
    for path in args.wheels:
        version, lib = wheel_library(path)
        per[version] = names_in_library(lib)
        packages[version] = wheel_package(path)
    if args.extend:
        with open(args.extend, "w", encoding="utf-8") as fh:
            fh.write("\n".join(table(per, packages)) + "\n")
        return 0
    if not args.table:
        for version, names in per.items():
            for name in sorted(names):
                print(name if len(per) == 1 else f"{version}\t{name}")
        return 0
    print("\n".join(table(per, packages)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
