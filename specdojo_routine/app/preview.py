"""``next``: upcoming occurrences of a routine or of a cron string (SPEC §9.4); writes nothing.

For a routine, ``next`` also says what comes before or instead of its occurrences: that they
are not run (disabled, paused, held), and the retry its failed attempt waits for (SPEC §13),
which runs first or gives way to the next occurrence."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import attrs

from specdojo_routine.app import listing, run_select
from specdojo_routine.core import policy
from specdojo_routine.core.cron_syntax import cron_syntax_error
from specdojo_routine.core.errors import UsageError
from specdojo_routine.core.model import Routine
from specdojo_routine.core.preview import Upcoming, cron_upcoming, routine_upcoming
from specdojo_routine.core.timefmt import format_ms, parse_instant, to_utc
from specdojo_routine.core.zones import zone_problem
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions

if TYPE_CHECKING:
    from specdojo_routine.app.retry import Outlook


@attrs.frozen(kw_only=True, repr=False)
class Preview:
    """What ``next ID`` shows: the routine's zone and occurrences, the ``note:`` lines said
    before them, and the pending retry (None: none)."""

    zone: str
    items: list[Upcoming]
    notes: list[str]
    retry: Outlook | None = None
    #: "paused" or "held" when the occurrences will be recorded as such instead of run, as
    #: the agenda's entries say (None: they run, or there are none)
    standing: str | None = None
    #: what is wrong with the routine state for this routine (a conflict, a cron cursor in
    #: the future), as ``list`` says it
    problems: list[str] = attrs.field(factory=list)


def _now(now: datetime | None, clock: Callable[[], datetime] | None) -> datetime:
    return to_utc(now if now is not None else (clock or (lambda: datetime.now(UTC)))())


def preview_routine(
    paths: ProjectPaths, routine_id: str, *, count: int = 5, now: datetime | None = None,
    clock: Callable[[], datetime] | None = None,
) -> tuple[str, list[Upcoming]]:
    """(the routine's zone, its next ``count`` occurrences); reads the definition and view.
    A disabled routine has none until it is enabled, as ``list`` and ``status`` say."""
    found = preview_with_notes(paths, routine_id, count=count, now=now, clock=clock)
    return found.zone, found.items


def preview_with_notes(
    paths: ProjectPaths, routine_id: str, *, count: int = 5, now: datetime | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Preview:
    """:func:`preview_routine`, why its occurrences will not run, if they will not (the
    routine is disabled: then there are none; paused or held: then each is recorded as paused
    or held instead), and the retry that runs before them or gives way to the first."""
    defs = definitions.load_definitions(paths)
    routine = run_select._routines_to_consider(defs, routine_id)[0]
    view, conflicts = listing.routine_states(paths)  # what another tool ran counts (SPEC §10)
    state = view.get(routine_id)
    the_now, wall = listing.instants(now, clock)
    problems = [p.message for p in listing.state_problems(
        [routine], [state or {}], conflicts, max(the_now, wall))]
    zone = routine.timezone or "UTC"
    if not routine.enabled:
        return Preview(zone=zone, items=[], problems=problems, notes=[
            f"{routine_id} is disabled: nothing runs until it is enabled"])
    items = routine_upcoming(routine, dict(state) if state else None, now=the_now, count=count)
    notes = [n for n in [_standing(routine_id, state), _first_recorded(routine, items, the_now),
                         calendar_end(items, count, the_now)] if n]
    standing = policy.standing(state)
    if routine.policy.retry is None:
        return Preview(zone=zone, items=items, notes=notes, standing=standing,
                       problems=problems)
    from specdojo_routine.app import retry  # only for routines with policy.retry

    outlook = retry.outlook(paths, routine, state, the_now)
    if outlook is not None:
        notes.append(_retry_note(routine_id, outlook, the_now))
    return Preview(zone=zone, items=items, notes=notes, retry=outlook, standing=standing,
                   problems=problems)


def _retry_note(routine_id: str, outlook: Outlook, now: datetime) -> str:
    """When the pending retry runs, in the words of ``list`` (``retrying (2/3) at <time>``),
    or why it does not."""
    head = f"{routine_id} is {outlook.pending.label}"
    if outlook.superseded_by is not None:
        when = ("is due already" if parse_instant(outlook.superseded_by) <= now
                else "becomes due first")
        return (f"{head}, but the occurrence of {outlook.superseded_by} {when}: the retry "
                "gives way to it (recorded as retry_superseded) and does not run")
    if outlook.paused:
        unless = (f", unless the occurrence of {outlook.following} becomes due first (then it "
                  "gives way to it, recorded as retry_superseded)" if outlook.following else "")
        return (f"{head}, but it is paused: the retry waits for `resume {routine_id}`, then "
                f"runs at the first `run --due`{unless}")
    return (f"{head}: the occurrence of {outlook.pending.scheduled_for} runs again at the "
            "first `run --due` from then, before these occurrences")


def _first_recorded(routine: Routine, items: list[Upcoming], now: datetime) -> str | None:
    """Why an interval routine's first entry, due already, will be recorded missed rather than
    run: its latest start has passed (SPEC §9.2); the next one then counts from the miss."""
    first = items[0] if items else None
    if routine.interval is None or first is None or first.latest_start is None:
        return None
    if parse_instant(first.latest_start) >= now:
        return None
    return (f"{routine.id} is overdue past its starting deadline (latest start "
            f"{first.latest_start}): the next `run --due` records it as missed, not run, and "
            "the next occurrence comes one interval after that run")


def calendar_end(items: list[Upcoming], count: int, after: datetime) -> str | None:
    """Why fewer than ``count`` occurrences are listed, when dates ran out: they end with year
    9999, so near it a schedule simply ends (None otherwise)."""
    last = parse_instant(items[-1].utc) if items else to_utc(after)
    if len(items) >= count or last.year < _LAST_YEARS:
        return None
    return (f"dates end with year 9999: no occurrence after {format_ms(last)} can be listed "
            f"({len(items)} of {count})")


_LAST_YEARS = 9949  # within croniter's 50-year search of the last year a date can hold


def _standing(routine_id: str, state: Mapping[str, Any] | None) -> str | None:
    """Why the occurrences of an enabled routine will be recorded instead of run, if so."""
    kind = policy.standing(state)
    if kind == "paused":
        pause = (state or {})["pause"]
        note = f": {pause['note']}" if pause.get("note") else ""
        return (f"{routine_id} is paused (by {pause.get('by')}{note}): these occurrences are "
                f"recorded as paused, not run, until `resume {routine_id}`")
    if kind == "held":
        reason = policy.held_reason((state or {}).get("hold_attempt_id"))
        return (f"{routine_id} is on hold ({reason}): these occurrences are recorded as held, "
                f"not run, until `release {routine_id}`")
    return None


def preview_cron(
    expr: str, timezone: str, *, count: int = 5, now: datetime | None = None,
    clock: Callable[[], datetime] | None = None,
) -> list[Upcoming]:
    """The next ``count`` occurrences of a cron string not yet in a file."""
    problem = cron_syntax_error(expr)
    if problem is not None:
        raise UsageError(problem)
    problem = zone_problem(timezone)
    if problem is not None:
        raise UsageError(f"invalid --timezone {timezone!r} ({problem})")
    return cron_upcoming(expr, timezone, after=_now(now, clock), count=count)
