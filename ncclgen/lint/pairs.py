"""Rules across two settings of one environment: one cancels, caps or multiplies the other."""

from __future__ import annotations

import re

from . import knowledge as kb
from .findings import Finding
from .rules import BUFFSIZE_DEFAULT, MAX_SOCKETS, MAX_THREADS, _deliberate, _size, _Target

NCCL_STEPS = 8  # NCCL v2.30.7 src/include/device.h:26
BLOCKING_WAIT_SOURCE = (
    "PyTorch 2.13.0 ProcessGroupNCCL.cpp: 'TORCH_NCCL_BLOCKING_WAIT is enabled, NO watchdog thread is created'"
)


def _combination_findings(values: dict, lines: dict, t: _Target) -> list[Finding]:
    """Two settings of one environment where one cancels or caps the other."""
    return (
        _chunk_over_buffsize(values, lines, t)
        + _blocking_wait_findings(values, lines, t)
        + _alias_conflicts(values, lines)
    )


def _chunk_over_buffsize(values: dict, lines: dict, t: _Target) -> list[Finding]:
    """NCCL_P2P_NET_CHUNKSIZE above NCCL_BUFFSIZE/NCCL_STEPS is capped (NCCL v2.30.7 src/init.cc:841-843)."""
    chunk_info, buff_info = kb.lookup("NCCL_P2P_NET_CHUNKSIZE"), kb.lookup("NCCL_BUFFSIZE")
    chunk_text = values.get("NCCL_P2P_NET_CHUNKSIZE")
    if chunk_info is None or buff_info is None or chunk_text is None or _deliberate(chunk_info, chunk_text, t):
        return []
    chunk, _ = kb.parse_int(chunk_info, chunk_text)
    buff, _ = kb.parse_int(buff_info, values.get("NCCL_BUFFSIZE") or str(BUFFSIZE_DEFAULT))
    if chunk is None or buff is None or buff <= 0 or chunk <= buff // NCCL_STEPS:
        return []
    cap = buff // NCCL_STEPS
    whose = "NCCL_BUFFSIZE" if values.get("NCCL_BUFFSIZE") else "the default NCCL_BUFFSIZE"
    return [
        Finding(
            "NG021",
            "info",
            "NCCL_P2P_NET_CHUNKSIZE",
            f"NCCL_P2P_NET_CHUNKSIZE={chunk_text} is capped at NCCL_BUFFSIZE/{NCCL_STEPS}: with "
            f"{whose} of {_size(buff)}, {cap} ({_size(cap)}) takes effect "
            f"({t.cite('NCCL', 'NCCL v2.30.7 src/init.cc:841-843')}); for the larger chunk, NCCL_BUFFSIZE must be at "
            f"least {chunk * NCCL_STEPS}",
            f"NCCL_P2P_NET_CHUNKSIZE={cap}",
            lines.get("NCCL_P2P_NET_CHUNKSIZE"),
        )
    ]


def _blocking_wait_findings(values: dict, lines: dict, t: _Target) -> list[Finding]:
    """Blocking wait on: PyTorch creates no watchdog, so async error handling has no effect."""
    blocking = kb.lookup("TORCH_NCCL_BLOCKING_WAIT")
    if blocking is None:
        return []
    names = ("TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT")
    wait = next((w for w in names if values.get(w) is not None and kb.same_value(blocking, values[w], "1")), None)
    if wait is None:
        return []
    for handling in ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"):
        h = values.get(handling)
        if h is not None and h.strip() != "0":
            return [
                Finding(
                    "NG019",
                    "warning",
                    wait,
                    f"{wait}={values[wait]} makes wait() block and throw on timeout, and PyTorch then creates "
                    f"no watchdog thread, so {handling}={h} (line {lines.get(handling)}) has no "
                    "effect: a hung collective is no longer torn down by the watchdog "
                    f"({t.cite('PyTorch', BLOCKING_WAIT_SOURCE)})",
                    f"remove {wait} and keep {handling}",
                    lines.get(wait),
                )
            ]
    return []


