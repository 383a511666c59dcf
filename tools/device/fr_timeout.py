"""A collective that times out for real, to see where PyTorch's flight recorder dumps and what fr_trace reads.

One rank, NCCL: a GPU sleep kernel (torch.cuda._sleep) queued before an all_reduce keeps the collective
from completing, so the watchdog's timeout fires (init_process_group(timeout=...)) as it does when a peer
never joins; with TORCH_NCCL_DUMP_ON_TIMEOUT the rank writes its trace to TORCH_FR_DUMP_TEMP_FILE<rank>
and aborts. Run by tools/device/check.sh on a GPU machine; without a GPU it only says so.
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def main() -> int:
    if not torch.cuda.is_available():
        print("fr_timeout: no GPU here", flush=True)
        return 0
    torch.cuda.set_device(0)
    dist.init_process_group(
        "nccl",
        device_id=torch.device("cuda", 0),
        timeout=datetime.timedelta(seconds=int(os.environ.get("FR_TIMEOUT_S", "8"))),
    )
    x = torch.ones(1 << 16, device="cuda")
    for _ in range(4):
        dist.all_reduce(x)
    dist.barrier()
    torch.cuda.synchronize()
    print("fr_timeout: 4 all_reduce and a barrier completed; now one that cannot finish in time", flush=True)
    torch.cuda._sleep(int(2e11))  # about 100 s of GPU cycles on the compute stream
    dist.all_reduce(x)
    time.sleep(float(os.environ.get("FR_WAIT_S", "60")))
    print("fr_timeout: still alive after the wait (no abort)", flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(main())
