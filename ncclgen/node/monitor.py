"""`ncclgen monitor`: sample every GPU through NVML into JSONL, and summarise a recording.

The seed article's only observable target is "GPU utilisation > 85%" (seed README claim 11); its
`--monitor-nccl-buffers` flag does not exist (claim 8). NVML's utilisation is the share of the last
sample period in which a kernel ran on the GPU. Meant to run as a background step of a job and be
killed at its end: SIGTERM and SIGINT finish the current sample, flush and exit 0.
"""

from __future__ import annotations

import datetime
import json
import math
import signal
import socket
import threading
import time
from typing import IO

from ..errors import UserError
from . import Unavailable, nvml

TARGET_UTIL_PCT = 85


def _iso(t: float) -> str:
    return (
        datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def record(sess: nvml.Session, gpu: nvml.GpuInfo, host: str, wall: float, mono: float, prev: dict) -> dict:
    """One JSONL object; NVLink KiB/s from the counters' change since this GPU's previous sample."""
    s = sess.sample(gpu)
    tx, rx = s.pop("nvlink_tx_kib"), s.pop("nvlink_rx_kib")
    last = prev.get(gpu.index)
    prev[gpu.index] = (mono, tx, rx)

    def rate(now, before):
        if last is None or now is None or before is None or mono <= last[0]:
            return None
        return (now - before) / (mono - last[0])

    return {
        "timestamp": _iso(wall),
        "hostname": host,
        "gpu": gpu.index,
        **s,
        "nvlink_tx_KiBps": rate(tx, last[1] if last else None),
        "nvlink_rx_KiBps": rate(rx, last[2] if last else None),
    }


def run(
    out: IO[str],
    interval: float,
    duration: float | None = None,
    *,
    backend=None,
    hostname: str | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Sample every ``interval`` s until ``duration`` s or SIGTERM/SIGINT; return the samples taken.

    Each sample is one line per GPU, flushed at once, so a job killed at its end keeps everything
    written before the kill.
    """
    stop = stop or threading.Event()
    host = hostname or socket.gethostname()
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            handlers[sig] = signal.signal(sig, lambda *_: stop.set())
    try:
        with nvml.session(backend) as sess:
            gpus = sess.gpus()
            if not gpus:
                raise Unavailable("no NVIDIA GPU (NVML reports none)")
            prev: dict = {}
            start = time.monotonic()
            taken = 0
            while True:
                wall, mono = time.time(), time.monotonic()
                for g in gpus:
                    out.write(json.dumps(record(sess, g, host, wall, mono, prev)) + "\n")
                out.flush()
                taken += 1
                if duration is not None and taken * interval >= duration:
                    return taken
                if stop.wait(max(0.0, start + taken * interval - time.monotonic())):
                    return taken
    finally:
        for sig, old in handlers.items():
            signal.signal(sig, old)


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default; statistics 'inclusive')."""
    h = (len(sorted_values) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


def _read(path: str, groups: dict[tuple, list]) -> None:
    from ..load import yamlio

    with yamlio.open_regular(path, "a `ncclgen monitor` JSONL recording") as fh:
        for n, raw in enumerate(_lines(fh, path), 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise UserError(f"not UTF-8 text (byte {exc.start})", file=path, line=n, col=exc.start + 1) from None
            if not line.strip():
                continue
            rec = yamlio.load_json(line, path, line=n, expected="one `ncclgen monitor` record per line")
            if (
                not isinstance(rec, dict)
                or not isinstance(rec.get("hostname"), str)
                or not isinstance(rec.get("gpu"), int)
            ):
                raise UserError(
                    "expected an object with hostname and gpu, as `ncclgen monitor` writes", file=path, line=n
                )
            util = rec.get("util_gpu_pct")
            if util is not None and (not isinstance(util, (int, float)) or isinstance(util, bool)):
                raise UserError(f"util_gpu_pct is {util!r}, expected a number or null", file=path, line=n)
            groups.setdefault((rec["hostname"], rec["gpu"]), []).append(util)


def _lines(fh, path: str):
    try:
        yield from fh
    except OSError as exc:
        raise UserError(f"cannot read: {exc.strerror or exc}", file=path) from None


def summarize(paths: list[str]) -> list[dict]:
    """Per (hostname, gpu) over all files: samples, mean/p5/p95 utilisation, share above 85%."""
    groups: dict[tuple, list] = {}
    for path in paths:
        _read(path, groups)
    if not groups:
        raise UserError("no samples in " + ", ".join(paths))
    out = []
    for (host, gpu), values in sorted(groups.items()):
        known = sorted(v for v in values if v is not None)
        row = {
            "hostname": host,
            "gpu": gpu,
            "samples": len(values),
            "with_util": len(known),
            "mean": None,
            "p5": None,
            "p95": None,
            "above_target": None,
        }
        if known:
            row.update(
                mean=sum(known) / len(known),
                p5=percentile(known, 0.05),
                p95=percentile(known, 0.95),
                above_target=sum(v > TARGET_UTIL_PCT for v in known) / len(known),
            )
        out.append(row)
    return out


def render_summary(rows: list[dict]) -> str:
    def num(v, fmt):
        return "-" if v is None else format(v, fmt)

    table = [("HOST", "GPU", "SAMPLES", "MEAN%", "P5%", "P95%", f">{TARGET_UTIL_PCT}%")]
    for r in rows:
        table.append(
            (
                r["hostname"],
                str(r["gpu"]),
                f"{r['with_util']}/{r['samples']}",
                num(r["mean"], ".1f"),
                num(r["p5"], ".1f"),
                num(r["p95"], ".1f"),
                num(None if r["above_target"] is None else r["above_target"] * 100, ".1f"),
            )
        )
    widths = [max(len(t[i]) for t in table) for i in range(len(table[0]))]
    lines = [
        "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(t, widths))).rstrip() for t in table
    ]
    lines.append("")
    lines.append(
        f"GPU utilisation (NVML: share of time a kernel ran); target: above {TARGET_UTIL_PCT}% "
        f"(>{TARGET_UTIL_PCT}% = share of samples above it). SAMPLES: with a utilisation reading/all."
    )
    return "\n".join(lines) + "\n"
