"""``next`` without an id: the agenda of every enabled routine, soonest first (SPEC §14; like
``systemctl list-timers``). Reads the definitions and the routine view; writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import attrs

from specdojo_routine.core import policy
from specdojo_routine.core.preview import Upcoming, routine_upcoming
from specdojo_routine.core.timefmt import to_utc
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger import adopt


@attrs.frozen(kw_only=True)
class Entry:
    routine_id: str
    timezone: str
    upcoming: Upcoming
    #: "paused" or "held" when the occurrence will be recorded as such instead of run
    standing: str | None = None


def agenda(
    paths: ProjectPaths, *, count: int = 1, now: datetime | None = None,
    clock: Callable[[], datetime] | None = None,
) -> tuple[datetime, list[Entry]]:
    """(now, the next ``count`` occurrences of each enabled valid routine, soonest first)."""
    the_now = to_utc(now if now is not None else (clock or (lambda: datetime.now(UTC)))())
    defs = definitions.load_definitions(paths)
    view = adopt.plan_routine_imports(paths).view  # what another tool ran counts (SPEC §10)
    entries = [
        Entry(routine_id=r.id, timezone=r.timezone or "UTC", upcoming=item,
              standing=policy.standing(view.get(r.id)))
        for r in defs.routines if r.enabled
        for item in routine_upcoming(r, dict(view.get(r.id)), now=the_now, count=count)
    ]
    entries.sort(key=lambda e: (e.upcoming.utc, e.routine_id))
    return the_now, entries