def _alias_conflicts(values: dict, lines: dict) -> list[Finding]:
    """An old NCCL_* alias and its TORCH_NCCL_* name both set, differently: PyTorch reads the TORCH_ one."""
    out = []
    for alias, new in (
        ("NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_ASYNC_ERROR_HANDLING"),
        ("NCCL_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT"),
    ):
        if values.get(alias) is not None and values.get(new) is not None and values[alias] != values[new]:
            out.append(
                Finding(
                    "NG019",
                    "warning",
                    alias,
                    f"{alias}={values[alias]} is ignored: {new}={values[new]} (line {lines.get(new)}) "
                    "is set too, and PyTorch reads the TORCH_ name first",
                    f"remove {alias}",
                    lines.get(alias),
                )
            )
    return out


def _socket_product(values: dict, lines: dict) -> list[Finding]:
    """NCCL keeps NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD <= 64 by lowering NSOCKS_PERTHREAD."""
    nt_info, ns_info = kb.lookup("NCCL_SOCKET_NTHREADS"), kb.lookup("NCCL_NSOCKS_PERTHREAD")
    if nt_info is None or ns_info is None:
        return []
    nt, _ = kb.parse_int(nt_info, values.get("NCCL_SOCKET_NTHREADS") or "")
    ns, _ = kb.parse_int(ns_info, values.get("NCCL_NSOCKS_PERTHREAD") or "")
    if nt is None or ns is None or nt < 1 or ns < 1:
        return []
    nt = min(nt, MAX_THREADS)
    if nt * ns <= MAX_SOCKETS:
        return []
    return [
        Finding(
            "NG008",
            "warning",
            "NCCL_NSOCKS_PERTHREAD",
            f"NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD = {nt} x {ns} = {nt * ns} > {MAX_SOCKETS}: "
            f"NCCL lowers NCCL_NSOCKS_PERTHREAD to {MAX_SOCKETS // nt}",
            f"NCCL_NSOCKS_PERTHREAD={MAX_SOCKETS // nt}",
            lines["NCCL_NSOCKS_PERTHREAD"],
        )
    ]


# NCCL's clamps between the channel (CTA) bounds: NCCL v2.30.7 src/init.cc:2178-2193 caps each of minCTAs
# and maxCTAs at MAXCHANNELS (64) and sets both to maxCTAs when minCTAs is larger ('minCTAs %d is larger
# than maxCTAs %d, set both to %d'); src/graph/connect.cc:497-505 copies channels up to
# max(NCCL_MIN_NCHANNELS, minCTAs), capped by min(NCCL_MAX_NCHANNELS, maxCTAs).
CTA_BOUNDS = (
    ("NCCL_MIN_CTAS", "NCCL_MIN_NCHANNELS", "NCCL_MIN_NRINGS"),
    ("NCCL_MAX_CTAS", "NCCL_MAX_NCHANNELS", "NCCL_MAX_NRINGS"),
)
CTA_CLAMP_SOURCE = "NCCL v2.30.7 src/init.cc:2190-2193, src/graph/connect.cc:497-505"


def _bound(values: dict, names: tuple[str, ...]) -> tuple[str, int] | None:
    """(name, value) of the first of ``names`` set to a number in ``values``."""
    for name in names:
        info = kb.lookup(name)
        if info is not None and values.get(name):
            number, problem = kb.parse_int(info, values[name])
            if number is not None and problem is None:
                return name, number
    return None


def planned_min_ctas(t: _Target) -> int | None:
    """The NCCL_MIN_CTAS ncclgen's own tier-3 rule writes for the cluster in hand (None without one)."""
    if t.cluster is None:
        return None
    from ..plan import rules as plan_rules

    ctx = plan_rules.Context(t.cluster, None, 0, False, True)  # type: ignore[arg-type]  # min-ctas reads no workload
    for rule in plan_rules.load_rules():
        if rule.var == "NCCL_MIN_CTAS" and plan_rules.holds(rule.when, ctx):
            value = plan_rules.evaluate(rule, ctx)
            return int(value) if value else None
    return None


