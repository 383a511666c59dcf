"""The plan: (descriptor, workload, tier) -> env with reasons, per-rank binding, launch spec.

This is the only place env logic lives. Renderers (render_slurm, render_k8s) and the `env` / `explain`
commands consume a Plan and never look at rules. Pipeline: load -> plan -> lint -> render.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import field, replace

from ..errors import Location, UserError, shown, unsafe_char
from ..load import envnames, plugins, views
from ..load.descriptor import Descriptor, EnvSetting
from ..load.workload import Workload
from ..record import dataclass
from . import binding, launch, rules
from . import transport as transportmod
from .request import TARGETS, Request, Target

TIERS = (1, 2, 3)
# network.unconfirmed facts -> the variables derived from them
UNCONFIRMED_VARS = {"bootstrap_interfaces": ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")}
BIND_TIER = 3


class OriginKind(enum.Enum):
    """Where a value comes from; the lint gate trusts RULE values (tested lint-clean) and checks the rest."""

    RULE = "rule"
    PLUGIN = "plugin"  # what loads a net plugin and what it needs (ncclgen/data/plugins.yaml)
    VENDOR = "vendor"
    DESCRIPTOR = "descriptor env"
    WORKLOAD = "workload env"
    CLI = "--set"


@dataclass(frozen=True)
class Origin:
    kind: OriginKind
    name: str = ""  # the rule id (RULE) or plugin id (PLUGIN)
    at: Location | None = field(default=None, compare=False)  # where a file's value was read

    def __str__(self) -> str:
        return f"{self.kind.value} {self.name}" if self.name else self.kind.value

    @property
    def is_builtin(self) -> bool:
        """ncclgen's own data (a tier rule or net plugin data), tested to lint clean."""
        return self.kind in (OriginKind.RULE, OriginKind.PLUGIN)


VENDOR = Origin(OriginKind.VENDOR)


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str
    tier: int  # 1..3 for rules and vendor settings, 0 for overrides
    origin: Origin
    reason: str
    source: str

    @property
    def unchecked(self) -> bool:
        """Opted in past the name policy (`unchecked: true`, --set-unchecked): ncclgen does not vouch for it."""
        return UNCHECKED_NOTE in self.reason

    @property
    def short_label(self) -> str:
        """'tier 2, ib-qps' or 'override, --set' ('..., unchecked' when opted in): the comment beside an export."""
        what = self.origin.name if self.origin.kind is OriginKind.RULE else str(self.origin)
        label = f"tier {self.tier}, {what}" if self.tier else f"override, {what}"
        return label + (", unchecked" if self.unchecked else "")

    def as_json(self) -> dict:
        """The entry as `env --format json` and `diff --format json` print it."""
        return {
            "name": self.name,
            "value": self.value,
            "tier": self.tier,
            "origin": str(self.origin),
            "reason": self.reason,
            "source": self.source,
        }

    def label(self) -> str:
        """'tier 2, rule ib-qps' or 'override, --set' ('..., unchecked' when opted in): the prefix of every
        explaining comment."""
        label = f"tier {self.tier}, {self.origin}" if self.tier else f"override, {self.origin}"
        return label + (", unchecked" if self.unchecked else "")


@dataclass(frozen=True)
class Plan:
    cluster: Descriptor
    workload: Workload
    tier: int
    debug: bool
    env: tuple[EnvVar, ...]
    binding: tuple[binding.RankBinding, ...]
    launch: launch.Launch
    target: Target = "host"  # host (Slurm job on the node/VM) or pod (Kubernetes)
    request: Request | None = None  # set by the pipeline; None for plans built directly

    def env_dict(self) -> dict[str, str]:
        return {e.name: e.value for e in self.env}

    def command_line(self, command: str, options: Sequence[str] = ()) -> list[str]:
        """`ncclgen <command>` argv that repeats this plan: the request as typed (a descriptor file stays
        a file), the resolved node count, then ``options`` and any `-- ARGS`."""
        req = self.request or Request(
            cluster=self.cluster.name, tier=self.tier, workload=self.workload.name, debug=self.debug, target=self.target
        )
        return req.argv(command, nodes=self.launch.nodes) + list(options) + req.tail()


# Names of credentials (WANDB_API_KEY, HF_TOKEN, AWS_SECRET_ACCESS_KEY, ...): a --set value is written in
# clear text into the job script, the manifests, their Regenerate: line and the explain annotation.
CREDENTIAL = re.compile(r"(.*_)?(API_KEY|ACCESS_KEY|SECRET|SECRET_KEY|SECRET_ACCESS_KEY|TOKEN|PASSWORD|PASSWD)")


