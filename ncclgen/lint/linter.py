"""Lint NCCL/PyTorch environment settings against what the libraries really read.

Inputs: env/dotenv files, `ncclgen env` output, sbatch/bash scripts (line-start assignments and
`export` lines only), Kubernetes manifests (every `env:` list) and `ncclgen env --format json`.
Every finding names a stable code, so scripts and `doctor` can act on it. The facts come from
ncclgen.knowledge; this module only decides what a combination of facts means for one input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import UserError, did_you_mean
from . import knowledge as kb
from . import platform
from .knowledge import matches, parse_if_list

if TYPE_CHECKING:  # descriptor is only needed with --cluster; keep `ncclgen lint` imports light
    from ..load.descriptor import Descriptor

__all__ = [
    "CODES",
    "Finding",
    "is_relevant",
    "lint_environ",
    "lint_pairs",
    "lint_text",
    "matches",
    "parse_if_list",
    "parse_text",
]

# code -> (rule name, what it catches). Codes are stable: never renumber, only append.
CODES = {
    "NG001": ("unknown-variable", "a name no NCCL release, PyTorch or known plugin reads"),
    "NG002": ("invented-variable", "a name that never existed (e.g. NCCL_TIMEOUT)"),
    "NG003": ("removed-variable", "a name the target NCCL no longer reads, or will stop reading"),
    "NG004": ("deprecated-alias", "a deprecated name that still works, with its replacement"),
    "NG005": ("dead-variable", "a name NCCL parses but never uses"),
    "NG006": ("invalid-value", "a value the reader rejects or silently misreads"),
    "NG007": ("out-of-range", "a number outside the accepted range"),
    "NG008": ("socket-product", "NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD > 64"),
    "NG009": ("default-value", "a setting equal to the default: it does nothing"),
    "NG010": ("buffsize-shrink", "NCCL_BUFFSIZE below the 4 MiB default"),
    "NG011": ("transport-mismatch", "a knob for a transport the cluster does not use"),
    "NG012": ("ib-hca-mismatch", "NCCL_IB_HCA against the descriptor's HCAs"),
    "NG013": ("socket-ifname-mismatch", "NCCL_SOCKET_IFNAME against the descriptor's interfaces"),
    "NG014": ("needs-newer-nccl", "a name the cluster's NCCL is too old to read"),
    "NG015": ("plugin-managed", "a name the cluster's net plugin sets itself"),
    "NG016": ("duplicate", "the same name set twice: the later value wins"),
    "NG017": ("host-only-name", "a pod's variable names a host interface or RDMA device the pod does not see"),
    "NG018": ("name-case", "a known name in the wrong case: environment names are case-sensitive"),
    "NG019": ("conflicting-settings", "two settings where one cancels the other"),
    "NG020": ("disabled-transport", "a transport switched off that the node needs for speed"),
    "NG021": ("clamped-value", "a value NCCL silently reads as another one"),
    "NG022": ("forced-choice", "one forced algorithm or protocol: NCCL can no longer pick per size"),
    "NG023": ("topology-mismatch", "a setting that contradicts the descriptor's NVLink or rail layout"),
}
SEVERITIES = ("error", "warning", "info")
# Prefixes worth checking even when the name is unknown; other names (PATH, HF_HOME) are not ours.
PREFIXES = ("NCCL_", "TORCH_NCCL_", "TORCH_FR_", "GLOO_", "UCX_", "FI_", "SHARP_", "CUDA_DEVICE_")
NET_PLUGINS = ("aws-ofi-nccl", "gib", "tcpx", "tcpxo", "rdma-sharp")  # descriptor network.net_plugin
VERBS_FABRICS = ("infiniband", "roce")
SOCKET_IRRELEVANT = ("infiniband", "roce", "efa")  # fabrics whose GPU traffic never uses NCCL's Socket
BUFFSIZE_DEFAULT = 4194304  # NCCL v2.30.7 src/init.cc:812-834, DEFAULT_BUFFSIZE 1<<22
MAX_SOCKETS = 64  # NCCL v2.30.7 src/transport/net_socket.cc MAX_SOCKETS
MAX_THREADS = 16  # ... MAX_THREADS (NCCL_SOCKET_NTHREADS above it is clamped with a WARN)
MAX_INPUT = 1 << 20
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Finding:
    """One problem: where, which variable, what is wrong and what to write instead."""

    code: str
    severity: str
    variable: str
    message: str
    fix: str = ""
    line: int | None = None
    file: str | None = None

    @property
    def rule(self) -> str:
        return CODES[self.code][0]

    def as_dict(self) -> dict:
        return {
            "code": self.code,
            "rule": self.rule,
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "variable": self.variable,
            "message": self.message,
            "fix": self.fix,
        }


def is_relevant(name: str) -> bool:
    """Names the linter checks: every name the knowledge base knows, and the NCCL-family prefixes, in any
    case (a lower-case nccl_ib_hca is checked, and reported as NG018, not skipped)."""
    upper = name.upper()
    return kb.lookup(upper) is not None or upper.startswith(PREFIXES)


# -- the rules -------------------------------------------------------------------------------------


class _Target:
    """What the findings are judged against: the cluster's NCCL and fabric, or the KB's NCCL alone."""

    def __init__(self, cluster: Descriptor | None):
        self.cluster = cluster
        self.nccl = cluster.software.nccl if cluster else kb.KB_VERSIONS["nccl"]
        self.fabric = cluster.network.fabric if cluster else None
        self.where = f"{cluster.name} (NCCL {self.nccl})" if cluster else f"NCCL {self.nccl}"


def _fix_with(replacement: str, value: str | None) -> str:
    """'NCCL_MIN_CTAS' + '4' -> 'NCCL_MIN_CTAS=4'; '{value}' placeholders take the linted value."""
    shown = value if value not in (None, "") else "N"
    if NAME_RE.fullmatch(replacement):
        return f"{replacement}={shown}"
    return replacement.replace("{value}", shown)


def _replace_fix(replacement: str, value: str | None, verb: str) -> str:
    """The fix for a name with a replacement, or "" when there is no fix line.

    Replacement grammar (knowledge.py): 'NAME' (a rename or alias taking the same values: NAME=value,
    offered only when the value is valid for NAME), 'NAME=V' or free text with '{value}', 'none: why'
    (remove it), 'see NAME: why' (a successor taking different values: no fix line, the message says why).
    """
    if not replacement:
        return "remove it"
    if replacement.startswith("none:"):
        return f"remove it; {replacement[len('none:') :].strip()}"
    if replacement.startswith("see "):
        return ""
    if NAME_RE.fullmatch(replacement) and value not in (None, ""):
        target = kb.lookup(replacement)
        if target is not None and kb.check_value(target, value) is not None:
            return ""
    return verb + _fix_with(replacement, value)


def _successor(info: kb.VarInfo) -> str:
    """' See NAME: why.' for a 'see NAME: why' replacement (a successor with other values), else ''."""
    if info.replacement.startswith("see "):
        return f" See {info.replacement[len('see ') :].rstrip('.')}."
    return ""


def _name_findings(info: kb.VarInfo, value: str | None, t: _Target) -> list[tuple]:
    """Status and version findings for a known name: (code, severity, message, fix)."""
    out = []
    name = info.name
    if info.status == "invented":
        out.append(
            (
                "NG002",
                "error",
                f"{name} is not a real variable. {info.meaning}",
                _replace_fix(info.replacement, value, "use "),
            )
        )
        return out
    if info.reader == "nccl" and info.last_version and not kb.read_in(info, t.nccl):
        fix = _replace_fix(info.replacement, value, "use ")
        out.append(
            (
                "NG003",
                "error",
                f"{name} is not read by {t.where}: last read by NCCL {info.last_version}. "
                f"{info.meaning}{_successor(info)}",
                fix,
            )
        )
        return out
    if info.reader == "nccl" and info.first_version and not kb.read_in(info, t.nccl):
        out.append(
            (
                "NG014",
                "error",
                f"{name} needs NCCL >= {info.first_version}; {t.where} ignores it",
                f"upgrade NCCL to {info.first_version} or later, or remove it",
            )
        )
        return out
    if info.status == "removed":  # still read by the target version, gone in a later one
        fix = _replace_fix(info.replacement, value, "use ")
        out.append(
            (
                "NG003",
                "info",
                f"{name} is read by NCCL {t.nccl} but not after {info.last_version}{_successor(info)}",
                fix + " before upgrading NCCL" if fix else "",
            )
        )
    elif info.status == "deprecated":
        target = kb.lookup(info.replacement) if NAME_RE.fullmatch(info.replacement or "-") else None
        kept = value not in (None, "") and t.cluster is not None and _deliberate(info, value, t)
        if not kept and (target is None or kb.read_in(target, t.nccl)):  # none while the replacement is too new
            fix = _replace_fix(info.replacement, value, "use ")
            pin = _own_pins().get(target.name) if target is not None else None
            if fix and pin and target is not None and value and not kb.same_value(target, value, pin[0]):
                fix += f" (keeps this value's meaning; ncclgen's tier {pin[1]} writes {pin[0]}: see ncclgen explain)"
            out.append(("NG004", "warning", f"{name} is deprecated: {info.meaning}{_successor(info)}", fix))
    elif info.status == "dead":
        out.append(("NG005", "warning", f"{name} has no effect: {info.meaning}", "remove it"))
    return out


_PINS: dict[str, tuple[str, int]] | None = None


def _own_pins() -> dict[str, tuple[str, int]]:
    """name -> (value, tier) of every literal value ncclgen's own rules write (data/rules.yaml).

    Each has its reason in `ncclgen explain`, so a value equal to the default is a deliberate pin against
    other versions and site configs, not a no-op: NG009 never flags ncclgen's own output. Read with
    PyYAML only when a finding needs it, so `ncclgen lint` stays fast.
    """
    global _PINS
    if _PINS is None:
        import yaml

        from .. import datapaths

        with open(datapaths.data("rules.yaml"), encoding="utf-8") as fh:
            doc = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        _PINS = {}
        for rule in doc.get("rules", ()):
            if isinstance(rule.get("value"), (str, int)) and rule["var"] not in _PINS:
                _PINS[rule["var"]] = (str(rule["value"]), int(rule["tier"]))
    return _PINS


def _deliberate(info: kb.VarInfo, value: str, t: _Target) -> bool:
    """Whether ncclgen itself writes this value on purpose: a rule's pin, or the descriptor's vendor_env /
    env setting (each with its reason and source), so informational findings about it are noise."""
    pin = _own_pins().get(info.name)
    if pin and kb.same_value(info, value, pin[0]):
        return True
    if t.cluster is not None:
        for s in tuple(t.cluster.vendor_env) + tuple(t.cluster.env):
            if s.name == info.name and str(s.value) == value:
                return True
    return False


def _value_findings(info: kb.VarInfo, value: str, t: _Target) -> list[tuple]:
    found = kb.classify(info, value)
    if found:
        kind, why = found
        return [
            ("NG007" if kind == "range" else "NG006", "error", f"{info.name}={value}: {why}", f"use {_expected(info)}")
        ]
    out = []
    if (
        info.syntax == "proto-list"
        and (":" in value or ";" in value)
        and kb.compare_versions(t.nccl, kb.PER_FUNCTION_SINCE) < 0
    ):
        out.append(
            (
                "NG006",
                "error",
                f"{info.name}={value}: the per-function form needs NCCL >= "
                f"{kb.PER_FUNCTION_SINCE}; {t.where} rejects it",
                "use a plain comma list, or upgrade NCCL",
            )
        )
    if info.default and kb.same_value(info, value, info.default) and not _deliberate(info, value, t):
        out.append(
            (
                "NG009",
                "info",
                f"{info.name}={value} equals the default, so it changes nothing here",
                "remove it, unless it pins the value on purpose against other versions or site configs",
            )
        )
    if info.name == "NCCL_BUFFSIZE":
        number, _ = kb.parse_int(info, value)
        if number is not None and number < BUFFSIZE_DEFAULT:
            out.append(
                (
                    "NG010",
                    "warning",
                    f"NCCL_BUFFSIZE={value} shrinks the per-connection Simple-protocol buffer from the 4 MiB "
                    f"default to {_size(number)}: a memory-saving setting that can lower bandwidth, "
                    "not a speed-up",
                    "remove it unless GPU memory is the constraint",
                )
            )
    return out


def _expected(info: kb.VarInfo) -> str:
    """What a valid value of ``info`` looks like, for the fix line of NG006/NG007."""
    lo, hi = info.min, info.max
    if info.type in ("int", "size"):
        text = "a number (decimal or 0x hex)" if info.reader in kb.STRTOLL_READERS else "a decimal integer"
        if lo is not None or hi is not None:
            text += (
                f" in {lo}..{hi}"
                if lo is not None and hi is not None
                else (f" >= {lo}" if lo is not None else f" <= {hi}")
            )
        return text + (f", a multiple of {info.multiple}" if info.multiple else "")
    if info.syntax in ("hca-list", "ifname-list"):
        return "[^][=]name[:port],... ('^' then '=', both for the whole list)"
    if info.choices:
        text = f"one of {', '.join(info.choices)}"
        if info.syntax == "proto-list":
            return text + " as a comma list ('^' excludes), or func:list;func:list per collective"
        if info.syntax == "caret-list":
            return text + " as a comma list ('^' inverts)"
        return text + (f", or a number >= {lo}" if lo is not None else "")
    if info.pattern:
        return f"a value matching {info.pattern}"
    return "a valid value"


def _size(n: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


def _scope_findings(info: kb.VarInfo, t: _Target) -> list[tuple]:
    """Knobs of a transport or plugin the cluster does not use; knobs its plugin sets itself."""
    if t.cluster is None:
        return []
    out, name, fabric, net = [], info.name, t.fabric, t.cluster.network
    if info.scope == "socket" and fabric in SOCKET_IRRELEVANT:
        out.append(
            (
                "NG011",
                "warning",
                f"{name} tunes NCCL's Socket (TCP) transport only; {t.cluster.name} "
                f"carries GPU traffic over {fabric}, so it has no effect",
                "remove it (NUMA binding is numactl per local rank: ncclgen tier 3)",
            )
        )
    elif info.scope in ("ib", "roce", "infiniband") and fabric not in VERBS_FABRICS:
        out.append(
            (
                "NG011",
                "warning",
                f"{name} tunes NCCL's built-in IB verbs transport, which {t.cluster.name} ({fabric}) does not use",
                "remove it",
            )
        )
    elif info.scope == "roce" and fabric == "infiniband":
        out.append(
            (
                "NG011",
                "warning",
                f"{name} only applies to RoCE (Ethernet link layer); on InfiniBand "
                "NCCL picks the GID itself (NCCL_IB_ROUTABLE_FLID_GID_INDEX or 0)",
                "remove it",
            )
        )
    elif info.scope == "infiniband" and fabric == "roce":
        out.append(
            (
                "NG011",
                "warning",
                f"{name} only applies to the InfiniBand link layer; {t.cluster.name} runs RoCE",
                "remove it",
            )
        )
    elif info.scope.startswith("plugin:"):
        wanted = info.scope[len("plugin:") :].split(",")
        uses = net.net_plugin in wanted or ("rdma-sharp" in wanted and net.sharp)
        if set(wanted) & set(NET_PLUGINS) and not uses:
            out.append(
                (
                    "NG011",
                    "warning",
                    f"{name} is read only by the {'/'.join(wanted)} plugin, which "
                    f"{t.cluster.name} does not load (net_plugin: {net.net_plugin})",
                    "remove it",
                )
            )
    if net.net_plugin in info.managed_by:
        out.append(
            (
                "NG015",
                "warning",
                f"the {net.net_plugin} plugin sets {name} itself for the platforms it "
                "tunes; a value here overrides the plugin's choice",
                "remove it and let the plugin decide",
            )
        )
    return out


def _ib_hca_findings(value: str, t: _Target) -> list[tuple]:
    """NCCL_IB_HCA against the descriptor: storage NICs, over-wide prefixes, unknown names, lost rails."""
    cluster = t.cluster
    if cluster is None or t.fabric not in VERBS_FABRICS:
        return []
    net = cluster.network
    rails = [r for r in net.compute if r.hca]
    storage = [s for s in net.storage if s.kind == "hca"]
    known = sorted({r.hca for r in rails} | {s.name for s in storage}, key=_natural)
    exclude, exact, entries = parse_if_list(value)
    exact_fix = "use NCCL_IB_HCA==" + ",".join(f"{r.hca}:{r.port}" for r in rails)
    out = []
    picked = [s for s in storage if matches(value, s.name, -1)]
    if picked:
        prefixes = [
            n
            for n, _ in entries
            if not exact and not exclude and any(s.name.startswith(n) and s.name != n for s in picked)
        ]
        how = (
            f" ({', '.join(repr(p) for p in prefixes)} is a prefix: it matches every HCA whose name starts with it)"
            if prefixes
            else ""
        )
        out.append(
            (
                "NG012",
                "error",
                f"NCCL_IB_HCA={value} selects storage/in-band NIC(s) "
                f"{', '.join(s.name for s in picked)} of {cluster.name}{how}: NCCL would "
                "send GPU traffic over them",
                exact_fix,
            )
        )
    for name, port in entries:
        hits = [d for d in known if (d == name if exact else d.startswith(name))]
        if port != -1:
            hits = [
                d for d in hits if d not in {r.hca for r in rails} or any(r.hca == d and r.port == port for r in rails)
            ]
        if not hits:
            out.append(
                (
                    "NG012",
                    "warning" if exclude else "error",
                    f"NCCL_IB_HCA entry {name}{':' + str(port) if port != -1 else ''} matches no HCA port "
                    f"of {cluster.name} (HCAs: {', '.join(known)})",
                    exact_fix,
                )
            )
        elif not exact and name in known and len(hits) > 1:
            others = [d for d in hits if d != name]
            out.append(
                (
                    "NG012",
                    "warning",
                    f"NCCL_IB_HCA entry {name} is a prefix: it also matches {', '.join(others)}",
                    f"{exact_fix} ('=' makes every name exact)",
                )
            )
    lost = [r for r in rails if not matches(value, r.hca, r.port)]
    if lost:
        gpus = sorted({g for r in lost for g in r.gpus})
        out.append(
            (
                "NG012",
                "warning",
                f"NCCL_IB_HCA={value} leaves out compute rail(s) "
                f"{', '.join(f'{r.hca}:{r.port}' for r in lost)}: GPU(s) "
                f"{', '.join(map(str, gpus))} lose their nearest NIC",
                exact_fix,
            )
        )
    return out


def _socket_ifname_findings(value: str, t: _Target) -> list[tuple]:
    """NCCL_SOCKET_IFNAME against the descriptor's bootstrap (and storage) interfaces."""
    cluster = t.cluster
    if cluster is None:
        return []
    net = cluster.network
    boot = list(net.bootstrap_interfaces)
    if net.bootstrap_match == "exclude":
        # The names are the CNI's (a pod view): only the exclusion list is known.
        want = "^" + ",".join(boot)
        if value != want:
            return [
                (
                    "NG013",
                    "warning",
                    f"NCCL_SOCKET_IFNAME={value}: {cluster.name} declares no interface "
                    f"names here, only that NCCL must not use {', '.join(boot)}",
                    f"use NCCL_SOCKET_IFNAME={want}",
                )
            ]
        return []
    storage = [s.name for s in net.storage if s.kind == "netdev"]
    known = boot + [r.netdev for r in net.compute if r.netdev] + storage
    exclude, exact, entries = parse_if_list(value)
    fix = "use NCCL_SOCKET_IFNAME==" + ",".join(boot)
    out = []
    if not any(matches(value, b, -1) for b in boot):
        out.append(
            (
                "NG013",
                "error",
                f"NCCL_SOCKET_IFNAME={value} selects none of {cluster.name}'s bootstrap "
                f"interface(s) {', '.join(boot)}: NCCL would bootstrap elsewhere or find "
                "no interface",
                fix,
            )
        )
    picked = [s for s in storage if matches(value, s, -1)]
    if picked:
        out.append(
            (
                "NG013",
                "warning",
                f"NCCL_SOCKET_IFNAME={value} also selects storage interface(s) {', '.join(picked)}",
                fix,
            )
        )
    if not exclude:
        for name, _ in entries:
            if not any((k == name if exact else k.startswith(name)) for k in known):
                out.append(
                    (
                        "NG013",
                        "warning",
                        f"NCCL_SOCKET_IFNAME entry {name} is not an interface "
                        f"{cluster.name} declares ({', '.join(known)})",
                        fix,
                    )
                )
    if any(port != -1 for _, port in entries):
        out.append(
            (
                "NG013",
                "warning",
                "a ':port' suffix in NCCL_SOCKET_IFNAME is ignored for IP interfaces",
                "remove the ':port' suffix",
            )
        )
    return out


