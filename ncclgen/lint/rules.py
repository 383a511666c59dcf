"""Rules for one variable: its status, version window, value and scope against a target cluster.

The facts come from ncclgen.knowledge; this module only decides what a combination of facts means.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from . import knowledge as kb

if TYPE_CHECKING:
    from ..load.descriptor import Descriptor

# Prefixes worth checking even when the name is unknown; other names (PATH, HF_HOME) are not ours.
PREFIXES = (
    "NCCL_",
    "TORCH_NCCL_",
    "TORCH_NCCL2_",
    "TORCH_FR_",
    "TORCH_DIST_",
    "TORCH_WATCHDOG_",
    "GLOO_",
    "UCX_",
    "FI_",
    "SHARP_",
    "CUDA_DEVICE_",
)
TORCH_PREFIXES = ("TORCH_",)
NET_PLUGINS = ("aws-ofi-nccl", "gib", "tcpx", "tcpxo", "rdma-sharp")  # descriptor network.net_plugin
VERBS_FABRICS = ("infiniband", "roce")
SOCKET_IRRELEVANT = ("infiniband", "roce", "efa")  # fabrics whose GPU traffic never uses NCCL's Socket
BUFFSIZE_DEFAULT = 4194304  # NCCL v2.30.7 src/init.cc:812-834, DEFAULT_BUFFSIZE 1<<22
MAX_SOCKETS = 64  # NCCL v2.30.7 src/transport/net_socket.cc MAX_SOCKETS
MAX_THREADS = 16  # ... MAX_THREADS (NCCL_SOCKET_NTHREADS above it is clamped with a WARN)
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Target:
    """What the findings are judged against: the cluster's NCCL, PyTorch and fabric, or the newest NCCL and
    PyTorch the knowledge base covers."""

    def __init__(self, cluster: Descriptor | None):
        self.cluster = cluster
        self.nccl = cluster.software.nccl if cluster else kb.KB_VERSIONS["nccl"]
        self.torch = cluster.software.torch if cluster else kb.KB_VERSIONS["torch"]
        self.fabric = cluster.network.fabric if cluster else None
        self.where = f"{cluster.name} (NCCL {self.nccl})" if cluster else f"NCCL {self.nccl}"
        self.torch_where = f"{cluster.name} (PyTorch {self.torch})" if cluster else f"PyTorch {self.torch}"

    def cite(self, product: str, source: str) -> str:
        """``source`` (read at one NCCL or PyTorch release), with the release the cluster in hand declares
        where that differs: the behaviour is the cited release's, and the reader should know it was not
        read at theirs."""
        if self.cluster is None:
            return source
        version = self.nccl if product == "NCCL" else self.torch
        if re.search(rf"{product} v?{re.escape(version)}\b", source):
            return source
        return f"{source}; the cluster {self.cluster.name} declares {product} {version}"

    def release(self, info: kb.VarInfo) -> tuple[str, str, str] | None:
        """(product, version, where) of the release that reads ``info``, for NCCL's and PyTorch's names."""
        if info.reader == "nccl":
            return "NCCL", self.nccl, self.where
        if info.reader == "torch":
            return "PyTorch", self.torch, self.torch_where
        return None


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
    window = _window_findings(info, value, t)
    if window:
        return window
    release = t.release(info)
    if info.status == "removed" and release:  # still read by the target version, gone in a later one
        product, version, _ = release
        fix = _replace_fix(info.replacement, value, "use ")
        out.append(
            (
                "NG003",
                "info",
                f"{name} is read by {product} {version} but not after {info.last_version}{_successor(info)}",
                fix + f" before upgrading {product}" if fix else "",
            )
        )
    elif info.status == "deprecated":
        out += _deprecated_finding(info, value, t)
    elif info.status == "dead":
        out.append(("NG005", "warning", f"{name} has no effect: {info.meaning}", "remove it"))
    return out


def _deprecated_finding(info: kb.VarInfo, value: str | None, t: _Target) -> list[tuple]:
    """NG004 for a deprecated name, unless ncclgen writes this value on purpose or the replacement is too new
    for the release in hand; the fix keeps the value's meaning and says what ncclgen's own tier writes."""
    target = kb.lookup(info.replacement) if NAME_RE.fullmatch(info.replacement or "-") else None
    kept = value not in (None, "") and t.cluster is not None and _deliberate(info, value, t)
    if kept or (target is not None and not kb.read_in(target, t.nccl, t.torch)):
        return []
    fix = _replace_fix(info.replacement, value, "use ")
    pin = _own_pins().get(target.name) if target is not None else None
    if fix and pin and target is not None and value and not kb.same_value(target, value, pin[0]):
        fix += f" (keeps this value's meaning; ncclgen's tier {pin[1]} writes {pin[0]}: see ncclgen explain)"
    return [("NG004", "warning", f"{info.name} is deprecated: {info.meaning}{_successor(info)}", fix)]


def _window_findings(info: kb.VarInfo, value: str | None, t: _Target) -> list[tuple]:
    """NG003/NG014 for a name outside the version window of the release that would read it."""
    release = t.release(info)
    if release is None or kb.read_in(info, t.nccl, t.torch):
        return []
    product, version, where = release
    if info.last_version and kb.compare_versions(version, info.last_version) > 0:
        quiet = " and is silently ignored" if product == "PyTorch" else ""
        return [
            (
                "NG003",
                "error",
                f"{info.name} is not read by {where}{quiet}: last read by {product} {info.last_version}. "
                f"{info.meaning}{_successor(info)}",
                _replace_fix(info.replacement, value, "use "),
            )
        ]
    fix = f"upgrade {product} to {info.first_version} or later, or remove it"
    alias = kb.torch_alias_of(info.name) if product == "PyTorch" else None
    if alias is not None and (old := kb.lookup(alias[0])) is not None and kb.read_in(old, t.nccl, t.torch):
        fix = f"use {_fix_with(alias[0], value)} (PyTorch {version} reads that name; {info.name} is its newer alias)"
    return [("NG014", "error", f"{info.name} needs {product} >= {info.first_version}; {where} ignores it", fix)]


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
        from ..load.yamlparse import LOADER

        with open(datapaths.data("rules.yaml"), encoding="utf-8") as fh:
            doc = yaml.load(fh, Loader=LOADER)
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
