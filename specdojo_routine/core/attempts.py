"""Attempts, not events: one record per routine attempt, gathered from ledger events (pure).

``history --attempts`` and ``status`` show what an operator asks about - when an occurrence
was scheduled, when it started and ended, how it ended and why - instead of the five to seven
events each attempt leaves. :class:`Gatherer` takes the events newest first (as they are read
from the end of the ledger) and hands out each attempt once its ``attempt_started`` is seen,
so a reader can stop as soon as it has the attempts it wants. A line the upstream CLI appended
is one attempt by itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import attrs

from specdojo_routine.core.timefmt import try_parse_instant

Raw = Mapping[str, Any]


@attrs.frozen(kw_only=True, repr=False)
class ActionRecord:
    """One action of an attempt as its ``action_ended`` recorded it."""

    index: int
    kind: str
    result: str | None = None  # None: started, never ended
    reason: str | None = None
    job_run_id: str | None = None
    exit_code: int | None = None
    evidence_ref: str | None = None

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen(kw_only=True, repr=False)
class Attempt:
    """One attempt of a routine; ``result`` None while it is open."""

    routine_id: str
    attempt_id: str | None  # None: a run record the upstream CLI wrote
    trigger: str | None
    scheduled_for: str | None
    started_at: str | None
    completed_at: str | None = None
    result: str | None = None
    reason: str | None = None
    job_run_ids: tuple[str, ...] = ()
    actions: tuple[ActionRecord, ...] = ()
    resolved_by: str | None = None  # an operator recorded the outcome (``resolve``)
    #: open, and its runner is gone (SPEC §6.5): only the caller that can look at the runner's
    #: process and the routine lock knows, so it sets this
    #: (:meth:`specdojo_routine.app.recent.RunnerCheck.mark`)
    interrupted: bool = False

    @property
    def state(self) -> str:
        """The result, or for an attempt still open ``running`` / ``interrupted``: the word
        ``list``, ``status`` and ``logs`` use for it."""
        return self.result or ("interrupted" if self.interrupted else "running")

    def action_state(self, action: ActionRecord) -> str:
        """The word for one of its actions: the action's result; for one it never ended,
        the attempt's as recorded (an operator's ``resolve``) or, while it is open, what
        :attr:`state` says (``interrupted`` or ``running``): the word ``logs`` and
        ``report`` use, so they agree with ``history`` and ``job show``."""
        return action.result or self.state

    @property
    def duration_s(self) -> int | None:
        """Whole seconds from start to end (None while open or unknown)."""
        return _span(self.started_at, self.completed_at)

    @property
    def why(self) -> str:
        """The reason as the answers show it: an operator's outcome names who recorded it
        first (``resolved by carol: re-sent by hand``, as a Job Run's does), so a cut row
        keeps the who."""
        if self.resolved_by:
            return f"resolved by {self.resolved_by}" + (f": {self.reason}" if self.reason else "")
        return self.reason or ""

    @property
    def late_by_s(self) -> int | None:
        """Whole seconds from the scheduled time to the start (never negative)."""
        late = _span(self.scheduled_for, self.started_at)
        return None if late is None else max(0, late)

    def to_json(self) -> dict[str, Any]:
        """The attempt as one JSON object (times in their stored forms)."""
        return {"routine_id": self.routine_id, "attempt_id": self.attempt_id,
                "trigger": self.trigger, "scheduled_for": self.scheduled_for,
                "started_at": self.started_at, "completed_at": self.completed_at,
                "duration_s": self.duration_s, "late_by_s": self.late_by_s,
                "result": self.result, "interrupted": self.interrupted, "reason": self.reason,
                "job_run_ids": list(self.job_run_ids), "resolved_by": self.resolved_by,
                "actions": [a.to_json() for a in self.actions]}

    def failed_action(self) -> ActionRecord | None:
        """The first action that failed (else the first skipped), as the reason names it."""
        for wanted in ("failure", "skipped"):
            for action in self.actions:
                if action.result == wanted:
                    return action
        return None


def _span(start: str | None, end: str | None) -> int | None:
    a, b = try_parse_instant(start), try_parse_instant(end)
    return None if a is None or b is None else int((b - a).total_seconds())


class Gatherer:
    """Collects attempts from routine-ledger events given newest first."""

    def __init__(self) -> None:
        self._ends: dict[str, dict[str, Any]] = {}  # attempt id -> what came after its start

    def feed(self, event: Raw) -> Attempt | None:
        """Take the next (older) event; the attempt it completes, if any."""
        kind = event.get("type")
        attempt_id = event.get("attempt_id")
        if kind == "upstream_run_recorded":
            return _upstream(event)
        if not isinstance(attempt_id, str):
            return None
        seen = self._ends.setdefault(attempt_id, {"actions": {}})
        if kind == "attempt_resolved":
            seen.setdefault("resolved", event)  # the newest resolution is the outcome
        elif kind == "attempt_ended":
            seen.setdefault("ended", event)
        elif kind in ("action_ended", "action_started"):  # the end, when there is one
            seen["actions"].setdefault(event.get("index"), event)
        elif kind == "attempt_started":
            return _attempt(event, self._ends.pop(attempt_id))
        return None


def _attempt(started: Raw, seen: dict[str, Any]) -> Attempt:
    ended, resolved = seen.get("ended"), seen.get("resolved")
    actions = tuple(_action(a) for _, a in sorted(seen["actions"].items(),
                                                 key=lambda item: int(item[0] or 0)))
    outcome = resolved or ended or {}
    reason = resolved.get("note") if resolved else (ended or {}).get("reason")
    completed = (ended or {}).get("completed_at")
    if completed is None and resolved is not None:
        completed = _stamp_s(resolved.get("at"))
    return Attempt(
        routine_id=str(started.get("routine_id")), attempt_id=started.get("attempt_id"),
        trigger=started.get("trigger"), scheduled_for=started.get("scheduled_for"),
        started_at=started.get("last_run"), completed_at=completed,
        result=outcome.get("result"), reason=reason,
        job_run_ids=tuple((ended or {}).get("job_run_ids") or
                          [a.job_run_id for a in actions if a.job_run_id]),
        actions=actions, resolved_by=resolved.get("resolved_by") if resolved else None)


def _action(event: Raw) -> ActionRecord:
    ended = event.get("type") == "action_ended"
    return ActionRecord(index=int(event.get("index") or 0), kind=str(event.get("kind")),
                        result=event.get("result") if ended else None,
                        reason=event.get("reason"), job_run_id=event.get("job_run_id"),
                        exit_code=event.get("exit_code"), evidence_ref=event.get("evidence_ref"))


def _upstream(event: Raw) -> Attempt:
    record = event.get("record") or {}
    return Attempt(routine_id=str(event.get("routine_id")), attempt_id=None, trigger=None,
                   scheduled_for=record.get("scheduled_for"),
                   started_at=record.get("started_at"), completed_at=record.get("completed_at"),
                   result=record.get("result"),
                   job_run_ids=tuple(record.get("job_run_ids") or ()))


def _stamp_s(at: Any) -> str | None:
    when = try_parse_instant(at)
    return None if when is None else when.strftime("%Y-%m-%dT%H:%M:%SZ")


def matches(attempt: Attempt, *, since: datetime | None, until: datetime | None,
            result: str | None) -> bool:
    """Whether ``attempt`` passes ``history``'s filters: its scheduled time (else its start)
    within [since, until], and its result (:attr:`Attempt.state` for one still open)."""
    when = try_parse_instant(attempt.scheduled_for or attempt.started_at)
    if since is not None and (when is None or when < since):
        return False
    if until is not None and (when is None or when > until):
        return False
    return result is None or attempt.state == result


#: The results an upstream record sets the routine's status to (SPEC §10).
_IMPORTED_RESULTS = ("success", "failure", "skipped")


def last_outcome(events_newest_first: Iterable[Raw], routine_id: str,
                 *, before: str | None = None) -> str | None:
    """The routine's most recent outcome that is not ``skipped`` - ``success``, ``failure``
    or ``partial`` - or None when it has none, from its events newest first, leaving out the
    attempt ``before`` (the one that just ended). SPEC §13's ``recovered`` fires on a success
    when this is ``failure``: a skipped attempt in between does not erase the failure, and
    occurrences accounted for without an attempt (missed, held, paused) are no outcome at
    all. An operator's override of an ended attempt (``attempt_resolved`` with
    ``overrides``) stands for that attempt's result; a record another tool wrote (imported)
    counts with its result, as the fold takes it."""
    overridden: dict[Any, Any] = {}
    for event in events_newest_first:
        if event.get("routine_id") != routine_id:
            continue
        kind = event.get("type")
        if kind in ("routine_state_imported", "upstream_run_recorded"):
            record = event.get("record") or {}
            result = record.get("last_result" if kind == "routine_state_imported" else "result")
            if result not in _IMPORTED_RESULTS:
                continue
        elif kind in ("attempt_ended", "attempt_resolved"):
            attempt = event.get("attempt_id")
            if attempt == before:
                continue
            if event.get("overrides") is True:
                overridden.setdefault(attempt, event.get("result"))
                continue
            result = overridden.get(attempt, event.get("result"))
        else:
            continue
        if result != "skipped":
            return str(result)
    return None
