"""One ``__repr__`` for the package's attrs classes: the text attrs writes, without attrs
writing and compiling one for every class (pure).

attrs generates each class's ``__repr__`` as source and compiles it, ~0.13 ms a class: 6 ms of
the start-up of ``list``, which builds 45 classes (issue 16; a CLI started from cron every
minute should start like git). A class decorated with :func:`shared_repr` under its attrs
decorator defines ``__repr__`` itself, and attrs leaves a method the class defines alone::

    @attrs.frozen(kw_only=True)
    @shared_repr
    class Interval:
        text: str
        seconds: int

``Interval(text='6h', seconds=21600)``, as attrs would print it. The one difference: a value
that contains itself is not cut short with ``...`` (attrs keeps a per-thread set of the objects
being printed); none of ours can, being built bottom-up. ``tests/test_attrs_repr.py`` holds
every attrs class of the package to this decorator and to attrs' own text.
"""

from __future__ import annotations

from typing import Any, TypeVar

import attrs

__all__ = ["shared_repr"]

_C = TypeVar("_C", bound=type)


def shared_repr(cls: _C) -> _C:
    """Give ``cls`` the shared ``__repr__`` (apply it below the attrs decorator)."""
    setattr(cls, "__repr__", _repr)  # noqa: B010 - mypy refuses assigning to a method
    return cls


def _repr(self: Any) -> str:
    name = type(self).__qualname__.rsplit(">.", 1)[-1]
    shown = []
    for field in type(self).__attrs_attrs__:
        if field.repr is not False:
            value = getattr(self, field.name, attrs.NOTHING)
            text = repr(value) if field.repr is True else field.repr(value)
            shown.append(f"{field.name}={text}")
    return f"{name}({', '.join(shown)})"
