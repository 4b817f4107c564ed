"""Retry with backoff, wired to the routine ledger (SPEC §13).

:func:`pending_retry` reads the routine's last attempt from the end of the ledger (its cost is
what happened since) and asks :mod:`~specdojo_routine.core.retry_rules` whether it waits for a
retry. Only a routine whose view says ``failure`` and that has ``policy.retry`` is looked at
(the rules and the backward reader are loaded for such a routine alone: a run of routines
that wait for no retry needs neither). A ``retry_superseded`` or an operator's
``attempt_resolved`` after the attempt means none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from specdojo_routine.core.model import Routine
from specdojo_routine.core.timefmt import try_parse_instant
from specdojo_routine.store.config import ProjectPaths

if TYPE_CHECKING:
    from specdojo_routine.core.retry_rules import LastAttempt, PendingRetry


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


def last_attempt(paths: ProjectPaths, routine_id: str, attempt_id: Any) -> LastAttempt | None:
    """The ended attempt ``attempt_id`` of ``routine_id`` when nothing that cancels a retry
    came after it; None otherwise."""
    if not isinstance(attempt_id, str):
        return None
    from specdojo_routine.core.retry_rules import LastAttempt  # see the module docstring
    from specdojo_routine.store.ledger.backwards import read_backwards

    ended: dict[str, Any] | None = None
    for _, raw in read_backwards(paths.routine_ledger):
        if raw.get("routine_id") != routine_id:
            continue
        kind = raw.get("type")
        if ended is None:
            if kind in ("retry_superseded", "attempt_resolved", "attempt_started"):
                return None  # dropped, decided by an operator, or a newer attempt
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
