"""``next`` without an id: the agenda of every enabled routine, soonest first (SPEC §14; like
``systemctl list-timers``). Reads the definitions and the routine view; writes nothing.

A retry the routine waits for (SPEC §13) is what runs next as much as an occurrence is: the
agenda lists it at its due time, or, when the next occurrence becomes due first and drops it,
marks that occurrence instead (the retry never runs, so it is not an entry)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs

from specdojo_routine.app import listing
from specdojo_routine.core import policy
from specdojo_routine.core.model import Routine
from specdojo_routine.core.preview import Upcoming, at_instant, routine_upcoming
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions

if TYPE_CHECKING:
    from specdojo_routine.core.retry_rules import PendingRetry


@attrs.frozen(kw_only=True, repr=False)
class Entry:
    routine_id: str
    timezone: str
    upcoming: Upcoming
    #: "paused" or "held" when the occurrence will be recorded as such instead of run (for a
    #: retry: "paused" when it waits for ``resume``)
    standing: str | None = None
    #: the pending retry this entry is (then ``upcoming`` is its due time), or None
    retry: PendingRetry | None = None
    #: the pending retry this occurrence drops (recorded ``retry_superseded``), or None
    supersedes: PendingRetry | None = None

    @property
    def standing_note(self) -> str | None:
        """Why this occurrence will not run, in the words ``next`` and ``report`` show, or
        None (a retry's standing is told with the retry)."""
        if self.standing is None or self.retry is not None:
            return None
        undo = "resume" if self.standing == "paused" else "release"
        return (f"{self.standing}: recorded as {self.standing}, not run, until "
                f"`{undo} {self.routine_id}`")


@attrs.frozen(kw_only=True, repr=False)
class Agenda:
    """What ``next`` without an id shows: the entries soonest first, and what is wrong with
    the routine state (a conflict, a cron cursor in the future), as ``list`` says it."""

    now: datetime
    entries: list[Entry]
    problems: list[str]


def agenda(
    paths: ProjectPaths, *, count: int = 1, now: datetime | None = None,
    clock: Callable[[], datetime] | None = None, retries: bool = False,
) -> Agenda:
    """The next ``count`` occurrences of each enabled valid routine, soonest first; with
    ``retries``, each routine's pending retry too, as described in the module docstring
    (``count`` still counts occurrences)."""
    the_now, wall = listing.instants(now, clock)
    defs = definitions.load_definitions(paths)
    view, conflicts = listing.routine_states(paths)  # what another tool ran counts (SPEC §10)
    states = [view.get(r.id) or {} for r in defs.routines]
    entries: list[Entry] = []
    for r, state in zip(defs.routines, states, strict=True):
        if not r.enabled:
            continue
        found = [Entry(routine_id=r.id, timezone=r.timezone or "UTC", upcoming=item,
                       standing=policy.standing(state))
                 for item in routine_upcoming(r, dict(state), now=the_now, count=count)]
        if retries and r.policy.retry is not None:
            found = _with_retry(paths, r, state, the_now, found)
        entries += found
    entries.sort(key=lambda e: (e.upcoming.utc, e.routine_id))
    problems = listing.state_problems(defs.routines, states, conflicts, max(the_now, wall))
    return Agenda(now=the_now, entries=entries, problems=[p.message for p in problems])


def _with_retry(
    paths: ProjectPaths, routine: Routine, state: Mapping[str, Any], now: datetime,
    entries: list[Entry],
) -> list[Entry]:
    """The routine's entries with the retry it waits for: an entry at its due time, or the
    mark on the occurrence it gives way to."""
    from specdojo_routine.app import retry  # only for routines with policy.retry

    outlook = retry.outlook(paths, routine, state, now)
    if outlook is None:
        return entries
    if outlook.superseded_by is not None:
        return [attrs.evolve(e, supersedes=outlook.pending)
                if e.upcoming.utc == outlook.superseded_by else e for e in entries]
    zone = routine.timezone or "UTC"
    own = Entry(routine_id=routine.id, timezone=zone,
                upcoming=at_instant(outlook.pending.due_at, zone),
                standing="paused" if outlook.paused else None, retry=outlook.pending)
    return [own, *entries]
