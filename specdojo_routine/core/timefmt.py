"""Timestamp formats of the ledgers and views (pure).

``scheduled_for`` style stamps carry milliseconds (``2026-08-07T08:00:00.000Z``); ``last_run``
style stamps do not (``2026-08-07T08:02:00Z``). Input accepts both, and offsets.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def to_utc(value: datetime) -> datetime:
    """Return ``value`` as an aware UTC datetime (naive values are taken as UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def format_ms(value: datetime) -> str:
    """UTC ISO with milliseconds and ``Z``."""
    v = to_utc(value)
    return f"{_date_time(v)}.{v.microsecond // 1000:03d}Z"


def format_s(value: datetime) -> str:
    """UTC ISO without fractions and with ``Z``."""
    return f"{_date_time(to_utc(value))}Z"


def _date_time(v: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS`` with a 4-digit year for every year 1-9999 (``strftime("%Y")``
    does not pad years before 1000 on every platform)."""
    return (f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:"
            f"{v.second:02d}")


def plus(at: datetime, span: timedelta) -> datetime | None:
    """``at + span``, or None beyond year 9999: an interval or a deadline may be written as
    long as a timedelta holds, and then ends after the last instant a date can hold."""
    try:
        return at + span
    except OverflowError:
        return None


def parse_instant(text: str) -> datetime:
    """Parse an ISO instant (``Z``, offsets, with or without fractions) into aware UTC.

    Raises ``ValueError`` for anything else; a naive value is taken as UTC.
    """
    if not isinstance(text, str) or not text:
        raise ValueError(f"not a timestamp: {text!r}")
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        return to_utc(datetime.fromisoformat(raw))
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00 is before year 1 in UTC
        raise ValueError(f"timestamp out of range (years 1-9999 in UTC): {text!r}") from None


def try_parse_instant(text: object) -> datetime | None:
    """Like :func:`parse_instant` but ``None`` for anything unparsable."""
    if not isinstance(text, str):
        return None
    try:
        return parse_instant(text)
    except ValueError:
        return None


def relative(stamp: str | None, now: datetime) -> str:
    """``3h ago`` / ``in 2d`` / ``-`` for a timestamp relative to ``now``."""
    when = try_parse_instant(stamp)
    if when is None:
        return "-"
    seconds = int((when - now).total_seconds())
    span = abs(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if span >= size:
            text = f"{span // size}{unit}"
            break
    else:
        return "now" if span < 1 else (f"{span}s ago" if seconds < 0 else f"in {span}s")
    return f"{text} ago" if seconds < 0 else f"in {text}"
