#!/usr/bin/env python3
"""List the distributed-runtime environment names a released PyTorch reads, from its wheel.

Usage (CUDA wheels: a +cpu build has no ProcessGroupNCCL; the shared venv's pip caps torch, hence no config):
  PIP_CONFIG_FILE=/dev/null pip download --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \\
      --python-version 3.11 torch==2.15.0 -d /tmp/wheels            # and 2.13.0, 2.14.0, 2.14.1
  python tools/torch_wheel_names.py --table /tmp/wheels/torch-*.whl > ncclgen/data/kb/torch-releases.tsv
  python tools/torch_wheel_names.py --aliases /tmp/wheels/torch-*.whl > ncclgen/data/kb/torch-aliases.tsv

How: the C++ side (ProcessGroupNCCL, ProcessGroupNCCL2, the Flight Recorder) reads its variables through
getCvarInt/getCvarBool/getCvarString({"NEW", "OLD", ...}), string literals that land in the .rodata of
torch/lib/libtorch_cuda.so and libtorch_cpu.so; the Python side (torch/distributed/*.py: the backend choice
TORCH_DIST_USE_NCCL2, TORCH_DIST_NAN_CHECK, the TORCH_WATCHDOG_* settings) reads os.environ with quoted
literals. A name counts as read by a release when a .rodata string ends with it (the linker merges a literal
into the tail of a longer one) or a quoted literal in torch/distributed names it. Only the families the
linter owns are kept (FAMILY). The aliases come from the wheel's own headers
(torch/include/torch/csrc/distributed/c10d/*.hpp): a {"NEW", "OLD"} list means NEW is read first and OLD
is its alias; that is also how the deprecated NCCL_* spellings PyTorch still honours are found (their
literal is merged into TORCH_NCCL_*'s tail, so .rodata alone cannot show them).
"""

from __future__ import annotations

import argparse
import re
import sys
import zipfile

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from nccl_wheel_names import _sections

FAMILY = r"TORCH_(?:NCCL2?_|FR_|DIST_|DISTRIBUTED_|WATCHDOG_)[A-Z0-9_]*[A-Z0-9]"
LIB_NAME = re.compile(rb"(" + FAMILY.encode() + rb")\0")
PY_NAME = re.compile(r"""["'](""" + FAMILY + r""")["']""")
LIBS = ("torch/lib/libtorch_cuda.so", "torch/lib/libtorch_cpu.so")
HEADERS = "torch/include/torch/csrc/distributed/c10d/"
ALIAS_LIST = re.compile(r'\{\s*("(?:TORCH|NCCL)_[A-Z0-9_]+"(?:\s*,\s*"[A-Z0-9_]+")+)\s*\}')


def wheel_version(path: str) -> str:
    """'2.15.0' from 'torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl'."""
    found = re.match(r"torch-(\d+\.\d+\.\d+)(\+\w+)?-", path.rsplit("/", 1)[-1])
    if not found:
        raise ValueError(f"{path}: not a torch wheel file name")
    if found.group(2):
        raise ValueError(f"{path}: a {found.group(2)[1:]} build has no libtorch_cuda.so; use the CUDA wheel")
    return found.group(1)


def aliases(whl: zipfile.ZipFile) -> list[tuple[str, str, str]]:
    """(old, new, 'header:line') for every {"NEW", "OLD", ...} name list in the c10d headers."""
    out = []
    for member in sorted(n for n in whl.namelist() if n.startswith(HEADERS) and n.endswith(".hpp")):
        text = whl.read(member).decode("utf-8", "replace")
        for m in ALIAS_LIST.finditer(text):
            names = re.findall(r'"([A-Z0-9_]+)"', m.group(1))
            line = text.count("\n", 0, m.start()) + 1
            out += [(old, names[0], f"{member}:{line}") for old in names[1:]]
    return out


def names_in_wheel(path: str) -> set[str]:
    """Every FAMILY name the wheel's libraries or torch/distributed Python read, and the headers' aliases."""
    with zipfile.ZipFile(path) as whl:
        members = set(whl.namelist())
        missing = [lib for lib in LIBS if lib not in members]
        if missing:
            raise ValueError(f"{path}: no {', '.join(missing)}")
        names: set[str] = set()
        for lib in LIBS:
            rodata = _sections(whl.read(lib))[".rodata"]
            names |= {m.group(1).decode() for m in LIB_NAME.finditer(rodata)}
        for member in (n for n in members if n.startswith("torch/distributed/") and n.endswith(".py")):
            names |= set(PY_NAME.findall(whl.read(member).decode("utf-8", "replace")))
        names |= {old for old, _new, _where in aliases(whl)}
    return names


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--table", action="store_true", help="one row per name, one 0/1 column per wheel")
    mode.add_argument("--aliases", action="store_true", help="each release's alias lists: version, old, new, where")
    ap.add_argument("wheels", nargs="+")
    args = ap.parse_args(argv)
    by_version = {wheel_version(p): p for p in args.wheels}
    versions = sorted(by_version, key=_key)
    wheels = ", ".join(f"torch=={v}" for v in versions)
    if args.aliases:
        print('# PyTorch\'s {"NEW", "OLD"} environment-name lists (NEW read first), per release, from the headers')
        print(f"# in the PyPI wheels {wheels} by tools/torch_wheel_names.py --aliases; do not edit by hand.")
        print("torch\tname\talias_of\twhere")
        for v in versions:
            with zipfile.ZipFile(by_version[v]) as whl:
                for old, new, where in aliases(whl):
                    print(f"{v}\t{old}\t{new}\t{where}")
        return 0
    per = {v: names_in_wheel(by_version[v]) for v in versions}
    print("# PyTorch distributed environment names (TORCH_NCCL_*, TORCH_FR_*, TORCH_DIST*_, TORCH_WATCHDOG_*, and")
    print("# the NCCL_* aliases its headers list) each release reads: 1 = read (libtorch_cuda/cpu .rodata,")
    print(f"# torch/distributed/*.py literals, c10d header alias lists). From the PyPI wheels {wheels}")
    print("# (pip download --no-deps) by tools/torch_wheel_names.py --table; do not edit by hand.")
    print("\t".join(["name", *versions]))
    for name in sorted(set().union(*per.values())):
        print("\t".join([name] + ["1" if name in per[v] else "0" for v in versions]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
