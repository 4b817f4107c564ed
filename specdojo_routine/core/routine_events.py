"""The routine ledger's events (SPEC §5): frozen, keyword-only, past-tense values, valid by
construction (pure), and their wire tags (:data:`ROUTINE_EVENT_TYPES`).

Every event is validated in its constructor, so an invalid event cannot exist. The Job Run
ledgers' events are :mod:`.job_events`; what both share (ids, timestamps, :class:`Owner`)
:mod:`.event_parts`; every event's tag and ledger, and redaction, :mod:`.events`.
Timestamps are strings in their stored form (see :mod:`.events`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import attrs

from specdojo_routine.core.event_checks import (
    _int_at_least,
    _json_object,
    _one_of,
    _optional,
    _text,
)
from specdojo_routine.core.event_parts import (
    Owner,
    _ms,
    _paths,
    _routine_id,
    _run_id,
    _s,
    _sha256,
    _some_paths,
)
from specdojo_routine.core.model import ACTION_KINDS

RESULTS = ("success", "failure", "skipped", "partial")
#: The transition an ``attempt_ended`` / ``attempt_resolved`` declares for each result
#: (``partial``, a merged partial Job Run, carries T-03's label: SPEC §11.4).
RESULT_TRANSITIONS = {"success": "T-03", "failure": "T-04", "skipped": "T-05",
                      "partial": "T-03"}

#: ``attempt_started.trigger`` (SPEC §9.1, §13): due, an explicit run, a release, a backfill,
#: a retry of a failed attempt.
TRIGGERS = ("due", "id", "release", "backfill", "retry")
Trigger = Literal["due", "id", "release", "backfill", "retry"]
RELEASE_RUNS = ("none", "latest", "all")

Result = Literal["success", "failure", "skipped", "partial"]
StartTransition = Literal["T-02", "T-06", "T-07", "T-08"]
EndTransition = Literal["T-03", "T-04", "T-05"]

_kind = _one_of(*ACTION_KINDS)
_result = _one_of(*RESULTS)


def _transition_matches_result(inst: Any, _attribute: attrs.Attribute[Any], value: Any) -> None:
    expected = RESULT_TRANSITIONS.get(value)
    if expected is not None and inst.transition != expected:
        raise ValueError(f"result {value} needs transition {expected} (got {inst.transition})")


@attrs.frozen(kw_only=True)
class ActionResult:
    """One entry of ``action_results`` (list actions only)."""

    index: int = attrs.field(validator=_int_at_least(1))
    kind: str = attrs.field(validator=_kind)
    result: Result = attrs.field(validator=_result)


def _optional_results(value: Iterable[ActionResult] | None) -> tuple[ActionResult, ...] | None:
    return None if value is None else tuple(value)


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class RoutineRegistered:
    """T-01: a valid definition was seen for the first time, or its digest changed."""

    routine_id: str = attrs.field(validator=_routine_id)
    digest: str = attrs.field(validator=_text)
    path: str = attrs.field(validator=_text)


@attrs.frozen(kw_only=True)
class AttemptStarted:
    """T-02/T-06/T-07/T-08: an occurrence was selected; recorded before any delegation."""

    routine_id: str = attrs.field(validator=_routine_id)
    attempt_id: str = attrs.field(validator=_text)
    transition: StartTransition = attrs.field(validator=_one_of("T-02", "T-06", "T-07", "T-08"))
    trigger: Trigger = attrs.field(validator=_one_of(*TRIGGERS))
    scheduled_for: str = attrs.field(validator=_ms)
    last_run: str = attrs.field(validator=_s)
    passed_over_since: str | None = attrs.field(validator=_optional(_ms))
    owner: Owner = attrs.field(validator=attrs.validators.instance_of(Owner))
    schedule: Literal["cron", "interval"] = attrs.field(validator=_one_of("cron", "interval"))
    #: ``"hold"`` when the routine's ``policy.on_failure`` was ``hold`` as the attempt started
    #: (SPEC §9.1): its failure then puts the routine on hold. Left out otherwise.
    on_failure: Literal["hold"] | None = attrs.field(default=None, validator=_optional(
        _one_of("hold")))
    #: ``run --id ID --input k=v`` (SPEC §13): the inputs given for this attempt's Job actions,
    #: over the routine's own (secrets redacted). Left out when none were given.
    inputs_override: Mapping[str, Any] | None = attrs.field(
        default=None, validator=_optional(_json_object))
    #: a retry (SPEC §13): the first attempt of the occurrence, and this attempt's number
    #: counting the first (2 for the first retry). Left out otherwise.
    retry_of: str | None = attrs.field(default=None, validator=_optional(_text))
    retry_attempt: int | None = attrs.field(default=None, validator=_optional(_int_at_least(2)))


@attrs.frozen(kw_only=True)
class ActionStarted:
    """Action ``index`` (1-based) of the open attempt began; a ``job`` action names the Job Run
    it is about to run (the id its rendered key derives, known before delegation), so a runner
    killed mid-action leaves the run it started on the record."""

    routine_id: str = attrs.field(validator=_routine_id)
    attempt_id: str = attrs.field(validator=_text)
    index: int = attrs.field(validator=_int_at_least(1))
    kind: str = attrs.field(validator=_kind)
    job_run_id: str | None = attrs.field(default=None, validator=_optional(_run_id))


@attrs.frozen(kw_only=True)
class ActionEnded:
    """Action ``index`` of the open attempt finished with ``result``."""

    routine_id: str = attrs.field(validator=_routine_id)
    attempt_id: str = attrs.field(validator=_text)
    index: int = attrs.field(validator=_int_at_least(1))
    kind: str = attrs.field(validator=_kind)
    result: Result = attrs.field(validator=_result)
    reason: str | None = attrs.field(default=None, validator=_optional(_text))
    job_run_id: str | None = attrs.field(default=None, validator=_optional(_run_id))
    exit_code: int | None = attrs.field(default=None, validator=_optional(_int_at_least(-255)))
    #: root-relative path of the ``evidence.json`` holding this action's output (SPEC §14): a
    #: delegated call's own, or the evidence of the Job Run attempt a job action ran
    evidence_ref: str | None = attrs.field(default=None, validator=_optional(_text))


@attrs.frozen(kw_only=True)
class AttemptEnded:
    """T-03/T-04/T-05: the aggregate result of the open attempt (seed 000 §1.2)."""

    routine_id: str = attrs.field(validator=_routine_id)
    attempt_id: str = attrs.field(validator=_text)
    transition: EndTransition = attrs.field(validator=_one_of("T-03", "T-04", "T-05"))
    result: Result = attrs.field(validator=[_result, _transition_matches_result])
    reason: str | None = attrs.field(default=None, validator=_optional(_text))
    action_results: tuple[ActionResult, ...] | None = attrs.field(
        converter=_optional_results,
        validator=_optional(attrs.validators.deep_iterable(attrs.validators.instance_of(ActionResult))),
    )
    scheduled_for: str = attrs.field(validator=_ms)
    started_at: str = attrs.field(validator=_s)
    completed_at: str = attrs.field(validator=_s)
    job_run_ids: tuple[str, ...] = attrs.field(
        converter=_strings, validator=attrs.validators.deep_iterable(_run_id)
    )


@attrs.frozen(kw_only=True)
class AttemptResolved:
    """T-03/T-04/T-05 recorded by an operator for an interrupted attempt (SPEC §6.5)."""

    routine_id: str = attrs.field(validator=_routine_id)
    attempt_id: str = attrs.field(validator=_text)
    transition: EndTransition = attrs.field(validator=_one_of("T-03", "T-04", "T-05"))
    result: Result = attrs.field(validator=[_result, _transition_matches_result])
    note: str = attrs.field(validator=_text)
    resolved_by: str = attrs.field(validator=_text)
    #: ``True`` when an operator changed the outcome of an attempt that had already ended
    #: (``resolve --attempt``, SPEC §13; JP1's status change). Left out otherwise.
    overrides: bool | None = attrs.field(
        default=None, validator=_optional(attrs.validators.in_((True,))))


def _late_enough(inst: Any, _attribute: attrs.Attribute[Any], value: Any) -> None:
    if type(inst.deadline_s) is int and value < inst.deadline_s:
        raise ValueError(f"late_by_s {value} is within the deadline of {inst.deadline_s}s")


@attrs.frozen(kw_only=True)
class OccurrenceHeld:
    """An occurrence became due while the routine was on hold: accounted for, not run (§9.1)."""

    routine_id: str = attrs.field(validator=_routine_id)
    scheduled_for: str = attrs.field(validator=_ms)
    reason: str = attrs.field(validator=_text)
    passed_over_since: str | None = attrs.field(validator=_optional(_ms))
    schedule: Literal["cron", "interval"] = attrs.field(validator=_one_of("cron", "interval"))


@attrs.frozen(kw_only=True)
class OccurrenceMissed:
    """An occurrence would have started after its starting deadline: not run (SPEC §9.2)."""

    routine_id: str = attrs.field(validator=_routine_id)
    scheduled_for: str = attrs.field(validator=_ms)
    deadline_s: int = attrs.field(validator=_int_at_least(1))
    late_by_s: int = attrs.field(validator=[_int_at_least(1), _late_enough])
    reason: str = attrs.field(validator=_text)
    passed_over_since: str | None = attrs.field(validator=_optional(_ms))
    schedule: Literal["cron", "interval"] = attrs.field(validator=_one_of("cron", "interval"))


@attrs.frozen(kw_only=True)
class RoutineReleased:
    """An operator ended a routine's hold; ``run`` says which held occurrences run (§9.1)."""

    routine_id: str = attrs.field(validator=_routine_id)
    run: Literal["none", "latest", "all"] = attrs.field(validator=_one_of(*RELEASE_RUNS))
    note: str | None = attrs.field(validator=_optional(_text))
    released_by: str = attrs.field(validator=_text)


