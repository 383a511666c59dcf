"""One real NCCL init and a few all_reduces on this node's GPUs (torchrun, one process per GPU).

Run by tools/device/check.sh on a GPU machine under the transport check, so that NCCL's own INIT lines
(not the stand-in's) are kept in tests/data/device/ as a fixture for jobside/nccllines.py.
"""

import os

import torch
import torch.distributed as dist


def main() -> None:
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    x = torch.ones(1 << 20, device="cuda")
    for _ in range(3):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    print(f"rank {dist.get_rank()} of {dist.get_world_size()}: all_reduce ok, x[0]={x[0].item():.0f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
