"""One routine attempt, recorded whole (SPEC §5, §6.5): ``attempt_started`` before any
delegation, each action's start and end, and ``attempt_ended`` with the aggregate result,
every event redacted as it is appended (:class:`_Context`); a stop or a lost routine lock
starts nothing more. The routine view is published after each of these events, so a runner
killed at any point leaves a view as current as its ledger. The view published before the
first action is delegated is required (SPEC §6: readers must see the attempt running): if it
cannot be written, the attempt ends there. Once it is out, a later view that cannot be
written is a warning and the attempt goes on (:meth:`_Context.refresh`). Any other
environment error (a full or read-only disk) mid-attempt ends the attempt as a failure that
says why: only a runner that died leaves an attempt open (interrupted). Also the closing of
an interrupted attempt under ``on_interrupted: resume``. :mod:`.handlers`, ``release`` and
backfill start attempts here.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import attrs

from specdojo_routine.app.job_seam import JobActionRunner
from specdojo_routine.app.run_report import AttemptReport, Selected
from specdojo_routine.core import decide, policy
from specdojo_routine.core.model import Result, Routine, aggregate
from specdojo_routine.core.redact import redact, secret_values
from specdojo_routine.core.timefmt import format_ms, format_s
from specdojo_routine.execute import prefix, stop
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions.load import Definitions
from specdojo_routine.store.ledger import proven, views
from specdojo_routine.store.locks import routine as locks
from specdojo_routine.store.locks import stoprequest

if TYPE_CHECKING:  # events: the classes are created where an event is recorded, and what
    # starts and runs an attempt (retries, timeouts) is loaded where an attempt starts
    from specdojo_routine.app.actions import ActionReport
    from specdojo_routine.core import routine_events

#: The reason recorded for the actions a run did not start because its routine lock was lost.
LOCK_LOST_REASON = "routine lock lost"


_E = TypeVar("_E", bound="routine_events.RoutineEvent")


@attrs.frozen(kw_only=True, repr=False)
class _Context:
    paths: ProjectPaths
    defs: Definitions
    now: datetime
    env: Mapping[str, str]
    echo: TextIO | None
    job_runner: JobActionRunner | None
    _append: Callable[[routine_events.RoutineEvent], int]  # the ledger's: use record()
    #: None while the routine lock is held, else how it was lost (see ``locks.LockInfo``)
    lock_lost: Callable[[], str | None] = lambda: None
    #: the monotonic clock when the run began at ``now`` (see :meth:`instant`)
    began: float = attrs.field(factory=time.monotonic)
    secrets: tuple[str, ...] = attrs.field(
        init=False, default=attrs.Factory(lambda self: tuple(secret_values(self.env)),
                                          takes_self=True))
    #: where a failing notification hook's warning goes (the run's report)
    warnings: list[str] = attrs.field(factory=list)

    def instant(self) -> datetime:
        """Now, as the run sees it: its ``now`` plus the real time elapsed since it began.
        An occurrence started after earlier attempts is judged against its deadline, and
        recorded as started and ended, when that really happened (SPEC §9.2); ``--now T``
        means "the run began at T", so tests and replays stay deterministic."""
        return self.now + timedelta(seconds=time.monotonic() - self.began)

    def notify(self, routine: Routine, kind: str, *, cause: str,
               attempt_id: str | None = None, scheduled_for: str | None = None,
               result: str | None = None, reason: str | None = None) -> None:
        """Run the routine's notification hook for ``kind``, if it asks (SPEC §13). A stop
        during the hook is raised once what was recorded - the event and the hook's outcome -
        is published: readers of the view must not miss them until the next run."""
        from specdojo_routine.app import notifications  # the hook machinery: only for an event

        try:
            notifications.notify(paths=self.paths, routine=routine, kind=kind, env=self.env,
                                 secrets=self.secrets, record=self.record,
                                 warnings=self.warnings, attempt_id=attempt_id,
                                 scheduled_for=scheduled_for, result=result, reason=reason,
                                 cause=cause)
        except stop.Stopped:
            with contextlib.suppress(OSError):  # the ledger has it; the next command folds it
                views.refresh_routine_view(self.paths)
            raise

    def refresh(self, proof: proven.Proven | None = None) -> views.RoutineView:
        """Publish the routine view and return it. Once an attempt's view before delegation
        is out, one that cannot be written does not end the attempt nor the run: the ledger
        has every event (:mod:`.viewwarn`), so the run goes on from the folded view and warns
        once. A ledger that cannot be read is raised."""
        try:
            return views.refresh_routine_view(self.paths, proof)
        except views.ViewNotWritten as exc:
            from specdojo_routine.app import viewwarn

            text = viewwarn.not_refreshed(self.paths, exc, done="every event of this run")
            shown = redact(f"warning: {text}", self.secrets)
            if shown not in self.warnings:
                self.warnings.append(shown)
            return exc.view

    def record(self, event: _E) -> _E:
        """Append ``event`` to the routine ledger with its free text redacted; the event as
        recorded. Every routine event goes through here, so a failure reason - whatever
        produced it - reaches the ledger, the views and the run's report redacted (§7.5)."""
        from specdojo_routine.core import events

        recorded = events.redacted(event, self.secrets)
        self._append(recorded)
        return recorded