def _case_message(name: str) -> str:
    upper = name.upper()
    known = kb.lookup(upper)
    what = f"{upper} is" if known is not None else f"names starting with {upper.split('_')[0]}_ are"
    return (
        f"{name} is not read: environment names are case-sensitive and {what} read in upper case only, "
        "so this setting has no effect"
    )


def _case_fix(name: str, value: str | None) -> str:
    upper = name.upper()
    if kb.lookup(upper) is None:
        return f"write the name in upper case ({upper}) if that is a real variable, else remove it"
    return f"{upper}={value}" if value not in (None, "") else f"rename it to {upper}"


# NCCL's path levels as ncclGetLevel reads a number (NCCL v2.30.7 src/graph/paths.cc:243-269):
# levelsOldToNew = {LOC, PIX, PXB, PHB, SYS, SYS}, and any larger number is clamped to the last entry.
LEGACY_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")
RAIL_FABRICS = ("infiniband", "roce")


def _setting_findings(info: kb.VarInfo, value: str, t: _Target) -> list[tuple]:
    """One valid value that does something other than the writer most likely meant."""
    out: list[tuple] = []
    name, cluster = info.name, t.cluster
    net = cluster.network if cluster is not None else None
    if name in ("NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL") and re.fullmatch(r"\d+", value.strip()):
        number = kb.strtoll(value)[0] or 0
        level = LEGACY_LEVELS[min(number, len(LEGACY_LEVELS) - 1)]
        if number >= len(LEGACY_LEVELS):
            out.append(
                (
                    "NG021",
                    "warning",
                    f"{name}={value} is past the last legacy level: NCCL clamps it to "
                    f"{level} without a warning (src/graph/paths.cc:262-266)",
                    f"{name}={level}",
                )
            )
        else:
            out.append(
                (
                    "NG021",
                    "info",
                    f"{name}={value} is the legacy numeric form, which NCCL reads as {level} "
                    "(0 LOC, 1 PIX, 2 PXB, 3 PHB, 4-5 SYS; the numbers do not follow today's "
                    "level list)",
                    f"{name}={level}",
                )
            )
    if name in ("NCCL_ALGO", "NCCL_PROTO") and ":" not in value and not value.startswith("^"):
        tokens = {tok.strip().casefold() for tok in value.split(",") if tok.strip()}
        if len(tokens) == 1:
            what = "algorithm" if name == "NCCL_ALGO" else "protocol"
            out.append(
                (
                    "NG022",
                    "warning",
                    f"{name}={value} forces one {what} for every collective and size: "
                    "NCCL can no longer pick the fastest one per message size (a forced "
                    "Ring or Simple typically costs small-message latency or large-message "
                    "bandwidth)",
                    "remove it, unless a measurement on this cluster shows it helps (a tuner plugin or "
                    f"'{name}=^X' to exclude one {what} is narrower)",
                )
            )
    if name == "NCCL_SHM_DISABLE" and _truthy(info, value):
        out.append(
            (
                "NG020",
                "warning",
                "NCCL_SHM_DISABLE=1 turns off the shared-memory transport: GPU pairs "
                "without P2P (across PCIe root complexes or in containers without IPC) "
                "then go through the network transport, much slower",
                "remove it",
            )
        )
    if name == "NCCL_IB_DISABLE" and _truthy(info, value) and cluster is not None and t.fabric in VERBS_FABRICS:
        # A warning, not an error: switching IB off is a legitimate way to bisect a fabric problem.
        out.append(
            (
                "NG020",
                "warning",
                f"NCCL_IB_DISABLE=1 on {cluster.name}, whose GPU traffic runs over "
                f"{t.fabric}: NCCL falls back to its Socket (TCP) transport, a fraction of "
                "the fabric's bandwidth, without failing",
                "remove it, unless you are ruling out the fabric",
            )
        )
    if name == "NCCL_P2P_LEVEL" and cluster is not None and not cluster.node.nvlink_gbps and value.strip() == "NVL":
        out.append(
            (
                "NG023",
                "warning",
                f"NCCL_P2P_LEVEL=NVL allows P2P only over NVLink, and {cluster.name} "
                "declares none (node.nvlink_gbps): every GPU pair then goes through "
                "shared memory",
                "remove it, or declare node.nvlink_gbps if the GPUs have NVLink",
            )
        )
    if name == "NCCL_CROSS_NIC" and value.strip() == "1" and cluster is not None and _rail_optimised(cluster):
        out.append(
            (
                "NG023",
                "warning",
                f"NCCL_CROSS_NIC=1 lets rings and trees change NIC between nodes, while "
                f"{cluster.name}'s compute rails are one per GPU (rail-optimised): traffic "
                "then crosses the spine instead of staying on its rail",
                "remove it (the default 2 prefers the same NIC), or NCCL_CROSS_NIC=0",
            )
        )
    if name == "NCCL_COLLNET_ENABLE" and value.strip() == "1" and cluster is not None and net is not None:
        from ..load import plugins

        plugin = plugins.get(net.net_plugin)
        if plugin is None or not plugin.collnet:
            have = [p.id for p in plugins.all_plugins().values() if p.collnet]
            out.append(
                (
                    "NG011",
                    "warning",
                    f"NCCL_COLLNET_ENABLE=1 takes effect only through a CollNet (SHARP) "
                    f"plugin ({', '.join(have)}), which {cluster.name} does not load "
                    f"(net_plugin: {net.net_plugin}): NCCL ignores it",
                    "remove it, or load the plugin (network.net_plugin) on a fabric with SHARP",
                )
            )
    return out


