"""`ncclgen triage`: name the first failure of a dead or hung job from its own logs."""

from __future__ import annotations

import click

from .common import cluster_option, complete_workload


@click.command()
@cluster_option("Check the cause against this descriptor's plan.")
@click.option("--tier", "-t", type=click.IntRange(1, 3), metavar="1|2|3", help="The plan's tier.")
@click.option("--workload", "-w", metavar="NAME|PATH", shell_complete=complete_workload, help="The plan's workload.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.argument("paths", metavar="FILE|DIR...", nargs=-1, required=True)
@click.pass_context
def triage(ctx, cluster, tier, workload, fmt, paths):
    """Name the first failure in a job's logs, its cause and its fix.

    Reads Slurm output files, `kubectl logs` output (with --timestamps too), Ray session logs, NCCL
    debug files, ncclgen's preflight lines and (with torch installed) flight-recorder dumps; a DIR is
    read recursively. Symptoms (timeouts on every rank, closed peers) are collapsed after the root.
    With --cluster/--tier/--workload, or a job script's Regenerate: line among the inputs, the cause is
    checked against the plan. Exit status: 0 a cause was found, a slow run (network channels without
    GDRDMA where GPUDirect is expected, NCCL's traffic on TCP sockets where InfiniBand or EFA is there
    or planned, GPUs without peer access, HCAs of two link layers, c10d's reverse lookups of its
    clients timing out for 10 s or more, a task's threads oversubscribing its CPUs), nodes whose NCCL release, net or
    net plugin differ in a log with no error line, no failure was found (it says so, and whether the
    logs show the run's end), or a log with no error line that ends in NCCL's init with no rank
    complete, at the line where a framework's distributed setup begins, or while a launcher still
    waits (c10d retrying a store host that does not resolve, Paddle's trainers' endpoints, a
    launcher's loop waiting for a peer pod or its sshd)
    (`unfinished`: a hang there or a log cut short; it says what to collect if it hung); 1 a failure
    no cause class explains (the first line read as one, the last collective per rank and what to
    collect next are shown), the program's own exception (`program`: a Python exception raised in
    the job's code or a library's, named with the package that raised it) or a hang (ranks behind
    others that completed init, timeouts, collectives left waiting); 2 bad input.

    \b
    Example:
      ncclgen triage slurm-1234.out
      ncclgen triage --format json /tmp/ray/session_latest/logs
    """
    from ..triage import run

    text, code = run.triage(list(paths), cluster, tier, workload, fmt)
    click.echo(text, nl=False)
    if code:
        ctx.exit(code)