def parse_set(items, unchecked: bool = False) -> tuple[tuple[str, str], ...]:
    """--set (or, ``unchecked``, --set-unchecked) NAME=VALUE pairs; the value may hold anything, '=' and ','
    included. A name outside the knowledge base needs --set-unchecked, as `unchecked: true` in a file."""
    flag = envnames.OPT_IN_CLI if unchecked else "--set"
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"{flag} {shown(item)}: expected NAME=VALUE with NAME a valid variable name")
        bad = envnames.name_problem(name)
        if bad:
            raise UserError(f"{flag} NAME=VALUE: {bad}")
        if CREDENTIAL.fullmatch(name):
            raise UserError(
                f"--set {name}: a credential would be written in clear text into the script or "
                f"manifests; take it from a Secret (ncclgen k8s --secret-env {name}=SECRET:KEY) or "
                f"from the job's environment (ncclgen slurm --pass-env {name})"
            )
        bad = unsafe_char(value)
        if bad:
            raise UserError(
                f"--set {name}: {bad} in the value: bash drops NUL and YAML readers turn NEL/U+2028 "
                "into line breaks, so it would not arrive as written"
            )
        why = envnames.refused(name)
        if why:
            raise UserError(f"{flag} {name}: may not be set by a descriptor, workload or --set: {why}")
        why = None if unchecked else envnames.needs_opt_in(name, value)
        if why:
            raise UserError(
                f"--set {name}: {why}; to pass it anyway, use {envnames.OPT_IN_CLI} {name}=VALUE "
                "(explain shows it as unchecked)"
            )
        out.append((name, value))
    return tuple(out)


def _check_extra_args(extra_args: tuple[str, ...]) -> None:
    """The value policy every other source gets (YAML scalars, --set): `-- ARGS` hold no character that
    bash drops or a YAML reader, Python's str.splitlines or a terminal turns into a line break (NEL,
    U+2028), so an argument reaches the command as written."""
    for i, arg in enumerate(extra_args):
        bad = unsafe_char(arg)
        if bad:
            raise UserError(
                f"-- argument {i + 1}: {bad}: bash drops NUL and YAML readers turn NEL/U+2028 into line "
                "breaks, so it would not arrive as written"
            )


def build(
    cluster: Descriptor,
    workload: Workload,
    tier: int,
    *,
    nodes: int | None = None,
    overrides: tuple[tuple[str, str], ...] = (),
    unchecked: frozenset[str] = frozenset(),  # names of overrides given with --set-unchecked
    debug: bool = False,
    target: Target = "host",
    extra_args: tuple[str, ...] = (),
    request: Request | None = None,
) -> Plan:
    """Evaluate the rules up to ``tier`` and apply vendor settings and overrides, in that order, on the
    ``target`` view of the descriptor ("host": Slurm, env, explain; "pod": Kubernetes)."""
    if tier not in TIERS:
        raise UserError(f"--tier {tier}: expected 1 (stable), 2 (performance) or 3 (expert)")
    if target not in TARGETS:
        raise UserError(f"--target {target!r}: expected host (a Slurm job on the node) or pod (Kubernetes)")
    _check_extra_args(extra_args)
    cluster = views.view(cluster, target)
    n = nodes if nodes is not None else workload.nodes
    if n < 1:
        raise UserError(f"--nodes {n}: expected at least 1")
    bind = tier >= BIND_TIER
    transport = transportmod.wanted(request, target, workload)
    ctx = rules.Context(
        cluster=cluster, workload=workload, nodes=n, debug=debug, bind=bind, transport=transport, target=target
    )
    env: dict[str, EnvVar] = {}
    for t in TIERS[:tier]:
        _apply_tier(env, t, ctx, target)
    _drop_unloaded_plugin_vars(env, cluster)
    _note_unconfirmed(env, cluster)
    _apply_files(env, cluster, workload)
    _apply_overrides(env, overrides, unchecked)
    _note_effective_values(env)

    command, per_run = launch.derive_command(workload, cluster, n, tuple(extra_args))
    lo, hi, resize_why = launch.resize_range(ctx, tier, {s.name for s in cluster.vendor_env if s.omit})
    spec = launch.Launch(
        launcher=workload.launcher,
        command=command,
        per_run=per_run,
        nodes=n,
        gpus_per_node=cluster.node.gpus_per_node,
        cpus_per_node=cluster.cpus_per_node,
        bind=bind,
        bind_memory=cluster.node.bind_memory,
        ray_ready_timeout_s=workload.ray_ready_timeout_s,
        resize_min=lo,
        resize_max=hi,
        resize_why=resize_why,
    )
    return Plan(
        cluster=cluster,
        workload=workload,
        tier=tier,
        debug=debug,
        env=tuple(env.values()),
        binding=binding.bindings(cluster),
        launch=spec,
        target=target,
        request=request,
    )


