"""Findings: the stable codes, one problem found in one input, and the text and JSON reports."""

from __future__ import annotations

from collections.abc import Sequence

from ..record import dataclass

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
    "NG024": ("net-mismatch", "NCCL_NET names a net other than the one the fabric or net plugin provides"),
}
SEVERITIES = ("error", "warning", "info")


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


def _order(f: Finding) -> tuple:
    return (f.line or 0, f.variable, SEVERITIES.index(f.severity), f.code, f.message)


def counts(findings: list[Finding]) -> dict[str, int]:
    return {sev: sum(f.severity == sev for f in findings) for sev in SEVERITIES}


def format_text(
    findings: list[Finding],
    file: str,
    checked: int,
    target: str,
    unchecked: Sequence[tuple[int, str]] = (),
    skipped: Sequence[str] = (),
) -> str:
    """One line per finding (file:line: severity code variable: message), its fix indented below; one
    line per form not read (file:line: not checked: what); one line naming the checks skipped for want of
    a cluster; the summary counts them all."""
    from ..errors import printable  # no ESC or CR from the input reaches the terminal raw

    file = printable(file)
    out = []
    for f in findings:
        where = f"{file}:{f.line}" if f.line else file
        out.append(printable(f"{where}: {f.severity} {f.code} {f.variable}: {f.message}"))
        if f.fix:
            out.append("    fix: " + printable(f.fix))
    out += [
        printable(f"{file}:{line}: not checked: {what}" if line else f"{file}: not checked: {what}")
        for line, what in unchecked
    ]
    if skipped:
        out.append(f"{file}: skipped: {skipped_text(skipped)}")
    c = counts(findings)
    out.append(
        f"{file}: {checked} variable(s) checked against {target}: {c['error']} error(s), "
        f"{c['warning']} warning(s), {c['info']} info"
        + (f", {len(unchecked)} not checked" if unchecked else "")
        + (f", cluster checks skipped for {len(skipped)}" if skipped else "")
    )
    return "\n".join(out) + "\n"


def skipped_text(names: Sequence[str]) -> str:
    """What was not checked without a cluster, for the text and JSON outputs."""
    return (
        f"the fabric and cluster checks of {', '.join(names)} (its HCAs, interfaces, transport and net plugin "
        "against a descriptor): no cluster given (--cluster, NCCLGEN_CLUSTER or ncclgen.yaml)"
    )


def format_json(
    findings: list[Finding],
    file: str,
    checked: int,
    target: str,
    unchecked: Sequence[tuple[int, str]] = (),
    skipped: Sequence[str] = (),
) -> str:
    import json

    c = counts(findings)
    doc = {
        "file": file,
        "target": target,
        "checked": checked,
        "findings": [f.as_dict() for f in findings],
        "not_checked": [{"file": file, "line": line, "what": what} for line, what in unchecked],
        "skipped": {"variables": list(skipped), "what": skipped_text(skipped)} if skipped else None,
        "errors": c["error"],
        "warnings": c["warning"],
        "infos": c["info"],
    }
    return json.dumps(doc, indent=2) + "\n"
