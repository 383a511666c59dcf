"""click options generated from the option dataclasses (plan/request.py's Request, render/options.py's scheduler
options): each field declares its flag once (ncclgen/optionspec.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import click

from .. import optionspec


def click_options(cls, only: tuple[str, ...] | None = None, skip: tuple[str, ...] = ()) -> Callable:
    """A decorator adding one click option per field of ``cls`` (those named in ``only``, none in ``skip``),
    in declaration order in --help. A field without a default is an option whose absence is None (the
    pipeline fills the project default)."""

    def decorate(f):
        for field, flag in reversed(optionspec.flags(cls)):
            if field.name in skip or (only is not None and field.name not in only):
                continue
            f = click.option(*flag.names, field.name, **_how(field, flag))(f)
        return f

    return decorate


def _how(field, flag) -> dict:
    """click's keyword arguments for one declared option."""
    how: dict = {"help": flag.help, "metavar": flag.metavar}
    if isinstance(field.default, bool):
        return {"help": flag.help, "is_flag": True}
    if isinstance(field.default, tuple):
        how["multiple"] = True
    elif flag.choices:
        how = {"help": flag.help, "type": click.Choice(flag.choices)}
        if field.default not in (None, dataclasses.MISSING):
            how.update(default=field.default, show_default=True)
    elif flag.path:
        how["type"] = click.Path(dir_okay=False)
    elif flag.bounds:
        how["type"] = click.IntRange(*flag.bounds)
    if flag.complete:
        how["shell_complete"] = COMPLETIONS[flag.complete]
    return how


def _complete(kind: str) -> Callable:
    def complete(ctx, param, incomplete):
        """Shell completion: the descriptor or workload names found in the search folders."""
        import click.shell_completion

        from ..load import descriptor, workload

        names = (descriptor if kind == "cluster" else workload).available()
        return [click.shell_completion.CompletionItem(n) for n in names if n.startswith(incomplete)]

    return complete


COMPLETIONS = {"cluster": _complete("cluster"), "workload": _complete("workload")}


def from_click(cls, params: dict):
    """An instance of ``cls`` from click's parameters (checked by its __post_init__); the parameters
    that are not its fields (the plan options) stay in ``params``."""
    values = {}
    for field, flag in optionspec.flags(cls):
        value = params.pop(field.name)
        if flag.negates:
            value = not value
        elif isinstance(field.default, tuple):
            value = tuple(value)
        elif flag.path and value == "-":
            value = None  # stdout
        values[field.name] = value
    return cls(**values)
