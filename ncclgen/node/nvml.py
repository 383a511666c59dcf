"""The one place ncclgen talks to NVML, through a backend with the `pynvml` module's interface.

`pynvml` (package nvidia-ml-py) is imported only when a session opens without a backend, so commands
that never touch a GPU do not load it. Tests pass a fake backend (tests/fake_nvml.py). Calls a GPU
does not support raise NVMLError; :meth:`Session.sample` records those as None.
NVML API: docs.nvidia.com/deploy/nvml-api/group__nvmlAffinity.html and group__nvmlDeviceQueries.html.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import Unavailable


@dataclass(frozen=True)
class GpuInfo:
    """What discover and doctor need to know about one GPU."""

    index: int
    name: str
    bus_id: str  # sysfs form, 0000:1b:00.0
    cpus: frozenset[int] | None  # nvmlDeviceGetCpuAffinity; None when NVML cannot say
    nvlinks: tuple[int, ...]  # ids of the NVLink links in state enabled
    handle: Any = field(compare=False, repr=False, default=None)


def sysfs_bus_id(nvml_bus_id) -> str:
    """NVML's '00000000:1B:00.0' -> sysfs' '0000:1b:00.0' (domain as 4 hex digits unless wider)."""
    text = nvml_bus_id.decode() if isinstance(nvml_bus_id, bytes) else str(nvml_bus_id)
    domain, rest = text.strip().lower().split(":", 1)
    return f"{int(domain, 16):04x}:{rest}"


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Session:
    """An initialised NVML; use :func:`session` to get one."""

    def __init__(self, nv):
        self.nv = nv

    def _opt(self, fn, *args):
        """fn(*args), or None when the GPU or driver does not support it."""
        try:
            return fn(*args)
        except self.nv.NVMLError:
            return None

    def gpus(self, cpu_words: int = 16) -> list[GpuInfo]:
        """Every GPU in NVML index order. ``cpu_words``: 64-CPU words of the affinity mask to ask for."""
        nv = self.nv
        out = []
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            mask = self._opt(nv.nvmlDeviceGetCpuAffinity, h, cpu_words)
            cpus = None
            if mask is not None:
                cpus = frozenset(w * 64 + b for w, word in enumerate(mask) for b in range(64) if int(word) >> b & 1)
            links = tuple(
                link
                for link in range(nv.NVML_NVLINK_MAX_LINKS)
                if self._opt(nv.nvmlDeviceGetNvLinkState, h, link) == nv.NVML_FEATURE_ENABLED
            )
            out.append(
                GpuInfo(
                    index=i,
                    name=_text(nv.nvmlDeviceGetName(h)),
                    bus_id=sysfs_bus_id(nv.nvmlDeviceGetPciInfo(h).busId),
                    cpus=cpus or None,
                    nvlinks=links,
                    handle=h,
                )
            )
        return out

    def sample(self, gpu: GpuInfo) -> dict:
        """One reading of a GPU; a metric the GPU does not support is None.

        NVLink values are cumulative KiB counters summed over the enabled links (NVML field values
        NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX, one per link); the caller turns two readings into
        a rate.
        """
        nv, h = self.nv, gpu.handle
        util = self._opt(nv.nvmlDeviceGetUtilizationRates, h)
        mem = self._opt(nv.nvmlDeviceGetMemoryInfo, h)
        power_mw = self._opt(nv.nvmlDeviceGetPowerUsage, h)
        return {
            "util_gpu_pct": util.gpu if util is not None else None,
            "util_mem_pct": util.memory if util is not None else None,
            "mem_used_bytes": mem.used if mem is not None else None,
            "mem_total_bytes": mem.total if mem is not None else None,
            "power_w": power_mw / 1000 if power_mw is not None else None,
            "pcie_tx_kBps": self._opt(nv.nvmlDeviceGetPcieThroughput, h, nv.NVML_PCIE_UTIL_TX_BYTES),
            "pcie_rx_kBps": self._opt(nv.nvmlDeviceGetPcieThroughput, h, nv.NVML_PCIE_UTIL_RX_BYTES),
            "nvlink_tx_kib": self._nvlink_counter(gpu, nv.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX),
            "nvlink_rx_kib": self._nvlink_counter(gpu, nv.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX),
        }

    def _nvlink_counter(self, gpu: GpuInfo, field_id: int) -> int | None:
        if not gpu.nvlinks:
            return None
        ids = [(field_id, link) for link in gpu.nvlinks]
        values = self._opt(self.nv.nvmlDeviceGetFieldValues, gpu.handle, ids)
        if values is None:
            return None
        ok = [v.value.ullVal for v in values if v.nvmlReturn == self.nv.NVML_SUCCESS]
        return sum(ok) if ok else None


def _import_pynvml():
    try:
        import pynvml
    except ImportError:
        raise Unavailable("no NVML: the pynvml module is not installed (pip install nvidia-ml-py)") from None
    return pynvml


@contextlib.contextmanager
def session(backend=None) -> Iterator[Session]:
    """nvmlInit ... nvmlShutdown around a :class:`Session`; Unavailable when NVML cannot start."""
    nv = backend if backend is not None else _import_pynvml()
    try:
        nv.nvmlInit()
    except nv.NVMLError as exc:
        raise Unavailable(f"no NVIDIA GPU (NVML: {exc})") from None
    try:
        yield Session(nv)
    finally:
        nv.nvmlShutdown()
