"""ncclgen.record.dataclass keeps the standard decorator's contract that ncclgen relies on, without its
generated methods (see the module's docstring): each case is compared with dataclasses.dataclass."""

from __future__ import annotations

import dataclasses

import pytest

from ncclgen import record


def _pair(**options):
    """The same class under the standard decorator and under ncclgen's."""

    def make(deco):
        @deco(**options)
        class Point:
            x: int
            y: int = 2
            tags: list = dataclasses.field(default_factory=list)
            note: str = dataclasses.field(default="", compare=False, repr=False)

        return Point

    return make(dataclasses.dataclass), make(record.dataclass)


@pytest.mark.parametrize("options", [{"frozen": True}, {"frozen": True, "kw_only": True}, {}])
def test_same_behaviour_as_the_standard_decorator(options):
    std, ours = _pair(**options)
    kw = options.get("kw_only", False)
    a = ours(x=1) if kw else ours(1)
    s = std(x=1) if kw else std(1)
    assert (a.x, a.y, a.tags, a.note) == (s.x, s.y, s.tags, s.note) == (1, 2, [], "")
    assert repr(a).split("(", 1)[1] == repr(s).split("(", 1)[1] == "x=1, y=2, tags=[])"
    assert a == (ours(x=1, note="other") if kw else ours(1, note="other"))  # note: compare=False
    assert a != (ours(x=1, y=3) if kw else ours(1, 3))
    assert a != s  # another class, as with the standard decorator
    assert [f.name for f in dataclasses.fields(ours)] == ["x", "y", "tags", "note"]
    assert dataclasses.replace(a, y=5).y == 5 and a.y == 2
    assert dataclasses.asdict(a) == dataclasses.asdict(s)
    assert (ours(x=1) if kw else ours(1)).tags is not a.tags  # a fresh default each time


def test_frozen_refuses_assignment_and_hashes_by_compared_fields():
    _, ours = _pair(frozen=True)
    a = ours(1, tags=())
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.x = 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        del a.x
    assert hash(a) == hash(ours(1, tags=(), note="other"))
    assert len({a, ours(1, tags=()), ours(2, tags=())}) == 2


def test_not_frozen_assigns_and_is_unhashable():
    _, ours = _pair()
    a = ours(1)
    a.x = 7
    assert a.x == 7
    with pytest.raises(TypeError):
        hash(a)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "missing required argument: 'x'"),
        ((1, 2, [], "", 5), {}, "takes 4 positional arguments"),
        ((1,), {"x": 2}, "multiple values for argument 'x'"),
        ((1,), {"z": 2}, "unexpected keyword argument 'z'"),
    ],
)
def test_wrong_arguments_are_type_errors(args, kwargs, message):
    _, ours = _pair(frozen=True)
    with pytest.raises(TypeError, match=message):
        ours(*args, **kwargs)


def test_kw_only_refuses_positional_arguments():
    _, ours = _pair(frozen=True, kw_only=True)
    with pytest.raises(TypeError, match="takes 0 positional arguments"):
        ours(1)


def test_post_init_runs_and_own_methods_are_kept():
    @record.dataclass(frozen=True)
    class Span:
        lo: int
        hi: int

        def __post_init__(self):
            if self.lo > self.hi:
                object.__setattr__(self, "lo", self.hi)

        def __repr__(self):
            return f"{self.lo}-{self.hi}"

    assert repr(Span(5, 3)) == "3-3"


def test_a_field_without_a_parameter_gets_its_default():
    @record.dataclass(frozen=True)
    class Counted:
        name: str
        seen: int = dataclasses.field(default=0, init=False)

    c = Counted("a")
    assert c.seen == 0 and c == Counted("a")
    with pytest.raises(TypeError, match="unexpected keyword argument 'seen'"):
        Counted("a", seen=1)  # type: ignore[call-arg]


def test_subclasses_follow_the_standard_rules():
    """A standard frozen dataclass may extend a frozen record, and a record may extend a record."""
    _, ours = _pair(frozen=True)

    @dataclasses.dataclass(frozen=True)
    class Std(ours):
        z: int = 0

    @record.dataclass(frozen=True)
    class Ours(ours):
        z: int = 0

    for cls in (Std, Ours):
        c = cls(1, z=3)
        assert (c.x, c.z) == (1, 3) and c == cls(1, z=3)
        with pytest.raises(dataclasses.FrozenInstanceError):
            c.z = 4
    assert dataclasses.fields(ours)[0].name == "x" and ours.__dataclass_params__.frozen