def _cta_clamps(values: dict, lines: dict, t: _Target) -> list[Finding]:
    """A minimum above the maximum in one environment: NCCL lowers the minimum to the maximum."""
    low, high = _bound(values, CTA_BOUNDS[0]), _bound(values, CTA_BOUNDS[1])
    if low is None or high is None or low[1] <= high[1]:
        return []
    (lo_name, lo), (hi_name, hi) = low, high
    return [
        Finding(
            "NG021",
            "warning",
            lo_name,
            f"{lo_name}={lo} is above {hi_name}={hi} (line {lines.get(hi_name)}): NCCL sets both to {hi} "
            f"('minCTAs {lo} is larger than maxCTAs {hi}', {t.cite('NCCL', CTA_CLAMP_SOURCE)}), "
            "so the minimum is not applied",
            f"{lo_name}={hi}, or raise {hi_name} to {lo}",
            lines.get(lo_name),
        )
    ]


def fix_against_plan(fix: str, values: dict, t: _Target) -> str:
    """A fix that writes a maximum below the minimum of the same environment or of ncclgen's own tier 3 says
    so, instead of proposing a setting NCCL would clamp (NCCL_MAX_RINGS=8 -> NCCL_MAX_CTAS=8 vs MIN_CTAS=16)."""
    found = re.fullmatch(r"use (NCCL_MAX_CTAS|NCCL_MAX_NCHANNELS)=(\d+)", fix)
    if not found:
        return fix
    cap = int(found.group(2))
    low = _bound(values, CTA_BOUNDS[0])
    if low is not None and low[1] > cap:
        return f"{fix} and {low[0]}={cap} (with {low[0]}={low[1]} NCCL would lower the minimum to {cap}: {CTA_CLAMP_SOURCE})"
    planned = planned_min_ctas(t)
    if planned is not None and planned > cap:
        return (
            f"{fix}, and render at ncclgen tier 2 or set NCCL_MIN_CTAS={cap}: tier 3 writes NCCL_MIN_CTAS={planned}, "
            f"which NCCL would lower to {cap} ({CTA_CLAMP_SOURCE})"
        )
    return fix


# What the other 'nccl' class reads for the same purpose (torch 2.15.0 wheel: distributed_c10d.py:3185-3189 and
# hooks/NanCheckHook.hpp:4-7 for NaN checks; FlightRecorder.hpp:347-360 and ProcessGroupNCCL.hpp:77-78,128-129
# for the dump on timeout).
BACKEND_COUNTERPART = {
    "TORCH_NCCL_NAN_CHECK": "TORCH_DIST_NAN_CHECK=1",
    "TORCH_FR_DUMP_ON_TIMEOUT": "TORCH_NCCL_DUMP_ON_TIMEOUT={value}",
    "TORCH_FR_WAIT_TIMEOUT_DUMP_MILSEC": "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC={value}",
}
BACKEND_CLASS = {"legacy": "ProcessGroupNCCL", "nccl2": "ProcessGroupNCCL2"}
BACKEND_READER = {
    "legacy": "the legacy ProcessGroupNCCL (its own checker)",
    "nccl2": "ProcessGroupNCCL2's Flight Recorder hook (the legacy ProcessGroupNCCL records natively)",
}


def _backend_findings(values: dict, lines: dict, t: _Target) -> list[Finding]:
    """A name only one of PyTorch's two 'nccl' classes reads, where the job builds the other one: judged on
    the cluster's declared PyTorch and the environment's TORCH_DIST_USE_NCCL2."""
    if t.cluster is None:
        return []
    cls, why = kb.nccl_backend(t.torch, values.get("TORCH_DIST_USE_NCCL2"))
    out = []
    for name, value in values.items():
        info = kb.lookup(name)
        if info is None or not info.scope.startswith("torch-backend:") or not kb.read_in(info, t.nccl, t.torch):
            continue
        scope = info.scope.split(":", 1)[1]
        if BACKEND_CLASS[scope] == cls:
            continue
        counterpart = BACKEND_COUNTERPART.get(name, "")
        fix = f"use {counterpart.replace('{value}', value or 'N')}" if counterpart else "remove it"
        out.append(
            Finding(
                "NG011",
                "warning",
                name,
                f"{name} is read only by {BACKEND_READER[scope]}; this job's 'nccl' backend is {cls} ({why}), "
                "so it has no effect",
                fix,
                lines.get(name),
            )
        )
    return out
