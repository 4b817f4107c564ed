"""One thin handler per command: lock, read, fold, decide, append, publish (SPEC §6, §8).

Business rules live in :mod:`decide`, :mod:`schedule` and :mod:`fold`; this module only wires
them to the ledger, the locks, the definitions and the runner.
Running one action is :mod:`.actions`;
``resolve``, ``history`` and ``fold`` are :mod:`.routine_commands`, the open-attempt checks
:mod:`.run_owner`, the job action seam :mod:`.job_seam`, ``project`` and ``validate``
:mod:`.project`; all re-exported here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import attrs

from specdojo_routine.app import retry
from specdojo_routine.app.job_seam import JobActionOutcome as JobActionOutcome
from specdojo_routine.app.job_seam import JobActionRunner as JobActionRunner
from specdojo_routine.app.project import project as project
from specdojo_routine.app.project import validate as validate
from specdojo_routine.app.routine_commands import fold as fold
from specdojo_routine.app.routine_commands import history as history
from specdojo_routine.app.routine_commands import resolve as resolve
from specdojo_routine.app.run_owner import _is_open as _is_open
from specdojo_routine.app.run_owner import live_owner as live_owner
from specdojo_routine.app.run_owner import refuse_if_owner_lives as refuse_if_owner_lives
from specdojo_routine.core import (
    decide,
    errors,
    pausefold,
    policy,
    schedule,
    suggest,
    timefmt,
)
from specdojo_routine.core.errors import (
    EXIT_FAILURE,
    EXIT_OK,
    RoutineError,
    TooManyMissedOccurrences,
    UsageError,
)
from specdojo_routine.core.model import OnInterrupted, Result, Routine, aggregate
from specdojo_routine.core.redact import redact, secret_values
from specdojo_routine.core.timefmt import format_ms, format_s, parse_instant, to_utc
from specdojo_routine.execute import prefix, stop
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.definitions.defcache import UNKNOWN, DefinitionCache
from specdojo_routine.store.definitions.load import Definitions
from specdojo_routine.store.ledger import adopt, views
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.locks import routine as locks
from specdojo_routine.store.locks import stoprequest

if TYPE_CHECKING:  # events: the classes are created where an event is recorded, and what
    # starts and runs an attempt (retries, timeouts) is loaded where an attempt starts
    from specdojo_routine.app.actions import ActionReport
    from specdojo_routine.app.prune import PruneReport
    from specdojo_routine.core import events, retry_rules

FOLD_ACTOR = "specdojo_routine fold"
#: The reason recorded for the actions a run did not start because its routine lock was lost.
LOCK_LOST_REASON = "routine lock lost"


# --- run -----------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class AttemptReport:
    routine_id: str
    attempt_id: str
    scheduled_for: str
    result: str
    reason: str | None
    action_results: list[dict[str, Any]] | None
    job_run_ids: tuple[str, ...] = ()
    actions: tuple[ActionReport, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"routine_id": self.routine_id, "attempt_id": self.attempt_id,
                "scheduled_for": self.scheduled_for, "result": self.result,
                "reason": self.reason, "job_run_ids": list(self.job_run_ids),
                "action_results": self.action_results}


@attrs.frozen(kw_only=True)
class Selected:
    routine: Routine
    occurrence: schedule.Occurrence
    actions: list[decide.PlannedAction]
    #: ``run --id --input k=v`` (SPEC §13): recorded in ``attempt_started.inputs_override``
    inputs_override: Mapping[str, str] | None = None
    #: a retry (SPEC §13): the occurrence's first attempt and this attempt's number
    retry_of: str | None = None
    retry_number: int | None = None


@attrs.define(kw_only=True)
class RunReport:
    dry_run: bool
    prefix: list[str]
    selected: list[Selected] = attrs.field(factory=list)
    results: list[AttemptReport] = attrs.field(factory=list)
    interrupted: list[str] = attrs.field(factory=list)
    closed_interrupted: list[str] = attrs.field(factory=list)
    #: open attempts left alone: their action's process group outlived the runner (§6.5)
    still_running: list[str] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)
    #: ``warning:`` lines that do not change the exit (a failing notification hook, SPEC §13)
    warnings: list[str] = attrs.field(factory=list)
    held: list[policy.Decision] = attrs.field(factory=list)  # SPEC §9.1
    missed: list[policy.Decision] = attrs.field(factory=list)  # SPEC §9.2
    paused: list[policy.Decision] = attrs.field(factory=list)  # SPEC §13
    lock_lost: bool = False  # the routine lock was lost mid-run: the run stopped (SPEC §12)
    #: ``run --id ID --input k=v`` (SPEC §13), checked: over the Job actions' own inputs
    inputs_override: Mapping[str, str] = attrs.field(factory=dict)
    defs: Definitions | None = None  # the Jobs the override applies to
    #: what ``retention.auto`` pruned as the run went (SPEC §15), and why it could not
    pruned: PruneReport | None = None
    prune_error: str | None = None

    @property
    def exit_code(self) -> int:
        if self.lock_lost:
            return errors.EXIT_BUSY
        failed = any(r.result == Result.FAILURE.value for r in self.results)
        return EXIT_FAILURE if failed or self.interrupted or self.errors else EXIT_OK


_E = TypeVar("_E", bound="events.RoutineEvent")


@attrs.frozen(kw_only=True, repr=False)
class _Context:
    paths: ProjectPaths
    defs: Definitions
    now: datetime
    env: Mapping[str, str]
    echo: TextIO | None
    job_runner: JobActionRunner | None
    _append: Callable[[events.RoutineEvent], int]  # the ledger's: use record()
    #: None while the routine lock is held, else how it was lost (see ``locks.LockInfo``)
    lock_lost: Callable[[], str | None] = lambda: None
    secrets: tuple[str, ...] = attrs.field(
        init=False, default=attrs.Factory(lambda self: tuple(secret_values(self.env)),
                                          takes_self=True))
    #: where a failing notification hook's warning goes (the run's report)
    warnings: list[str] = attrs.field(factory=list)

    def notify(self, routine: Routine, kind: str, *, cause: str,
               attempt_id: str | None = None, scheduled_for: str | None = None,
               result: str | None = None, reason: str | None = None) -> None:
        """Run the routine's notification hook for ``kind``, if it asks (SPEC §13)."""
        from specdojo_routine.app import notifications  # the hook machinery: only for an event

        notifications.notify(paths=self.paths, routine=routine, kind=kind, env=self.env,
                             secrets=self.secrets, record=self.record, warnings=self.warnings,
                             attempt_id=attempt_id, scheduled_for=scheduled_for,
                             result=result, reason=reason, cause=cause)

    def record(self, event: _E) -> _E:
        """Append ``event`` to the routine ledger with its free text redacted; the event as
        recorded. Every routine event goes through here, so a failure reason - whatever
        produced it - reaches the ledger, the views and the run's report redacted (§7.5)."""
        from specdojo_routine.core import events

        recorded = events.redacted(event, self.secrets)
        self._append(recorded)
        return recorded


