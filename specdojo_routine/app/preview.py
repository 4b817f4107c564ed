"""``next``: upcoming occurrences of a routine or of a cron string (SPEC §9.4); writes nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from specdojo_routine.app import handlers
from specdojo_routine.core import policy
from specdojo_routine.core.cron_syntax import cron_syntax_error
from specdojo_routine.core.errors import UsageError
from specdojo_routine.core.preview import Upcoming, cron_upcoming, routine_upcoming
from specdojo_routine.core.timefmt import to_utc
from specdojo_routine.core.zones import zone_problem
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger import views


def _now(now: datetime | None, clock: Callable[[], datetime] | None) -> datetime:
    return to_utc(now if now is not None else (clock or (lambda: datetime.now(UTC)))())


def preview_routine(
    paths: ProjectPaths, routine_id: str, *, count: int = 5, now: datetime | None = None,
    clock: Callable[[], datetime] | None = None,
) -> tuple[str, list[Upcoming]]:
    """(the routine's zone, its next ``count`` occurrences); reads the definition and view.
    A disabled routine has none until it is enabled, as ``list`` and ``status`` say."""
    zone, items, _ = preview_with_standing(paths, routine_id, count=count, now=now, clock=clock)
    return zone, items


def preview_with_standing(
    paths: ProjectPaths, routine_id: str, *, count: int = 5, now: datetime | None = None,
    clock: Callable[[], datetime] | None = None,
) -> tuple[str, list[Upcoming], str | None]:
    """:func:`preview_routine` and why its occurrences will not run, if they will not: the
    routine is disabled (then there are none), paused or held (then each is recorded as
    paused or held instead)."""
    defs = definitions.load_definitions(paths)
    routine = handlers._routines_to_consider(defs, routine_id)[0]
    state = views.load_routine_view(paths).routines.get(routine_id)
    zone = routine.timezone or "UTC"
    if not routine.enabled:
        return zone, [], f"{routine_id} is disabled: nothing runs until it is enabled"
    items = routine_upcoming(routine, dict(state) if state else None,
                             now=_now(now, clock), count=count)
    return zone, items, _standing(routine_id, state)


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
