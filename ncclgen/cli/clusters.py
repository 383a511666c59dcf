"""`ncclgen clusters list|show`, `ncclgen validate`, `ncclgen schema`."""

from __future__ import annotations

import json

import click

from ..errors import UserError, UserErrors, error_lines
from ..load import cpuset, descriptor


@click.group()
def clusters():
    """List cluster descriptors and show a node's topology."""


@clusters.command("list")
def list_cmd():
    """Name, GPUs/node, GPU model, fabric and file of every descriptor found.

    Search order: $NCCLGEN_CLUSTERS (colon-separated folders), ./clusters, the bundled presets.
    A file in ./clusters that another user owns is listed as REFUSED (see `ncclgen init --help`).
    """
    from .. import trust

    rows = [("NAME", "GPUS", "GPU MODEL", "FABRIC", "SOURCE")]
    for name, path in sorted(descriptor.available().items()):
        try:
            trust.found(path, "--cluster PATH or $NCCLGEN_CLUSTERS")
            d = descriptor.load(path, warnings=False)  # `validate` shows them; a listing stays a table
            rows.append((name, str(d.node.gpus_per_node), d.node.gpu_model, d.network.fabric, path))
        except UserError as exc:
            bad = "REFUSED" if exc.message.startswith("not reading it") else "INVALID"
            rows.append((name, "-", bad, "-", f"{path} ({exc.message})"))
    click.echo(_table(rows))


@clusters.command("show")
@click.argument("cluster")
def show(cluster):
    """A per-GPU topology view of CLUSTER (a name or a file), like `nvidia-smi topo -m`."""
    click.echo(render_show(descriptor.load_cluster(cluster)), nl=False)


def render_show(d: descriptor.Descriptor) -> str:
    """The text of `clusters show`; deterministic, used by the golden test."""
    net = d.network
    lines = [
        f"{d.name}: {d.description}",
        f"node: {d.node.gpus_per_node}x {d.node.gpu_model}, {len(d.node.numa_nodes)} NUMA "
        f"node{'s' if len(d.node.numa_nodes) != 1 else ''}, "
        f"{d.cpus_per_node} CPUs" + (f", NVLink {d.node.nvlink_gbps:g} Gb/s per GPU" if d.node.nvlink_gbps else ""),
        f"fabric: {net.fabric}"
        + (f", net plugin {net.net_plugin}" if net.net_plugin != "none" else "")
        + (f", RoCE GID index {net.roce.gid_index}" if net.roce else "")
        + (f", {net.efa.devices_per_node} EFA devices x {net.efa.gbps_per_device} Gb/s" if net.efa else "")
        + (", SHARP" if net.sharp else ""),
        f"software: NCCL {d.software.nccl}, PyTorch {d.software.torch}, CUDA {d.software.cuda}",
        "",
    ]
    rows = [("GPU", "NUMA", "CPUS", "COMPUTE RAILS (hca:port netdev speed)")]
    for g in sorted(d.node.gpus, key=lambda g: g.index):
        rails = (
            ", ".join(
                f"{r.hca + ':' + str(r.port) if r.hca else r.netdev}"
                f"{' ' + r.netdev if r.hca and r.netdev else ''} {r.gbps}G"
                for r in d.rails_for_gpu(g.index)
            )
            or "-"
        )
        rows.append((f"GPU{g.index}", str(g.numa), d.numa(g.numa).cpus, rails))
    lines.append(_table(rows))
    lines.append("")
    storage = ", ".join(f"{s.name} ({s.note})" if s.note else s.name for s in net.storage) or "none declared"
    lines.append(f"storage / in-band NICs (NCCL must not use): {storage}")
    lines.append(f"bootstrap interface: {', '.join(net.bootstrap_interfaces)}")
    if net.topo_file:
        lines.append(f"NCCL topology file: {net.topo_file}")
    lines += _platform_lines(d)
    return "\n".join(lines) + "\n"