def _stop_if_lock_lost(ctx: _Context, report: RunReport) -> bool:
    """True (reported once, exit 75) when the routine lock was lost: nothing more starts."""
    lost = ctx.lock_lost()
    if lost is not None and not report.lock_lost:
        report.lock_lost = True
        report.errors.append(f"error: {lost}; nothing more was started and any actions left "
                             f"were recorded skipped ({LOCK_LOST_REASON}); another runner may "
                             "hold the lock now")
    return lost is not None


def _routines_to_consider(defs: Definitions, routine_id: str | None) -> list[Routine]:
    if routine_id is None:
        return list(defs.routines)
    found = defs.routine(routine_id)
    if found is not None:
        return [found]
    bad = sorted({p.path for p in defs.errors
                  if p.path.rsplit("/", 1)[-1].split(".")[0] == routine_id})
    if bad:  # every file that defines it: a duplicated id runs from neither (SPEC §13)
        raise RoutineError(f"routine {routine_id} is invalid (in {', '.join(bad)}); run "
                           "`validate` and fix it first")
    raise UsageError(suggest.unknown("routine", routine_id, (r.id for r in defs.routines),
                                     "list"))


def _occurrences(
    report: RunReport, routine: Routine, state: Mapping[str, Any] | None, now: datetime,
    explicit: bool, memo: DefinitionCache | None = None, *, learn: bool = True,
) -> list[schedule.Occurrence]:
    if memo is not None and not explicit and _none_due(memo, routine, state, now, learn):
        return []
    entry = state or {}
    try:
        found = schedule.due_occurrences(
            routine,
            last_run=entry.get("last_run"),
            last_scheduled_for=entry.get("last_scheduled_for"),
            now=now,
            explicit=explicit,
            last_accounted_for=entry.get("last_accounted_for"),
        )
    except TooManyMissedOccurrences as exc:
        report.errors.append(str(exc))
        return []
    resumed = (entry.get("pause") or {}).get("resumed_at")
    if resumed is None or explicit:
        return found
    # SPEC §13: what `latest` coalesced across the end of a pause is cut there, so the
    # occurrences of the paused span are accounted for as paused and only later ones run
    until = parse_instant(resumed)
    return [part for occ in found for part in schedule.split_at(routine, occ, until)]