@attrs.frozen(kw_only=True)
class RoutinePaused:
    """An operator paused a routine (SPEC §13): ``run --due`` starts nothing for it until it is
    resumed. ``paused_at`` is when (the command's ``--now`` or the clock)."""

    routine_id: str = attrs.field(validator=_routine_id)
    note: str | None = attrs.field(validator=_optional(_text))
    paused_by: str = attrs.field(validator=_text)
    paused_at: str = attrs.field(validator=_ms)


@attrs.frozen(kw_only=True)
class RoutineResumed:
    """An operator resumed a paused routine (SPEC §13). Nothing runs by itself: occurrences
    scheduled up to ``resumed_at`` are still accounted for as paused."""

    routine_id: str = attrs.field(validator=_routine_id)
    note: str | None = attrs.field(validator=_optional(_text))
    resumed_by: str = attrs.field(validator=_text)
    resumed_at: str = attrs.field(validator=_ms)


@attrs.frozen(kw_only=True)
class OccurrencePaused:
    """An occurrence became due while the routine was paused (or inside a paused span that no
    run saw): accounted for, never run (SPEC §13)."""

    routine_id: str = attrs.field(validator=_routine_id)
    scheduled_for: str = attrs.field(validator=_ms)
    reason: str = attrs.field(validator=_text)
    passed_over_since: str | None = attrs.field(validator=_optional(_ms))
    schedule: Literal["cron", "interval"] = attrs.field(validator=_one_of("cron", "interval"))
