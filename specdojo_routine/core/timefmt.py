"""Timestamp formats of the ledgers and views (pure).

``scheduled_for`` style stamps carry milliseconds (``2026-08-07T08:00:00.000Z``); ``last_run``
style stamps do not (``2026-08-07T08:02:00Z``). Input accepts both, and offsets.
"""

from __future__ import annotations

from datetime import UTC, datetime


def to_utc(value: datetime) -> datetime:
    """Return ``value`` as an aware UTC datetime (naive values are taken as UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def format_ms(value: datetime) -> str:
    """UTC ISO with milliseconds and ``Z``."""
    v = to_utc(value)
    return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z"


def format_s(value: datetime) -> str:
    """UTC ISO without fractions and with ``Z``."""
    return to_utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_instant(text: str) -> datetime:
    """Parse an ISO instant (``Z``, offsets, with or without fractions) into aware UTC.

    Raises ``ValueError`` for anything else; a naive value is taken as UTC.
    """
    if not isinstance(text, str) or not text:
        raise ValueError(f"not a timestamp: {text!r}")
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    return to_utc(datetime.fromisoformat(raw))


def try_parse_instant(text: object) -> datetime | None:
    """Like :func:`parse_instant` but ``None`` for anything unparsable."""
    if not isinstance(text, str):
        return None
    try:
        return parse_instant(text)
    except ValueError:
        return None