def _none_due(
    memo: DefinitionCache, routine: Routine, state: Mapping[str, Any] | None, now: datetime,
    learn: bool = True,
) -> bool:
    """A cron routine with a cursor whose next occurrence (remembered in the definitions
    cache, else - ``learn`` - computed once and remembered for the cache the run saves) is
    after ``now``: nothing is due, known without iterating its schedule
    (:func:`schedule.none_due`). Without ``learn``, a cursor the cache does not know is
    answered by the due engine alone."""
    cursor = (state or {}).get("last_scheduled_for")
    trigger = routine.trigger
    if trigger is None or not routine.enabled or not isinstance(cursor, str):
        return False
    after = timefmt.try_parse_instant(cursor)
    if after is None:
        return False
    found = memo.next_after(trigger.cron, trigger.timezone, cursor)
    if found == UNKNOWN:
        if not learn:
            return False
        at = schedule.next_after(trigger.cron, trigger.timezone, after)
        found = format_ms(at) if at is not None else None
        memo.learn_next(trigger.cron, trigger.timezone, cursor, found)
    next_at = timefmt.try_parse_instant(found) if found is not None else None
    if found is not None and next_at is None:
        return False
    return schedule.none_due(next_at, now)


def _choose(
    report: RunReport, routine: Routine, state: Mapping[str, Any] | None,
    occ: schedule.Occurrence, now: datetime, project_id: str,
) -> Selected | policy.Decision:
    """Start ``occ`` (a :class:`Selected` in ``report.selected``) or account for it as held
    or missed (SPEC §9, in ``report.held`` / ``report.missed``)."""
    decision = policy.classify(routine, state, occ, now)
    if decision.verdict == "hold":
        report.held.append(decision)
        return decision
    if decision.verdict == "miss":
        report.missed.append(decision)
        return decision
    if decision.verdict == "pause":
        report.paused.append(decision)
        return decision
    actions = decide.plan_actions(routine, occ.scheduled_for, project_id)
    override = report.inputs_override if occ.trigger == "id" else {}
    if override and report.defs is not None:
        from specdojo_routine.app import run_inputs

        actions = run_inputs.apply(actions, override, report.defs)
    chosen = Selected(routine=routine, occurrence=occ, actions=actions,
                      inputs_override=dict(override) if override else None)
    report.selected.append(chosen)
    return chosen


def _select(
    report: RunReport, routine: Routine, state: Mapping[str, Any] | None, now: datetime,
    explicit: bool, project_id: str, memo: DefinitionCache | None = None,
) -> None:
    # a dry run keeps nothing: a cursor the cache does not know goes to the due engine
    for occ in _occurrences(report, routine, state, now, explicit, memo, learn=False):
        _choose(report, routine, state, occ, now, project_id)


