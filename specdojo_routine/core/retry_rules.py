"""Retry with backoff (SPEC §13), pure: whether a routine's last attempt waits for a retry,
and when.

A failed attempt is retried when the routine has ``policy.retry``, the attempt was started by
``due``, ``release`` or ``retry`` (never an operator's ``run --id`` or a backfill), it failed
on its own (not stopped by a signal, not closed as interrupted, not resolved by an operator)
and fewer than ``attempts`` attempts of its occurrence have run; nothing recorded after it
may have cancelled the retry (:func:`cancels`). The n-th retry waits
``min(delay x backoff^(n-1), max_delay)`` from the end of the attempt it retries.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import attrs

from specdojo_routine.core.model import Retry
from specdojo_routine.core.timefmt import format_s

RETRIED_TRIGGERS = frozenset({"due", "release", "retry"})


@attrs.frozen(kw_only=True, repr=False)
class LastAttempt:
    """The routine's last ended attempt, as its ``attempt_started`` / ``attempt_ended`` say."""

    attempt_id: str
    trigger: str
    scheduled_for: str
    retry_of: str | None  # the occurrence's first attempt (None: this is the first)
    number: int  # counting the first attempt: 1 for it, 2 for its first retry
    result: str
    reason: str | None
    completed_at: datetime


@attrs.frozen(kw_only=True, repr=False)
class PendingRetry:
    failed_attempt_id: str
    first_attempt_id: str
    scheduled_for: str
    number: int  # the attempt the retry will be, counting the first
    of: int  # policy.retry.attempts
    due_at: datetime

    @property
    def label(self) -> str:
        """``retrying (2/3) at <time>``: what ``list`` and ``status`` show."""
        return f"retrying ({self.number}/{self.of}) at {format_s(self.due_at)}"

    def to_json(self) -> dict[str, Any]:
        """What ``next --json`` names a retry by: which attempt of which occurrence it is, and
        the failed attempt it repeats."""
        return {"number": self.number, "of": self.of, "scheduled_for": self.scheduled_for,
                "failed_attempt_id": self.failed_attempt_id}


def cancels(event: Mapping[str, Any]) -> bool:
    """Whether ``event``, recorded for a routine after its failed attempt ended, means that
    attempt's retry never runs: a newer attempt started, the retry was dropped
    (``retry_superseded``), an operator decided the outcome (``attempt_resolved``), or an
    operator released the hold with ``--run none``: the held work stays unrun (SPEC §9.1,
    §9.5 "skipped by an operator"), and the retry of the attempt whose failure began the
    hold is part of it (a retry policy added while the routine was held would otherwise
    run it after the release)."""
    kind = event.get("type")
    return kind in ("retry_superseded", "attempt_resolved", "attempt_started") or (
        kind == "routine_released" and event.get("run") == "none")


def gives_way(pending: PendingRetry, next_occurrence: datetime | None, now: datetime) -> bool:
    """Whether the retry is dropped for the routine's next occurrence rather than run.

    ``run --due`` starts a retry only while no occurrence is due, and drops it as soon as
    one is: so the retry runs only when its delay ends before the next occurrence becomes
    due, and never when that occurrence is due already at ``now``.
    """
    return next_occurrence is not None and next_occurrence <= max(now, pending.due_at)


def starts_now(pending: PendingRetry, now: datetime, *, paused: bool, gives_way: bool) -> bool:
    """Whether ``run --due`` at ``now`` starts the pending retry: its delay has passed, the
    routine is not paused, and it does not give way to an occurrence that is due."""
    return not paused and not gives_way and pending.due_at <= now


def wait(retry: Retry, n: int) -> timedelta:
    """How long the ``n``-th retry (n >= 1) waits after the attempt it retries."""
    seconds = min(retry.delay.seconds * retry.backoff ** (n - 1), retry.max_delay.seconds)
    return timedelta(seconds=seconds)


def retries_after(retry: Retry | None, trigger: str, number: int) -> bool:
    """Whether a failure of an attempt with ``trigger`` and ``number`` would be retried (so
    it does not begin a hold: ``on_failure: hold`` holds only after the last one, §13)."""
    return retry is not None and trigger in RETRIED_TRIGGERS and number < retry.attempts


def pending(retry: Retry | None, last: LastAttempt | None) -> PendingRetry | None:
    """The retry the routine's last attempt waits for, or None."""
    if retry is None or last is None or last.result != "failure":
        return None
    reason = last.reason or ""
    if reason.startswith("stopped by ") or reason == "interrupted":
        return None
    if not retries_after(retry, last.trigger, last.number):
        return None
    return PendingRetry(
        failed_attempt_id=last.attempt_id, first_attempt_id=last.retry_of or last.attempt_id,
        scheduled_for=last.scheduled_for, number=last.number + 1, of=retry.attempts,
        due_at=last.completed_at + wait(retry, last.number))


def superseded_reason(scheduled_for: str) -> str:
    return f"superseded by the occurrence of {scheduled_for}, which became due first"