def _truthy(info: kb.VarInfo, value: str) -> bool:
    number, problem = kb.parse_int(info, value)
    return problem is None and number not in (None, 0)


def _rail_optimised(cluster: Descriptor) -> bool:
    """Several compute rails, each serving its own GPUs, every GPU on exactly one rail."""
    rails = [r for r in cluster.network.compute]
    if cluster.network.fabric not in RAIL_FABRICS or len(rails) < 2:
        return False
    served = [g for r in rails for g in r.gpus]
    return len(served) == len(set(served)) == cluster.node.gpus_per_node


def _gloo_ifname_findings(value: str, t: _Target) -> list[tuple]:
    """GLOO_SOCKET_IFNAME: exact interface names, comma-separated (PyTorch makes one Gloo device per name);
    they must be the descriptor's bootstrap interfaces, which is what NCCL's bootstrap uses too."""
    cluster = t.cluster
    if cluster is None:
        return []
    net = cluster.network
    boot = list(net.bootstrap_interfaces)
    names = [n.strip() for n in value.split(",") if n.strip()]
    if net.bootstrap_match == "exact":
        wrong = [n for n in names if n not in boot]
    elif net.bootstrap_match == "prefix":
        wrong = [n for n in names if not any(n.startswith(b) for b in boot)]
    else:  # "exclude": a pod view names only interfaces to avoid
        wrong = [n for n in names if n in boot]
    if not wrong:
        return []
    fix = (
        f"GLOO_SOCKET_IFNAME={','.join(boot)}"
        if net.bootstrap_match == "exact"
        else "use the interface the pod or host bootstraps on (network.bootstrap_interfaces)"
    )
    return [
        (
            "NG013",
            "error",
            f"GLOO_SOCKET_IFNAME={value}: {', '.join(wrong)} "
            f"{'is' if len(wrong) == 1 else 'are'} not {cluster.name}'s bootstrap interface "
            f"({', '.join(boot)}): Gloo would bind elsewhere than NCCL or fail to start",
            fix,
        )
    ]


