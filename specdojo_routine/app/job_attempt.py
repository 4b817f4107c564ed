"""One Job Run attempt, recorded whole (SPEC §6.5, §7.3, §7.5).

:func:`record_attempt` appends ``attempt_started``, executes the attempt's task
(:mod:`.job_execute`) and appends how it ended - ``attempt_ended``, with ``review_ended`` and
``checkpoint_advanced`` when they apply - in one batch, before the files around it (the result
document, the views), whose failure becomes a note instead of costing the outcome. A stop signal
while the task runs fails the attempt; its end is recorded before the stop unwinds.
:class:`RunLog` appends every event redacted. Deciding which run and attempt to record is
:mod:`.jobs`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import attrs

from specdojo_routine.app.job_execute import _Done, _Env, _execute
from specdojo_routine.core import jobtask, review_rules
from specdojo_routine.core.errors import JobError
from specdojo_routine.core.events import redacted
from specdojo_routine.core.job_events import (
    CheckpointAdvanced,
    JobEvent,
    ReviewEnded,
    RunAttemptEnded,
    RunAttemptStarted,
)
from specdojo_routine.core.jobplan import JobRunOutcome, Verdict
from specdojo_routine.core.timefmt import format_s
from specdojo_routine.execute import agentflow, jobfiles, stop
from specdojo_routine.execute.agent import AttemptDoc
from specdojo_routine.execute.jobfiles import Prepared
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.fsfacts import describe as environment_error
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.ledger import views
from specdojo_routine.store.locks import execlock

_JE = TypeVar("_JE", bound=JobEvent)


@attrs.frozen(repr=False)
class RunLog:
    """A Job Run's ledger as it is appended to: every event with its free text
    redacted first (:func:`events.redacted`), so a failure reason or a review's reason,
    whatever produced it, reaches the run ledger and the views folded from it redacted
    (SPEC §7.5). Gives back the events as recorded, for the outcome the console shows."""

    ledger: ledger.Ledger
    secrets: Sequence[str]

    def append(self, event: _JE) -> _JE:
        recorded = redacted(event, self.secrets)
        self.ledger.append(recorded)
        return recorded

    def append_many(self, batch: Sequence[JobEvent]) -> list[JobEvent]:
        recorded = [redacted(event, self.secrets) for event in batch]
        self.ledger.append_many(recorded)
        return recorded


def record_attempt(
    ctx: _Env, prep: Prepared, handle: execlock.ExecLockHandle, log: RunLog, attempt: int
) -> JobRunOutcome:
    """One attempt, recorded whole (SPEC §6.5): a SIGINT or SIGTERM while it runs stops its
    command, which fails the attempt with the stop as reason; the end is recorded before the
    stop unwinds the command (:mod:`~specdojo_routine.execute.stop`). A task that ended before
    the stop keeps its outcome, so a stop never makes a finished command run twice."""
    with stop.deferred():
        outcome = _record(ctx, prep, handle, log, attempt)
        stop.attempt_ended(prep.run_id, str(attempt), outcome.state or "", outcome.reason)
        return outcome


def _record(
    ctx: _Env, prep: Prepared, handle: execlock.ExecLockHandle, log: RunLog, attempt: int
) -> JobRunOutcome:
    log.append(RunAttemptStarted(run_id=prep.run_id, attempt=attempt,
                                 owner=jobfiles.current_owner()))
    notes: list[str] = []
    _side_effect(notes, "view not published", views.refresh_job_views, ctx.paths, [prep.run_id])
    started = ctx.clock()
    try:
        done = _execute(ctx, prep, handle, attempt)
    except Exception as exc:  # the attempt must be closed whatever happened
        done = _Done(verdict=Verdict(status="failed", reason=f"runner error: {exc}"))
    verdict = done.verdict
    reason = ctx.reason("; ".join(x for x in (verdict.reason, *notes, *done.notes) if x))
    record = done.review
    review = None if record is None else record.payload()  # what review_ended records
    batch = _ending(prep, attempt, done, reason, review)
    _still_open(ctx.paths, prep.run_id, attempt)
    recorded = log.append_many(batch)  # the outcome first: files around it are side effects
    if record is not None:  # the review's reason as recorded (redacted), for the outcome
        review_ended = recorded[1]
        assert isinstance(review_ended, ReviewEnded)
        record = attrs.evolve(record, reason=review_ended.reason)
    warnings = _files_around(ctx, prep, attempt, done, reason, started)
    state = review_rules.state_after(verdict.status, review)
    if state == "waiting" and record is not None:
        reason = ctx.reason(record.reason)
    return JobRunOutcome(job_id=prep.job.id, run_id=prep.run_id, state=state,
                         attempt=attempt, skipped=verdict.busy, reason=reason,
                         evidence_ref=done.evidence_ref, exit_code=done.exit_code,
                         trigger=ctx.trigger,
                         review=None if record is None else record.payload(),
                         warnings=warnings)


def _ending(
    prep: Prepared, attempt: int, done: _Done, reason: str | None,
    review: dict[str, Any] | None,
) -> list[JobEvent]:
    """How the attempt ended, as one batch: ``attempt_ended``, then ``review_ended`` when it
    was reviewed, and ``checkpoint_advanced`` when its status is in ``advance_on`` and a
    review (if any) integrated its change (SPEC §7.3.4, §11.3)."""
    verdict = done.verdict
    batch: list[JobEvent] = [RunAttemptEnded(
        run_id=prep.run_id, attempt=attempt, status=verdict.status, exit_code=done.exit_code,
        evidence_ref=done.evidence_ref, reason=reason)]
    if review is not None:
        batch.append(ReviewEnded(run_id=prep.run_id, attempt=attempt, **review))
    values = jobtask.checkpoint_after(prep.job, verdict.status, prep.context())
    if values is not None and review_rules.integrated(review):
        batch.append(CheckpointAdvanced(run_id=prep.run_id, job_id=prep.job.id, values=values))
    return batch


def _files_around(
    ctx: _Env, prep: Prepared, attempt: int, done: _Done, reason: str | None,
    started: datetime,
) -> tuple[str, ...]:
    """Write the result document (or stamp the one an agent filled) and publish the run's
    view once its end is recorded; what could not be written comes back as warnings for the
    operator, and the outcome stands."""
    notes: list[str] = []
    stamped = done.result_written and _side_effect(
        notes, "result not stamped", agentflow.stamp_result,
        jobfiles.result_path(ctx.paths, prep.run_id), done.verdict.status, reason, ctx.secrets)
    if not stamped and not notes:  # no agent's document (or it removed it): the runner's own
        _side_effect(notes, "result not written", jobfiles.write_result, ctx.paths, prep,
                     AttemptDoc(attempt=attempt, status=done.verdict.status, reason=reason,
                                started_at=format_s(started), completed_at=format_s(ctx.clock()),
                                exit_code=done.exit_code, evidence_ref=done.evidence_ref,
                                final_message=done.final_message))
    _side_effect(notes, "view not published", views.refresh_job_views, ctx.paths, [prep.run_id])
    return tuple(w for n in notes if (w := ctx.reason(f"{prep.run_id}: {n}")))


def _side_effect(notes: list[str], what: str, write: Callable[..., object],
                 *args: object) -> object:
    """Write a file around the outcome, and return what the writer did; an environment error
    (full disk, read-only) becomes a note instead of costing the outcome (the ledger, written
    first, is the truth)."""
    try:
        return write(*args)
    except OSError as exc:
        notes.append(f"{what}: {environment_error(exc)}")
        return None


def _still_open(paths: ProjectPaths, run_id: str, attempt: int) -> None:
    """Refuse to record a result for an attempt someone else already closed: a runner stalled
    past the exec lock's 30 s staleness can find its lock taken over and its attempt closed as
    interrupted. Recording nothing keeps the run ledger foldable."""
    view = views.load_job_run(paths, run_id)
    mine = [a for a in (view["attempts"] if view else []) if a["attempt"] == attempt]
    if not mine or mine[0]["status"] != "running":
        views.refresh_job_views(paths, [run_id])  # publish what the ledger says
        raise JobError(f"{run_id}: attempt {attempt} was closed by another runner while this "
                       "one was stalled (its exec lock was taken over); its result is not "
                       "recorded - run the Job again")
