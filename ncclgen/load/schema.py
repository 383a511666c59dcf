"""Typed loading of YAML documents into frozen dataclasses, and the JSON Schema of those dataclasses.

Why not pydantic: a render must stay near 0.1 s and pydantic's import alone costs more than that
(see benchmarks/render.py), and its errors carry no YAML line:column. Dataclass type hints are the
single source for both validation and `ncclgen schema`, so the two cannot drift.

Field metadata keys (``field(metadata=...)``): ``doc`` (description), ``min``/``max`` (numbers),
``pattern`` (regex for strings) with ``pattern_doc`` (what it means, for errors), ``key_pattern`` /
``key_pattern_doc`` (the same for mapping keys), ``scalar`` (a string that may be written as a YAML
integer), ``examples``, ``internal`` (set by the loader, not read from YAML nor in the schema).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

from ..errors import UserError, collect, did_you_mean, non_ascii
from .yamlio import Document

_HINTS: dict[type, dict[str, Any]] = {}


def hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    return _HINTS[cls]


def field(default: Any = dataclasses.MISSING, *, doc: str = "", factory: Any = dataclasses.MISSING, **meta):
    """A dataclass field carrying its documentation and bounds."""
    meta["doc"] = doc
    if factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if tp is bool:
        return "true or false"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin in (list, tuple):
        return "a list"
    if origin is dict or dataclasses.is_dataclass(tp):
        return "a mapping"
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(tp) if a is not type(None))
    return str(tp)


def _got(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    text = repr(value)
    return f"{type(value).__name__} {text[:40] + '...' if len(text) > 40 else text}"


def convert(doc: Document, value: Any, tp: Any, path: tuple, meta: dict | None = None) -> Any:
    """``value`` checked against ``tp``; errors name the key path and its line:column in ``doc``."""
    meta = meta or {}
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return _union(doc, value, tp, path, meta)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return load_dataclass(doc, value, tp, path)
    if origin is Literal:
        return _literal(doc, value, tp, path)
    if origin in (list, tuple):
        return _sequence(doc, value, tp, path)
    if origin is dict:
        return _mapping(doc, value, tp, path, meta)
    if tp in _SCALARS:
        return _SCALARS[tp](doc, value, path, meta)
    if tp is Any:
        return value
    raise TypeError(f"schema: unsupported type {tp!r}")  # a bug in ncclgen, not user input


def _union(doc: Document, value: Any, tp: Any, path: tuple, meta: dict) -> Any:
    args = [a for a in get_args(tp) if a is not type(None)]
    if value is None and len(args) < len(get_args(tp)):
        return None
    if len(args) == 1:  # Optional[X]: X's own error is the precise one
        return convert(doc, value, args[0], path, meta)
    for arg in args:
        try:
            return convert(doc, value, arg, path, meta)
        except UserError:  # try the next alternative
            pass
    raise doc.error(path, f"expected {_type_name(tp)}, got {_got(value)}")


def _literal(doc: Document, value: Any, tp: Any, path: tuple) -> Any:
    choices = get_args(tp)
    if value not in choices or isinstance(value, bool) != any(isinstance(c, bool) for c in choices):
        extra = did_you_mean(str(value), [str(c) for c in choices]) if isinstance(value, str) else ""
        raise doc.error(path, f"expected {_type_name(tp)}, got {_got(value)}{extra}")
    return value


def _sequence(doc: Document, value: Any, tp: Any, path: tuple) -> tuple:
    if not isinstance(value, list):
        raise doc.error(path, f"expected a list, got {_got(value)}")
    (item_tp, *_rest) = get_args(tp)
    items, errors = [], []
    for i, v in enumerate(value):  # every item's errors, not only the first item's
        try:
            items.append(convert(doc, v, item_tp, (*path, i)))
        except UserError as exc:
            errors.append(exc)
    collect(errors)
    return tuple(items)


def _mapping(doc: Document, value: Any, tp: Any, path: tuple, meta: dict) -> dict:
    if not isinstance(value, dict):
        raise doc.error(path, f"expected a mapping, got {_got(value)}")
    _key_tp, val_tp = get_args(tp)
    pattern = meta.get("key_pattern")
    out, errors = {}, []
    for k, v in value.items():
        if pattern and not re.fullmatch(pattern, k, re.ASCII):
            what = meta.get("key_pattern_doc", pattern)
            errors.append(doc.error((*path, k), f"key {k!r} is not {what}{non_ascii(k)}"))
            continue
        try:
            out[k] = convert(doc, v, val_tp, (*path, k))
        except UserError as exc:
            errors.append(exc)
    collect(errors)
    return out


def _bool(doc: Document, value: Any, path: tuple, meta: dict) -> bool:
    if not isinstance(value, bool):
        raise doc.error(path, f"expected true or false, got {_got(value)}")
    return value


def _int(doc: Document, value: Any, path: tuple, meta: dict) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise doc.error(path, f"expected an integer, got {_got(value)}")
    _bounds(doc, value, path, meta)
    return value


def _float(doc: Document, value: Any, path: tuple, meta: dict) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise doc.error(path, f"expected a number, got {_got(value)}")
    _bounds(doc, value, path, meta)
    return float(value)


def _str(doc: Document, value: Any, path: tuple, meta: dict) -> str:
    # YAML reads 2.30 as the float 2.3: guessing would corrupt versions, so ask for quotes.
    # Env values (meta "scalar") may be bare integers: `value: 1` means "1".
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if meta.get("scalar") and number and isinstance(value, int):
        return _str(doc, str(value), path, meta)
    if number:
        raise doc.error(path, f"expected a string, got {_got(value)} (put it in quotes)")
    if not isinstance(value, str):
        raise doc.error(path, f"expected a string, got {_got(value)}")
    pattern = meta.get("pattern")
    if pattern and not re.fullmatch(pattern, value, re.ASCII):  # \d, \w: ASCII, as bash/numactl/slurm read
        raise doc.error(path, f"{value!r} does not match {meta.get('pattern_doc', pattern)}{non_ascii(value)}")
    return value


_SCALARS = {bool: _bool, int: _int, float: _float, str: _str}


def _bounds(doc: Document, value, path, meta):
    lo, hi = meta.get("min"), meta.get("max")
    if lo is not None and value < lo:
        raise doc.error(path, f"expected a value >= {lo}, got {value}")
    if hi is not None and value > hi:
        raise doc.error(path, f"expected a value <= {hi}, got {value}")


def load_dataclass(doc: Document, value: Any, cls: type, path: tuple = ()) -> Any:
    """Build ``cls`` from a mapping: unknown keys and missing required keys are errors."""
    if not isinstance(value, dict):
        raise doc.error(path, f"expected a mapping, got {_got(value)}")
    fields = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("internal")}
    # Every problem of the mapping and of what it contains is collected, then raised together (in file
    # order, see errors.UserErrors), so one run shows a user all there is to fix.
    errors: list[UserError] = []
    meant: set[str] = set()  # keys a misspelt key stands for: not also reported as missing
    for key in value:
        if key not in fields:
            hint = did_you_mean(key, fields)
            meant.update(name for name in fields if hint == f" (did you mean '{name}'?)")
            errors.append(doc.error((*path, key), f"unknown key {key!r}{hint}; expected one of: {', '.join(fields)}"))
    kwargs = {}
    th = hints(cls)
    for name, f in fields.items():
        if name in value:
            try:
                kwargs[name] = convert(doc, value[name], th[name], (*path, name), dict(f.metadata))
            except UserError as exc:
                errors.append(exc)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and name not in meant:
            errors.append(doc.error(path, f"missing required key {name!r} ({_type_name(th[name])})"))
    collect(errors)
    return cls(**kwargs)


def json_schema(cls: type, title: str) -> dict:
    """JSON Schema (draft 2020-12) for ``cls`` and everything it contains."""
    defs: dict[str, dict] = {}
    root = _schema_of(cls, {}, defs)
    return (
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": title,
            **defs.pop(cls.__name__),
            "$defs": defs,
        }
        if root
        else {}
    )


def _schema_of(tp: Any, meta: dict, defs: dict) -> dict:
    return _with_meta(_type_schema(tp, meta, defs), meta)


def _type_schema(tp: Any, meta: dict, defs: dict) -> dict:
    origin = get_origin(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        _define(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        alts = [_schema_of(a, meta, defs) for a in args]
        if len(args) < len(get_args(tp)):
            alts.append({"type": "null"})
        return alts[0] if len(alts) == 1 else {"anyOf": alts}
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin in (list, tuple):
        return {"type": "array", "items": _schema_of(get_args(tp)[0], {}, defs)}
    if origin is dict:
        out: dict[str, Any] = {"type": "object", "additionalProperties": _schema_of(get_args(tp)[1], {}, defs)}
        if meta.get("key_pattern"):
            out["propertyNames"] = {"pattern": _anchored(meta["key_pattern"])}
        return out
    if tp is str and meta.get("scalar"):
        return {"type": ["string", "integer"]}
    return dict(_JSON_TYPES.get(tp, {}))


_JSON_TYPES: dict[Any, dict] = {
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
}


def _define(tp: type, defs: dict) -> None:
    """The dataclass's object schema in ``defs`` (once: a placeholder stops recursion)."""
    name = tp.__name__
    if name in defs:
        return
    defs[name] = {}
    props, required = {}, []
    for f in (f for f in dataclasses.fields(tp) if not f.metadata.get("internal")):
        props[f.name] = _schema_of(hints(tp)[f.name], dict(f.metadata), defs)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    defs[name] = {
        "type": "object",
        "description": (tp.__doc__ or "").strip().split("\n")[0],
        "properties": props,
        "additionalProperties": False,
    }
    if required:
        defs[name]["required"] = required


def _with_meta(out: dict, meta: dict) -> dict:
    """Bounds, pattern and description from the field's metadata."""
    if meta.get("min") is not None:
        out["minimum"] = meta["min"]
    if meta.get("max") is not None:
        out["maximum"] = meta["max"]
    if meta.get("pattern"):
        out["pattern"] = _anchored(meta["pattern"])
    if meta.get("doc") and "$ref" not in out:
        out["description"] = meta["doc"]
    elif meta.get("doc"):
        out = {"allOf": [out], "description": meta["doc"]}
    return out


def _anchored(pattern: str) -> str:
    """JSON Schema `pattern` is a search, the loader uses re.fullmatch: anchor it so both agree."""
    return f"^(?:{pattern})$"
