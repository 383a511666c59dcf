"""Command-line options declared once, on the dataclass field they fill: its flag, type and help.

The plan's Request (plan/request.py) and the schedulers' options (render/options.py) declare their fields with
`option(...)`; cli/options.py makes the click options from them and each class writes its own `Regenerate:`
argv from the same declarations (TorchX's runopts). No click here: the plan and render layers import this.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import field
from typing import Any

from .record import dataclass


@dataclass(frozen=True)
class Flag:
    """How one option field is typed on the command line."""

    names: tuple[str, ...]  # click's names; the first is the one Regenerate lines write
    help: str
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    negates: bool = False  # a bool field the flag turns off (--no-preflight -> preflight=False)
    path: bool = False  # a file to write (click.Path(dir_okay=False))
    check: Callable[[Any], None] | None = None  # raises UserError; runs before rendering
    bounds: tuple[int, int] | None = None  # an int option's range (click.IntRange)
    complete: str | None = None  # shell completion of these names: "cluster" or "workload"


def option(default: Any, *names: str, help: str, **how: Any) -> Any:
    """A dataclass field with its flag: option(None, "--partition", "-p", help=...); dataclasses.MISSING
    for a field every caller must give."""
    return field(default=default, metadata={"flag": Flag(names, help, **how)})


def flags(cls) -> list[tuple[dataclasses.Field, Flag]]:
    """The fields of an options class with their flags, in declaration order."""
    return [(f, f.metadata["flag"]) for f in dataclasses.fields(cls) if "flag" in f.metadata]
