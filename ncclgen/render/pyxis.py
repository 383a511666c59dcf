"""pyxis/enroot container arguments for srun: image references, mounts, the job's container name.

pyxis (https://github.com/NVIDIA/pyxis, README and pyxis_slurmstepd.c @107519944221822ea1dace4db8e7234b2eaa4cd5)
takes `--container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH`: a value starting with `.` or `/` is a
squashfs file; anything else is handed to enroot as `docker://VALUE`. enroot parses that URI as
`docker://[USER@][REGISTRY#]IMAGE[:TAG]` (NVIDIA/enroot src/docker.sh, docker::import), so the
registry is whatever precedes `#`, and without `#` the image is fetched from Docker Hub: the Docker
form `nvcr.io/nvidia/pytorch:25.01-py3` would ask Docker Hub for a repository `nvcr.io/nvidia/pytorch`
(enroot guesses otherwise only when its credentials file names that registry).

ncclgen rewrites the Docker form to pyxis's and says so on stderr: the intent is unambiguous, and a
refusal would only make the user retype what ncclgen already knows. Whether the first path component
is a registry follows Docker's own rule (github.com/distribution/reference, normalize.go
splitDockerDomain): it is a registry host when it contains `.` or `:`, or is `localhost`.

Container handling for srun stays in this module (container_options): a second runtime (Apptainer)
slots in beside it as its own module with the same function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import UserError

if TYPE_CHECKING:
    pass

PASS_THROUGH_SCHEMES = ("dockerd://", "podman://")  # local daemon images: enroot takes the name as is


def image_ref(ref: str) -> tuple[str, str | None]:
    """(the image as pyxis wants it, a one-line note when it was rewritten, else None)."""
    if not ref or ref != ref.strip() or any(c.isspace() for c in ref):
        raise UserError(
            f"container image {ref!r}: expected [USER@][REGISTRY#]IMAGE[:TAG] or a squashfs path, without spaces"
        )
    if ref.startswith((".", "/")) or ref.startswith(PASS_THROUGH_SCHEMES) or "#" in ref:
        return ref, None  # a squashfs file, a local daemon image, or already pyxis form
    scheme = "docker://" if ref.startswith("docker://") else ""
    rest = ref[len(scheme) :]
    user = ""
    head, sep, tail = rest.partition("@")
    if sep and "/" not in head:  # USER@... (a digest '@sha256:' comes after a '/')
        user, rest = head + "@", tail
    first, slash, path = rest.partition("/")
    if not slash or not ("." in first or ":" in first or first == "localhost"):
        return ref, None  # Docker Hub: `ubuntu:24.04`, `verlai/verl:latest`
    fixed = f"{scheme}{user}{first}#{path}"
    return fixed, (
        f"container image {ref!r} written as {fixed!r}: pyxis/enroot take "
        "[USER@][REGISTRY#]IMAGE[:TAG], and with '/' after the registry enroot would look the "
        "image up on Docker Hub"
    )


def check_mount(mount: str) -> str:
    """One --container-mounts entry SRC[:DST[:FLAGS]] (pyxis args.c parse_mount_option: SRC and DST non-empty,
    flags joined with '+'); pyxis separates entries with ','."""
    parts = mount.split(":", 2)
    if not parts[0] or (len(parts) > 1 and not parts[1]) or "," in mount or any(c in mount for c in "\n\r\t"):
        raise UserError(
            f"container mount {mount!r}: expected SRC[:DST[:FLAGS]] without ',' (pyxis separates "
            "mounts with it; repeat the option instead) or control characters"
        )
    return mount