def _new_attempt_id(now: datetime) -> str:
    import uuid  # here: uuid imports platform, and a run with nothing due starts no attempt

    return f"att-{now.strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:8]}"


class _Aborted(Exception):
    """An environment error cut the attempt short and its end was recorded (``report``)."""

    def __init__(self, report: AttemptReport, error: OSError) -> None:
        super().__init__(error)
        self.report, self.error = report, error


def _attempt(ctx: _Context, chosen: Selected, state: Mapping[str, Any] | None,
             results: list[AttemptReport]) -> None:
    """One attempt, recorded whole and its report added to ``results`` (SPEC §6.5 "Stopped,
    not crashed"): a SIGINT or SIGTERM while it runs stops its running action, starts no
    other, records the attempt's end as a failure with the stop as reason and publishes it;
    then the stop unwinds (:mod:`~specdojo_routine.execute.stop`). The end is published
    before the notification hook runs (upstream reads the view, not the ledger). An attempt
    an environment error cut short is reported and notified like any failure, then the error
    is raised again."""
    aborted: OSError | None = None
    with stop.deferred():
        try:
            report = _record_attempt(ctx, chosen, state)
        except _Aborted as exc:
            report, aborted = exc.report, exc.error
        results.append(report)
        stop.attempt_ended(report.routine_id, report.attempt_id, report.result, report.reason)
        if aborted is None:  # (an aborted end was published if the disk let it)
            try:
                ctx.refresh()
            except OSError as exc:  # recorded, so still told (SPEC §13); then raised
                aborted = exc
    try:
        _notify_end(ctx, chosen, state, report)
    except OSError:  # (a stop during the hook is raised published: _Context.notify)
        if aborted is None:
            raise
    if aborted is not None:  # the error the operator sees is the first one
        raise aborted


def _notify_end(ctx: _Context, chosen: Selected, state: Mapping[str, Any] | None,
                report: AttemptReport) -> None:
    """Run the hook for a final failure, or for the first success after a failure (SPEC §13:
    ``recovered``; a skipped attempt in between does not erase the failure, and a failure
    that was retried into this success counts too, notified or not)."""
    from specdojo_routine.core import retry_rules  # loaded where an attempt starts

    retried = retry_rules.retries_after(chosen.routine.policy.retry, chosen.occurrence.trigger,
                                        chosen.retry_number or 1) and not (
        report.reason or "").startswith("stopped by ")
    before = (state or {}).get("status")
    kind = ("failure" if report.result == Result.FAILURE.value and not retried else
            "recovered" if report.result == Result.SUCCESS.value and before in (
                "failure", "skipped") and _recovers(ctx, chosen.routine, report, before)
            else None)
    if kind is not None:
        ctx.notify(chosen.routine, kind, cause="attempt_ended", attempt_id=report.attempt_id,
                   scheduled_for=report.scheduled_for, result=report.result,
                   reason=report.reason)


