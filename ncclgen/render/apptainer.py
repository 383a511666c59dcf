"""Apptainer/Singularity as the Slurm steps' container runtime: `srun ... apptainer exec --nv IMAGE CMD`.

pyxis runs a step in a container through srun's own options; Apptainer is a command that wraps the
step's program instead, so its argv goes where pyxis's options go, right before the program. What
ncclgen writes follows Apptainer's CLI (apptainer/apptainer@917d6657 cmd/internal/cli/action_flags.go;
https://apptainer.org/docs/user/latest/cli/apptainer_exec.html):

- `--nv`: the host's NVIDIA driver libraries and GPU devices in the container.
- `--bind SRC[:DST[:OPTS]]`, one per mount: OPTS is `ro` or `rw` (the default); a `,` would start a
  second spec, so it is refused as pyxis's separator is.
- `--pwd PATH` for --container-workdir (SingularityCE's name; Apptainer keeps it as a synonym of --cwd).
- IMAGE: a SIF file or sandbox folder (a path), or a URI: docker://, library://, oras://, shub://. A
  bare registry reference is Docker's, written `docker://REF`; pyxis's `REGISTRY#IMAGE` form becomes
  `docker://REGISTRY/IMAGE`; both rewrites are said on stderr.

The host environment reaches the program, as the plan needs, except HOME, PATH and LD_LIBRARY_PATH,
which Apptainer never passes (internal/pkg/util/env/create.go, alwaysOmitKeys); LD_LIBRARY_PATH alone
may be passed as APPTAINERENV_LD_LIBRARY_PATH (SINGULARITYENV_ for SingularityCE), which the script
sets when the plan sets LD_LIBRARY_PATH (a net plugin's folder).

Unlike pyxis's named container, every step is a fresh container from the image: files a step writes
outside the binds do not reach the next step.
"""

from __future__ import annotations

from ..errors import UserError
from . import shell

RUNTIMES = ("pyxis", "apptainer", "singularity")
URI_SCHEMES = ("docker://", "library://", "oras://", "shub://", "docker-archive:", "oci-archive:")
BIND_OPTIONS = ("ro", "rw")


def env_prefix(runtime: str) -> str:
    """The prefix that passes a variable Apptainer would otherwise drop (APPTAINERENV_LD_LIBRARY_PATH)."""
    return "SINGULARITYENV_" if runtime == "singularity" else "APPTAINERENV_"


def image_ref(ref: str) -> tuple[str, str | None]:
    """(the image as `apptainer exec` takes it, a one-line note when it was rewritten, else None)."""
    if not ref or ref != ref.strip() or any(c.isspace() or not c.isprintable() for c in ref):
        raise UserError(f"container image {ref!r}: expected a SIF path or a docker://, library:// or oras:// URI")
    if ref.startswith((".", "/")) or ref.startswith(URI_SCHEMES):
        return ref, None
    for scheme in ("dockerd://", "podman://"):
        if ref.startswith(scheme):
            raise UserError(
                f"container image {ref!r}: {scheme} is enroot's (pyxis); Apptainer takes a SIF path or a "
                "docker://, library:// or oras:// URI"
            )
    fixed = "docker://" + ref.replace("#", "/", 1)
    why = "pyxis's REGISTRY#IMAGE form is" if "#" in ref else "a registry reference is"
    return fixed, f"container image {ref!r} written as {fixed!r} for Apptainer: {why} Docker's, docker://REF"


def check_bind(mount: str) -> str:
    """One bind SRC[:DST[:OPTS]] with OPTS ro or rw (a pyxis FLAGS list other than those is refused)."""
    parts = mount.split(":")
    if (
        len(parts) > 3
        or not parts[0]
        or (len(parts) > 1 and not parts[1])
        or (len(parts) == 3 and parts[2] not in BIND_OPTIONS)
        or "," in mount
        or shell.CONTROL.search(mount)
    ):
        raise UserError(
            f"container mount {mount!r}: Apptainer binds SRC[:DST[:ro|rw]] (no ',', which starts another "
            "bind, and no pyxis flags such as rprivate)"
        )
    return mount


def exec_argv(runtime: str, image: str, binds: list[str], workdir: str | None) -> list[str]:
    """`apptainer exec --nv [--bind SPEC]... [--pwd PATH] IMAGE`: what precedes each step's program."""
    argv = [runtime, "exec", "--nv"]
    for b in binds:
        argv += ["--bind", check_bind(b)]
    if workdir is not None:
        argv += ["--pwd", workdir]
    return [*argv, image]
