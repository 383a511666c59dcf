"""Lint NCCL/PyTorch environment settings against what the libraries really read: the entry points.

Inputs: env/dotenv files, `ncclgen env` output, sbatch/bash scripts (lint/shell.py + shellenv.py), Kubernetes
manifests and `ncclgen env --format json` (lint/manifest.py). Every finding names a stable code
(lint/findings.py), so scripts and `doctor` can act on it. The rules for one variable are in
lint/rules.py, those reading the fabric in lint/fabric.py, two settings at once in lint/pairs.py.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..errors import did_you_mean
from . import fabric, manifest, platform, sanitise, shellenv
from . import knowledge as kb
from . import pairs as two
from .findings import CODES, SEVERITIES, Finding, _order, counts, format_json, format_text
from .knowledge import matches, parse_if_list
from .rules import (
    PREFIXES,
    TORCH_PREFIXES,
    _case_fix,
    _case_message,
    _name_findings,
    _scope_findings,
    _Target,
    _value_findings,
)

if TYPE_CHECKING:  # descriptor is only needed with --cluster; keep `ncclgen lint` imports light
    from ..load.descriptor import Descriptor

__all__ = [
    "CODES",
    "SEVERITIES",
    "Finding",
    "cluster_checks_skipped",
    "counts",
    "format_json",
    "format_text",
    "is_relevant",
    "lint_environ",
    "lint_pairs",
    "lint_text",
    "matches",
    "parse_if_list",
    "parse_text",
    "unchecked",
]

MAX_INPUT = 1 << 20


def is_relevant(name: str) -> bool:
    """Names the linter checks: every name the knowledge base knows, and the NCCL-family prefixes, in any
    case (a lower-case nccl_ib_hca is checked, and reported as NG018, not skipped)."""
    upper = name.upper()
    return kb.lookup(upper) is not None or upper.startswith(PREFIXES)


def lint_pairs(
    pairs: list[tuple[str, str | None, int | None]],
    cluster: Descriptor | None = None,
    file: str | None = None,
    target: str = "host",
) -> list[Finding]:
    """Findings for (name, value, line) triples; value None means 'set, but not knowable statically'.

    Names that are neither in the knowledge base nor NCCL-family prefixed are skipped. The order of the
    result is deterministic: by line, variable, severity (errors first), code.
    """
    t = _Target(cluster)
    values: dict[str, str | None] = {}
    lines: dict[str, int | None] = {}
    out, pairs = _odd_names(pairs, file)
    for name, value, line in pairs:
        if not is_relevant(name):
            continue
        if name != name.upper():
            out.append(Finding("NG018", "error", name, _case_message(name), _case_fix(name, value), line, file))
            continue
        raw: list[tuple] = []
        if name in values:
            raw.append(
                (
                    "NG016",
                    "warning",
                    f"{name} is set again (first on line {lines[name]}); the later value wins"
                    if lines[name]
                    else f"{name} is set twice",
                    "keep one assignment",
                )
            )
        values[name], lines[name] = value, line
        info = kb.lookup(name)
        if info is None:
            raw.append(_unknown_finding(name, t))
        else:
            named = _name_findings(info, value, t)
            if target == "pod" and cluster is not None:
                named += platform.host_only_findings(name, value, cluster)
            raw += named
            if value is not None and info.status != "removed" and not any(sev == "error" for _, sev, _, _ in named):
                raw += _value_findings(info, value, t)
                if kb.classify(info, value) is None:
                    check = fabric.VALUE_CHECKS.get(name)
                    if check is not None:
                        raw += check(value, t)
                    raw += fabric._setting_findings(info, value, t)
            if info.status not in ("invented", "removed"):
                raw += _scope_findings(info, t)
        out += [
            Finding(code, sev, name, sanitise.clip(msg, value), sanitise.clip(fix, value), line, file)
            for code, sev, msg, fix in raw
        ]
    out = [dataclasses.replace(f, fix=two.fix_against_plan(f.fix, values, t)) for f in out]
    out += [
        Finding(f.code, f.severity, f.variable, f.message, f.fix, f.line, file)
        for f in two._socket_product(values, lines)
        + two._combination_findings(values, lines, t)
        + two._cta_clamps(values, lines, t)
        + two._backend_findings(values, lines, t)
    ]
    return sorted(out, key=_order)


@functools.lru_cache(maxsize=1)
def not_runtime() -> dict[str, str]:
    """NCCL_* names read by no NCCL release at run time but set in real environments (image labels, build
    locations): name -> who sets or reads it (ncclgen/data/kb/not-runtime.tsv)."""
    with open(os.path.join(kb.kb_dir(), "not-runtime.tsv"), encoding="utf-8") as fh:
        rows = fh.read().splitlines()
    return {r.split("\t")[0]: r.split("\t")[1] for r in rows if r and not r.startswith("#")}


def _unknown_finding(name: str, t: _Target) -> tuple:
    """NG001 for a name the knowledge base does not hold, judged against the releases in hand: beyond the
    releases the knowledge base read it is a warning that says so and how to refresh, never 'not read'."""
    reader = "torch" if name.startswith(TORCH_PREFIXES) else "nccl" if name.startswith("NCCL_") else None
    version = {"nccl": t.nccl, "torch": t.torch}.get(reader or "")
    product = {"nccl": "NCCL", "torch": "PyTorch"}.get(reader or "", "")
    # NCCL's rows carry its history back to v1 (source tags); PyTorch's start at the oldest wheel read.
    older = reader == "torch" and kb.older_than_knowledge(reader, version)
    if reader and (kb.beyond_knowledge(reader, version) or older):
        covers = kb.KB_COVERS[reader]
        return (
            "NG001",
            "warning",
            f"{name} is unknown to ncclgen's knowledge (covers {product} {covers[0]} to {covers[-1]}; "
            f"{t.cluster.name if t.cluster else 'the target'} declares {product} {version}), so it is not checked",
            kb.REFRESH[reader] + f", or check {product} {version}'s release notes",
        )
    if name in not_runtime():
        return (
            "NG001",
            "info",
            f"{name} is read by no NCCL release at run time: {not_runtime()[name]}",
            "nothing: harmless in a job",
        )
    sug = kb.suggest(name)
    who = f"NCCL {t.nccl}, PyTorch {t.torch} or any plugin ncclgen knows"
    if t.cluster is not None:
        who = f"{t.cluster.name}'s {who}"
    return (
        "NG001",
        "error" if name.startswith("NCCL_") else "warning",
        f"{name} is not read by {who}{did_you_mean(name, sug)}",
        f"use {sug[0]}" if sug else "remove it",
    )


def _odd_names(pairs: list, file: str | None) -> tuple[list[Finding], list]:
    """NG001 for each name with a character outside ASCII letters, digits and '_' (a Cyrillic 'С', a
    zero-width space: not the name it looks like, lint/sanitise.py), and the pairs left to check."""
    out: list[Finding] = []
    rest = []
    for name, value, line in pairs:
        if sanitise.is_identifier(name):
            rest.append((name, value, line))
            continue
        odd = sanitise.foreign_name(name, is_relevant, kb.suggest)
        if odd is not None:
            out.append(Finding("NG001", "error", sanitise.display(name), *odd, line, file))
    return out, rest


def cluster_checks_skipped(pairs: list[tuple[str, str | None, int | None]]) -> list[str]:
    """Names whose checks need a cluster (NCCL_IB_HCA against its HCAs, a transport's knobs against its
    fabric, a plugin's against its net plugin): what lint without --cluster says it skipped."""
    out = []
    for name, value, _ in pairs:  # a value not known statically is already listed as not checked
        info = kb.lookup(name)
        needs = info is not None and (name in fabric.VALUE_CHECKS or info.scope != "any")
        if needs and value is not None and name not in out:
            out.append(name)
    return out


def lint_environ(environ: Mapping[str, str], cluster: Descriptor | None = None) -> list[Finding]:
    """Lint the relevant names of a process environment (no line numbers); used by `doctor`."""
    pairs: list[tuple[str, str | None, int | None]] = [
        (k, v, None) for k, v in sorted(environ.items()) if is_relevant(k)
    ]
    return lint_pairs(pairs, cluster)


def lint_text(text: str, name: str, cluster: Descriptor | None = None) -> list[Finding]:
    """Autodetect the format of ``text`` (named ``name`` in errors and findings) and lint it.

    Each `env:` list of a manifest is one environment (a head and a worker both setting NCCL_DEBUG is
    not a duplicate); an env file, script or JSON document is one environment.
    """
    findings: list[Finding] = []
    # A manifest's env is what a pod sees: lint it against the descriptor's pod view (its interface and
    # device names, and whether the pod loads the net plugin); anything else against the host view.
    target = "pod" if detect(text) == "manifest" else "host"
    if cluster is not None and target == "pod":
        from ..load import podcheck

        # What the pod cannot see at all (host interfaces without hostNetwork, HCAs without an RDMA
        # resource): judged on the descriptor itself, as the render does, before the pod view renames.
        for key, var, msg in podcheck.problems(cluster):
            findings.append(Finding("NG017", "error", var, msg, f"set {'.'.join(key)} in the descriptor", None, name))
    if cluster is not None:
        from ..load import views

        cluster = views.view(cluster, target)
    for group in _parse_groups(text, name)[0]:
        findings += lint_pairs(group, cluster, file=name, target=target)
    return sorted(findings, key=_order)


# -- reading the inputs ----------------------------------------------------------------------------


def read_input(path: str) -> str:
    """The text of ``path`` ('-' = stdin): small UTF-8 text, or one UserError naming the file."""
    import sys

    from ..load import yamlio

    what = "an env file, script or manifest"
    if path == "-":
        text = yamlio.decode(sys.stdin.buffer.read(MAX_INPUT + 1), "<stdin>", limit=MAX_INPUT, what=what)
    else:
        text = yamlio.read_text(path, limit=MAX_INPUT, what=what)
    return sanitise.strip_bom(text)  # a BOM would hide the first line's name


def detect(text: str) -> str:
    """'json' (ncclgen env --format json), 'manifest' (Kubernetes YAML) or 'shell' (env/dotenv/script)."""
    text = sanitise.strip_bom(text)
    if re.match(r"\s*\{\s*(\"|\}|$)", text):  # not `{ export A=1; }`, a shell group
        return "json"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")), "")
    # A YAML stream starts with '---' or a 'key:'; no env file or shell script line looks like that.
    if re.match(r"(---|[A-Za-z_][\w.-]*\s*:(\s|$))", first):
        return "manifest"
    return "shell"


def parse_text(text: str, name: str) -> list[tuple[str, str | None, int | None]]:
    """(variable, value or None, line) for every assignment in ``text``, in order."""
    return [pair for group in _parse_groups(text, name)[0] for pair in group]


def unchecked(text: str, name: str) -> list[tuple[int, str]]:
    """(line, what) for each form in ``text`` whose effect on the environment could not be read: a value
    from an expansion (for a name the linter checks), an expanded name, eval, a sourced file, ..."""
    notes = _parse_groups(text, name)[1]
    return [(line, what) for line, var, what in notes if var is None or is_relevant(var)]


_LAST_PARSE: list = [None, None, None]  # (text, name, groups): `lint` asks twice for the same text


def _parse_groups(text: str, name: str) -> tuple[list[list], list]:
    if _LAST_PARSE[0] is text and _LAST_PARSE[1] == name:
        return _LAST_PARSE[2]
    groups = _parse_groups_uncached(text, name)
    _LAST_PARSE[:] = [text, name, groups]
    return groups


def _parse_groups_uncached(text: str, name: str) -> tuple[list[list], list]:
    """(one list of (name, value, line) per environment, notes (line, variable or None, what))."""
    text = sanitise.strip_bom(text)
    kind = detect(text)
    if kind == "json":
        return [manifest.parse_json(text, name)], []
    if kind == "manifest":
        return manifest.parse_manifest(text, name)
    reading = shellenv.parse_shell(text, name)
    return [reading.pairs], reading.notes


def target_label(cluster: Descriptor | None) -> str:
    """'h100-ib (NCCL 2.30.7, PyTorch 2.13.0)', or the newest releases the knowledge base covers."""
    t = _Target(cluster)
    if cluster is not None:
        return f"{cluster.name} (NCCL {t.nccl}, PyTorch {t.torch})"
    return f"NCCL {t.nccl} and PyTorch {t.torch}"