def run(
    paths: ProjectPaths,
    *,
    routine_id: str | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    env: Mapping[str, str] | None = None,
    echo: TextIO | None = None,
    job_runner: JobActionRunner | None = None,
    clock: Callable[[], datetime] | None = None,
    inputs: Sequence[str] = (),
) -> RunReport:
    """``run --due`` (``routine_id`` None) or ``run --id`` (SPEC §6); ``inputs``: ``k=v``
    overrides of the Job actions' inputs, with ``run --id`` only (SPEC §13)."""
    wall = clock or (lambda: datetime.now(UTC))
    env = dict(os.environ if env is None else env)
    defs = definitions.load_definitions(paths)  # first, in a dry run too: it refuses alike
    report = RunReport(dry_run=dry_run, prefix=prefix.specdojo_prefix(env), defs=defs)
    report.errors.extend(str(p) for p in defs.errors)
    candidates = _routines_to_consider(defs, routine_id)
    if inputs:  # checked before anything is recorded (exit 2), as `job run --input` is
        from specdojo_routine.app import run_inputs

        if routine_id is None:
            raise UsageError("--input overrides one routine's inputs: use it with --id ID")
        report.inputs_override = run_inputs.parse(candidates[0], defs, inputs,
                                                  tuple(secret_values(env)))
    the_now = to_utc(now) if now is not None else to_utc(wall())
    if dry_run:
        return _dry_run(report, candidates, paths, routine_id, the_now, env, wall, defs.cache)
    with locks.routine_lock(paths.routine_locks_dir, clock=wall, project=paths.project_id,
                            env=env) as held:
        plan = adopt.import_routine_state(paths, wall)  # import first, under the lock (SPEC §10)
        log = ledger.Ledger(paths.routine_ledger, clock=wall)
        ctx = _Context(paths=paths, defs=defs, now=the_now, env=env, echo=echo,
                       job_runner=job_runner, append=log.append, lock_lost=held.lost,
                       warnings=report.warnings)
        view = views.refresh_routine_view(paths, plan.proof)
        refuse_if_owner_lives(view, paths)
        view = selected_from = _register(ctx, defs, view)
        try:
            for routine in candidates:
                if _stop_if_lock_lost(ctx, report):
                    break
                view = _run_routine(ctx, report, routine, view, explicit=routine_id is not None)
        except OSError as exc:  # the run aborts; the attempts it finished are still reported
            report.errors.append(f"error: run aborted: {errors.environment_error(exc)}")
        lost = _stop_if_lock_lost(ctx, report)
        if paths.retention.auto and routine_id is None and not lost:
            _prune_as_we_go(ctx, report, wall)
        # a recording command keeps what it parsed and the next occurrence after each cron
        # routine's cursor as the run left it (defcache): the next call, and `list`, need
        # not iterate the schedules again. A run that recorded nothing left every cursor as
        # the selection found it, and the selection asked already.
        if defs.cache is not None and view is not selected_from:
            for routine in candidates:
                _none_due(defs.cache, routine, view.routines.get(routine.id), the_now)
        definitions.remember(defs)
    return report


def _prune_as_we_go(ctx: _Context, report: RunReport, wall: Callable[[], datetime]) -> None:
    """``retention.auto``: prune within the time budget, after the due work, under the
    routine lock (SPEC §15). A failure to prune is a warning, never the run's result."""
    from specdojo_routine.app import prune

    try:
        report.pruned = prune.prune_during_run(ctx.paths, views.load_routine_view(ctx.paths),
                                               now=ctx.now, clock=wall, env=ctx.env)
    except (RoutineError, OSError) as exc:
        report.prune_error = str(exc) if isinstance(exc, RoutineError) else \
            errors.environment_error(exc)


def _dry_run(
    report: RunReport, candidates: list[Routine], paths: ProjectPaths, routine_id: str | None,
    now: datetime, env: Mapping[str, str], wall: Callable[[], datetime],
    defs_cache: DefinitionCache | None = None,
) -> RunReport:
    """``run --dry-run``: what a run would select, from the imported view in memory (SPEC
    §10); reads the routine lock's state without taking it and writes nothing."""
    view = adopt.plan_routine_imports(paths).view
    # The lock is read right after the view: an attempt the view shows open while the lock
    # is free is interrupted.
    lock = locks.status_soon(paths.routine_locks_dir, now=to_utc(wall()),
                             project=paths.project_id, env=env)
    plan_selection(report, candidates, view, now, routine_id, paths,
                   interrupted=lambda: not lock().held and live_owner(view) is None,
                   memo=defs_cache)
    lock()  # what it raised (a Redis that is down) is raised here even if nothing was open
    return report


