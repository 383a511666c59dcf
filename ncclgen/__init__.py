"""ncclgen: version-controlled cluster descriptors + tier rules -> NCCL env, NUMA binding, launch lines."""

__version__ = "0.1.0"
