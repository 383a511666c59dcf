"""`ncclgen workloads list|show`."""

from __future__ import annotations

import click

from ..errors import UserError
from ..load import workload as workloadmod
from .clusters import _table


@click.group()
def workloads():
    """List workloads and print one to copy."""


@workloads.command("list")
def list_cmd():
    """Name, launcher, verl release, nodes, description and file of every workload found.

    Search order: $NCCLGEN_WORKLOADS (colon-separated folders), ./workloads, the bundled workloads.
    A file in ./workloads that another user owns is listed as REFUSED (see `ncclgen init --help`).
    """
    from .. import trust

    rows = [("NAME", "LAUNCHER", "VERL", "NODES", "DESCRIPTION", "SOURCE")]
    for name, path in sorted(workloadmod.available().items()):
        try:
            w = workloadmod.load(trust.found(path, "--workload PATH or $NCCLGEN_WORKLOADS"))
            rows.append((name, w.launcher, w.verl or "-", str(w.nodes), w.description or "-", path))
        except UserError as exc:
            bad = "REFUSED" if exc.message.startswith("not reading it") else "INVALID"
            rows.append((name, "-", "-", "-", bad, f"{path} ({exc.message})"))
    click.echo(_table(rows))


@workloads.command("show")
@click.argument("workload")
def show(workload):
    """Print WORKLOAD's file (a name or a path) as it is, to copy into ./workloads/ and edit.

    The file is loaded first, so a printed workload is one that renders.
    """
    path = workloadmod.resolve(workload, flag="workloads show")
    workloadmod.load(path)
    with open(path, encoding="utf-8") as f:
        click.echo(f.read(), nl=False)
