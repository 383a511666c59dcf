"""`ncclgen lint`: check an env file, script, manifest or `ncclgen env` output against what NCCL reads."""

from __future__ import annotations

import click

from .. import lint as lintmod
from .common import cluster_option


@click.command()
@cluster_option(
    "Descriptor to check against (fabric, HCAs, interfaces, NCCL version, net plugin); "
    "default: NCCLGEN_CLUSTER or ncclgen.yaml's cluster:, else none."
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.argument("files", metavar="FILE|-...", nargs=-1, required=True)
@click.pass_context
def lint(ctx, cluster, fmt, files):
    """Lint NCCL/PyTorch variables in each FILE ('-' reads stdin).

    FILE may be an env/dotenv file, `ncclgen env` output (shell or --format json), an sbatch/bash
    script (every export/declare -x/env/prefix assignment, srun/sbatch --export, #SBATCH --export) or a
    Kubernetes manifest (every container's env, and envFrom/configMapKeyRef ConfigMaps in the input).
    A form whose effect cannot be read statically (a value from $(...), an expanded name, eval, a
    sourced file, --export-file, a ConfigMap or Secret not in the input) is listed as
    'FILE:LINE: not checked: ...' and counted in the summary. Without a cluster (--cluster,
    NCCLGEN_CLUSTER or ncclgen.yaml) the checks against a descriptor (NCCL_IB_HCA against its HCAs,
    a transport's or plugin's knobs against its fabric) are skipped, and a 'FILE: skipped:' line
    names the variables they would have checked.
    Exit status: 0 when everything was read and no finding is an error; 1 when a finding is an
    error; 3 when there is no error but some form was not checked (the verdict is incomplete);
    2 for unreadable input.

    \b
    Example:
      ncclgen lint --cluster h100-ib examples/seed-article.env
    """
    if fmt == "json" and len(files) > 1:
        raise click.UsageError("--format json takes one FILE")
    desc, origin = None, ""
    if not cluster:
        from ..load import defaults

        found = defaults.configured_cluster()
        if found:
            cluster, origin = found[0], f", from {found[1]}"
    if cluster:
        from ..load import descriptor

        desc = descriptor.load_cluster(cluster)
    texts = [(("<stdin>" if f == "-" else f), lintmod.read_input(f)) for f in files]  # all readable first
    failed = partial = False
    render = lintmod.format_json if fmt == "json" else lintmod.format_text
    for label, text in texts:
        findings = lintmod.lint_text(text, label, desc)
        pairs = lintmod.parse_text(text, label)
        checked = len({name for name, _, _ in pairs if lintmod.is_relevant(name)})
        target = lintmod.target_label(desc)
        if origin:  # say where the cluster came from: no flag named it
            target = target[:-1] + origin + ")"
        notes = lintmod.unchecked(text, label)
        skipped = lintmod.cluster_checks_skipped(pairs) if desc is None else []
        click.echo(render(findings, label, checked, target, notes, skipped), nl=False)
        failed |= any(f.severity == "error" for f in findings)
        partial |= bool(notes)
    if failed:
        ctx.exit(1)
    if partial:
        ctx.exit(3)
