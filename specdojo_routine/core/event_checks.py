"""Field validators of the ledger events (pure): each raises ``TypeError`` / ``ValueError``
naming the attribute, so an invalid event cannot be constructed (see :mod:`.events`)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from specdojo_routine.core.timefmt import try_parse_instant

_Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]

# Here, not in :mod:`.events`, so that the folds read them without creating the event classes
# (`list` starts faster); :mod:`.events` re-exports both.
#: The event version this program writes (older versions are upgraded on read, see ``codec``).
CURRENT_VERSION = 1
RUN_STATUSES = ("succeeded", "partial", "failed", "noop")
#: The states a Job Run ends in: only such a run's evidence may be pruned (SPEC §15).
PRUNABLE_STATES = frozenset(RUN_STATUSES)


def _fail(attribute: attrs.Attribute[Any], value: Any, expected: str) -> None:
    raise ValueError(f"{attribute.name} must be {expected} (got {value!r})")


def _text(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value:
        _fail(attribute, value, "a non-empty string")


def _int_at_least(minimum: int) -> _Validator:
    def check(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if type(value) is not int or value < minimum:
            _fail(attribute, value, f"an integer >= {minimum}")

    return check


def _matching(pattern: re.Pattern[str], what: str) -> _Validator:
    def check(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, str) or not pattern.fullmatch(value):
            _fail(attribute, value, what)

    return check


def _stamp(pattern: re.Pattern[str], what: str) -> _Validator:
    def check(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, str) or not pattern.fullmatch(value):
            _fail(attribute, value, what)
        if try_parse_instant(value) is None:
            _fail(attribute, value, "a real instant")

    return check


def _one_of(*values: str) -> _Validator:
    def check(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in values:
            _fail(attribute, value, "one of " + ", ".join(values))

    return check


def _json(value: Any) -> bool:
    """Whether ``value`` survives a JSON round trip unchanged (finite floats, 64-bit ints)."""
    if value is None or isinstance(value, str | bool):
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**64
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(_json(item) for item in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _json(v) for k, v in value.items())
    return False


def _json_object(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, Mapping) or not _json(value):
        _fail(attribute, value, "a JSON object")


def _optional(check: _Validator) -> _Validator:
    return attrs.validators.optional(check)
