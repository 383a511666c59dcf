"""A stand-in for `apptainer exec` on the local Slurm cluster, where no container runtime is installed.

It is NOT Apptainer: it runs the command on the host, with no image. It checks its argv as Apptainer's
CLI defines it (apptainer/apptainer@917d66577963 cmd/internal/cli/action_flags.go and actions.go;
https://apptainer.org/docs/user/latest/cli/apptainer_exec.html), applies the environment rules
Apptainer applies (internal/pkg/util/env/create.go: HOME, PATH and LD_LIBRARY_PATH are never passed;
APPTAINERENV_NAME / SINGULARITYENV_NAME set NAME, LD_LIBRARY_PATH among them), records what it was asked
to run, then execs the command:

    apptainer exec [--nv] [--bind|-B SRC[:DST[:ro|rw]][,...]] [--pwd|--cwd PATH] IMAGE COMMAND [ARG...]

An unknown option, a bind whose source does not exist or whose options are not ro/rw, an image that is
neither a URI Apptainer pulls (docker://, library://, oras://, shub://) nor an existing-looking path, or
a missing command fail with exit 255 and one line on stderr, as Apptainer's own checks do. Where it
differs from the real runtime: PATH keeps the host's value (a real container has its image's PATH,
here there is no image), and binds are checked but not mounted.

Each call appends one JSON line {node, step, argv} to $APPTAINER_STANDIN_LOG.
"""

from __future__ import annotations

import json
import os
import sys

FLAGS = {"--nv", "--cleanenv", "-e", "--writable-tmpfs", "--containall", "-C", "--no-home"}
VALUED = {"--bind", "-B", "--pwd", "--cwd"}
SCHEMES = ("docker://", "library://", "oras://", "shub://", "docker-archive:", "oci-archive:")
PREFIXES = ("APPTAINERENV_", "SINGULARITYENV_")


def fail(message: str) -> None:
    print(f"FATAL:   {message}", file=sys.stderr)
    sys.exit(255)


def parse(argv: list[str]) -> tuple[dict, str, list[str]]:
    if not argv or argv[0] != "exec":
        fail(f"stand-in supports only `apptainer exec`, got {argv[:1]}")
    opts: dict = {"binds": [], "flags": []}
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        name, eq, value = argv[i].partition("=")
        if name in FLAGS and not eq:
            opts["flags"].append(name)
            i += 1
            continue
        if name not in VALUED:
            fail(f"unknown flag: {argv[i]}")
        if not eq:
            i += 1
            if i >= len(argv):
                fail(f"flag needs an argument: {name}")
            value = argv[i]
        if name in ("--bind", "-B"):
            opts["binds"] += value.split(",")
        else:
            opts["pwd"] = value
        i += 1
    if i >= len(argv):
        fail("requires at least 2 arg(s), only received 0")
    image, command = argv[i], argv[i + 1 :]
    if not command:
        fail("requires at least 2 arg(s), only received 1")
    if not image.startswith(SCHEMES) and not image.startswith(("/", ".")):
        fail(f"could not open image {image}: not a URI or a path")
    return opts, image, command


def check_bind(spec: str) -> None:
    parts = spec.split(":")
    if len(parts) > 3 or not parts[0] or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
        fail(f"invalid bind path specification {spec!r}")
    if not os.path.exists(parts[0]):
        fail(f"mount source {parts[0]} doesn't exist")


def container_env(host: dict[str, str]) -> dict[str, str]:
    """The host's environment as the program sees it: LD_LIBRARY_PATH dropped unless passed with a prefix.
    Apptainer also replaces HOME (with the user's home: the same here) and PATH (with the image's: kept
    here, where there is no image)."""
    env = {k: v for k, v in host.items() if k != "LD_LIBRARY_PATH"}
    for key, value in host.items():
        for prefix in PREFIXES:
            if key.startswith(prefix) and key != prefix:
                env[key[len(prefix) :]] = value
    return env


def main(argv: list[str]) -> None:
    opts, _image, command = parse(argv)
    for spec in opts["binds"]:
        check_bind(spec)
    log = os.environ.get("APPTAINER_STANDIN_LOG")
    if log:
        entry = {"node": os.environ.get("SLURMD_NODENAME"), "step": os.environ.get("SLURM_STEP_ID"), "argv": argv}
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(entry) + "\n").encode())
        finally:
            os.close(fd)
    if "pwd" in opts:
        os.chdir(opts["pwd"])
    os.execvpe(command[0], command, container_env(dict(os.environ)))


if __name__ == "__main__":
    main(sys.argv[1:])
