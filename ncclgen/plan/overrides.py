"""Per-run overrides (`-- ARGS`) merged into a Hydra command in place, so the command shows one value per key.

Appending `trainer.total_epochs=2` after the workload's `trainer.total_epochs=15` works in Hydra (overrides
apply in order; hydra-core 1.3 hydra/_internal/config_loader_impl.py `_apply_overrides_to_config`) but leaves
both in the job's command and in `ncclgen explain`. Here the workload's argument is replaced where it stands,
with Hydra's prefix rules kept: `key=v` sets an existing key, `+key=v` adds one (refused by Hydra when the key
already holds a non-null value, unless v is a list or dict, which Hydra merges), `++key=v` adds or sets,
`~key` / `~key=v` deletes (the latter only when the value matches). A command that is not Hydra's keeps
`-- ARGS` appended: ncclgen does not know its argument rules.
"""

from __future__ import annotations

import re

from ..errors import UserError

_ARG = re.compile(r"(?P<prefix>~|\+\+|\+)?(?P<key>[A-Za-z_][\w\-./@]*)(?P<eq>=(?P<value>.*))?", re.S)


def _split(arg: str) -> tuple[str, str, str | None] | None:
    """(prefix, key, value or None) of a Hydra override, or None for anything else (a flag, -m ...)."""
    m = _ARG.fullmatch(arg)
    if not m or (m.group("prefix") != "~" and not m.group("eq")):
        return None
    return m.group("prefix") or "", m.group("key"), m.group("value")


def _replacement(extra: str, mine: str) -> str | None:
    """What replaces the workload's argument ``mine`` for the per-run ``extra`` (same key); None: drop both."""
    pe, key, ve = _split(extra)  # type: ignore[misc]
    pc, _, vc = _split(mine)  # type: ignore[misc]
    if pe == "~":
        if ve is not None and ve != vc:
            raise UserError(
                f"-- {extra}: the workload sets {mine}; Hydra deletes {key} only when the value matches "
                f"(write ~{key} to delete whatever it is)"
            )
        return None if pc == "+" else f"~{key}"  # a key the workload added is simply not added
    if pc == "~":
        return f"++{key}={ve}"  # the workload deletes it, this run sets it: add or set
    if pe == "+" and vc != "null":
        raise UserError(
            f"-- {extra}: the workload already sets {mine} and Hydra refuses to append to a key that "
            f"holds a value; write {key}={ve} (or ++{key}={ve}) to replace it"
        )
    keep = pc if pc in ("+", "++") else pe  # the workload's + still adds the key this run sets
    return f"{keep}{key}={ve}"


def merge(command: tuple[str, ...], extra: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(command with replacements, per-run arguments left to append, one note per replacement)."""
    out: list[str | None] = list(command)
    rest: list[str] = []
    notes: list[str] = []
    keys: dict[str, int] = {}
    for i, arg in enumerate(command):
        parts = _split(arg)
        if parts is not None:
            keys.setdefault(parts[1], i)  # the first: it carries the + that makes a new key exist
    for arg in extra:
        parts = _split(arg)
        if parts is None or parts[1] not in keys:
            rest.append(arg)
            continue
        pe, key, ve = parts
        if pe == "+" and ve is not None and ve.lstrip().startswith(("[", "{")):
            rest.append(arg)  # Hydra merges a list or dict into the key: keep the order it applies them
            notes.append(f"{arg}: appended after the workload's {command[keys[key]]} (Hydra merges it)")
            continue
        i = keys[key]
        mine = out[i]
        if mine is None:  # an earlier per-run argument deleted it
            rest.append(arg)
            continue
        new = _replacement(arg, mine)
        out[i] = new
        notes.append(f"{arg}: replaces the workload's {mine}" + (f" (as {new})" if new not in (arg, None) else ""))
        # later workload arguments for the same key would undo this run's value: they go too
        for j in range(i + 1, len(command)):
            later = _split(command[j])
            if later is not None and later[1] == key and out[j] is not None:
                out[j] = None
    return tuple(a for a in out if a is not None), tuple(rest), tuple(notes)