def _run_routine(
    ctx: _Context, report: RunReport, routine: Routine, view: views.RoutineView, *,
    explicit: bool,
) -> views.RoutineView:
    """Every due occurrence of one routine, oldest first (we hold the lock, so an open attempt
    is an interrupted one: refused, or closed first under ``on_interrupted: resume``)."""
    state = view.routines.get(routine.id)
    if _is_open(state):
        entry: Mapping[str, Any] = state or {}
        opened: Mapping[str, Any] = entry.get("open_attempt") or {}
        if routine.policy.on_interrupted is not OnInterrupted.RESUME:
            report.interrupted.append(routine.id)
            ctx.notify(routine, "interrupted", cause="attempt_started",
                       attempt_id=entry.get("attempt_id"),
                       scheduled_for=opened.get("scheduled_for"),
                       reason="its runner died mid-attempt; waiting for resolve")
            return view
        from specdojo_routine.execute import groups  # only for an attempt left open

        if state is not None and groups.action_still_running(
                ctx.paths, state["attempt_id"]) is not None:
            report.still_running.append(routine.id)  # a busy skip, not a second execution
            return view
        _close_interrupted(ctx, routine, state or {})
        report.closed_interrupted.append(routine.id)
        ctx.notify(routine, "interrupted", cause="attempt_ended",
                   attempt_id=entry.get("attempt_id"),
                   scheduled_for=opened.get("scheduled_for"), result="failure",
                   reason="interrupted")
        view = views.refresh_routine_view(ctx.paths)
        state = view.routines.get(routine.id)
    if not explicit and _retry_or_supersede(ctx, report, routine, state):
        return views.refresh_routine_view(ctx.paths)
    accounted = False
    for occ in _occurrences(report, routine, state, ctx.now, explicit, ctx.defs.cache):
        if _stop_if_lock_lost(ctx, report):
            break
        chosen = _choose(report, routine, state, occ, ctx.now, ctx.paths.project_id)
        if isinstance(chosen, policy.Decision):  # paused, held or missed: the cursor moves on
            recorded = ctx.record(policy.record(routine, chosen))
            accounted = True
            if chosen.verdict != "pause":  # an operator's pause is not an alarm (SPEC §13)
                from specdojo_routine.core import events  # only when there is one to record

                ctx.notify(routine, "held" if chosen.verdict == "hold" else "missed",
                           cause=events.tag_of(recorded), scheduled_for=recorded.scheduled_for,
                           reason=recorded.reason)
            continue
        if accounted:
            view, accounted = views.refresh_routine_view(ctx.paths), False
            state = view.routines.get(routine.id)
        report.results.append(_attempt(ctx, chosen, state))
        view = views.refresh_routine_view(ctx.paths)
        state = view.routines.get(routine.id)  # a failure under hold holds the rest at once
    return views.refresh_routine_view(ctx.paths) if accounted else view


def _due_now(routine: Routine, state: Mapping[str, Any] | None, now: datetime) -> str | None:
    """The ``scheduled_for`` of the routine's first due occurrence, if one is due."""
    try:
        due = schedule.due_occurrences(
            routine, last_run=(state or {}).get("last_run"),
            last_scheduled_for=(state or {}).get("last_scheduled_for"), now=now,
            explicit=False, last_accounted_for=(state or {}).get("last_accounted_for"))
    except TooManyMissedOccurrences:
        return "many"  # the occurrences are due (the run reports the error)
    return format_ms(due[0].scheduled_for) if due else None


def _retry_selection(
    ctx_paths: ProjectPaths, routine: Routine, state: Mapping[str, Any] | None, now: datetime,
) -> tuple[retry_rules.PendingRetry | None, str | None, Selected | None]:
    """(the pending retry, the occurrence that supersedes it, the retry to start now)."""
    pending = retry.pending_retry(ctx_paths, routine, state)
    if pending is None:
        return None, None, None
    due = _due_now(routine, state, now)
    if due is not None:
        return pending, due, None
    if now < pending.due_at or pausefold.is_paused(state):  # a paused routine starts nothing
        return pending, None, None
    at = parse_instant(pending.scheduled_for)
    occ = schedule.Occurrence(routine_id=routine.id, scheduled_for=at, trigger="retry")
    chosen = Selected(routine=routine, occurrence=occ,
                      actions=decide.plan_actions(routine, at, ctx_paths.project_id),
                      retry_of=pending.first_attempt_id, retry_number=pending.number)
    return pending, None, chosen


def _retry_or_supersede(
    ctx: _Context, report: RunReport, routine: Routine, state: Mapping[str, Any] | None,
) -> bool:
    """SPEC §13: start the retry the routine's failed last attempt waits for once its delay
    has passed (True), or drop it for the next occurrence that became due first (recorded
    ``retry_superseded``; False: that occurrence is selected as usual)."""
    pending, superseded_by, chosen = _retry_selection(ctx.paths, routine, state, ctx.now)
    if pending is not None and superseded_by is not None:
        from specdojo_routine.core import events, retry_rules  # only when there is one to record

        when = superseded_by if superseded_by != "many" else format_ms(ctx.now)
        ctx.record(events.RetrySuperseded(
            routine_id=routine.id, attempt_id=pending.failed_attempt_id,
            retry_of=pending.first_attempt_id, scheduled_for=pending.scheduled_for,
            superseded_by=when, reason=retry_rules.superseded_reason(when)))
        return False
    if chosen is None:
        return False
    report.selected.append(chosen)
    report.results.append(_attempt(ctx, chosen, state))
    return True


