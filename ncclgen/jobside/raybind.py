"""Ray worker setup hook: bind each GPU task/actor process to the CPUs of its GPU's NUMA node.

Why a hook: Ray assigns GPUs per task, after a worker process starts, so neither the launch line nor
the hook's own start-up can bind (at hook time ray.get_gpu_ids() is still empty). What works (Ray 2.60.0,
measured on the local two-node Slurm cluster: 16/16 tasks and 16/16 actors bound; tests/test_slurm_e2e.py
checks it on every CI run) is to wrap the method Ray
calls each time it hands GPUs to a task or an actor, just before the task runs or __init__ starts:
    ray._private.accelerators.nvidia_gpu.NvidiaGPUAcceleratorManager
        .set_current_process_visible_accelerator_ids
It is called even with RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES=1 (it then only skips the env var).

How it gets there: the sbatch script (ncclgen tier 3) exports NCCLGEN_GPU_CPUS ("0=0-55,112-167;..."),
__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR=ncclgen_raybind.hook (read by Ray's default_worker.py at
start-up) and PYTHONPATH with a per-job folder, and each `ray start` step writes this file's text there
as ncclgen_raybind.py before Ray starts. So the module is standalone: standard library and Ray only,
no ncclgen import (ncclgen need not be installed in the job's Python or image).

Both names are Ray internals checked in 2.60.0: if one is missing the hook warns on stderr and the
job runs unbound rather than failing (a setup hook that raises makes Ray kill the worker).
"""

import os
import sys

MAP_ENV = "NCCLGEN_GPU_CPUS"
_PREFIX = "ncclgen_raybind: warning:"


def parse_map(text):
    """'0=0-3,8;1=4-7' -> {'0': frozenset({0, 1, 2, 3, 8}), '1': ...}; keys are Ray's GPU ids (str).

    Same cpuset syntax as ncclgen/cpuset.py, re-implemented because this file runs without ncclgen.
    """
    mapping = {}
    for item in text.split(";"):
        gpu, sep, cpulist = item.partition("=")
        if not sep or not gpu.strip().isdigit():
            raise ValueError(f"bad entry {item!r} (expected GPU=CPULIST)")
        cpus: set[int] = set()
        for part in cpulist.split(","):
            lo, dash, hi = part.strip().partition("-")
            if not lo.isdigit() or (dash and not hi.isdigit()):
                raise ValueError(f"bad CPU range {part!r} for GPU {gpu.strip()}")
            first, last = int(lo), int(hi) if dash else int(lo)
            if last < first:
                raise ValueError(f"bad CPU range {part!r} for GPU {gpu.strip()} (end before start)")
            cpus.update(range(first, last + 1))
        mapping[gpu.strip()] = frozenset(cpus)
    return mapping


def wrap(original, mapping, setaffinity=os.sched_setaffinity):
    """Ray's GPU assignment, then affinity to the CPUs of the first assigned GPU.

    One task or actor may hold several GPUs; ncclgen binds a rank per GPU, so the first one decides.
    """

    def set_visible_and_bind(visible_ids):
        original(visible_ids)
        ids = [str(i) for i in visible_ids]
        cpus = mapping.get(ids[0]) if ids else None
        if ids and cpus is None:
            _warn(f"GPU {ids[0]} is not in {MAP_ENV}; this process stays unbound")
        elif cpus:
            try:
                setaffinity(0, cpus)
            except OSError as exc:  # CPUs outside the job's cgroup, for instance
                _warn(f"sched_setaffinity to the CPUs of GPU {ids[0]} failed: {exc}")

    set_visible_and_bind.ncclgen_wrapped = original  # type: ignore[attr-defined]  # marks the wrapper
    return set_visible_and_bind


def install(manager, mapping):
    """Replace ``manager``'s GPU-assignment method by the binding wrapper (once). True when done."""
    original = getattr(manager, "set_current_process_visible_accelerator_ids", None)
    if original is None:
        _warn(
            f"{getattr(manager, '__name__', manager)} has no set_current_process_visible_accelerator_ids "
            "(Ray internals changed since 2.60); Ray workers stay unbound"
        )
        return False
    if getattr(original, "ncclgen_wrapped", None) is None:
        manager.set_current_process_visible_accelerator_ids = staticmethod(wrap(original, mapping))
    return True


def hook():
    """Entry point named in __RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR; never raises."""
    try:
        mapping = parse_map(os.environ[MAP_ENV])
    except KeyError:
        _warn(f"{MAP_ENV} is not set; Ray workers stay unbound")
        return
    except ValueError as exc:
        _warn(f"{MAP_ENV}: {exc}; Ray workers stay unbound")
        return
    try:
        from ray._private.accelerators.nvidia_gpu import NvidiaGPUAcceleratorManager
    except ImportError as exc:
        _warn(f"cannot import Ray's NVIDIA accelerator manager ({exc}); Ray workers stay unbound")
        return
    install(NvidiaGPUAcceleratorManager, mapping)


def _warn(message):
    print(f"{_PREFIX} {message}", file=sys.stderr, flush=True)
