#!/usr/bin/env python3
"""Extract the lines every rule in ncclgen/data/rules.yaml cites, from the fetched source and released wheels.

Usage:
  python tools/citations.py --nccl /work/.mirror/NVIDIA+nccl/repo --wheels /tmp/wheels --verl /path/verl-0.9.1 \\
      > tests/data/citations/cited-lines.txt

A rule's `source` cites 'NCCL v2.30.7 src/graph/paths.cc:465, 511', 'v2.21.5-1 src/transport/net_ib.cc:80',
'torch 2.13.0 wheel torch/include/.../ProcessGroupNCCL.hpp:167-172' or 'verl 0.9.1 wheel verl/...py:42-49'.
A vendor file cited as 'owner/repo@commit path:line' is read at that commit from a clone under --mirrors
(owner+repo/repo, as the fetch tool lays them out). Each such file:line is read at that tag (git show) or
from that wheel, and written as
'ORIGIN<TAB>FILE:LINE<TAB>TEXT'. tests/test_citations.py checks every rule's citations against this extract,
so CI needs no network: a citation whose line does not exist at its tag, or was never extracted, fails.
"""

from __future__ import annotations

import argparse
import glob
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORIGIN = re.compile(
    r"NCCL v(?P<nccl>\d+\.\d+\.\d+)|NVIDIA/nccl@\w+ \(v(?P<nccl2>\d+\.\d+\.\d+)-1\)|\bv(?P<tag>\d+\.\d+\.\d+)-1\b"
    r"|torch (?P<torch>\d+\.\d+\.\d+) wheel|PyTorch (?P<pytorch>\d+\.\d+\.\d+) |verl (?P<verl>\d+\.\d+\.\d+) wheel"
)
FILE_LINES = re.compile(
    r"(?P<file>(?:src|torch|verl)/[\w/.+-]+\.(?:cc|cu|h|hpp|py|txt)):(?P<lines>\d+(?:-\d+)?(?:,\s?\d+(?:-\d+)?)*)"
)
VENDOR = re.compile(
    r"(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)@(?P<commit>[0-9a-f]{7,40})\s+(?P<file>[\w./-]+)"
    r":(?P<lines>\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)"
)
BARE_LINES = re.compile(r"^\s*,\s*(?P<lines>\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)\b")


def _numbers(spec: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r",\s?", spec):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def cited(source: str) -> list[tuple[str, str, int]]:
    """(origin, file, line) for every file:line a source string cites after an origin it can read."""
    out = []
    # notes in parentheses are dropped ('paths.cc:465 (default 1), 511' cites 465 and 511), unless they name
    # the origin ('NVIDIA/nccl@73cf1122 (v2.30.7-1) src/...')
    source = re.sub(r"\(([^()]*)\)", lambda m: m.group(0) if re.fullmatch(r"v[\d.]+-1", m.group(1)) else "", source)
    for segment in source.split(";"):
        origin = None
        pos = 0
        while pos < len(segment):
            o = ORIGIN.search(segment, pos)
            f = FILE_LINES.search(segment, pos)
            if f is None:
                break
            if o is not None and o.start() < f.start():
                kind = next(k for k, v in o.groupdict().items() if v)
                alias = {"nccl2": "nccl", "tag": "nccl", "pytorch": "torch"}
                origin = alias.get(kind, kind) + " " + o.group(kind)
                pos = o.end()
                continue
            if origin is not None:
                out += [(origin, f.group("file"), n) for n in _numbers(f.group("lines"))]
                rest = segment[f.end() :]
                bare = BARE_LINES.match(rest)
                if bare:
                    out += [(origin, f.group("file"), n) for n in _numbers(bare.group("lines"))]
            pos = f.end()
    return out


def vendor_cited(source: str) -> list[tuple[str, str, int]]:
    """('git owner/repo@commit', file, line) for every vendor file:line a source string cites."""
    return [
        (f"git {m.group('repo')}@{m.group('commit')}", m.group("file"), n)
        for m in VENDOR.finditer(source)
        for n in _numbers(m.group("lines"))
    ]


def rule_sources() -> list[tuple[str, str]]:
    """(rule id, not_emitted var or 'cluster-file:source-id', source) from rules.yaml and clusters/*.yaml."""
    import yaml

    doc = yaml.safe_load((ROOT / "ncclgen" / "data" / "rules.yaml").read_text())
    out = [(r["id"], r["source"]) for r in doc["rules"]] + [(n["var"], n["source"]) for n in doc["not_emitted"]]
    for path in sorted((ROOT / "clusters").glob("*.yaml")):
        sources = (yaml.safe_load(path.read_text()) or {}).get("sources") or {}
        out += [(f"{path.name}:{key}", str(text)) for key, text in sources.items()]
    return out


def _reader(args: argparse.Namespace):
    cache: dict[tuple[str, str], list[str] | None] = {}

    def lines(origin: str, file: str) -> list[str] | None:
        if (origin, file) in cache:
            return cache[(origin, file)]
        kind, version = origin.split()
        text = None
        if kind == "nccl":
            done = subprocess.run(
                ["git", "-C", args.nccl, "show", f"v{version}-1:{file}"], capture_output=True, text=True
            )
            text = done.stdout if done.returncode == 0 else None
        elif kind == "torch":
            wheels = glob.glob(f"{args.wheels}/torch-{version}-*.whl")
            if wheels:
                with zipfile.ZipFile(wheels[0]) as whl:
                    text = whl.read(file).decode("utf-8", "replace") if file in whl.namelist() else None
        elif kind == "verl":
            path = Path(args.verl) / file
            text = path.read_text() if path.is_file() else None
        elif kind == "git":
            repo, commit = version.split("@")
            clone = Path(args.mirrors) / repo.replace("/", "+", 1) / "repo"
            done = subprocess.run(["git", "-C", str(clone), "show", f"{commit}:{file}"], capture_output=True, text=True)
            text = done.stdout if done.returncode == 0 else None
        cache[(origin, file)] = text.splitlines() if text is not None else None
        return cache[(origin, file)]

    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nccl", required=True, help="a clone of NVIDIA/nccl with its v*-1 tags")
    ap.add_argument("--wheels", required=True, help="folder with the torch wheels (pip download --no-deps)")
    ap.add_argument("--verl", required=True, help="an unpacked verl wheel (its verl/ folder's parent)")
    ap.add_argument("--mirrors", required=True, help="folder of vendor clones, owner+repo/repo")
    args = ap.parse_args(argv)
    lines = _reader(args)
    rows = set()
    for _rule, source in rule_sources():
        for origin, file, n in cited(source) + vendor_cited(source):
            text = lines(origin, file)
            if text is not None and 1 <= n <= len(text):
                rows.add((origin, file, n, text[n - 1].rstrip()))
    print("# Lines cited by ncclgen/data/rules.yaml, read at each citation's tag or wheel by tools/citations.py;")
    print("# do not edit by hand. origin<TAB>file:line<TAB>text")
    for origin, file, n, text in sorted(rows, key=lambda r: (r[0], r[1], r[2])):
        print(f"{origin}\t{file}:{n}\t{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
