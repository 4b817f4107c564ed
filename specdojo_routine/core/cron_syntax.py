"""Cron and interval syntax (pure): the 5-field cron check, its canonical form for croniter,
the day-of-month/day-of-week AND warning, and interval/duration parsing (SPEC §3, §4, §9.2).

Checking a cron expression does not import croniter (with dateutil, a large part of
`validate`'s start-up):
the one check croniter made here, ``expand(strict=True)`` rejecting a day-of-month that no
month given has, is :func:`_never_occurs` (tests/test_schedule_properties.py holds it to
croniter's verdict and to a reference).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import attrs

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_UNSUPPORTED = re.compile(r"[#?@]|(?<![a-z])[lwh](?![a-z])")
_TOKEN = re.compile(r"(?:(\*)|([0-9a-z]+)(?:-([0-9a-z]+))?)(?:/([0-9]+))?")
_INTERVAL = re.compile(r"([1-9][0-9]*)([mhdw])")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 604800}
_MAX_INTERVAL_SECONDS = 999_999_999 * 86400  # what a timedelta can hold
_LONGEST_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # February: leap years
_PLAIN = re.compile(r"(\*|[0-9]+)(?:-([0-9]+))?(?:/([0-9]+))?")  # a canonical token


@attrs.frozen(repr=False)
class _Field:
    label: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # names[i] is value i (+1 for months)
    name_base: int = 0


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day-of-month", 1, 31),
    _Field("month", 1, 12, _MONTHS, 1),
    _Field("day-of-week", 0, 7, _DAYS, 0),
)


class _BadCron(ValueError):
    """A cron expression violates SpecDojo's syntax; ``str()`` is the user message."""


def cron_syntax_error(expr: str) -> str | None:
    """The message for an invalid SpecDojo cron expression, or None if it is valid."""
    try:
        _canonical(expr)
    except _BadCron as exc:
        return str(exc)
    return None


def dom_dow_warning(expr: str) -> str | None:
    """A warning when day-of-month and day-of-week are both restricted (they are ANDed)."""
    if cron_syntax_error(expr) is not None:
        return None
    fields = expr.split()
    dom, dow = fields[2], fields[4]
    if dom == "*" or dow == "*":
        return None
    return (
        f'cron "{expr.strip()}" restricts both day-of-month ({dom}) and day-of-week ({dow}): '
        "SpecDojo fires only when BOTH match (AND), unlike Vixie cron, which fires when "
        'EITHER matches (OR) - e.g. "0 0 13 * 5" fires only on a Friday the 13th; '
        "set one of the two fields to * if you meant either"
    )


def parse_interval(text: str) -> int | None:
    """Seconds of ``<positive int><m|h|d|w>`` (no leading zero), or None if invalid."""
    if not isinstance(text, str):
        return None
    match = _INTERVAL.fullmatch(text.strip())
    if match is None:
        return None
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    return seconds if seconds <= _MAX_INTERVAL_SECONDS else None


_DURATION = re.compile(r"([1-9][0-9]*)([smhdw])")
_DURATION_UNITS = {"s": 1, **_UNIT_SECONDS}


def parse_duration(text: object) -> int | None:
    """Seconds of ``<positive int><s|m|h|d|w>`` (interval syntax plus ``s``), or None."""
    if not isinstance(text, str):
        return None
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        return None
    seconds = int(match.group(1)) * _DURATION_UNITS[match.group(2)]
    return seconds if seconds <= _MAX_INTERVAL_SECONDS else None


def interval_syntax_error(text: object) -> str | None:
    """The validation message for an invalid interval, or None if it is valid."""
    if isinstance(text, str) and parse_interval(text) is not None:
        return None
    shown = f'"{text}"' if isinstance(text, str) else repr(text)
    return (
        f"Invalid interval: {shown}. Use <positive integer><unit> with unit m|h|d|w "
        "(e.g. 30m, 6h, 1d, 1w)"
    )


@functools.lru_cache(maxsize=4096)
def _canonical(expr: str) -> str:
    """Check ``expr`` and rewrite it into plain tokens croniter reads unambiguously."""
    if not isinstance(expr, str):
        raise _BadCron(f"Invalid cron expression: {expr!r} (expected a string of 5 fields)")
    fields = expr.split()
    if expr.strip().startswith("@"):
        raise _BadCron(
            f'Invalid cron expression: "{expr}" (@ macros are not supported; '
            'write the 5 fields, e.g. "0 0 * * *" for @daily)'
        )
    if len(fields) != 5:
        extra = "; seconds and year fields are not supported" if len(fields) > 5 else ""
        raise _BadCron(
            f'Invalid cron expression: "{expr}" (expected 5 fields, got {len(fields)}{extra})'
        )
    pairs = zip(fields, _FIELDS, strict=True)
    canon = " ".join(_canonical_field(text, spec) for text, spec in pairs)
    if _never_occurs(canon):
        raise _BadCron(
            f'Invalid cron expression: "{expr}" (the day-of-month never occurs in the '
            "month(s) given, so it would never fire)"
        )
    return canon


