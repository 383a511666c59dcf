"""What `ncclgen init` writes: a cluster repository (descriptor, project defaults, schema, CI check).

Descriptors are meant to live in their own repository and change by review: the scaffold lays that
repository out with CI that validates descriptors and lints what they render.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex

from . import __version__, datapaths
from .errors import UserError
from .load import descriptor
from .load.schema import load_dataclass

EXAMPLE_CLUSTER = "h100-ib"  # the scaffold's "e.g." values come from this bundled preset
SCHEMA_FILE = "schema/descriptor.schema.json"


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
        "compute": [
            (
                _flow(hca="TODO", port=r.port, netdev="TODO", gbps="TODO", gpus=r.gpus, numa="TODO"),
                _flow(hca=r.hca, port=r.port, netdev=r.netdev, gbps=r.gbps, gpus=r.gpus, numa=r.numa),
            )
            for r in net.compute
        ],
        "storage": [(_flow(name="TODO", note="TODO"), _flow(name=s.name, note=s.note)) for s in net.storage],
        "bootstrap": "[" + ", ".join(net.bootstrap_interfaces) + "]",
        "nvlink_gbps": f"{ex.node.nvlink_gbps:g}",
    }


def _templates():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(datapaths.data("init")),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["yaml_str"] = json.dumps  # a JSON string is a YAML double-quoted scalar
    env.filters["shell"] = shlex.quote
    return env


def _from_discover(path: str, name: str | None) -> tuple[str, str]:
    """(name, text) of a `ncclgen discover` file, renamed to ``name`` if given; comments are kept."""
    from .load.yamlio import load_text, read_text

    text = read_text(path)
    desc = descriptor.load(path)
    if name is None or name == desc.name:
        return desc.name, text
    line = load_text(text, path).marks[("name",)][0]
    lines = text.splitlines(keepends=True)
    lines[line - 1] = f"name: {json.dumps(name)}\n"
    renamed = "".join(lines)
    # The line holding the name may hold more (a flow mapping) or the value may go on (a block scalar):
    # write the result only if it is the same descriptor under the new name.
    try:
        doc = load_text(renamed, path)
        again = load_dataclass(doc, doc.data, descriptor.Descriptor)
        descriptor.check(again, doc)
        same = again.name == name and again == dataclasses.replace(desc, name=name)
    except UserError:
        same = False
    if not same:
        raise UserError(
            f"--name: cannot rename the descriptor to {name!r} here: write `name:` and its value "
            "alone on one line, or run `ncclgen discover --name` instead",
            file=path,
            line=line,
        )
    return name, renamed


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
        "workloads/README.md": (env.get_template("workloads.md.j2").render(**data), 0o644),
    }
