"""`ncclgen init`: scaffold a cluster repository (the files come from ncclgen/scaffold.py)."""

from __future__ import annotations

import os
import shlex
import stat

import click

from ..errors import UserError
from ..output import check_inside, emit_inside
from ..scaffold import scaffold


@click.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option(
    "--from-discover",
    "from_discover",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Start from the descriptor `ncclgen discover` wrote on a node instead of the commented template.",
)
@click.option("--name", help="Cluster name (DNS-1123 label; default: the discovered name, else the folder name).")
@click.option("--force", is_flag=True, help="Overwrite files that already exist.")
def init(directory, from_discover, name, force):
    """Scaffold a cluster repository in DIRECTORY (default: here).

    \b
    Writes clusters/NAME.yaml (fill in its TODOs; each has an example), ncclgen.yaml (project
    defaults), schema/descriptor.schema.json (for editors), ci/check.sh (validate descriptors and
    lint what they render), .github/workflows/ncclgen.yml (runs ci/check.sh) and workloads/README.md
    (your workload files go in workloads/; `ncclgen workloads show NAME` prints one to start from).
    Existing files are never overwritten without --force.

    \b
    Who may write the project: ncclgen reads ./ncclgen.yaml, ./clusters and ./workloads only when
    they and the project folder are owned by you or root (group-writable is fine: a team folder
    under umask 002) and no folder is writable by others unless sticky. A file another user owns is
    refused (exit 2) unless you name it (--cluster PATH, $NCCLGEN_CLUSTERS, $NCCLGEN_WORKLOADS) or
    list the project folder under safe_directories: in ~/.config/ncclgen/config.yaml or in
    $NCCLGEN_SAFE_DIRECTORIES (colon-separated; '*' allows all), as git's safe.directory does.

    \b
    Example:
      ncclgen discover > node.yaml && ncclgen init infra --from-discover node.yaml
    """
    files = scaffold(directory, name, from_discover)
    for rel in files:  # every check before the first write: an error leaves nothing behind
        path = os.path.join(directory, rel)
        if os.path.isdir(path) and not os.path.islink(path):
            raise UserError("is a directory; expected to write a file here", file=path)
        check_inside(directory, rel)  # no link below DIRECTORY (a planted DIR/ci -> elsewhere), no FIFO
        if os.path.lexists(path) and not force:
            raise UserError("already exists; not overwriting it (use --force)", file=path)
    _folders(directory)
    for rel, (text, mode) in files.items():
        path = emit_inside(directory, rel, text, mode)  # folders below DIRECTORY made without following links
        click.echo(f"wrote {path}")
    cluster = next(rel for rel in files if rel.startswith("clusters/"))
    todo = "" if from_discover else "replace the TODOs in it, then "
    here = os.path.realpath(directory) == os.path.realpath(os.getcwd())
    cd = "" if here else f"cd {shlex.quote(directory)} && "
    click.echo(f"next: {todo}{cd}ncclgen validate {cluster} && bash ci/check.sh")


def _folders(folder: str) -> None:
    """Create ``folder`` and what is missing above it, never writable by others whatever the umask.

    ncclgen reads ./clusters and ./workloads only when nobody but you or root can replace them
    (ncclgen/trust.py): a folder made under umask 000 would be refused by the next command.
    """
    if not folder or os.path.isdir(folder):
        return
    _folders(os.path.dirname(folder))
    try:
        os.mkdir(folder)
        os.chmod(folder, stat.S_IMODE(os.stat(folder).st_mode) & ~stat.S_IWOTH)
    except OSError as exc:
        raise UserError(f"cannot create folder: {exc.strerror}", file=folder) from None