def _recovers(ctx: _Context, routine: Routine, report: AttemptReport, before: str) -> bool:
    """Whether this success recovers from a failure (:func:`.notifications.recovers`; the
    hook machinery is loaded only here, as for an event to notify)."""
    from specdojo_routine.app import notifications

    return notifications.recovers(ctx.paths, routine, report.attempt_id, before)


def _record_attempt(
    ctx: _Context, chosen: Selected, state: Mapping[str, Any] | None
) -> AttemptReport:
    """Record the attempt's start, run its actions and record its end; a full or read-only
    disk ends it as a failure that says why (:class:`_Aborted`), or, if even that end
    cannot be recorded, is raised as it is."""
    routine, occ = chosen.routine, chosen.occurrence
    started = ctx.instant()  # after the attempts before it: the time it really starts
    attempt_id = _new_attempt_id(started)
    started_at = format_s(started)
    ctx.record(_started(ctx, chosen, state, attempt_id, started_at))
    t0 = time.monotonic()
    done: list[ActionReport] = []
    opened: list[ActionReport] = []  # the action started and not ended, if any
    try:
        # before delegating, readers (the upstream CLI) must see it running with its cursor
        # moved (SPEC §6, §10 rule 6): a view that cannot be written ends the attempt here
        views.refresh_routine_view(ctx.paths)
        _run_actions(attrs.evolve(ctx, echo=prefix.prefixed(ctx.echo, routine.id)), chosen,
                     attempt_id, t0, done, opened)  # prefixed: whose output it is
    except OSError as exc:  # a full or read-only disk: this runner lives, so it ends the
        ended = _end_aborted(ctx, chosen, attempt_id, started_at, done, opened, exc)
        if ended is None:  # attempt itself, if the ledger lets it
            raise
        raise _Aborted(ended, exc) from exc
    report = _end_attempt(
        ctx, routine, attempt_id, occ.scheduled_for, started_at, format_s(ctx.instant()),
        [(a.index, a.kind, a.result, a.reason) for a in done],
        [a.job_run_id for a in done if a.job_run_id],
        reason_override=_stop_reason(ctx, attempt_id))
    return attrs.evolve(report, actions=tuple(done))


def _started(
    ctx: _Context, chosen: Selected, state: Mapping[str, Any] | None, attempt_id: str,
    started_at: str,
) -> routine_events.AttemptStarted:
    """The attempt's ``attempt_started`` event: its transition, trigger, owner (this process),
    the inputs it overrides (redacted) and whether its failure will hold the routine."""
    from specdojo_routine.core import event_parts, retry_rules, routine_events

    routine, occ = chosen.routine, chosen.occurrence
    return routine_events.AttemptStarted(
        routine_id=routine.id, attempt_id=attempt_id,
        transition=decide.start_transition((state or {}).get("status") or "never"),
        trigger=occ.trigger, scheduled_for=format_ms(occ.scheduled_for), last_run=started_at,
        passed_over_since=(format_ms(occ.passed_over_since)
                           if occ.passed_over_since is not None else None),
        owner=event_parts.Owner(pid=os.getpid(), host=locks.this_host(),
                                start=locks.process_start(os.getpid())),
        schedule="cron" if routine.trigger is not None else "interval",
        inputs_override=({k: redact(v, ctx.secrets) for k, v in chosen.inputs_override.items()}
                         if chosen.inputs_override else None),
        # a failure that will be retried does not hold: only the last one does (SPEC §13)
        on_failure=None if retry_rules.retries_after(
            routine.policy.retry, occ.trigger, chosen.retry_number or 1)
        else policy.on_failure_marker(routine),
        retry_of=chosen.retry_of, retry_attempt=chosen.retry_number,
    )


