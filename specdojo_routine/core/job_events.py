"""The Job Run ledgers' events (SPEC §5, §7): frozen, keyword-only, past-tense values, valid by
construction (pure), and their wire tags (:data:`JOB_EVENT_TYPES`).

Every event is validated in its constructor, so an invalid event cannot exist. A Job Run
ledger's ``attempt_started`` / ``attempt_ended`` have other payloads than the routine ledger's
(:mod:`.routine_events`), so each ledger has its own tag map. What both share (ids,
timestamps, :class:`Owner`) is :mod:`.event_parts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from specdojo_routine.core.event_checks import (
    RUN_STATUSES,
    _int_at_least,
    _json_object,
    _one_of,
    _optional,
    _text,
)
from specdojo_routine.core.event_parts import (
    Owner,
    _job_id,
    _ms,
    _paths,
    _run_id,
    _sha256,
    _some_paths,
)


@attrs.frozen(kw_only=True)
class RunCreated:
    """A new Job Run was materialised with its frozen task and resolved inputs."""

    run_id: str = attrs.field(validator=_run_id)
    job_id: str = attrs.field(validator=_job_id)
    idempotency_key: str = attrs.field(validator=_text)
    project_id: str = attrs.field(validator=_text)
    trigger: Literal["manual", "routine", "ci"] = attrs.field(
        validator=_one_of("manual", "routine", "ci")
    )
    scheduled_at: str = attrs.field(validator=_ms)
    inputs: Mapping[str, Any] = attrs.field(validator=_json_object)
    task: Mapping[str, Any] = attrs.field(validator=_json_object)
    checkpoint_before: Mapping[str, Any] | None = attrs.field(validator=_optional(_json_object))


@attrs.frozen(kw_only=True)
class RunAttemptStarted:
    """Attempt ``attempt`` (1-based) of a Job Run began."""

    run_id: str = attrs.field(validator=_run_id)
    attempt: int = attrs.field(validator=_int_at_least(1))
    owner: Owner = attrs.field(validator=attrs.validators.instance_of(Owner))


@attrs.frozen(kw_only=True)
class RunAttemptEnded:
    """Attempt ``attempt`` of a Job Run finished with ``status``."""

    run_id: str = attrs.field(validator=_run_id)
    attempt: int = attrs.field(validator=_int_at_least(1))
    status: Literal["succeeded", "partial", "failed", "noop"] = attrs.field(
        validator=_one_of(*RUN_STATUSES)
    )
    exit_code: int | None = attrs.field(default=None, validator=_optional(_int_at_least(-255)))
    evidence_ref: str | None = attrs.field(default=None, validator=_optional(_text))
    reason: str | None = attrs.field(default=None, validator=_optional(_text))


@attrs.frozen(kw_only=True)
class RunAttemptResolved:
    """An operator recorded the outcome of an interrupted attempt (SPEC §7.3): the runner
    died, so nothing re-sends it; ``note`` says what was checked."""

    run_id: str = attrs.field(validator=_run_id)
    attempt: int = attrs.field(validator=_int_at_least(1))
    status: Literal["succeeded", "failed", "noop"] = attrs.field(
        validator=_one_of("succeeded", "failed", "noop"))
    note: str = attrs.field(validator=_text)
    resolved_by: str = attrs.field(validator=_text)
    reason: str | None = attrs.field(default=None, validator=_optional(_text))


@attrs.frozen(kw_only=True)
class CheckpointAdvanced:
    """The Job's checkpoint moved to ``values`` after a run in ``advance_on``."""

    run_id: str = attrs.field(validator=_run_id)
    job_id: str = attrs.field(validator=_job_id)
    values: Mapping[str, Any] = attrs.field(validator=_json_object)


REVIEW_VERDICTS = ("complete", "complete-with-findings", "changes-requested", "blocked",
                   "changed-during-review")


@attrs.frozen(kw_only=True)
class ReviewEnded:
    """The review before merge of attempt ``attempt`` ended (SPEC §11.3): its ``verdict``
    (None: not reviewed, e.g. no changes), whether the exec branch was ``merged``, the output
    ``commit``, the ``merge_commit`` when merged, and the ``reason`` when not."""

    run_id: str = attrs.field(validator=_run_id)
    attempt: int = attrs.field(validator=_int_at_least(1))
    verdict: str | None = attrs.field(validator=_optional(_one_of(*REVIEW_VERDICTS)))
    merged: bool = attrs.field(validator=attrs.validators.instance_of(bool))
    commit: str | None = attrs.field(validator=_optional(_text))  # always written
    reason: str | None = attrs.field(validator=_optional(_text))
    merge_commit: str | None = attrs.field(default=None, validator=_optional(_text))


@attrs.frozen(kw_only=True)
class EvidencePruned:
    """Files around an ended Job Run (evidence, plan and result documents, kept worktrees)
    are removed by retention (SPEC §15): recorded before anything is removed, so the ledger
    still says what existed. ``paths`` are root-relative (POSIX), ``bytes`` their total size."""

    run_id: str = attrs.field(validator=_run_id)
    paths: tuple[str, ...] = attrs.field(converter=_paths, validator=_some_paths)
    bytes: int = attrs.field(validator=_int_at_least(0))


@attrs.frozen(kw_only=True)
class RunImported:
    """A ``runs/<run_id>.json`` record another tool wrote: it *is* the run from here on."""

    run_id: str = attrs.field(validator=_run_id)
    record: Mapping[str, Any] = attrs.field(validator=_json_object)
    source_sha256: str = attrs.field(validator=_sha256)


@attrs.frozen(kw_only=True)
class CheckpointImported:
    """A ``job-state.json`` entry our ledgers did not account for."""

    job_id: str = attrs.field(validator=_job_id)
    checkpoint: Mapping[str, Any] = attrs.field(validator=_json_object)
    last_run_id: str = attrs.field(validator=_run_id)
    updated_at: str = attrs.field(validator=_text)
    source_sha256: str = attrs.field(validator=_sha256)


JobEvent = (
    RunCreated | RunAttemptStarted | RunAttemptEnded | CheckpointAdvanced | ReviewEnded
    | RunAttemptResolved
    | RunImported | CheckpointImported | EvidencePruned
)

JOB_EVENT_TYPES: dict[str, type[JobEvent]] = {
    "run_created": RunCreated,
    "attempt_started": RunAttemptStarted,
    "attempt_ended": RunAttemptEnded,
    "attempt_resolved": RunAttemptResolved,  # SPEC §7.3
    "checkpoint_advanced": CheckpointAdvanced,
    "review_ended": ReviewEnded,
    "run_imported": RunImported,
    "checkpoint_imported": CheckpointImported,
    "evidence_pruned": EvidencePruned,  # SPEC §15
}
