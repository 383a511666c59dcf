"""A FAKE of the `pynvml` module: this machine has no NVIDIA GPU or driver, so real NVML cannot run.

It implements only the calls ncclgen.node.nvml makes, with pynvml's names, constants (values copied
from nvidia-ml-py 13.x) and error behaviour: unsupported metrics raise NVMLError(NOT_SUPPORTED), and
nvmlInit raises NVMLError(LIBRARY_NOT_FOUND) when built with ``init_error=True`` as on a node without
a driver. Pass an instance as ``backend=`` or put it in ``sys.modules["pynvml"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from ncclgen.load import cpuset

NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_FEATURE_ENABLED = 1
NVML_NVLINK_MAX_LINKS = 36
NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1
NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138
NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139

_MESSAGES = {
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
}


class NVMLError(Exception):
    def __init__(self, value: int):
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"NVML Error with code {self.value}")


@dataclass
class FakeGpu:
    name: str
    bus_id: str  # sysfs form; reported NVML-style (8-digit domain, upper case)
    cpus: frozenset | None = None  # None: affinity not supported
    nvlinks: int = 0
    util: list[int] | None = field(default_factory=lambda: [0])  # cycled per sample; None: unsupported
    mem_used: int = 10 << 30
    mem_total: int = 80 << 30
    power_mw: int | None = 700_000
    pcie_kBps: tuple[int, int] | None = None  # (tx, rx); None: unsupported
    nvlink_kib_per_sample: int = 1024  # per link per direction


class FakeNvml:
    """Module-like object: ``fake.nvmlInit()``, ``fake.NVMLError`` ... like ``pynvml``."""

    NVMLError = NVMLError
    NVML_SUCCESS = NVML_SUCCESS
    NVML_FEATURE_ENABLED = NVML_FEATURE_ENABLED
    NVML_NVLINK_MAX_LINKS = NVML_NVLINK_MAX_LINKS
    NVML_PCIE_UTIL_TX_BYTES = NVML_PCIE_UTIL_TX_BYTES
    NVML_PCIE_UTIL_RX_BYTES = NVML_PCIE_UTIL_RX_BYTES
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX

    def __init__(self, gpus: list[FakeGpu], *, init_error: bool = False, cuda_driver: int = 12090):
        self.gpus = gpus
        self.init_error = init_error
        self.cuda_driver = cuda_driver
        self.initialised = 0
        self.samples = [0] * len(gpus)  # utilisation readings taken per GPU
        self.nvlink_reads = [0] * len(gpus)

    @classmethod
    def from_layout(cls, layout, name: str = "NVIDIA H100 80GB HBM3", nvlinks: int = 18, **kw) -> FakeNvml:
        """GPUs at the layout's PCI addresses, with the CPU affinity of their NUMA node."""
        return cls(
            [
                FakeGpu(name=name, bus_id=bdf, cpus=cpuset.parse(layout.numa[numa]), nvlinks=nvlinks, **kw)
                for bdf, numa in layout.gpus
            ]
        )

    # -- lifecycle --------------------------------------------------------------------------------
    def nvmlInit(self):
        if self.init_error:
            raise NVMLError(NVML_ERROR_LIBRARY_NOT_FOUND)
        self.initialised += 1

    def nvmlShutdown(self):
        self.initialised -= 1

    def _gpu(self, handle) -> FakeGpu:
        if self.initialised <= 0:
            raise AssertionError("NVML call outside nvmlInit/nvmlShutdown")
        return self.gpus[handle]

    # -- queries ----------------------------------------------------------------------------------
    def nvmlSystemGetCudaDriverVersion(self):
        return self.cuda_driver

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        if not 0 <= index < len(self.gpus):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return index

    def nvmlDeviceGetName(self, handle):
        return self._gpu(handle).name

    def nvmlDeviceGetPciInfo(self, handle):
        domain, rest = self._gpu(handle).bus_id.split(":", 1)
        return SimpleNamespace(busId=f"{int(domain, 16):08X}:{rest.upper()}".encode())

    def nvmlDeviceGetCpuAffinity(self, handle, cpu_set_size):
        cpus = self._gpu(handle).cpus
        if cpus is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        words = [0] * cpu_set_size
        for c in cpus:
            if c // 64 < cpu_set_size:
                words[c // 64] |= 1 << (c % 64)
        return words

    def nvmlDeviceGetNvLinkState(self, handle, link):
        g = self._gpu(handle)
        if link >= NVML_NVLINK_MAX_LINKS:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        if g.nvlinks == 0:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return NVML_FEATURE_ENABLED if link < g.nvlinks else 0

    def nvmlDeviceGetUtilizationRates(self, handle):
        g = self._gpu(handle)
        if g.util is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        value = g.util[self.samples[handle] % len(g.util)]
        self.samples[handle] += 1
        return SimpleNamespace(gpu=value, memory=value // 2)

    def nvmlDeviceGetMemoryInfo(self, handle):
        g = self._gpu(handle)
        return SimpleNamespace(total=g.mem_total, used=g.mem_used, free=g.mem_total - g.mem_used)

    def nvmlDeviceGetPowerUsage(self, handle):
        g = self._gpu(handle)
        if g.power_mw is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return g.power_mw

    def nvmlDeviceGetPcieThroughput(self, handle, counter):
        g = self._gpu(handle)
        if g.pcie_kBps is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return g.pcie_kBps[counter]

    def nvmlDeviceGetFieldValues(self, handle, field_ids):
        """Cumulative NVLink KiB counters that grow by nvlink_kib_per_sample per link per call."""
        g = self._gpu(handle)
        self.nvlink_reads[handle] += 1
        out = []
        for fid, link in field_ids:
            ok = (
                fid in (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX)
                and link < g.nvlinks
            )
            count = (self.nvlink_reads[handle] + 1) // 2 * g.nvlink_kib_per_sample
            out.append(
                SimpleNamespace(
                    nvmlReturn=NVML_SUCCESS if ok else NVML_ERROR_NOT_SUPPORTED,
                    value=SimpleNamespace(ullVal=count if ok else 0),
                )
            )
        return out
