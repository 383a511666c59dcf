"""A torchrun rank that never joins a collective (tests/test_flight_recorder_e2e.py), on CPU with gloo.

Rank 1 joins the first all_reduce and then leaves without the second; rank 0's second all_reduce times out
(init_process_group(timeout=FR_TIMEOUT_S)). What PyTorch 2.13's gloo backend supports is less than NCCL's:
it records every collective in the flight recorder, but writes no dump on a timeout (TORCH_NCCL_DUMP_ON_TIMEOUT
is read by ProcessGroupNCCL only). So rank 0 writes its recorder where the real dump goes,
TORCH_FR_DUMP_TEMP_FILE + rank, as torch's DebugInfoWriter does (FlightRecorder.hpp:80-84), from
torch._C._distributed_c10d._dump_fr_trace: the folder, the name and what fr_trace's loader reads are the
plan's; the trigger is this stand-in's. A real NCCL timeout dump: tests/data/device/fr-timeout-h200.log.
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("FR_TIMEOUT_S", "3"))))
    rank = dist.get_rank()
    x = torch.ones(4)
    dist.all_reduce(x)
    if rank != 0:
        time.sleep(float(os.environ.get("FR_TIMEOUT_S", "3")) + 2)
        return 0
    try:
        dist.all_reduce(x)
        return 3
    except RuntimeError as e:  # gloo's timeout
        print(f"rank 0: the all_reduce timed out: {str(e).splitlines()[0][:100]}", flush=True)
    from torch._C._distributed_c10d import _dump_fr_trace

    path = os.environ["TORCH_FR_DUMP_TEMP_FILE"] + str(rank)
    with open(path, "wb") as f:
        f.write(_dump_fr_trace(True, True, False))
    return 1


if __name__ == "__main__":
    sys.exit(main())
