"""`ncclgen init`: scaffold a cluster repository (the files come from ncclgen/scaffold.py)."""

from __future__ import annotations

import os
import shlex

import click

from ..errors import UserError
from ..output import emit
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
    Example:
      ncclgen discover > node.yaml && ncclgen init infra --from-discover node.yaml
    """
    files = scaffold(directory, name, from_discover)
    for rel in files:  # every check before the first write: an error leaves nothing behind
        path = os.path.join(directory, rel)
        if os.path.isdir(path):
            raise UserError("is a directory; expected to write a file here", file=path)
        if os.path.lexists(path) and not force:
            raise UserError("already exists; not overwriting it (use --force)", file=path)
    for rel, (text, mode) in files.items():
        path = os.path.join(directory, rel)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create folder: {exc.strerror}", file=os.path.dirname(path)) from None
        emit(text, path, mode)
        click.echo(f"wrote {path}")
    cluster = next(rel for rel in files if rel.startswith("clusters/"))
    todo = "" if from_discover else "replace the TODOs in it, then "
    click.echo(f"next: {todo}cd {shlex.quote(directory)} && ncclgen validate {cluster} && bash ci/check.sh")
