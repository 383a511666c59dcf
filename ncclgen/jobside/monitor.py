"""In-job GPU monitor: samples every GPU of this node through NVML into a JSONL file, until SIGTERM.

Runs as `python3 -c "$NCCLGEN_MONITOR" OUT INTERVAL_S` in a per-node step of an ncclgen job, on a
node (or in a container) that has no ncclgen: standard library only. NVML comes from the `pynvml`
module (package nvidia-ml-py) when it is importable, else from libnvidia-ml.so.1 through ctypes
(NVML API: https://docs.nvidia.com/deploy/nvml-api/, nvmlInit_v2, nvmlDeviceGetCount_v2,
nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetUtilizationRates, nvmlDeviceGetMemoryInfo,
nvmlDeviceGetPowerUsage; the library ships with the NVIDIA driver).

OUT must be an absolute path (the job script puts it next to the job's log); `{node}` in it becomes
this node's Slurm name (SLURMD_NODENAME; the host name outside Slurm). Records are the fields
`ncclgen monitor` writes, so `ncclgen monitor --summary FILE...` reads them. When NVML cannot be
used, one line on stderr says why and the monitor exits 1; the job itself is not affected.
"""

import ctypes
import datetime
import json
import os
import signal
import socket
import sys
import threading
import time

PREFIX = "ncclgen-monitor"


class NvmlUnavailable(Exception):
    """NVML cannot be loaded or initialised on this node."""


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class CtypesNvml:
    """The few pynvml calls the monitor makes, over libnvidia-ml.so.1."""

    class NVMLError(Exception):
        pass

    def __init__(self, lib):
        self.lib = lib

    def _call(self, fn, *args):
        ret = getattr(self.lib, fn)(*args)
        if ret != 0:
            text = ""
            try:
                self.lib.nvmlErrorString.restype = ctypes.c_char_p
                text = (self.lib.nvmlErrorString(ret) or b"").decode(errors="replace")
            except (AttributeError, OSError):
                pass
            raise self.NVMLError(f"{fn}: {text or 'NVML error'} ({ret})")

    def nvmlInit(self):
        self._call("nvmlInit_v2")

    def nvmlShutdown(self):
        self._call("nvmlShutdown")

    def nvmlDeviceGetCount(self):
        n = ctypes.c_uint()
        self._call("nvmlDeviceGetCount_v2", ctypes.byref(n))
        return n.value

    def nvmlDeviceGetHandleByIndex(self, index):
        h = ctypes.c_void_p()
        self._call("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(index), ctypes.byref(h))
        return h

    def nvmlDeviceGetUtilizationRates(self, handle):
        u = _Utilization()
        self._call("nvmlDeviceGetUtilizationRates", handle, ctypes.byref(u))
        return u

    def nvmlDeviceGetMemoryInfo(self, handle):
        m = _Memory()
        self._call("nvmlDeviceGetMemoryInfo", handle, ctypes.byref(m))
        return m

    def nvmlDeviceGetPowerUsage(self, handle):
        mw = ctypes.c_uint()
        self._call("nvmlDeviceGetPowerUsage", handle, ctypes.byref(mw))
        return mw.value


def load_nvml():
    """pynvml when importable, else libnvidia-ml.so.1 through ctypes; NvmlUnavailable with both reasons."""
    try:
        import pynvml

        return pynvml
    except ImportError as exc:
        why_module = f"no pynvml module ({exc})"
    try:
        return CtypesNvml(ctypes.CDLL("libnvidia-ml.so.1"))
    except OSError as exc:
        raise NvmlUnavailable(f"{why_module}, and {exc}") from None


def _opt(nv, fn, *args):
    try:
        return fn(*args)
    except nv.NVMLError:
        return None


def sample(nv, handle):
    util = _opt(nv, nv.nvmlDeviceGetUtilizationRates, handle)
    mem = _opt(nv, nv.nvmlDeviceGetMemoryInfo, handle)
    power_mw = _opt(nv, nv.nvmlDeviceGetPowerUsage, handle)
    return {
        "util_gpu_pct": util.gpu if util is not None else None,
        "util_mem_pct": util.memory if util is not None else None,
        "mem_used_bytes": mem.used if mem is not None else None,
        "mem_total_bytes": mem.total if mem is not None else None,
        "power_w": power_mw / 1000 if power_mw is not None else None,
    }


def _iso(t):
    return (
        datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def run(out_template, interval, nv=None, stop=None, max_samples=None):
    """Sample until `stop` is set (SIGTERM/SIGINT) or `max_samples`; return the exit status."""
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    if not os.path.isabs(out_template):
        print(f"{PREFIX}: {node}: ERROR: the output path {out_template!r} is not absolute", file=sys.stderr)
        return 2
    path = out_template.replace("{node}", node)
    stop = stop or threading.Event()
    try:
        nv = nv or load_nvml()
        try:
            nv.nvmlInit()
        except nv.NVMLError as exc:
            raise NvmlUnavailable(f"NVML did not start ({exc})") from None
    except NvmlUnavailable as exc:
        print(f"{PREFIX}: {node}: cannot sample GPUs, no monitor file written: {exc}", file=sys.stderr)
        return 1
    try:
        handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
        if not handles:
            print(
                f"{PREFIX}: {node}: cannot sample GPUs, no monitor file written: NVML reports no GPU", file=sys.stderr
            )
            return 1
        try:
            fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - an open error is told apart from a write error; closed by `with fh` below
        except OSError as exc:
            print(f"{PREFIX}: {node}: cannot write {path}: {exc.strerror}", file=sys.stderr)
            return 1
        print(f"{PREFIX}: {node}: {len(handles)} GPU(s) every {interval:g} s -> {path}", file=sys.stderr)
        with fh:
            start, taken = time.monotonic(), 0
            while True:
                wall = time.time()
                for i, h in enumerate(handles):
                    fh.write(json.dumps({"timestamp": _iso(wall), "hostname": node, "gpu": i, **sample(nv, h)}) + "\n")
                fh.flush()
                taken += 1
                if max_samples is not None and taken >= max_samples:
                    return 0
                if stop.wait(max(0.0, start + taken * interval - time.monotonic())):
                    return 0
    finally:
        _opt(nv, nv.nvmlShutdown)


def main(argv):
    if len(argv) != 3:
        print(f"usage: {PREFIX} OUT.jsonl INTERVAL_S", file=sys.stderr)
        return 2
    try:
        interval = float(argv[2])
        if not interval > 0:
            raise ValueError
    except ValueError:
        print(f"{PREFIX}: ERROR: interval {argv[2]!r} is not a positive number of seconds", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    return run(argv[1], interval, stop=stop)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