NCCL_STEPS = 8  # NCCL v2.30.7 src/include/device.h:26


def _combination_findings(values: dict, lines: dict, t: _Target) -> list[Finding]:
    """Two settings of one environment where one cancels or caps the other."""
    out = []
    chunk_info, buff_info = kb.lookup("NCCL_P2P_NET_CHUNKSIZE"), kb.lookup("NCCL_BUFFSIZE")
    chunk_text = values.get("NCCL_P2P_NET_CHUNKSIZE")
    if (
        chunk_info is not None
        and buff_info is not None
        and chunk_text is not None
        and not _deliberate(chunk_info, chunk_text, t)
    ):
        chunk, _ = kb.parse_int(chunk_info, chunk_text)
        buff, _ = kb.parse_int(buff_info, values.get("NCCL_BUFFSIZE") or str(BUFFSIZE_DEFAULT))
        if chunk is not None and buff is not None and buff > 0 and chunk > buff // NCCL_STEPS:
            cap = buff // NCCL_STEPS
            whose = "NCCL_BUFFSIZE" if values.get("NCCL_BUFFSIZE") else "the default NCCL_BUFFSIZE"
            out.append(
                Finding(
                    "NG021",
                    "info",
                    "NCCL_P2P_NET_CHUNKSIZE",
                    f"NCCL_P2P_NET_CHUNKSIZE={chunk_text} is capped at NCCL_BUFFSIZE/{NCCL_STEPS}: with "
                    f"{whose} of {_size(buff)}, {cap} ({_size(cap)}) takes effect "
                    f"(NCCL v2.30.7 src/init.cc:841-843); for the larger chunk, NCCL_BUFFSIZE must be at "
                    f"least {chunk * NCCL_STEPS}",
                    f"NCCL_P2P_NET_CHUNKSIZE={cap}",
                    lines.get("NCCL_P2P_NET_CHUNKSIZE"),
                )
            )
    blocking = kb.lookup("TORCH_NCCL_BLOCKING_WAIT")
    for wait in ("TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT"):
        v = values.get(wait)
        if v is None or blocking is None or not kb.same_value(blocking, v, "1"):
            continue
        for handling in ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"):
            h = values.get(handling)
            if h is not None and h.strip() != "0":
                out.append(
                    Finding(
                        "NG019",
                        "warning",
                        wait,
                        f"{wait}={v} makes wait() block and throw on timeout, and PyTorch then creates "
                        f"no watchdog thread, so {handling}={h} (line {lines.get(handling)}) has no "
                        "effect: a hung collective is no longer torn down by the watchdog "
                        "(PyTorch 2.13.0 ProcessGroupNCCL.cpp: 'TORCH_NCCL_BLOCKING_WAIT is enabled, "
                        "NO watchdog thread is created')",
                        f"remove {wait} and keep {handling}",
                        lines.get(wait),
                    )
                )
                break
        break
    for alias, new in (
        ("NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_ASYNC_ERROR_HANDLING"),
        ("NCCL_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT"),
    ):
        if values.get(alias) is not None and values.get(new) is not None and values[alias] != values[new]:
            out.append(
                Finding(
                    "NG019",
                    "warning",
                    alias,
                    f"{alias}={values[alias]} is ignored: {new}={values[new]} (line {lines.get(new)}) "
                    "is set too, and PyTorch reads the TORCH_ name first",
                    f"remove {alias}",
                    lines.get(alias),
                )
            )
    return out