def _apply_tier(env: dict[str, EnvVar], t: int, ctx: rules.Context, target: Target) -> None:
    """Tier ``t``'s rules, then (tier 1) what loads the net plugin, then the vendor's settings of tier ``t``."""
    cluster = ctx.cluster
    omitted = {s.name for s in cluster.vendor_env if s.omit}
    for rule in rules.load_rules():
        if rule.tier != t:
            continue
        value = rules.evaluate(rule, ctx)
        if rule.var not in omitted and value is not None and getattr(env.get(rule.var), "origin", None) != VENDOR:
            # The vendor's published value for this system wins over a generic rule.
            env[rule.var] = EnvVar(rule.var, value, t, Origin(OriginKind.RULE, rule.id), rule.reason, rule.source)
    if t == 1:
        for var in plugin_env(cluster, target):
            _put(env, var)
    for s in cluster.vendor_env:
        if s.tier == t and s.omit:
            env.pop(s.name, None)  # the vendor advises against it: no rule sets it
        elif s.tier == t:
            vendor = Origin(OriginKind.VENDOR, at=s.at)  # where the value was read, for the lint step's error
            _put(env, EnvVar(s.name, _value(s), t, vendor, s.reason + _unchecked(s), _cite(cluster, s.source)))


def _drop_unloaded_plugin_vars(env: dict[str, EnvVar], cluster: Descriptor) -> None:
    """A variable read only through a net plugin is emitted only together with what loads that plugin."""
    loaded = views.plugin_of(cluster)
    for name in [n for n, e in env.items() if e.tier]:
        owner = plugins.owner(name)
        if owner is not None and owner is not loaded:
            del env[name]


def _note_unconfirmed(env: dict[str, EnvVar], cluster: Descriptor) -> None:
    """Facts the descriptor marks as a site's choice to confirm: say so where they reach the env."""
    for fact, names in UNCONFIRMED_VARS.items():
        if fact not in cluster.network.unconfirmed:
            continue
        for name in names:
            if name in env:
                env[name] = replace(
                    env[name],
                    reason=f"{env[name].reason} [site fact to confirm: "
                    f"network.{fact} of {cluster.name} is no vendor's value; the preflight "
                    "checks it on every node]",
                )


def _apply_files(env: dict[str, EnvVar], cluster: Descriptor, workload: Workload) -> None:
    """The descriptor's env, then the workload's: each later setting wins."""
    for kind, settings in ((OriginKind.DESCRIPTOR, cluster.env), (OriginKind.WORKLOAD, workload.env)):
        for s in settings:
            if kind is OriginKind.DESCRIPTOR:
                src = _cite(cluster, s.source)
            else:
                src = workload.sources.get(s.source or "", s.source or "")
            _put(env, EnvVar(s.name, _value(s), 0, Origin(kind, at=s.at), s.reason + _unchecked(s), src or kind.value))


def _apply_overrides(env: dict[str, EnvVar], overrides: tuple[tuple[str, str], ...], unchecked: frozenset[str]) -> None:
    """--set and --set-unchecked, last."""
    for name, value in overrides:
        if name in unchecked:
            why = f"set on the command line{UNCHECKED_NOTE}"
            _put(env, EnvVar(name, value, 0, Origin(OriginKind.CLI), why, envnames.OPT_IN_CLI))
        else:
            _put(env, EnvVar(name, value, 0, Origin(OriginKind.CLI), "set on the command line", "--set"))


LOADER_PATH_VARS = ("LD_LIBRARY_PATH",)


def prepends(e: EnvVar, target: str) -> bool:
    """True for a loader-path variable from ncclgen's plugin data on the host: a job script puts its value
    in front of the loader path the job already has (`DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}`), as the
    vendor's own scripts do. In a pod the value is the container's whole loader path, as in Google's GKE
    manifests (a container env entry cannot extend the image's)."""
    return target == "host" and e.origin.kind is OriginKind.PLUGIN and e.name in LOADER_PATH_VARS


