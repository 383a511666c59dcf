"""click options generated from the option dataclasses of ncclgen/render/options.py (declared once there)."""

from __future__ import annotations

from collections.abc import Callable

import click

from ..render import options


def click_options(cls) -> Callable:
    """A decorator adding one click option per field of ``cls``, in declaration order in --help."""

    def decorate(f):
        for field, flag in reversed(options.flags(cls)):
            how: dict = {"help": flag.help, "metavar": flag.metavar}
            if isinstance(field.default, bool):
                how = {"help": flag.help, "is_flag": True}
            elif isinstance(field.default, tuple):
                how["multiple"] = True
            elif flag.choices:
                how = {"help": flag.help, "type": click.Choice(flag.choices)}
                if field.default is not None:
                    how.update(default=field.default, show_default=True)
            elif flag.path:
                how["type"] = click.Path(dir_okay=False)
            f = click.option(*flag.names, field.name, **how)(f)
        return f

    return decorate


def from_click(cls, params: dict):
    """An instance of ``cls`` from click's parameters (checked by its __post_init__); the parameters
    that are not its fields (the plan options) stay in ``params``."""
    values = {}
    for field, flag in options.flags(cls):
        value = params.pop(field.name)
        if flag.negates:
            value = not value
        elif isinstance(field.default, tuple):
            value = tuple(value)
        elif flag.path and value == "-":
            value = None  # stdout
        values[field.name] = value
    return cls(**values)