def _socket_product(values: dict, lines: dict) -> list[Finding]:
    """NCCL keeps NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD <= 64 by lowering NSOCKS_PERTHREAD."""
    nt_info, ns_info = kb.lookup("NCCL_SOCKET_NTHREADS"), kb.lookup("NCCL_NSOCKS_PERTHREAD")
    nt, _ = kb.parse_int(nt_info, values.get("NCCL_SOCKET_NTHREADS") or "")
    ns, _ = kb.parse_int(ns_info, values.get("NCCL_NSOCKS_PERTHREAD") or "")
    if nt is None or ns is None or nt < 1 or ns < 1:
        return []
    nt = min(nt, MAX_THREADS)
    if nt * ns <= MAX_SOCKETS:
        return []
    return [
        Finding(
            "NG008",
            "warning",
            "NCCL_NSOCKS_PERTHREAD",
            f"NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD = {nt} x {ns} = {nt * ns} > {MAX_SOCKETS}: "
            f"NCCL lowers NCCL_NSOCKS_PERTHREAD to {MAX_SOCKETS // nt}",
            f"NCCL_NSOCKS_PERTHREAD={MAX_SOCKETS // nt}",
            lines["NCCL_NSOCKS_PERTHREAD"],
        )
    ]


def _natural(s: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s))


