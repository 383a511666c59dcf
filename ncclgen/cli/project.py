"""`ncclgen init` (scaffold a cluster repository) and `ncclgen diff` (the env effect of a change).

Descriptors are meant to live in their own repository and change by review: init lays that
repository out with CI that validates and lints, diff shows a reviewer what a change does to the env.
"""

from __future__ import annotations

import json
import os
import re
import shlex

import click

from .. import __version__, datapaths
from ..load import descriptor
from ..errors import UserError
from ..output import emit
from .common import make_plan, plan_options

EXAMPLE_CLUSTER = "h100-ib"   # the scaffold's "e.g." values come from this bundled preset
SCHEMA_FILE = "schema/descriptor.schema.json"


# -- init ---------------------------------------------------------------------------------------------

def _flow(**items) -> str:
    """A YAML flow mapping; strings as JSON strings (valid YAML) so 'true' or '0-3,8' stay strings."""
    def value(v):
        if isinstance(v, str) and v != "TODO":
            return json.dumps(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(str(x) for x in v) + "]"
        return str(v)
    return "{" + ", ".join(f"{k}: {value(v)}" for k, v in items.items()) + "}"


def scaffold_data(name: str) -> dict:
    """Template values: each list row is (the TODO text, the example text from the reference preset).

    Taking the examples from the preset keeps the scaffold valid once its TODOs hold the examples
    (tests/test_project.py checks exactly that).
    """
    ex = descriptor.load(os.path.join(datapaths.bundled("clusters"), f"{EXAMPLE_CLUSTER}.yaml"))
    net = ex.network
    return {
        "name": name,
        "example": ex,
        "numa_nodes": [(_flow(id=n.id, cpus="TODO"), _flow(id=n.id, cpus=n.cpus)) for n in ex.node.numa_nodes],
        "gpus": [(_flow(index=g.index, numa="TODO"), _flow(index=g.index, numa=g.numa)) for g in ex.node.gpus],
        "compute": [(_flow(hca="TODO", port=r.port, netdev="TODO", gbps="TODO", gpus=r.gpus, numa="TODO"),
                     _flow(hca=r.hca, port=r.port, netdev=r.netdev, gbps=r.gbps, gpus=r.gpus, numa=r.numa))
                    for r in net.compute],
        "storage": [(_flow(name="TODO", note="TODO"), _flow(name=s.name, note=s.note)) for s in net.storage],
        "bootstrap": "[" + ", ".join(net.bootstrap_interfaces) + "]",
        "nvlink_gbps": f"{ex.node.nvlink_gbps:g}",
    }


def _templates():
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(datapaths.data("init")),
                             undefined=jinja2.StrictUndefined, autoescape=False,
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["yaml_str"] = json.dumps     # a JSON string is a YAML double-quoted scalar
    env.filters["shell"] = shlex.quote
    return env


def _from_discover(path: str, name: str | None) -> tuple[str, str]:
    """(name, text) of a `ncclgen discover` file, renamed to ``name`` if given; comments are kept."""
    from ..load.yamlio import load_text, read_text

    text = read_text(path)
    desc = descriptor.load(path)
    if name is None or name == desc.name:
        return desc.name, text
    line = load_text(text, path).marks[("name",)][0]
    lines = text.splitlines(keepends=True)
    lines[line - 1] = f"name: {json.dumps(name)}\n"
    return name, "".join(lines)


def _default_name(directory: str) -> str:
    base = os.path.basename(os.path.abspath(directory)).lower()
    return base if re.fullmatch(descriptor.DNS1123, base) else "my-cluster"


def scaffold(directory: str, name: str | None, from_discover: str | None) -> dict[str, tuple[str, int]]:
    """relative path -> (text, mode) of every file init writes."""
    if name is not None and not re.fullmatch(descriptor.DNS1123, name):
        raise UserError(f"--name: {name!r} is not a DNS-1123 label (lower-case letters, digits, '-')")
    env = _templates()
    schema_line = f"# yaml-language-server: $schema=../{SCHEMA_FILE}\n"
    if from_discover:
        name, cluster_text = _from_discover(from_discover, name)
        if not cluster_text.startswith("# yaml-language-server:"):
            cluster_text = schema_line + cluster_text
    else:
        name = name or _default_name(directory)
        cluster_text = env.get_template("cluster.yaml.j2").render(**scaffold_data(name), schema_line=schema_line)

    data = {"name": name, "version": __version__, "schema_file": SCHEMA_FILE}
    return {
        f"clusters/{name}.yaml": (cluster_text, 0o644),
        "ncclgen.yaml": (env.get_template("ncclgen.yaml.j2").render(**data), 0o644),
        SCHEMA_FILE: (descriptor.schema_json(), 0o644),
        "ci/check.sh": (env.get_template("check.sh.j2").render(**data), 0o755),
        ".github/workflows/ncclgen.yml": (env.get_template("workflow.yml.j2").render(**data), 0o644),
    }


@click.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--from-discover", "from_discover", type=click.Path(dir_okay=False), metavar="FILE",
              help="Start from the descriptor `ncclgen discover` wrote on a node instead of the commented template.")
@click.option("--name", help="Cluster name (DNS-1123 label; default: the discovered name, else the folder name).")
@click.option("--force", is_flag=True, help="Overwrite files that already exist.")
def init(directory, from_discover, name, force):
    """Scaffold a cluster repository in DIRECTORY (default: here).

    \b
    Writes clusters/NAME.yaml (fill in its TODOs; each has an example), ncclgen.yaml (project
    defaults), schema/descriptor.schema.json (for editors), ci/check.sh (validate descriptors and
    lint what they render) and .github/workflows/ncclgen.yml (runs ci/check.sh).
    Existing files are never overwritten without --force.

    \b
    Example:
      ncclgen discover > node.yaml && ncclgen init infra --from-discover node.yaml
    """
    files = scaffold(directory, name, from_discover)
    for rel in files:   # every check before the first write: an error leaves nothing behind
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


