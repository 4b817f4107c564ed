"""Retry with backoff, wired to the routine ledger (SPEC §13).

:func:`pending_retry` reads the routine's last attempt from the end of the ledger (its cost is
what happened since) and asks :mod:`~specdojo_routine.core.retry_rules` whether it waits for a
retry. Only a routine whose view says ``failure`` and that has ``policy.retry`` is looked at
(the rules and the backward reader are loaded for such a routine alone: a run of routines
that wait for no retry needs neither). A ``retry_superseded``, an operator's
``attempt_resolved`` or a ``release --run none`` after the attempt means none
(:func:`~specdojo_routine.core.retry_rules.cancels`). :func:`outlook` adds what ``next`` tells
about that retry: whether it runs or gives way to the next occurrence, and whether a pause
keeps it waiting.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs

from specdojo_routine.core.model import Routine
from specdojo_routine.core.timefmt import format_s, parse_instant, try_parse_instant
from specdojo_routine.store.config import ProjectPaths

if TYPE_CHECKING:
    from specdojo_routine.core.retry_rules import LastAttempt, PendingRetry


@attrs.frozen(kw_only=True, repr=False)
class Outlook:
    """A pending retry and what ``run --due`` will do with it."""

    pending: PendingRetry
    #: ``utc`` of the routine's next occurrence (the one that would drop the retry), or None
    following: str | None
    #: the retry gives way to ``following`` (recorded ``retry_superseded``), never running
    gives_way: bool
    #: the routine is paused: the retry waits for ``resume`` (``run --due`` starts none)
    paused: bool

    @property
    def superseded_by(self) -> str | None:
        """``utc`` of the occurrence the retry gives way to, or None when the retry runs."""
        return self.following if self.gives_way else None

    @property
    def label(self) -> str:
        """What ``list`` and ``status`` say of the retry, by the rule ``next`` uses:
        ``retrying (2/3) at <time>``, or that it gives way to the next occurrence."""
        if self.superseded_by is None:
            return self.pending.label
        return (f"retry ({self.pending.number}/{self.pending.of}) gives way to the occurrence "
                f"of {self.superseded_by} (recorded as retry_superseded) and does not run")

    def starts_now(self, now: datetime) -> bool:
        """Whether ``run --due`` at ``now`` starts the retry (the rule of the run's
        :func:`retry_rules.starts_now`)."""
        from specdojo_routine.core import retry_rules

        return retry_rules.starts_now(self.pending, now, paused=self.paused,
                                      gives_way=self.gives_way)

    def to_json(self) -> dict[str, Any]:
        """``next ID --json``'s ``retry``: the agenda's retry object, when and whether it runs."""
        return {**self.pending.to_json(), "at": format_s(self.pending.due_at),
                "superseded_by": self.superseded_by}


def pending_retry(
    paths: ProjectPaths, routine: Routine, state: Mapping[str, Any] | None,
) -> PendingRetry | None:
    """The retry the routine's failed last attempt waits for, or None."""
    if routine.policy.retry is None or not routine.enabled or not state \
            or state.get("status") != "failure" or state.get("held"):
        return None  # a disabled routine starts nothing by itself, retries included
    from specdojo_routine.core import retry_rules  # see the module docstring

    return retry_rules.pending(routine.policy.retry,
                               last_attempt(paths, routine.id, state.get("attempt_id")))


def outlook(
    paths: ProjectPaths, routine: Routine, state: Mapping[str, Any] | None, now: datetime,
) -> Outlook | None:
    """The routine's pending retry as ``run --due`` will treat it from ``now``, or None.

    The occurrence it may give way to is the first one after the routine's cursor (one the
    retried attempt did not consume), even if it is due already at ``now``; a pause lets it
    wait, not run (the occurrences due meanwhile still drop it)."""
    pending = pending_retry(paths, routine, state)
    if pending is None:
        return None
    from specdojo_routine.core import pausefold, retry_rules
    from specdojo_routine.core.preview import routine_upcoming

    after = parse_instant(pending.scheduled_for)  # the cursor, when later, is honoured too
    following = routine_upcoming(routine, dict(state or {}), now=after, count=1)
    first = parse_instant(following[0].utc) if following else None
    return Outlook(pending=pending, following=following[0].utc if following else None,
                   gives_way=retry_rules.gives_way(pending, first, now),
                   paused=pausefold.is_paused(state))


def last_attempt(paths: ProjectPaths, routine_id: str, attempt_id: Any) -> LastAttempt | None:
    """The ended attempt ``attempt_id`` of ``routine_id`` when nothing that cancels a retry
    came after it; None otherwise."""
    if not isinstance(attempt_id, str):
        return None
    from specdojo_routine.core.retry_rules import LastAttempt, cancels  # see the docstring
    from specdojo_routine.store.ledger.backwards import read_backwards

    ended: dict[str, Any] | None = None
    for _, raw in read_backwards(paths.routine_ledger):
        if raw.get("routine_id") != routine_id:
            continue
        kind = raw.get("type")
        if ended is None:
            if cancels(raw):
                return None  # dropped, decided or released by an operator, or a newer attempt
            if kind == "attempt_ended":
                if raw.get("attempt_id") != attempt_id:
                    return None
                ended = raw
            continue
        if kind == "attempt_started" and raw.get("attempt_id") == attempt_id:
            completed = try_parse_instant(ended.get("completed_at"))
            if completed is None:
                return None
            return LastAttempt(
                attempt_id=attempt_id, trigger=str(raw.get("trigger")),
                scheduled_for=str(raw.get("scheduled_for")), retry_of=raw.get("retry_of"),
                number=int(raw.get("retry_attempt") or 1), result=str(ended.get("result")),
                reason=ended.get("reason"), completed_at=completed)
    return None