def _platform_lines(d: descriptor.Descriptor) -> list[str]:
    """How the host view and the pod view differ (`ncclgen slurm` vs `ncclgen k8s`)."""
    from ..errors import UserError
    from ..load import views

    host = views.view(d, "host")
    out = []
    if views.plugin_of(host):
        out.append(f"net plugin folder (Slurm): {host.network.plugin_dir}")
    if "bootstrap_interfaces" in d.network.unconfirmed:
        out.append("site fact to confirm: the bootstrap interface (the preflight checks it)")
    kube = d.kubernetes
    try:
        pod = views.view(d, "pod")
    except UserError as exc:
        return [*out, f"pod ({kube.flavour}): cannot render: {exc.message}"]
    pnet = pod.network
    parts = [f"bootstrap {('^' if pnet.bootstrap_match == 'exclude' else '') + ','.join(pnet.bootstrap_interfaces)}"]
    renamed = {**d.kubernetes.netdevs, **d.kubernetes.hcas}
    if renamed:
        parts.append("renames " + ", ".join(f"{a}->{b}" for a, b in renamed.items()))
    if pnet.topo_file:
        parts.append(f"topology {pnet.topo_file}")
    plugin = views.plugin_of(pod)
    if plugin:
        parts.append(f"net plugin {plugin.id} in {pnet.plugin_dir}")
    elif views.plugin_of(host):
        parts.append("no net plugin")
    if pod.kubernetes.sidecars:
        parts.append("sidecars " + ", ".join(s.name for s in pod.kubernetes.sidecars))
    if kube.host_network:
        parts.append("host network")
    out.append(f"pod ({kube.flavour}): " + "; ".join(parts))
    return out


def _table(rows) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
def validate(paths):
    """Validate descriptor files; exit 0 if all are valid, 2 otherwise.

    Every problem is one line on stderr, `file:line:col: key.path: message`, in file order: errors
    (`ncclgen: error:`), and warnings (`ncclgen: warning:`) for what runs but is almost always a typo,
    such as a rail on another NUMA node than its GPU. Warnings do not change the exit status.
    The descriptor's env and vendor_env are linted in a tier-3 plan as render lints them: every
    variable render would refuse is an error here too; what `ncclgen k8s` would refuse in its pod
    view (no RDMA resource, host interfaces without hostNetwork) is a warning.
    """
    bad = 0
    for path in paths:
        try:
            d, warnings = descriptor.load_checked(path)
            for w in warnings:
                click.echo(f"ncclgen: warning: {w}", err=True)
            _check_renders(path, d)
            cpus = cpuset.format(set().union(*(cpuset.parse(n.cpus) for n in d.node.numa_nodes)))
            click.echo(
                f"{path}: ok ({d.name}: {d.node.gpus_per_node}x {d.node.gpu_model}, {d.network.fabric}, CPUs {cpus})"
            )
        except UserError as exc:
            click.echo("\n".join(error_lines(exc.located(path))), err=True)
            bad += 1
    if bad:
        raise SystemExit(2)


def _check_renders(path: str, d) -> None:
    """The verdict render would give: the descriptor's env and vendor_env linted in a tier-3 plan (every
    error at once, exit 2 as render refuses them), and a warning per reason `ncclgen k8s` would refuse the
    pod view (a descriptor used only with Slurm is still valid)."""
    from .. import pipeline
    from ..load import podcheck

    for _key, _var, msg in podcheck.problems(d):
        click.echo(f"ncclgen: warning: {path}: `ncclgen k8s` would refuse this descriptor: {msg}", err=True)
    try:
        pipeline.plan_loaded(pipeline.request(cluster=path, tier=3), d)
    except UserError as exc:
        raise UserErrors(
            [
                UserError(f"render refuses it: {e.message}", file=e.file or path, path=e.path, line=e.line, col=e.col)
                for e in exc.all()
            ]
        ) from None


@click.command("schema")
def schema_cmd():
    """Print the descriptor JSON Schema (for yaml-language-server and other editors)."""
    click.echo(json.dumps(descriptor.schema(), indent=2, sort_keys=True))