# -- diff ---------------------------------------------------------------------------------------------

def diff_plans(a, b) -> dict:
    """What changes from plan ``a`` to plan ``b``: env entries, the binding, the launch command."""
    old, new = {e.name: e for e in a.env}, {e.name: e for e in b.env}
    ranks = [y.local_rank for x, y in zip(a.binding, b.binding) if x != y] if b.launch.bind else []
    if len(a.binding) != len(b.binding) and b.launch.bind:
        ranks = [r.local_rank for r in b.binding]
    return {
        "changed": [(old[n], new[n]) for n in new if n in old and old[n].value != new[n].value],
        "added": [new[n] for n in new if n not in old],
        "removed": [old[n] for n in old if n not in new],
        "unchanged": sum(1 for n in new if n in old and old[n].value == new[n].value),
        "binding": {"from": a.launch.bind, "to": b.launch.bind, "ranks": ranks}
                   if a.launch.bind != b.launch.bind or ranks else None,
        "command": (a.launch.command, b.launch.command) if a.launch.command != b.launch.command else None,
    }


def _why(e) -> list[str]:
    return [f"    why: {' '.join(e.reason.split())}", f"    source: {e.source}"]


def render_diff(a, b, names: tuple[str, str]) -> str:
    """Text for reviewers; ``names`` label the sides (a file path when two files share a name)."""
    d = diff_plans(a, b)
    out = [f"ncclgen diff: {names[0]} tier {a.tier} -> {names[1]} tier {b.tier} "
           f"(workload {b.workload.name}, {b.launch.nodes} node(s))"]
    for old, new in d["changed"]:
        out.append(f"~ {new.name}: {shlex.quote(old.value)} -> {shlex.quote(new.value)}    [{new.label()}]")
        out += _why(new)
    for e in d["added"]:
        out.append(f"+ {e.name}={shlex.quote(e.value)}    [{e.label()}]")
        out += _why(e)
    for e in d["removed"]:
        out.append(f"- {e.name}={shlex.quote(e.value)}    [{e.label()}]")
        out += _why(e)
    bind = d["binding"]
    if bind and bind["from"] != bind["to"]:
        out.append(f"~ binding: {'on' if bind['from'] else 'off'} -> {'on' if bind['to'] else 'off'}"
                   " (numactl per local rank; `ncclgen explain` shows the map)")
    elif bind:
        out.append(f"~ binding: local rank(s) {','.join(map(str, bind['ranks']))} bind to other CPUs, "
                   "NUMA nodes or rails (`ncclgen explain` shows each map)")
    if d["command"]:
        out.append(f"~ command: {shlex.join(d['command'][0])}")
        out.append(f"        -> {shlex.join(d['command'][1])}")
    out.append(f"{len(d['changed'])} changed, {len(d['added'])} added, {len(d['removed'])} removed, "
               f"{d['unchanged']} unchanged")
    return "\n".join(out) + "\n"


def diff_json(a, b, names: tuple[str, str]) -> str:
    d = diff_plans(a, b)

    def entry(e):
        return {"name": e.name, "value": e.value, "tier": e.tier, "origin": e.origin, "reason": e.reason,
                "source": e.source}
    doc = {"from": {"cluster": names[0], "tier": a.tier}, "to": {"cluster": names[1], "tier": b.tier},
           "workload": b.workload.name,
           "changed": [{"name": n.name, "from": o.value, "to": n.value, "tier": n.tier, "origin": n.origin,
                        "reason": n.reason, "source": n.source} for o, n in d["changed"]],
           "added": [entry(e) for e in d["added"]], "removed": [entry(e) for e in d["removed"]],
           "unchanged": d["unchanged"],
           "binding": d["binding"],
           "command": None if d["command"] is None else {"from": list(d["command"][0]), "to": list(d["command"][1])}}
    return json.dumps(doc, indent=2) + "\n"


@click.command()
@plan_options
@click.option("--vs-tier", type=click.IntRange(1, 3), metavar="1|2|3", help="Compare with this tier.")
@click.option("--vs-cluster", metavar="NAME|PATH", help="Compare with this descriptor (e.g. the changed file).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: for a reviewer; json: for tools (both sides, reasons, sources).")
def diff(cluster, tier, workload, nodes, sets, debug, vs_tier, vs_cluster, fmt):
    """Which variables a change of tier or descriptor adds, removes or changes, each with its reason.

    The first side is --cluster/--tier, the second the same with --vs-tier and/or --vs-cluster
    applied. Both sides are linted like any render. Exit status 0 whether or not they differ.

    \b
    Examples:
      ncclgen diff --cluster h100-ib --tier 1 --vs-tier 3
      git show HEAD~1:clusters/a.yaml > /tmp/old.yaml
      ncclgen diff --cluster /tmp/old.yaml --vs-cluster clusters/a.yaml --tier 3
    """
    if vs_tier is None and vs_cluster is None:
        raise click.UsageError("give --vs-tier and/or --vs-cluster: the side to compare with")
    a = make_plan(cluster, tier, workload, nodes, sets, debug)
    b = make_plan(vs_cluster or cluster, vs_tier or tier, workload, nodes, sets, debug)
    names = (cluster or a.cluster.name, vs_cluster or cluster or b.cluster.name)
    click.echo((render_diff if fmt == "text" else diff_json)(a, b, names), nl=False)
