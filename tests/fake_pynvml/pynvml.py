"""A FAKE `pynvml` module (a stand-in: this machine has no NVIDIA GPU or driver, so real NVML cannot run).

Put this folder and tests/ on PYTHONPATH and `import pynvml` gets tests/fake_nvml.FakeNvml with
$FAKE_NVML_GPUS GPUs (default 2) whose utilisation cycles 40, 90 %. The in-job monitor
(ncclgen/jobside/monitor.py) then samples it in a real Slurm job exactly as it would sample pynvml.
"""

import os

from fake_nvml import FakeGpu, FakeNvml

_fake = FakeNvml(
    [
        FakeGpu(name="NVIDIA H100 80GB HBM3 (fake)", bus_id=f"0000:{0x1B + i:02x}:00.0", util=[40, 90])
        for i in range(int(os.environ.get("FAKE_NVML_GPUS", "2")))
    ]
)
NVMLError = _fake.NVMLError


def __getattr__(name):
    return getattr(_fake, name)