def lint_pairs(
    pairs: list[tuple[str, str | None, int | None]],
    cluster: Descriptor | None = None,
    file: str | None = None,
    target: str = "host",
) -> list[Finding]:
    """Findings for (name, value, line) triples; value None means 'set, but not knowable statically'.

    Names that are neither in the knowledge base nor NCCL-family prefixed are skipped. The order of the
    result is deterministic: by line, variable, severity (errors first), code.
    """
    t = _Target(cluster)
    out: list[Finding] = []
    values: dict[str, str | None] = {}
    lines: dict[str, int | None] = {}
    for name, value, line in pairs:
        if not is_relevant(name):
            continue
        if name != name.upper():
            out.append(Finding("NG018", "error", name, _case_message(name), _case_fix(name, value), line, file))
            continue
        raw: list[tuple] = []
        if name in values:
            raw.append(
                (
                    "NG016",
                    "warning",
                    f"{name} is set again (first on line {lines[name]}); the later value wins"
                    if lines[name]
                    else f"{name} is set twice",
                    "keep one assignment",
                )
            )
        values[name], lines[name] = value, line
        info = kb.lookup(name)
        if info is None:
            sug = kb.suggest(name)
            who = f"NCCL {kb.KB_VERSIONS['nccl']}, PyTorch {kb.KB_VERSIONS['torch']} or any plugin ncclgen knows"
            raw.append(
                (
                    "NG001",
                    "error" if name.startswith("NCCL_") else "warning",
                    f"{name} is not read by {who}{did_you_mean(name, sug)}",
                    f"use {sug[0]}" if sug else "remove it",
                )
            )
        else:
            named = _name_findings(info, value, t)
            if target == "pod" and cluster is not None:
                named += platform.host_only_findings(name, value, cluster)
            raw += named
            if value is not None and info.status != "removed" and not any(sev == "error" for _, sev, _, _ in named):
                raw += _value_findings(info, value, t)
                if kb.classify(info, value) is None:
                    if name == "NCCL_IB_HCA":
                        raw += _ib_hca_findings(value, t)
                    elif name == "NCCL_SOCKET_IFNAME":
                        raw += _socket_ifname_findings(value, t)
                    elif name == "GLOO_SOCKET_IFNAME":
                        raw += _gloo_ifname_findings(value, t)
                    raw += _setting_findings(info, value, t)
            if info.status not in ("invented", "removed"):
                raw += _scope_findings(info, t)
        out += [Finding(code, sev, name, msg, fix, line, file) for code, sev, msg, fix in raw]
    out += [
        Finding(f.code, f.severity, f.variable, f.message, f.fix, f.line, file)
        for f in _socket_product(values, lines) + _combination_findings(values, lines, t)
    ]
    return sorted(out, key=_order)


def _order(f: Finding) -> tuple:
    return (f.line or 0, f.variable, SEVERITIES.index(f.severity), f.code, f.message)


def lint_environ(environ: Mapping[str, str], cluster: Descriptor | None = None) -> list[Finding]:
    """Lint the relevant names of a process environment (no line numbers); used by `doctor`."""
    pairs = [(k, v, None) for k, v in sorted(environ.items()) if is_relevant(k)]
    return lint_pairs(pairs, cluster)


def lint_text(text: str, name: str, cluster: Descriptor | None = None) -> list[Finding]:
    """Autodetect the format of ``text`` (named ``name`` in errors and findings) and lint it.

    Each `env:` list of a manifest is one environment (a head and a worker both setting NCCL_DEBUG is
    not a duplicate); an env file, script or JSON document is one environment.
    """
    findings: list[Finding] = []
    # A manifest's env is what a pod sees: lint it against the descriptor's pod view (its interface and
    # device names, and whether the pod loads the net plugin); anything else against the host view.
    target = "pod" if detect(text) == "manifest" else "host"
    if cluster is not None:
        from ..load import views

        cluster = views.view(cluster, target)
    for group in _parse_groups(text, name):
        findings += lint_pairs(group, cluster, file=name, target=target)
    return sorted(findings, key=_order)


# -- reading the inputs ----------------------------------------------------------------------------


def read_input(path: str) -> str:
    """The text of ``path`` ('-' = stdin): small UTF-8 text, or one UserError naming the file."""
    import sys

    from ..load import yamlio

    what = "an env file, script or manifest"
    if path == "-":
        return yamlio.decode(sys.stdin.buffer.read(MAX_INPUT + 1), "<stdin>", limit=MAX_INPUT, what=what)
    return yamlio.read_text(path, limit=MAX_INPUT, what=what)


def detect(text: str) -> str:
    """'json' (ncclgen env --format json), 'manifest' (Kubernetes YAML) or 'shell' (env/dotenv/script)."""
    if text.lstrip().startswith("{"):
        return "json"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")), "")
    # A YAML stream starts with '---' or a 'key:'; no env file or shell script line looks like that.
    if re.match(r"(---|[A-Za-z_][\w.-]*\s*:(\s|$))", first):
        return "manifest"
    return "shell"


def parse_text(text: str, name: str) -> list[tuple[str, str | None, int | None]]:
    """(variable, value or None, line) for every assignment in ``text``, in order."""
    return [pair for group in _parse_groups(text, name) for pair in group]


_LAST_PARSE: list = [None, None, None]  # (text, name, groups): `lint` asks twice for the same text


