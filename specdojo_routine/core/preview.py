"""Preview of upcoming occurrences (SPEC §9.4): zone and UTC, DST effects, latest start (pure).

Like ``systemd-analyze calendar``: what a schedule will do, before it does it. The DST notes
name the rule of SPEC §4 that applies to a slot: a slot in a spring-forward gap fires once at
the end of the gap; a slot in a fall-back overlap fires once, at its first instant; with the
hour field ``*`` the schedule follows real time and fires at both instants of an overlap.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import attrs

from specdojo_routine.core import policy
from specdojo_routine.core.model import Duration, Routine
from specdojo_routine.core.schedule import SlotEffect, cron_cursor, interval_anchor, slots_after
from specdojo_routine.core.timefmt import format_ms, format_s, plus, to_utc


@attrs.frozen(kw_only=True, repr=False)
class Upcoming:
    """One upcoming occurrence."""

    local: str  # ISO 8601 in the routine's zone, with its offset
    utc: str  # scheduled_for form
    note: str | None  # the DST effect, or None
    latest_start: str | None  # scheduled time + starting deadline, or None

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _note(slot: datetime, effect: SlotEffect, index: int, local: datetime) -> str | None:
    wall = slot.strftime("%H:%M")
    if effect == "gap":
        return f"{wall} does not exist on {slot:%Y-%m-%d}: fires at {local:%H:%M}"
    if effect == "overlap":
        return f"{wall} occurs twice: fires once, at the first"
    if effect == "overlap-real-time":
        which = "first" if index == 0 else "second"
        return (f"{wall} occurs twice: the hour field * follows real time, so it fires at "
                f"both; this is the {which} ({local:%Z})")
    return None


def _upcoming(at: datetime, tz: ZoneInfo, note: str | None,
              deadline: Duration | None) -> Upcoming:
    latest = None
    if deadline is not None and (end := plus(at, timedelta(seconds=deadline.seconds))):
        latest = format_s(end)
    local = at.astimezone(tz)  # milliseconds as in ``utc``, never six-digit microseconds
    return Upcoming(local=local.isoformat(timespec="milliseconds" if local.microsecond
                                          else "seconds"), utc=format_ms(at), note=note,
                    latest_start=latest)


def at_instant(at: datetime, timezone: str) -> Upcoming:
    """``at`` as an entry of a preview, in ``timezone`` and UTC: a time that is not a slot of
    the schedule (a retry's), so without a DST note or a deadline."""
    return _upcoming(to_utc(at), ZoneInfo(timezone), None, None)


def cron_upcoming(
    expr: str, timezone: str, *, after: datetime, count: int, deadline: Duration | None = None,
) -> list[Upcoming]:
    """The first ``count`` occurrences strictly after ``after``, oldest first."""
    after, tz = to_utc(after), ZoneInfo(timezone)
    found: dict[datetime, str | None] = {}
    try:
        for slot, instants, effect in slots_after(expr, timezone, after):
            # First instants never decrease with the slot: once past the count-th found
            # instant, no later slot can add an earlier one.
            if len(found) >= count and instants and min(instants) > sorted(found)[count - 1]:
                break
            for index, at in enumerate(instants):
                if at > after and at not in found:  # slots on one instant fire once
                    found[at] = _note(slot, effect, index, at.astimezone(tz))
    except OverflowError:  # beyond year 9999
        pass
    return [_upcoming(at, tz, found[at], deadline) for at in sorted(found)[:count]]


def routine_upcoming(
    routine: Routine, state: dict[str, Any] | None, *, now: datetime, count: int,
) -> list[Upcoming]:
    """A routine's next ``count`` occurrences after max(now, its cursor) (SPEC §9.5)."""
    state, now = state or {}, to_utc(now)
    deadline = routine.policy.starting_deadline
    if routine.trigger is not None:
        cursor = cron_cursor(state.get("last_scheduled_for"), state.get("last_accounted_for"))
        after = max(now, cursor) if cursor is not None else now
        return cron_upcoming(routine.trigger.cron, routine.trigger.timezone, after=after,
                             count=count, deadline=deadline)
    return _interval_upcoming(routine, state, now, count)


def _interval_upcoming(
    routine: Routine, state: dict[str, Any], now: datetime, count: int,
) -> list[Upcoming]:
    """An interval routine's next ``count`` occurrences, one interval apart from
    :func:`policy.interval_next`. The first one's latest start counts from when its interval
    elapsed (SPEC §9.2): a routine overdue since 11:00 with a 5m deadline must start by 11:05,
    whenever it is asked; one that never ran has no deadline."""
    assert routine.interval is not None
    span, deadline = timedelta(seconds=routine.interval.seconds), routine.policy.starting_deadline
    anchor = interval_anchor(state.get("last_run"), state.get("last_accounted_for"))
    utc = ZoneInfo("UTC")
    items: list[Upcoming] = []
    at = first = policy.interval_next(routine, state, now)
    while at is not None and len(items) < count:  # none beyond year 9999
        items.append(_upcoming(at, utc, None, deadline))
        at = plus(at, span)
    due = plus(anchor, span) if anchor is not None else None
    if items and due is None:  # never ran (or beyond year 9999): no deadline
        items[0] = attrs.evolve(items[0], latest_start=None)
    elif items and due is not None and first is not None and due < first <= now:  # overdue
        items[0] = attrs.evolve(items[0], latest_start=_upcoming(due, utc, None,
                                                                   deadline).latest_start)
    return items