def plan_selection(
    report: RunReport, candidates: list[Routine], view: views.RoutineView, now: datetime,
    routine_id: str | None, paths: ProjectPaths, *, interrupted: Callable[[], bool],
    memo: DefinitionCache | None = None,
) -> None:
    """Select (without recording) what a run would do; ``interrupted()``: the routine lock is
    free, so an open attempt is an interrupted one rather than a run in progress (asked only
    when an attempt is open)."""
    states = view.routines
    for routine in candidates:
        state = states.get(routine.id)
        if _is_open(state):
            if not interrupted():
                continue  # another live run holds the lock: the routine is simply running
            if routine.policy.on_interrupted is not OnInterrupted.RESUME:
                report.interrupted.append(routine.id)
                continue
            report.closed_interrupted.append(routine.id)  # a real run would close it first
        if routine_id is None:
            chosen = _retry_selection(paths, routine, state, now)[2]
            if chosen is not None:  # the retry would start instead of any occurrence
                report.selected.append(chosen)
                continue
        _select(report, routine, state, now, routine_id is not None, paths.project_id, memo)


def _register(ctx: _Context, defs: Definitions, view: views.RoutineView) -> views.RoutineView:
    """T-01: record every valid definition seen for the first time or with a new digest."""
    changed = [r for r in defs.routines if view.get(r.id).get("digest") != r.digest]
    if not changed:
        return view
    from specdojo_routine.core import events  # created only when there is one to record

    for routine in changed:
        ctx.record(events.RoutineRegistered(
            routine_id=routine.id, digest=routine.digest, path=routine.path))
    return views.refresh_routine_view(ctx.paths)


def _new_attempt_id(now: datetime) -> str:
    import uuid  # here: uuid imports platform, and a run with nothing due starts no attempt

    return f"att-{now.strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:8]}"


def _attempt(ctx: _Context, chosen: Selected, state: Mapping[str, Any] | None) -> AttemptReport:
    """One attempt, recorded whole (SPEC §6.5 "Stopped, not crashed"): a SIGINT or SIGTERM
    while it runs stops its running action, starts no other, records the attempt's end as a
    failure with the stop as reason and publishes it; then the stop unwinds
    (:mod:`~specdojo_routine.execute.stop`)."""
    from specdojo_routine.core import retry_rules  # loaded where an attempt starts

    with stop.deferred():
        report = _record_attempt(ctx, chosen, state)
        stop.attempt_ended(report.routine_id, report.attempt_id, report.result, report.reason)
        if stop.requested() is not None:
            views.refresh_routine_view(ctx.paths)  # the end is published before unwinding
    before = (state or {}).get("status")
    retried = retry_rules.retries_after(chosen.routine.policy.retry, chosen.occurrence.trigger,
                                        chosen.retry_number or 1) and not (
        report.reason or "").startswith("stopped by ")
    kind = ("failure" if report.result == Result.FAILURE.value and not retried else
            "recovered" if report.result == Result.SUCCESS.value and before == "failure"
            else None)
    if kind is not None:
        try:
            ctx.notify(chosen.routine, kind, cause="attempt_ended", attempt_id=report.attempt_id,
                       scheduled_for=report.scheduled_for, result=report.result,
                       reason=report.reason)
        except stop.Stopped:  # stopped during the hook: the attempt's end is published first
            views.refresh_routine_view(ctx.paths)
            raise
    return report