def _parse_groups(text: str, name: str) -> list[list]:
    if _LAST_PARSE[0] is text and _LAST_PARSE[1] == name:
        return _LAST_PARSE[2]
    groups = _parse_groups_uncached(text, name)
    _LAST_PARSE[:] = [text, name, groups]
    return groups


def _parse_groups_uncached(text: str, name: str) -> list[list]:
    kind = detect(text)
    if kind == "json":
        return [_parse_json(text, name)]
    if kind == "manifest":
        return _parse_manifest(text, name)
    return [_parse_shell(text, name)]


def _parse_json(text: str, name: str) -> list:
    from ..load import yamlio

    doc = yamlio.load_json(text, name)
    env = doc.get("env") if isinstance(doc, dict) else None
    if not isinstance(env, list):
        raise UserError('expected a JSON object with an "env" list (ncclgen env --format json)', file=name, path="env")
    # Lines are found by searching forward for each name, counting newlines incrementally (one pass over
    # the text in all); a name written with JSON escapes is not found, and later ones get no line.
    out, pos, line, counted = [], 0, 1, 0
    for i, item in enumerate(env):
        found = (
            text.find(f'"{item["name"]}"', pos)
            if pos >= 0 and isinstance(item, dict) and isinstance(item.get("name"), str)
            else -1
        )
        if found >= 0:
            line += text.count("\n", counted, found)
            counted, pos = found, found + 1
        else:
            pos = -1
        where = line if found >= 0 else None
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise UserError('expected an object with a string "name"', file=name, path=f"env[{i}]", line=line)
        value = item.get("value")
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise UserError("expected a string value", file=name, path=f"env[{i}].value", line=line)
        out.append((item["name"], str(value), where))
    return out


def _parse_manifest(text: str, name: str) -> list:
    """Every `env:` list of {name, value} in every document, one list each; valueFrom has no static value.

    Read from libyaml's event stream in one pass (no node graph): linear in the input, nesting deeper
    than yamlio.MAX_DEPTH refused as it is met (libyaml's recursive composer crashes on it), and an
    alias is never expanded (no alias-bomb blow-up).
    """
    import yaml

    from ..load import yamlio

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: list = []
    # One frame per open mapping/sequence: [kind, key or None, expecting a key, env group or None, item]
    stack: list[list] = []
    try:
        for ev in yaml.parse(text, Loader=loader):
            top = stack[-1] if stack else None
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if len(stack) >= yamlio.MAX_DEPTH:
                    m = ev.start_mark
                    raise UserError(
                        f"nested more than {yamlio.MAX_DEPTH} levels deep", file=name, line=m.line + 1, col=m.column + 1
                    )
                group = item = None
                if top is not None and top[0] == "map" and not top[2]:
                    if top[1] == "env" and isinstance(ev, yaml.SequenceStartEvent):
                        group = []
                        out.append(group)
                    top[2] = True  # this container is the value: next is a key
                elif (
                    top is not None
                    and top[0] == "seq"
                    and top[3] is not None
                    and isinstance(ev, yaml.MappingStartEvent)
                ):
                    item = {}  # an item of an env list
                stack.append(["map" if isinstance(ev, yaml.MappingStartEvent) else "seq", None, True, group, item])
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                frame = stack.pop()
                item = frame[4]
                if item is not None and "name" in item:
                    (n, line), value = item["name"], item.get("value", (None, 0))[0]
                    stack[-1][3].append((n, value, line))
            elif isinstance(ev, (yaml.ScalarEvent, yaml.AliasEvent)):
                if top is None or top[0] != "map":
                    continue
                if top[2]:  # a key
                    top[1] = ev.value if isinstance(ev, yaml.ScalarEvent) else None
                    top[2] = False
                else:  # a scalar value of key top[1]
                    if top[4] is not None and top[1] in ("name", "value") and isinstance(ev, yaml.ScalarEvent):
                        top[4].setdefault(top[1], (ev.value, ev.start_mark.line + 1))
                    top[2] = True
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise UserError(
            f"YAML syntax error: {exc.problem or exc.context}",
            file=name,
            line=mark.line + 1 if mark else None,
            col=mark.column + 1 if mark else None,
        ) from None
    except yaml.YAMLError as exc:
        raise yamlio.yaml_error(exc, text, name) from None
    return out


_PLAIN = re.compile(r"[^ \t\n;&|<>()'\"\\$`]+")
_BLANKS = re.compile(r"[ \t\r]+")
_DQ_PLAIN = re.compile(r'[^"\\$`]+')


