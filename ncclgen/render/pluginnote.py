"""The one stderr line a Slurm render prints about the net plugin: where NCCL will load it from (the
node, a folder mounted into the container, or the container image) and that the preflight checks it
there. Kubernetes manifests say the same in their header (render/k8s.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..load import views

if TYPE_CHECKING:
    from ..plan import Plan
    from .options import SlurmOptions

_FLAGS = {"ro", "rw", "private", "slave", "shared", "rprivate", "rslave", "rshared", "nosuid", "nodev", "noexec"}


def _mounted_from(lib_dir: str, mounts: list[str]) -> str | None:
    """The node folder a container mount (pyxis or Apptainer: SRC[:DST[:FLAGS]]) puts at ``lib_dir``."""
    for mount in mounts:
        parts = mount.split(":")
        src = parts[0].rstrip("/") or "/"
        dst = parts[1].rstrip("/") if len(parts) > 1 and parts[1] not in _FLAGS else src
        if lib_dir == dst or lib_dir.startswith(dst + "/"):
            return src + lib_dir[len(dst) :]
    return None


def note(plan: Plan, opts: SlurmOptions) -> str | None:
    """None when the plan loads no net plugin."""
    plugin = views.plugin_of(plan.cluster)
    lib_dir = plan.cluster.network.plugin_dir
    if plugin is None or lib_dir is None:
        return None
    slurm = plan.cluster.slurm
    image = opts.container_image or slurm.container_image
    files = ", ".join(plugin.files)
    check = (
        f"the preflight checks {files} there on every node and stops the job (exit 6) before NCCL starts if one "
        "is missing"
        if opts.preflight
        else "--no-preflight: nothing checks it before NCCL starts"
    )
    head = f"net plugin {plugin.id}: NCCL loads it from {lib_dir}"
    if not image:
        return f"{head} on each node; {check}"
    source = _mounted_from(lib_dir, [*slurm.container_mounts, *opts.container_mounts])
    if source is not None:
        return f"{head} inside the container, mounted from the node's {source}; {check}"
    return (
        f"{head} inside the container, so the image {image} must have it there (the node's folder is not "
        f"mounted); {check}. Set network.plugin_dir to the image's folder, or mount the node's with "
        f"--container-mounts {lib_dir}:{lib_dir}"
    )