def _run_actions(ctx: _Context, chosen: Selected, attempt_id: str, t0: float,
                 done: list[ActionReport], opened: list[ActionReport]) -> None:
    """Run the attempt's actions in order, each recorded as it starts and ends, into
    ``done`` (``opened`` holds the one started and not yet ended); a stop starts none after
    it, a lost routine lock or a used-up attempt budget records the rest as skipped."""
    from specdojo_routine.app import actions  # the process machinery: only to start an action
    from specdojo_routine.core import routine_events, timeouts

    routine, occ = chosen.routine, chosen.occurrence
    for planned in chosen.actions:
        if stop.requested() is not None:
            break  # stopped: every action runs after a failure, none after a stop
        if ctx.lock_lost() is not None:  # another runner may hold it: start nothing more
            done.append(_skip(ctx, routine.id, attempt_id, planned, LOCK_LOST_REASON))
            continue
        limit = timeouts.action_limit(planned.timeout, planned.kind,
                                      attempt=routine.policy.timeout,
                                      used_s=time.monotonic() - t0)
        if limit is not None and limit.seconds <= 0:  # the attempt's budget is used up
            done.append(_skip(ctx, routine.id, attempt_id, planned, timeouts.ATTEMPT_TIMED_OUT))
            continue
        where = actions.Where(paths=ctx.paths, defs=ctx.defs, env=ctx.env, echo=ctx.echo,
                              job_runner=ctx.job_runner, routine_id=routine.id,
                              attempt_id=attempt_id, warnings=ctx.warnings)
        ctx.record(routine_events.ActionStarted(
            routine_id=routine.id, attempt_id=attempt_id, index=planned.index,
            kind=planned.kind, job_run_id=actions.job_run_id(where, planned, occ.scheduled_for)))
        opened.append(actions.ActionReport(index=planned.index, kind=planned.kind,
                                           result=Result.FAILURE))
        ctx.refresh()  # the view keeps up: a crash leaves it current
        action = actions.execute(where, planned, occ.scheduled_for, limit)
        ended = ctx.record(routine_events.ActionEnded(
            routine_id=routine.id, attempt_id=attempt_id, index=planned.index,
            kind=planned.kind, result=action.result.value, reason=action.reason,
            job_run_id=action.job_run_id, exit_code=action.exit_code,
            evidence_ref=action.evidence_ref))
        opened.clear()
        done.append(attrs.evolve(action, reason=ended.reason))  # as recorded: redacted
        ctx.refresh()


def _skip(ctx: _Context, routine_id: str, attempt_id: str, planned: decide.PlannedAction,
          reason: str) -> ActionReport:
    """Record an action the attempt did not start as ended ``skipped`` for ``reason``; its
    report."""
    from specdojo_routine.app import actions
    from specdojo_routine.core import routine_events

    ctx.record(routine_events.ActionEnded(
        routine_id=routine_id, attempt_id=attempt_id, index=planned.index,
        kind=planned.kind, result=Result.SKIPPED.value, reason=reason))
    return actions.ActionReport(index=planned.index, kind=planned.kind, result=Result.SKIPPED,
                                reason=reason)


