"""A log whose last line starts a framework's distributed setup or first collective, with nothing after it.

Frameworks print one line as they begin to set up NCCL, a process group or the first collective, and more once it
worked: vLLM's and SGLang's 'is using nccl==' banner, Paddle's 'init nccl context', TensorFlow's first
'batch_all_reduce', DeepSpeed's 'Initializing TorchBackend', Megatron's '> initializing torch distributed',
torchrun's agent waiting for the other nodes. A file that ends on such a line, in a log with no sign the run ended,
stopped there: a hang in that setup (an interface the nodes cannot reach, GPU peer-to-peer DMA that never completes,
a node that never joined), or an excerpt cut there. Either way it is no clean run (runstate.ends_early).
The check is on the file's own last line (lastline.is_last): the reader keeps only lines that may matter, so a
training loop's progress after the start line is read in the file.
"""

from __future__ import annotations

import re

# (a literal the line holds, the line's form, what began there), each from the program that prints it
STARTS = (
    # vllm-project/vllm vllm/distributed/device_communicators/pynccl.py ('vLLM is using nccl==%s'); SGLang's copy
    (
        "sing nccl==",
        re.compile(r"is using nccl==\d"),
        "a program's 'is using nccl==' banner: its NCCL communicator setup began there",
    ),
    # PaddlePaddle/Paddle paddle/fluid/imperative/nccl_context.cc (NCCLParallelContext::Init, VLOG(0) before CreateComm)
    (
        "init nccl context",
        re.compile(r"init nccl context nranks: \d+"),
        "Paddle's 'init nccl context': its NCCL communicator setup began there",
    ),
    # tensorflow/tensorflow tensorflow/python/distribute/cross_device_ops.py (_do_batch_all_reduce, log_first_n)
    (
        "all-reduces with algorithm",
        re.compile(r"batch_all_reduce: \d+ all-reduces with algorithm = nccl"),
        "TensorFlow's 'batch_all_reduce ... algorithm = nccl': its first NCCL all-reduce began there",
    ),
    # the same file (reduce_implementation of ReductionToOneDevice, log_first_n as the first step is traced)
    (
        "then broadcast to",
        re.compile(r"INFO:tensorflow:Reduce to \S+ then broadcast to"),
        "TensorFlow's 'Reduce to ... then broadcast to': its first training step's cross-device reductions began there",
    ),
    # deepspeedai/DeepSpeed deepspeed/comm/comm.py:856 at v0.19.5 (init_distributed, before init_process_group)
    (
        "Initializing TorchBackend",
        re.compile(r"Initializing TorchBackend in DeepSpeed with backend"),
        "DeepSpeed's 'Initializing TorchBackend': its process group setup (the rendezvous of every rank) began there",
    ),
    # NVIDIA/Megatron-LM megatron/training/initialize.py:286 at d98e8a6 (_initialize_distributed)
    (
        "initializing torch distributed",
        re.compile(r"> initializing torch distributed \.\.\."),
        "Megatron's '> initializing torch distributed': its process group setup (the rendezvous of every rank) began there",
    ),
    # vllm 0.34.0 wheel vllm/distributed/parallel_state.py:1936 (init_distributed_environment, before the group forms)
    (
        "distributed_init_method=",
        re.compile(r"world_size=\d+ rank=\d+ local_rank=\d+ distributed_init_method=\S+ backend="),
        "vLLM's 'world_size=... distributed_init_method=...': its process group and NCCL setup began there",
    ),
    # ray 2.60.0 wheel ray/train/v2/_internal/execution/worker_group/worker_group.py:290 (then waits for the
    # placement group); Ray 1.x python/ray/train/trainer.py logs 'Trainer logs will be logged in' before start()
    (
        "start training worker group",
        re.compile(r"Attempting to start training worker group of size \d+"),
        "Ray Train's 'Attempting to start training worker group': it waited there for a placement group of the workers' resources (more GPUs per worker x workers than the cluster has free leaves it waiting; `ray status`)",
    ),
    (
        "Trainer logs will be logged in",
        re.compile(r"INFO trainer\.py:\d+ -- Trainer logs will be logged in: "),
        "Ray Train's trainer start ('Trainer logs will be logged in'): it waited there to start its worker group (more GPUs per worker x workers than the cluster has leaves it waiting; `ray status`)",
    ),
    # torch 2.13.0 wheel torch/distributed/elastic/agent/server/api.py:707 (_rendezvous: before the other nodes join)
    (
        "endezvous'ing worker group",
        re.compile(r"\] Rendezvous'ing worker group"),
        "torchrun's 'Rendezvous'ing worker group': this node waited there for the other nodes to join the rendezvous",
    ),
)


def started(text: str) -> str | None:
    """What began at this line, when it is one of STARTS; else None."""
    for key, form, what in STARTS:
        if key in text and form.search(text):
            return what
    return None