def _record_attempt(
    ctx: _Context, chosen: Selected, state: Mapping[str, Any] | None
) -> AttemptReport:
    from specdojo_routine.app import actions  # the process machinery: only to start an action
    from specdojo_routine.core import events, retry_rules, timeouts

    routine, occ = chosen.routine, chosen.occurrence
    attempt_id = _new_attempt_id(ctx.now)
    started_at = format_s(ctx.now)
    ctx.record(events.AttemptStarted(
        routine_id=routine.id, attempt_id=attempt_id,
        transition=decide.start_transition((state or {}).get("status") or "never"),
        trigger=occ.trigger, scheduled_for=format_ms(occ.scheduled_for), last_run=started_at,
        passed_over_since=(format_ms(occ.passed_over_since)
                           if occ.passed_over_since is not None else None),
        owner=events.Owner(pid=os.getpid(), host=locks.this_host(),
                           start=locks.process_start(os.getpid())),
        schedule="cron" if routine.trigger is not None else "interval",
        inputs_override=({k: redact(v, ctx.secrets) for k, v in chosen.inputs_override.items()}
                         if chosen.inputs_override else None),
        # a failure that will be retried does not hold: only the last one does (SPEC §13)
        on_failure=None if retry_rules.retries_after(
            routine.policy.retry, occ.trigger, chosen.retry_number or 1)
        else policy.on_failure_marker(routine),
        retry_of=chosen.retry_of, retry_attempt=chosen.retry_number,
    ))
    views.refresh_routine_view(ctx.paths)  # before delegating: readers see running (§6, §10)
    ctx = attrs.evolve(ctx, echo=prefix.prefixed(ctx.echo, routine.id))  # whose output it is
    t0 = time.monotonic()
    done: list[ActionReport] = []
    for planned in chosen.actions:
        if stop.requested() is not None:
            break  # stopped: every action runs after a failure, none after a stop
        if ctx.lock_lost() is not None:  # another runner may hold it: start nothing more
            ctx.record(events.ActionEnded(
                routine_id=routine.id, attempt_id=attempt_id, index=planned.index,
                kind=planned.kind, result=Result.SKIPPED.value, reason=LOCK_LOST_REASON))
            done.append(actions.ActionReport(index=planned.index, kind=planned.kind,
                                             result=Result.SKIPPED, reason=LOCK_LOST_REASON))
            continue
        limit = timeouts.action_limit(planned.timeout, planned.kind,
                                      attempt=routine.policy.timeout,
                                      used_s=time.monotonic() - t0)
        if limit is not None and limit.seconds <= 0:  # the attempt's budget is used up
            ctx.record(events.ActionEnded(
                routine_id=routine.id, attempt_id=attempt_id, index=planned.index,
                kind=planned.kind, result=Result.SKIPPED.value,
                reason=timeouts.ATTEMPT_TIMED_OUT))
            done.append(actions.ActionReport(index=planned.index, kind=planned.kind,
                                             result=Result.SKIPPED,
                                             reason=timeouts.ATTEMPT_TIMED_OUT))
            continue
        where = actions.Where(paths=ctx.paths, defs=ctx.defs, env=ctx.env, echo=ctx.echo,
                              job_runner=ctx.job_runner, routine_id=routine.id,
                              attempt_id=attempt_id)
        ctx.record(events.ActionStarted(
            routine_id=routine.id, attempt_id=attempt_id, index=planned.index,
            kind=planned.kind, job_run_id=actions.job_run_id(where, planned, occ.scheduled_for)))
        action = actions.execute(where, planned, occ.scheduled_for, limit)
        ended = ctx.record(events.ActionEnded(
            routine_id=routine.id, attempt_id=attempt_id, index=planned.index,
            kind=planned.kind, result=action.result.value, reason=action.reason,
            job_run_id=action.job_run_id, exit_code=action.exit_code,
            evidence_ref=action.evidence_ref))
        done.append(attrs.evolve(action, reason=ended.reason))  # as recorded: redacted
    completed = ctx.now + timedelta(seconds=time.monotonic() - t0)
    report = _end_attempt(
        ctx, routine, attempt_id, occ.scheduled_for, started_at, format_s(completed),
        [(a.index, a.kind, a.result, a.reason) for a in done],
        [a.job_run_id for a in done if a.job_run_id],
        reason_override=_stop_reason(ctx, attempt_id))
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
    from specdojo_routine.core import events

    result = aggregate([o[2] for o in outcomes]) if reason_override is None else Result.FAILURE
    reason = reason_override or decide.failure_reason(outcomes)
    scheduled = scheduled_for if isinstance(scheduled_for, str) else format_ms(scheduled_for)
    action_results = decide.action_results_payload(routine, [o[:3] for o in outcomes])
    ended = ctx.record(events.AttemptEnded(
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
) -> tuple[events.ActionResult, ...] | None:
    from specdojo_routine.core import events

    if payload is None:
        return None
    return tuple(events.ActionResult(**item) for item in payload)


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
                 format_s(ctx.now), outcomes, job_run_ids, reason_override="interrupted")