def _end_aborted(ctx: _Context, chosen: Selected, attempt_id: str, started_at: str,
                 done: list[ActionReport], opened: list[ActionReport],
                 exc: OSError) -> AttemptReport | None:
    """End an attempt an environment error cut short (SPEC §6.5: only a runner that died
    leaves an attempt open, interrupted): the action it cut short (``opened``) ends as a
    failure, and the attempt as a failure, both with the reason ``run aborted: …``; then the
    end is published if the disk lets it. The attempt's report (``started_at``: its start as
    stored); None if the ledger itself refused the end: the attempt stays open and the next
    run finds it interrupted."""
    from specdojo_routine.core import routine_events
    from specdojo_routine.store.fsfacts import describe as environment_error

    reason = f"run aborted: {environment_error(exc)}"
    completed = ctx.instant()
    try:
        for cut in opened:
            ended = ctx.record(routine_events.ActionEnded(
                routine_id=chosen.routine.id, attempt_id=attempt_id, index=cut.index,
                kind=cut.kind, result=Result.FAILURE.value, reason=reason))
            done.append(attrs.evolve(cut, reason=ended.reason))
        report = _end_attempt(ctx, chosen.routine, attempt_id, chosen.occurrence.scheduled_for,
                              started_at, format_s(completed),
                              [(a.index, a.kind, a.result, a.reason) for a in done],
                              [a.job_run_id for a in done if a.job_run_id],
                              reason_override=reason)
    except OSError:
        return None  # the error the operator sees is the first one
    with contextlib.suppress(OSError):  # the next command publishes it
        views.refresh_routine_view(ctx.paths)
    return attrs.evolve(report, actions=tuple(done))


def _stop_reason(ctx: _Context, attempt_id: str) -> str | None:
    """``stopped by SIGTERM``, with who asked and why when ``stop ID`` sent it (SPEC §13)."""
    why = stop.reason()
    if why is None:
        return None
    asked = stoprequest.take(ctx.paths.routine_locks_dir, attempt_id)
    if asked is None:
        return why
    note = asked.get("note")
    return f"{why} (stop by {asked.get('by')}" + (f": {note})" if note else ")")


def _end_attempt(
    ctx: _Context, routine: Routine, attempt_id: str, scheduled_for: datetime | str,
    started_at: str, completed_at: str, outcomes: list[tuple[int, str, Result, str | None]],
    job_run_ids: list[str], *, reason_override: str | None = None,
) -> AttemptReport:
    from specdojo_routine.core import routine_events

    result = aggregate([o[2] for o in outcomes]) if reason_override is None else Result.FAILURE
    reason = reason_override or decide.failure_reason(outcomes)
    scheduled = scheduled_for if isinstance(scheduled_for, str) else format_ms(scheduled_for)
    action_results = decide.action_results_payload(routine, [o[:3] for o in outcomes])
    ended = ctx.record(routine_events.AttemptEnded(
        routine_id=routine.id, attempt_id=attempt_id,
        transition=decide.END_TRANSITIONS[result], result=result.value, reason=reason,
        action_results=_action_results(action_results), scheduled_for=scheduled,
        started_at=started_at, completed_at=completed_at, job_run_ids=tuple(job_run_ids),
    ))
    return AttemptReport(routine_id=routine.id, attempt_id=attempt_id,
                         scheduled_for=scheduled, result=result.value,
                         reason=ended.reason, action_results=action_results,
                         job_run_ids=tuple(job_run_ids))


def _action_results(
    payload: list[dict[str, Any]] | None,
) -> tuple[routine_events.ActionResult, ...] | None:
    from specdojo_routine.core import routine_events

    if payload is None:
        return None
    return tuple(routine_events.ActionResult(**item) for item in payload)


def _close_interrupted(ctx: _Context, routine: Routine, state: Mapping[str, Any]) -> None:
    """``on_interrupted: resume``: close the dead runner's attempt as failure/interrupted."""
    open_attempt = state.get("open_attempt") or {}
    outcomes = [
        (a["index"], a["kind"], Result(a["result"]), a.get("reason"))
        for a in open_attempt.get("actions", []) if a.get("result")
    ]
    job_run_ids = [a["job_run_id"] for a in open_attempt.get("actions", [])
                   if a.get("job_run_id")]
    _end_attempt(ctx, routine, open_attempt.get("attempt_id") or state.get("attempt_id") or "",
                 open_attempt.get("scheduled_for") or "", open_attempt.get("started_at") or "",
                 format_s(ctx.instant()), outcomes, job_run_ids, reason_override="interrupted")