class _Scanner:
    """One left-to-right pass over a shell text: logical lines as words, here-document bodies skipped.

    Linear in the input whatever it holds: an unclosed quote is found once at the end of the text
    (re-splitting each growing line made 16,000 lines after an unclosed `"` take 14-25 s). `<<` starts a
    here-document only as an operator, never inside quotes, a comment, `$((...))`, `((...))` or a
    here-string (`<<<`). What cannot be read (an unclosed quote, `$(`, or here-document) is an error
    with its line, never a silent skip.
    """

    STOP = " \t\n;&|<>()"

    def __init__(self, text: str, name: str):
        self.s, self.n, self.name = text, len(text), name
        self.newlines = [m.start() for m in re.finditer("\n", text)]

    def line_at(self, pos: int) -> int:
        import bisect

        return bisect.bisect_left(self.newlines, pos) + 1

    def fail(self, what: str, pos: int):
        return UserError(what, file=self.name, line=self.line_at(pos))

    def lines(self):
        """(first line number, [(word, dynamic), ...]) for each logical line."""
        s, n, i = self.s, self.n, 0
        words: list[tuple[str, bool]] = []
        heredocs: list[tuple[str, bool, int]] = []
        start = 0
        while i < n:
            c = s[i]
            if c in " \t\r":
                i = _BLANKS.match(s, i).end()
            elif c == "\\" and s.startswith("\n", i + 1):
                i += 2  # line continuation
            elif c == "\n":
                yield self.line_at(start), words
                words, i = [], i + 1
                for delim, strip, at in heredocs:
                    i = self._skip_heredoc(i, delim, strip, at)
                heredocs, start = [], i
            elif c == "#":
                j = s.find("\n", i)
                i = n if j < 0 else j
            elif s.startswith("((", i) and not words:
                j = self._balanced(i + 2, "(", ")", 2, i)  # arithmetic command: `<<` is a shift here
                words.append((s[i:j], True))
                i = j
            elif s.startswith("<<<", i):
                words.append(("<<<", False))
                i += 3
            elif s.startswith("<<", i):
                strip = s.startswith("<<-", i)
                i += 3 if strip else 2
                while i < n and s[i] in " \t":
                    i += 1
                at = i
                delim, _, i = self._word(i)
                if not delim:
                    raise self.fail("here-document operator << without a delimiter word", at)
                heredocs.append((delim, strip, at))
                words.append(("<<", False))
            elif c in ";&|<>()":
                words.append((c, False))
                i += 1
            else:
                word, dynamic, i = self._word(i)
                words.append((word, dynamic))
        if words:
            yield self.line_at(start), words
        if heredocs:
            delim, _, at = heredocs[0]
            raise self.fail(f"here-document <<{delim} is not closed: no line '{delim}' follows", at)

    def _skip_heredoc(self, i: int, delim: str, strip: bool, at: int) -> int:
        s, n = self.s, self.n
        while i < n:
            j = s.find("\n", i)
            end = n if j < 0 else j
            line = s[i:end]
            if (line.lstrip("\t") if strip else line) == delim:
                return end + 1
            i = end + 1
        raise self.fail(f"here-document <<{delim} is not closed: no line '{delim}' follows", at)

    def _word(self, i: int) -> tuple[str, bool, int]:
        """One word from ``i``: (text with quotes removed, dynamic, end)."""
        s, n = self.s, self.n
        buf: list[str] = []
        dynamic = False
        plain, dq_plain = _PLAIN.match, _DQ_PLAIN.match
        while i < n and s[i] not in self.STOP:
            m = plain(s, i)
            if m:  # a run of ordinary characters, in one step
                buf.append(m.group())
                i = m.end()
                continue
            c = s[i]
            if c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    raise self.fail("unclosed quote", i)
                buf.append(s[i + 1 : j])
                i = j + 1
            elif c == '"':
                start, i = i, i + 1
                while True:
                    if i >= n:
                        raise self.fail("unclosed quote", start)
                    m = dq_plain(s, i)
                    if m:
                        buf.append(m.group())
                        i = m.end()
                        continue
                    d = s[i]
                    if d == '"':
                        i += 1
                        break
                    if d == "\\" and i + 1 < n and s[i + 1] in '$`"\\\n':
                        buf.append(s[i + 1])
                        i += 2
                    elif (d == "$" and s.startswith("(", i + 1)) or (d == "$" and s.startswith("{", i + 1)):
                        j = self._substitution(i)
                        buf.append(s[i:j])
                        dynamic, i = True, j
                    elif d == "`":
                        j = self._backquote(i)
                        buf.append(s[i:j])
                        dynamic, i = True, j
                    else:
                        dynamic = dynamic or d == "$"
                        buf.append(d)
                        i += 1
            elif c == "\\":
                if s.startswith("\n", i + 1):
                    i += 2  # continuation inside a word
                    continue
                if i + 1 < n:
                    buf.append(s[i + 1])
                i += 2
            elif c == "$" and (s.startswith("(", i + 1) or s.startswith("{", i + 1)):
                j = self._substitution(i)
                buf.append(s[i:j])
                dynamic, i = True, j
            elif c == "`":
                j = self._backquote(i)
                buf.append(s[i:j])
                dynamic, i = True, j
            else:
                dynamic = dynamic or c == "$"
                buf.append(c)
                i += 1
        return "".join(buf), dynamic, i

    def _substitution(self, i: int) -> int:
        """End of `$(...)`, `$((...))` or `${...}` starting at ``i`` (the `$`)."""
        if self.s.startswith("{", i + 1):
            return self._balanced(i + 2, "{", "}", 1, i)
        return self._balanced(i + 2, "(", ")", 1, i)

    def _backquote(self, i: int) -> int:
        s, j = self.s, i + 1
        while j < self.n:
            if s[j] == "\\":
                j += 2
            elif s[j] == "`":
                return j + 1
            else:
                j += 1
        raise self.fail("unclosed `", i)

    def _balanced(self, j: int, open_: str, close: str, depth: int, start: int) -> int:
        """End of a bracketed run from ``j`` with ``depth`` brackets open; quotes inside are skipped."""
        s, n = self.s, self.n
        while j < n:
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c == "'":
                k = s.find("'", j + 1)
                if k < 0:
                    break
                j = k + 1
                continue
            if c == '"':
                k = j + 1
                while k < n and s[k] != '"':
                    k += 2 if s[k] == "\\" else 1
                if k >= n:
                    break
                j = k + 1
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        raise self.fail(f"unclosed {s[start : start + 2]}", start)


def _parse_shell(text: str, name: str) -> list:
    """Assignments at the start of a line (`NAME=v`, `export NAME=v ...`) in env files and scripts."""
    out: list = []
    for line, words in _Scanner(text, name).lines():
        if words and words[0] == ("export", False):
            words = words[1:]
            if words and words[0][0].startswith("-"):
                continue  # export -n/-f/-p: not an assignment
        for word, dynamic in words:
            key, eq, value = word.partition("=")
            if not eq or not NAME_RE.fullmatch(key):
                break
            out.append((key, None if dynamic else value, line))
    return out


# -- output ----------------------------------------------------------------------------------------


def counts(findings: list[Finding]) -> dict[str, int]:
    return {sev: sum(f.severity == sev for f in findings) for sev in SEVERITIES}


def format_text(findings: list[Finding], file: str, checked: int, target: str) -> str:
    """One line per finding (file:line: severity code variable: message), its fix indented below."""
    out = []
    for f in findings:
        where = f"{file}:{f.line}" if f.line else file
        out.append(f"{where}: {f.severity} {f.code} {f.variable}: {f.message}")
        if f.fix:
            out.append(f"    fix: {f.fix}")
    c = counts(findings)
    out.append(
        f"{file}: {checked} variable(s) checked against {target}: {c['error']} error(s), "
        f"{c['warning']} warning(s), {c['info']} info"
    )
    return "\n".join(out) + "\n"


def format_json(findings: list[Finding], file: str, checked: int, target: str) -> str:
    import json

    c = counts(findings)
    doc = {
        "file": file,
        "target": target,
        "checked": checked,
        "findings": [f.as_dict() for f in findings],
        "errors": c["error"],
        "warnings": c["warning"],
        "infos": c["info"],
    }
    return json.dumps(doc, indent=2) + "\n"


def target_label(cluster: Descriptor | None) -> str:
    return _Target(cluster).where
