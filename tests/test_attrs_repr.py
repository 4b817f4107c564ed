"""The shared ``__repr__`` (core/attrs_repr.py): every attrs class of the package has it, so
attrs compiles none at start-up, and it prints what attrs' own would print."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import attrs
import pytest

import specdojo_routine
from specdojo_routine.core import attrs_repr
from specdojo_routine.core.attrs_repr import shared_repr


def _attrs_classes() -> list[type]:
    """Every attrs class defined in a module of the package."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(specdojo_routine.__path__, "specdojo_routine."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in list(vars(module).values()):  # type(): a lazy module stays unloaded
            if issubclass(type(value), type) and attrs.has(value) and (
                    value.__module__ == info.name):
                found[f"{info.name}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


CLASSES = _attrs_classes()
VALUES: list[Any] = [None, "rtn-a", 7, ["x", {"k": (1, 2.5)}], True]


def _instance(cls: type, values: dict[str, Any]) -> Any:
    """An instance of ``cls`` holding ``values`` (built around its __init__ and validators:
    the text depends on the values only)."""
    instance = cls.__new__(cls)
    for name, value in values.items():
        object.__setattr__(instance, name, value)
    return instance


def test_every_attrs_class_of_the_package_uses_the_shared_repr() -> None:
    """A class without it would have attrs compile a __repr__ at import (~0.13 ms)."""
    assert len(CLASSES) >= 100
    assert [] == [c.__qualname__ for c in CLASSES if c.__repr__ is not attrs_repr._repr]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_the_text_is_attrs_own(cls: type) -> None:
    """The same values in a twin class whose __repr__ attrs wrote print the same text."""
    fields = attrs.fields(cls)
    twin = attrs.make_class(cls.__name__, {f.name: attrs.field(repr=f.repr) for f in fields},
                            slots=True, init=False)
    values = {f.name: VALUES[n % len(VALUES)] for n, f in enumerate(fields)}
    assert repr(_instance(twin, values)) == repr(_instance(cls, values))


def test_hidden_fields_custom_reprs_and_missing_values_are_attrs_own() -> None:
    @attrs.define(slots=True)
    @shared_repr
    class Mixed:
        shown: int
        hidden: str = attrs.field(repr=False)
        custom: str = attrs.field(repr=lambda value: f"<{len(value)} characters>")
        late: int = attrs.field(init=False)

    @attrs.define(slots=True)
    class Theirs:
        shown: int
        hidden: str = attrs.field(repr=False)
        custom: str = attrs.field(repr=lambda value: f"<{len(value)} characters>")
        late: int = attrs.field(init=False)

    assert "Mixed(shown=1, custom=<6 characters>, late=NOTHING)" == repr(Mixed(1, "h", "secret"))
    assert repr(Theirs(1, "h", "secret")).replace("Theirs", "Mixed") == repr(
        Mixed(1, "h", "secret"))