#: ``notification_sent.event`` / ``policy.notify.on`` (SPEC §13).
NOTIFY_EVENTS = ("failure", "missed", "held", "interrupted", "recovered")


def _seconds(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if type(value) is not float or not 0.0 <= value < 1e9:
        raise ValueError(f"{attribute.name} must be a non-negative number of seconds "
                         f"(got {value!r})")


@attrs.frozen(kw_only=True)
class NotificationSent:
    """A notification hook ran after an event of the routine (SPEC §13); its outcome never
    changes the routine's state. ``exit_code`` is None when it could not start or was killed
    at its timeout (``reason`` says which)."""

    routine_id: str = attrs.field(validator=_routine_id)
    event: str = attrs.field(validator=_one_of(*NOTIFY_EVENTS))
    exit_code: int | None = attrs.field(validator=_optional(_int_at_least(0)))
    duration_s: float = attrs.field(validator=_seconds)
    attempt_id: str | None = attrs.field(default=None, validator=_optional(_text))
    scheduled_for: str | None = attrs.field(default=None, validator=_optional(_ms))
    reason: str | None = attrs.field(default=None, validator=_optional(_text))


@attrs.frozen(kw_only=True)
class RetrySuperseded:
    """A pending retry of a failed attempt was dropped because the routine's next occurrence
    became due first (SPEC §13); the state stands."""

    routine_id: str = attrs.field(validator=_routine_id)
    attempt_id: str = attrs.field(validator=_text)  # the failed attempt it would have retried
    retry_of: str = attrs.field(validator=_text)  # the occurrence's first attempt
    scheduled_for: str = attrs.field(validator=_ms)  # of the dropped retry
    superseded_by: str = attrs.field(validator=_ms)  # the occurrence that became due
    reason: str = attrs.field(validator=_text)



@attrs.frozen(kw_only=True)
class RoutineEvidencePruned:
    """The evidence of an ended routine attempt's actions is removed by retention (SPEC §15):
    the routine ledger's ``evidence_pruned``, recorded before anything is removed."""

    routine_id: str = attrs.field(validator=_routine_id)
    attempt_id: str = attrs.field(validator=_text)
    paths: tuple[str, ...] = attrs.field(converter=_paths, validator=_some_paths)
    bytes: int = attrs.field(validator=_int_at_least(0))


@attrs.frozen(kw_only=True)
class RoutineStateImported:
    """A ``routine-state.json`` entry another tool wrote, kept verbatim (SPEC §10 rule 1)."""

    routine_id: str = attrs.field(validator=_routine_id)
    record: Mapping[str, Any] = attrs.field(validator=_json_object)
    source: str = attrs.field(validator=_text)
    source_sha256: str = attrs.field(validator=_sha256)


@attrs.frozen(kw_only=True)
class UpstreamRunRecorded:
    """A line the upstream CLI appended to ``routine-runs.jsonl`` (no ``type``/``seq``): read,
    never written; ``record`` is the line as stored (SPEC §10 rule 2)."""

    routine_id: str = attrs.field(validator=_routine_id)
    record: Mapping[str, Any] = attrs.field(validator=_json_object)


RoutineEvent = (
    RoutineRegistered | AttemptStarted | ActionStarted | ActionEnded | AttemptEnded
    | AttemptResolved | OccurrenceHeld | OccurrenceMissed | RoutineReleased
    | RoutinePaused | RoutineResumed | OccurrencePaused
    | RoutineStateImported | UpstreamRunRecorded | RoutineEvidencePruned
    | NotificationSent | RetrySuperseded
)

ROUTINE_EVENT_TYPES: dict[str, type[RoutineEvent]] = {
    "routine_registered": RoutineRegistered,
    "attempt_started": AttemptStarted,
    "action_started": ActionStarted,
    "action_ended": ActionEnded,
    "attempt_ended": AttemptEnded,
    "attempt_resolved": AttemptResolved,
    "occurrence_held": OccurrenceHeld,
    "occurrence_missed": OccurrenceMissed,
    "routine_released": RoutineReleased,
    "routine_paused": RoutinePaused,  # SPEC §13
    "routine_resumed": RoutineResumed,
    "occurrence_paused": OccurrencePaused,
    "routine_state_imported": RoutineStateImported,
    "upstream_run_recorded": UpstreamRunRecorded,
    "evidence_pruned": RoutineEvidencePruned,  # SPEC §15
    "notification_sent": NotificationSent,  # SPEC §13
    "retry_superseded": RetrySuperseded,  # SPEC §13
}
