"""`dataclass` for ncclgen's records: the standard decorator, with its generated methods replaced by shared ones.

Why: every `ncclgen slurm` is a process start, and Python 3.11's dataclasses compile each class's
`__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__` and `__delattr__` with a separate `exec`
(dataclasses.py, `_create_fn`): for ncclgen's ~80 records that was about 30 ms of every run, a fifth of
it (benchmarks/README.md, issue 34). Here the standard decorator still collects the fields
(`dataclasses.fields`, `replace`, `asdict` and `is_dataclass` work as before) but generates no method;
the methods below read the fields at call time instead. They keep the standard semantics ncclgen relies on:
keyword-only and positional parameters, defaults and default factories, `__post_init__`, `compare`,
`hash` and `repr` per field, equality only between instances of the same class, frozen instances that
refuse assignment with `dataclasses.FrozenInstanceError`, and hashing of frozen ones by their compared fields.
Type checkers see the standard decorator (the TYPE_CHECKING import), so they check the same contract.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:

    def dataclass(cls=None, /, *, frozen=False, kw_only=False):
        """The standard decorator's fields with the shared methods below (see the module's docstring)."""

        def wrap(c):
            if any(dataclasses.is_dataclass(b) for b in c.__mro__[1:]):  # the standard rules for inheritance
                return dataclasses.dataclass(c, frozen=frozen, kw_only=kw_only)
            c = dataclasses.dataclass(c, init=False, repr=False, eq=False, kw_only=kw_only)
            _install(c, frozen)
            params = c.__dataclass_params__  # what the class now has, for introspection and for subclasses
            params.init = params.repr = params.eq = True
            params.frozen = frozen
            return c

        return wrap if cls is None else wrap(cls)


class _Spec(NamedTuple):
    """A record class's fields, sorted once by what each method needs."""

    positional: tuple[dataclasses.Field[Any], ...]  # init parameters that may come by position
    keyword: dict[str, dataclasses.Field[Any]]  # keyword-only init parameters
    unset: tuple[dataclasses.Field[Any], ...]  # fields with no parameter (init=False): set from their default
    compared: tuple[str, ...]  # __eq__
    shown: tuple[str, ...]  # __repr__
    hashed: tuple[str, ...]  # __hash__ (compared ones unless a field says otherwise)


_SPECS: dict[type, _Spec] = {}


def _spec(cls: type) -> _Spec:
    spec = _SPECS.get(cls)
    if spec is None:
        fields = [f for f in cls.__dataclass_fields__.values() if f._field_type is dataclasses._FIELD]  # type: ignore[attr-defined]
        spec = _Spec(
            positional=tuple(f for f in fields if f.init and not f.kw_only),
            keyword={f.name: f for f in fields if f.init and f.kw_only},
            unset=tuple(f for f in fields if not f.init),
            compared=tuple(f.name for f in fields if f.compare),
            shown=tuple(f.name for f in fields if f.repr),
            hashed=tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)),
        )
        _SPECS[cls] = spec
    return spec


def _default(cls: type, f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    raise TypeError(f"{cls.__qualname__}.__init__() missing required argument: {f.name!r}")


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    spec = _spec(cls)
    positional, keyword, unset = spec.positional, spec.keyword, spec.unset
    if len(args) > len(positional):
        raise TypeError(f"{cls.__qualname__}.__init__() takes {len(positional)} positional arguments, got {len(args)}")
    for f, value in zip(positional, args):
        if f.name in kwargs:
            raise TypeError(f"{cls.__qualname__}.__init__() got multiple values for argument {f.name!r}")
        object.__setattr__(self, f.name, value)
    for f in positional[len(args) :]:
        object.__setattr__(self, f.name, kwargs.pop(f.name) if f.name in kwargs else _default(cls, f))
    for name in kwargs:
        if name not in keyword:
            raise TypeError(f"{cls.__qualname__}.__init__() got an unexpected keyword argument {name!r}")
    for name, f in keyword.items():
        object.__setattr__(self, name, kwargs[name] if name in kwargs else _default(cls, f))
    for f in unset:
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            object.__setattr__(self, f.name, _default(cls, f))
    post = getattr(self, "__post_init__", None)
    if post is not None:
        post()


def _repr(self: Any) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in _spec(type(self)).shown)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = _spec(type(self)).compared
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in _spec(type(self)).hashed))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _install(cls: type, frozen: bool) -> None:
    """The shared methods on ``cls``, except those its own body defines (as the standard decorator does)."""
    own = cls.__dict__
    methods: dict[str, Any] = {"__init__": _init, "__repr__": _repr, "__eq__": _eq}
    if frozen:
        methods.update(__setattr__=_frozen_setattr, __delattr__=_frozen_delattr, __hash__=_hash)
    else:
        methods["__hash__"] = None  # the standard decorator's eq=True, frozen=False: unhashable
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    for name, fn in methods.items():
        if (name not in own) if name != "__hash__" else not explicit_hash:
            setattr(cls, name, fn)
