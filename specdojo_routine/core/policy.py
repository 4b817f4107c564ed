"""Operational policies (SPEC §9): hold after failure and the starting deadline (pure).

For each occurrence that :func:`schedule.due_occurrences` selects, :func:`classify` decides
whether it starts, is paused (an operator paused the routine, §13), is held (the routine is on
hold) or is missed (it would start after its starting deadline). Pause comes before hold, hold
before the deadline (§9.5); operator actions (``run --id``,
``release --run``, backfill) always start. Every decision is O(1): nothing here enumerates
occurrences, so a 300-day gap costs what :func:`schedule.due_occurrences` costs.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import attrs

from specdojo_routine.core import pausefold, schedule
from specdojo_routine.core.errors import TooManyMissedOccurrences
from specdojo_routine.core.model import OnFailure, Routine
from specdojo_routine.core.schedule import Occurrence
from specdojo_routine.core.timefmt import format_ms, plus, to_utc, try_parse_instant

if TYPE_CHECKING:  # imported by record(): `list` asks is_held() without an event class
    from specdojo_routine.core import routine_events

Verdict = Literal["run", "hold", "miss", "pause"]


@attrs.frozen(kw_only=True)
class Decision:
    """What happens to one selected occurrence."""

    verdict: Verdict
    occurrence: Occurrence
    reason: str | None = None
    late_by_s: int | None = None  # misses only
    deadline_s: int | None = None  # misses only

    def to_json(self) -> dict[str, Any]:
        """The ``held`` / ``missed`` entry of ``run --json`` (SPEC §9.5)."""
        return {"routine_id": self.occurrence.routine_id,
                "scheduled_for": format_ms(self.occurrence.scheduled_for),
                "reason": self.reason}


def held_reason(attempt_id: str | None) -> str:
    """``held after failure of <attempt_id>`` (SPEC §9.1)."""
    return f"held after failure of {attempt_id or 'an earlier attempt'}"


def span_text(seconds: int) -> str:
    """``3h 2m``: days, hours, minutes, seconds with the zero parts left out (SPEC §9.5)."""
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return " ".join(parts) or "0s"


def miss_reason(late_by_s: int, deadline_text: str) -> str:
    return f"started {span_text(late_by_s)} late (deadline {deadline_text})"


def is_held(state: Mapping[str, Any] | None) -> bool:
    return bool((state or {}).get("held"))


def standing(state: Mapping[str, Any] | None) -> Literal["paused", "held"] | None:
    """Whether an enabled routine's coming occurrences are recorded instead of run: paused by
    an operator (SPEC §13), or held after a failure (§9.1); None when they run."""
    if pausefold.is_paused(state):
        return "paused"
    return "held" if is_held(state) else None


def classify(
    routine: Routine, state: Mapping[str, Any] | None, occurrence: Occurrence, now: datetime,
) -> Decision:
    """Start, hold or miss ``occurrence`` at ``now``, given the routine's folded ``state``.
    An interval routine's occurrence is scheduled for the run's now (SPEC §4), and its
    lateness is measured at that same now (§9.5), so that a run given ``--now`` records the
    same occurrence however long the attempts before it took; a cron occurrence's lateness
    is measured at ``now``, the instant it is about to start (§9.2)."""
    if occurrence.trigger != "due":
        return Decision(verdict="run", occurrence=occurrence)
    if routine.interval is not None:
        now = occurrence.scheduled_for
    became_due = occurrence.scheduled_for if routine.trigger is not None else occurrence.due_at
    paused = pausefold.pause_reason(state, became_due)
    if paused is not None:  # an operator's pause comes before the hold (SPEC §13)
        return Decision(verdict="pause", occurrence=occurrence, reason=paused)
    if is_held(state):
        reason = held_reason((state or {}).get("hold_attempt_id"))
        return Decision(verdict="hold", occurrence=occurrence, reason=reason)
    deadline = routine.policy.starting_deadline
    if deadline is None:
        return Decision(verdict="run", occurrence=occurrence)
    if became_due is None:  # an interval routine that never ran has no deadline
        return Decision(verdict="run", occurrence=occurrence)
    # in whole seconds, as recorded: exactly at the deadline is on time, also a fraction of
    # a second after it that the attempts before it took (the run's instant, SPEC §9.2)
    late_by = int((to_utc(now) - became_due).total_seconds())
    if late_by <= deadline.seconds:
        return Decision(verdict="run", occurrence=occurrence)
    return Decision(verdict="miss", occurrence=occurrence, late_by_s=late_by,
                    deadline_s=deadline.seconds, reason=miss_reason(late_by, deadline.text))


def due_occurrences(
    routine: Routine, state: Mapping[str, Any] | None, now: datetime, *, explicit: bool = False,
) -> list[Occurrence]:
    """The occurrences ``run`` considers at ``now``, oldest first (SPEC §4, §13): those of
    :func:`schedule.due_occurrences`, where a pause's span is accounted for as such - what
    ``latest`` coalesced across the end of a pause is cut there (only the later part runs), and
    under ``missed_run: all`` a paused span too long to enumerate is one occurrence
    (:func:`schedule.paused_span_due`; the span begins when the pause began). Raises
    :class:`TooManyMissedOccurrences` when the occurrences outside the paused span (before
    it began or after it ended) exceed the cap."""
    entry = state or {}
    cursors = {"last_scheduled_for": entry.get("last_scheduled_for"),
               "last_accounted_for": entry.get("last_accounted_for")}
    try:
        found = schedule.due_occurrences(routine, last_run=entry.get("last_run"), now=now,
                                         explicit=explicit, **cursors)
    except TooManyMissedOccurrences:
        span = _pause_span(entry, now)
        if span is None:
            raise
        found = schedule.paused_span_due(routine, now=now, since=span[0], until=span[1],
                                         **cursors)
    resumed = try_parse_instant((entry.get("pause") or {}).get("resumed_at"))
    if resumed is None or explicit:
        return found
    return [part for occ in found for part in schedule.split_at(routine, occ, resumed)]


def _pause_span(
    entry: Mapping[str, Any], now: datetime,
) -> tuple[datetime, datetime] | None:
    """The span the routine's last pause accounts occurrences for: from when it began to
    ``now`` while paused, or to its ``resumed_at`` after a resume; None without a pause (or
    with one whose times cannot be read)."""
    pause = entry.get("pause")
    if not isinstance(pause, dict):
        return None
    since = try_parse_instant(pause.get("at"))
    until = now if pause.get("resumed_at") is None else try_parse_instant(pause["resumed_at"])
    return None if since is None or until is None else (since, until)


def starts_now(routine: Routine, state: Mapping[str, Any] | None, now: datetime) -> bool:
    """Whether ``run --due`` at ``now`` would start one of the routine's due occurrences,
    rather than only account for them as paused, held or missed: the decision the run takes
    (:func:`due_occurrences`, :func:`classify`), which ``list``'s DUE shows. Raises
    :class:`TooManyMissedOccurrences` as :func:`due_occurrences` does."""
    return any(classify(routine, state, occ, now).verdict == "run"
               for occ in due_occurrences(routine, state, now))


def interval_next(
    routine: Routine, state: Mapping[str, Any] | None, now: datetime,
) -> datetime | None:
    """When an interval routine's next occurrence comes (SPEC §9.5): ``now`` if it never ran,
    else the later of ``now`` and its anchor plus the interval - except that one due by a
    resume is only recorded as paused by the next ``run --due`` (§13), which anchors the
    interval there, so the next one comes an interval after ``now``. None after year 9999."""
    assert routine.interval is not None
    entry, span = state or {}, timedelta(seconds=routine.interval.seconds)
    anchor = schedule.interval_anchor(entry.get("last_run"), entry.get("last_accounted_for"))
    due = plus(anchor, span) if anchor is not None else now
    if due is None or due > now:
        return due
    resumed = (entry.get("pause") or {}).get("resumed_at") is not None
    return plus(now, span) if resumed and pausefold.pause_reason(entry, due) else now


def record(
    routine: Routine, decision: Decision,
) -> (routine_events.OccurrenceHeld | routine_events.OccurrenceMissed
      | routine_events.OccurrencePaused):
    """The event that accounts for a held, missed or paused occurrence."""
    from specdojo_routine.core import routine_events

    occ = decision.occurrence
    common: dict[str, Any] = {
        "routine_id": routine.id, "scheduled_for": format_ms(occ.scheduled_for),
        "reason": decision.reason,
        "passed_over_since": (format_ms(occ.passed_over_since)
                              if occ.passed_over_since is not None else None),
        "schedule": "cron" if routine.trigger is not None else "interval",
    }
    if decision.verdict == "hold":
        return routine_events.OccurrenceHeld(**common)
    if decision.verdict == "pause":
        return routine_events.OccurrencePaused(**common)
    if decision.verdict == "miss":
        assert decision.late_by_s is not None and decision.deadline_s is not None
        return routine_events.OccurrenceMissed(**common, late_by_s=decision.late_by_s,
                                       deadline_s=decision.deadline_s)
    raise ValueError("an occurrence that starts is recorded by attempt_started")


def on_failure_marker(routine: Routine) -> Literal["hold"] | None:
    """``attempt_started.on_failure``: ``"hold"`` under ``policy.on_failure: hold``."""
    return "hold" if routine.policy.on_failure is OnFailure.HOLD else None