def plugin_env(cluster: Descriptor, target: str = "host") -> list[EnvVar]:
    """What loads the view's net plugin, NCCL_NET where it turns a silent fallback into a start-up error,
    and the variables the plugin needs (ncclgen/data/plugins.yaml), at tier 1."""
    plugin = views.plugin_of(cluster)
    if plugin is None:
        return []
    net = cluster.network
    lib_dir = net.plugin_dir or ""
    origin = Origin(OriginKind.PLUGIN, plugin.id)
    out = []
    if plugin.load == "ld_library_path":
        where = "goes in front of the job's loader path" if target == "host" else "is the container's loader path"
        out.append(
            EnvVar(
                "LD_LIBRARY_PATH",
                lib_dir,
                1,
                origin,
                f"the {plugin.id} plugin folder {where}: NCCL dlopens {plugin.library} (and the "
                "libraries beside it) by name, and without it falls back to another transport with "
                "no warning",
                plugin.load_source,
            )
        )
    else:
        out.append(
            EnvVar(
                "NCCL_NET_PLUGIN",
                f"{lib_dir}/{plugin.library}",
                1,
                origin,
                f"loads the {plugin.id} plugin from this file; a plugin NCCL cannot open is only an "
                "INFO line and NCCL falls back to another transport",
                plugin.load_source,
            )
        )
    if plugin.net_name:
        out.append(
            EnvVar(
                "NCCL_NET",
                plugin.net_name,
                1,
                origin,
                f"use only the network the {plugin.id} plugin registers: if the plugin did not load, "
                "NCCL stops at start-up ('Failed to initialize any NET plugin') instead of running "
                "silently over sockets",
                f"{plugin.net_name_source}; NCCL v2.30.7 src/plugin/net.cc",
            )
        )
    fields = {
        "lib_dir": lib_dir,
        "bootstrap": net.bootstrap_interfaces[0] if net.bootstrap_interfaces else "",
        "rail_netdevs": ",".join(r.netdev for r in net.compute if r.netdev),
    }
    for e in plugin.env:
        out.append(EnvVar(e.name, e.value.format(**fields), 1, origin, e.reason, e.source))
    return out


def _put(env: dict[str, EnvVar], var: EnvVar) -> None:
    """Later settings win; say which rule they replaced so `explain` shows the override."""
    old = env.get(var.name)
    if old is not None and old.value != var.value:
        var = replace(var, reason=f"{var.reason} (replaces {old.origin} value {old.value!r})")
    env[var.name] = var


NCCL_STEPS = 8  # NCCL v2.30.7 src/include/device.h:26
DEFAULT_BUFFSIZE = 1 << 22  # NCCL v2.30.7 src/init.cc:813


def _note_effective_values(env: dict[str, EnvVar]) -> None:
    """Say in the reason when NCCL will not use a value as written, and what it uses instead.

    NCCL_P2P_NET_CHUNKSIZE: computeBuffSizes caps the P2P chunk at the Simple buffer / NCCL_STEPS
    (NCCL v2.30.7 src/init.cc:841-843), so 2 MiB with the 4 MiB default buffer runs as 512 KiB.
    """
    chunk = env.get("NCCL_P2P_NET_CHUNKSIZE")
    if chunk is None or not re.fullmatch(r"[0-9]{1,19}", chunk.value):
        return
    buff = env.get("NCCL_BUFFSIZE")
    size = int(buff.value) if buff is not None and re.fullmatch(r"[0-9]{1,19}", buff.value) else DEFAULT_BUFFSIZE
    cap = size // NCCL_STEPS
    if int(chunk.value) > cap:
        whose = f"this plan's NCCL_BUFFSIZE={size}" if buff is not None else f"the default NCCL_BUFFSIZE={size}"
        env[chunk.name] = replace(
            chunk,
            reason=(
                f"{chunk.reason}. NCCL caps P2P chunks at NCCL_BUFFSIZE/{NCCL_STEPS} (NCCL v2.30.7 src/init.cc:841-843): "
                f"with {whose}, {cap} ({_size(cap)}) takes effect"
            ),
        )


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n % (1 << 20) == 0 else f"{n >> 10} KiB" if n % (1 << 10) == 0 else f"{n} bytes"


def _value(s: EnvSetting) -> str:
    """The value of a setting that is not omitted: descriptor.check and the workload loader require one."""
    assert s.value is not None, s.name
    return s.value


def _unchecked(s) -> str:
    """What `explain` adds to an opted-in setting's reason (descriptor/workload `unchecked: true`)."""
    return UNCHECKED_NOTE if s.unchecked else ""


UNCHECKED_NOTE = " [unchecked: opted in by the author; ncclgen does not vouch for this name]"


def _cite(cluster: Descriptor, source: str | None) -> str:
    if source is None:
        return f"descriptor {cluster.name}"
    return cluster.sources.get(source, source)
