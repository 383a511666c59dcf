"""load -> plan -> lint: the one way a command turns what the user typed into a Plan to render.

CLI commands, tests and benchmarks call `make_plan(request(...))` (request() fills in the project
defaults); renderers take the Plan it returns (which carries the Request, so `Regenerate:` lines and
`ncclgen.io/explain` annotations repeat what the user typed, a descriptor file included).
"""

from __future__ import annotations

from . import plan as planmod
from .errors import UserError
from .lint.gate import check_plan
from .load import defaults, descriptor
from .load import workload as workloadmod
from .plan import Plan, Request


def request(
    cluster: str | None = None,
    tier: int | None = None,
    workload: str | None = None,
    nodes: int | None = None,
    sets: tuple[str, ...] = (),
    debug: bool = False,
    *,
    target: str = "host",
    extra_args: tuple[str, ...] = (),
    unchecked_sets: tuple[str, ...] = (),
    transport_check: str = "on",
) -> Request:
    """A Request with the project defaults filled in (flag, NCCLGEN_* variable, ncclgen.yaml, built-in)."""
    return Request(
        cluster=defaults.default("cluster") if cluster is None else cluster,
        tier=defaults.default("tier") if tier is None else tier,
        # `--workload ""` is an error, not the default (None alone means "not given")
        workload=defaults.default("workload") if workload is None else workload,
        nodes=nodes,
        sets=tuple(sets),
        debug=debug,
        target=target,  # type: ignore[arg-type]
        extra_args=tuple(extra_args),
        unchecked_sets=tuple(unchecked_sets),
        transport_check=transport_check,  # type: ignore[arg-type]
    )


def make_plan(req: Request) -> Plan:
    """Load the descriptor and workload, build the plan, lint what the user supplied."""
    return plan_loaded(req, descriptor.load_cluster(req.cluster))


def plan_loaded(req: Request, desc: descriptor.Descriptor) -> Plan:
    """make_plan for a descriptor already loaded (`validate`, which has printed its warnings once)."""
    if req.target == "pod":
        from .load import podcheck

        podcheck.check(desc, descriptor.resolve(req.cluster))
    wl = workloadmod.load_workload(req.workload)
    check_extra_args(wl, req.extra_args)
    p = planmod.build(
        desc,
        wl,
        req.tier,
        nodes=req.nodes,
        overrides=planmod.parse_set(req.sets) + (extra := planmod.parse_set(req.unchecked_sets, unchecked=True)),
        unchecked=frozenset(name for name, _ in extra),
        debug=req.debug,
        target=req.target,
        extra_args=req.extra_args,
        request=req,
    )
    check_program_env(p, req.debug)
    check_plan(p)
    return p


def check_extra_args(wl: workloadmod.Workload, extra_args: tuple[str, ...]) -> None:
    """`-- ARGS` for a verl workload are Hydra overrides, checked like the workload's own against the
    targeted verl release(s); any other workload's command takes them unchecked."""
    if not extra_args or wl.framework != "verl":
        return
    for index, message in workloadmod.check_overrides(wl, extra=extra_args):
        j = (index or 0) - len(wl.command)
        arg = f" {extra_args[j]}" if 0 <= j < len(extra_args) else ""
        raise UserError(f"--{arg}: {message}")


def check_program_env(p: Plan, debug: bool) -> None:
    """A variable the verl entry module overwrites at import cannot take effect: refuse a different value
    (verl's SFT trainer sets NCCL_DEBUG=WARN, so --debug would change nothing on its ranks)."""
    wl = p.workload
    if wl.framework != "verl" or not wl.verl:
        return
    from .load import verl

    forced = verl.env_set_by(p.launch.command, wl.verl)
    for e in p.env:
        f = forced.get(e.name)
        if f is None or f["value"] == e.value:
            continue
        what = "--debug" if debug and e.name == "NCCL_DEBUG" else f"{e.name}={e.value} ({e.origin})"
        raise UserError(
            f"{what}: cannot take effect: verl {verl.versions_in(wl.verl)[-1]} sets "
            f"{e.name}={f['value']} at import ({f['where']}), after the job's environment"
        )