def _never_occurs(canon: str) -> bool:
    """Whether every day-of-month of the canonical ``canon`` exceeds the longest month it
    names ("0 0 31 2,4 *", "0 0 30 2 *"): then croniter finds no occurrence at all. A ``*``
    inside a list is the whole field, as croniter fires it ("0 0 *,30 2 *" fires every day
    of February), although croniter's own ``expand(strict=True)`` counts it for nothing."""
    _, _, days, months, _ = canon.split()
    if "*" in days or "*" in months:  # day 1 is among the days, or January among the months
        return False
    day_values = _listed(days, _FIELDS[2])
    month_values = _listed(months, _FIELDS[3])
    if not day_values or not month_values:
        return False
    return min(day_values) > max(_LONGEST_MONTH[m - 1] for m in month_values)


def _listed(field: str, spec: _Field) -> list[int]:
    return [v for tok in field.split(",") for v in _plain_values(tok, spec)]


def _plain_values(tok: str, spec: _Field) -> range:
    """The values of one canonical token (``*``, ``*/n``, ``a``, ``a-b``, ``a-b/n``)."""
    match = _PLAIN.fullmatch(tok)
    assert match is not None, tok  # _canonical_token wrote it
    first, last, step = match.groups()
    low = spec.low if first == "*" else int(first)
    high = spec.high if first == "*" else int(last or first)
    return range(low, high + 1, int(step or 1))


def _canonical_field(text: str, spec: _Field) -> str:
    if text == "*":  # most fields of most expressions
        return text
    return ",".join(_canonical_token(tok, text, spec) for tok in text.lower().split(","))


def _canonical_token(tok: str, text: str, spec: _Field) -> str:
    def bad(reason: str) -> _BadCron:
        return _BadCron(f'Invalid cron {spec.label}: "{text}" ({reason})')

    if _UNSUPPORTED.search(tok):
        raise bad("L, W, #, ?, H and @ are not supported")
    match = _TOKEN.fullmatch(tok)
    if match is None:
        raise bad("expected *, a number, a range a-b, a step /n, or a list of those")
    star, first, last, step_text = match.groups()
    step = int(step_text) if step_text is not None else None
    if step == 0:
        raise bad("a step must be at least 1")
    if star:
        return "*" if step is None else f"*/{step}"
    low = _value(first, spec, bad)
    if last is not None:
        high = _value(last, spec, bad)
        if spec.label == "day-of-week" and high == 0 < low:  # mon-sun: sunday ends the week
            high = 7
        if low > high:
            raise bad(f'range "{tok}" starts after it ends')
    else:
        high = spec.high if step is not None else low
    return _emit_range(low, high, step or 1, spec)


def _value(text: str, spec: _Field, bad: Callable[[str], _BadCron]) -> int:
    if text.isdigit():
        value = int(text)
    elif text in spec.names:
        value = spec.names.index(text) + spec.name_base
    elif text.isalpha() and spec.names:
        raise bad(f'unknown name "{text}"; use {spec.names[0]}..{spec.names[-1]}')
    elif text.isalpha():
        raise bad("names are only allowed in the month and day-of-week fields")
    else:
        raise bad(f'"{text}" is not a number')
    if not spec.low <= value <= spec.high:
        raise bad(f"{value} is out of range {spec.low}-{spec.high}")
    return value


def _emit_range(low: int, high: int, step: int, spec: _Field) -> str:
    """Plain croniter tokens for ``low-high/step`` (weekday 7 becomes 0)."""
    if spec.label == "day-of-week" and high == 7:
        parts = [_plain_range(low, 6, step)] if low <= 6 else []
        if (7 - low) % step == 0:
            parts.append("0")
        return ",".join(parts)
    return _plain_range(low, high, step)


def _plain_range(low: int, high: int, step: int) -> str:
    # croniter reads an equal range "a-a" as the whole field, so a point is written as "a".
    if low == high:
        return str(low)
    return f"{low}-{high}" if step == 1 else f"{low}-{high}/{step}"
