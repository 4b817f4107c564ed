"""One thin handler per command: lock, read, fold, decide, append, publish (SPEC §6, §8).

Business rules live in :mod:`decide`, :mod:`schedule` and :mod:`fold`; this module only wires
them to the ledger, the locks, the definitions and the runner: ``run`` takes the lock, imports,
registers the definitions and, routine by routine, closes or refuses an interrupted attempt,
records what is held, missed or paused, and starts the rest. What it selects is
:mod:`.run_select`, the values it returns :mod:`.run_report`, one attempt recorded whole
:mod:`.run_attempt`, running one action :mod:`.actions`;
``resolve``, ``history`` and ``fold`` are :mod:`.routine_commands`, the open-attempt checks
:mod:`.run_owner`, the job action seam :mod:`.job_seam`, ``project`` and ``validate``
:mod:`.project`; all re-exported here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from specdojo_routine.app.job_seam import JobActionOutcome as JobActionOutcome
from specdojo_routine.app.job_seam import JobActionRunner as JobActionRunner
from specdojo_routine.app.project import project as project
from specdojo_routine.app.project import validate as validate
from specdojo_routine.app.routine_commands import fold as fold
from specdojo_routine.app.routine_commands import history as history
from specdojo_routine.app.routine_commands import resolve as resolve
from specdojo_routine.app.run_attempt import (
    LOCK_LOST_REASON,
    _attempt,
    _close_interrupted,
    _Context,
)
from specdojo_routine.app.run_owner import _is_open as _is_open
from specdojo_routine.app.run_owner import live_owner as live_owner
from specdojo_routine.app.run_owner import refuse_if_owner_lives as refuse_if_owner_lives
from specdojo_routine.app.run_report import RunReport
from specdojo_routine.app.run_select import (
    _choose,
    _none_due,
    _occurrences,
    _retry_selection,
    _routines_to_consider,
    plan_selection,
)
from specdojo_routine.core import policy
from specdojo_routine.core.errors import RoutineError, UsageError
from specdojo_routine.core.model import OnInterrupted, Routine
from specdojo_routine.core.redact import secret_values
from specdojo_routine.core.timefmt import format_ms, to_utc
from specdojo_routine.execute import prefix
from specdojo_routine.store import fsfacts
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.definitions.defcache import DefinitionCache
from specdojo_routine.store.definitions.load import Definitions
from specdojo_routine.store.ledger import adopt, views
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.locks import routine as locks

FOLD_ACTOR = "specdojo_routine fold"


# --- run -----------------------------------------------------------------------------------------


def _stop_if_lock_lost(ctx: _Context, report: RunReport) -> bool:
    """True (reported once, exit 75) when the routine lock was lost: nothing more starts."""
    lost = ctx.lock_lost()
    if lost is not None and not report.lock_lost:
        report.lock_lost = True
        report.errors.append(f"error: {lost}; nothing more was started and any actions left "
                             f"were recorded skipped ({LOCK_LOST_REASON}); another runner may "
                             "hold the lock now")
    return lost is not None


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
    report = _new_report(defs, env, dry_run=dry_run)
    candidates = _routines_to_consider(defs, routine_id)
    if inputs:  # checked before anything is recorded (exit 2), as `job run --input` is
        report.inputs_override = _input_overrides(candidates, defs, routine_id, inputs, env)
    the_now = to_utc(now) if now is not None else to_utc(wall())
    began = time.monotonic()  # the run began at the_now: its attempts start later (instant)
    if dry_run:
        return _dry_run(report, candidates, paths, routine_id, the_now, env, wall, defs.cache)
    with locks.routine_lock(paths.routine_locks_dir, clock=wall, project=paths.project_id,
                            env=env) as held:
        plan = adopt.import_routine_state(paths, wall)  # import first, under the lock (SPEC §10)
        ctx = _Context(paths=paths, defs=defs, now=the_now, env=env, echo=echo, began=began,
                       job_runner=job_runner, lock_lost=held.lost, warnings=report.warnings,
                       append=ledger.Ledger(paths.routine_ledger, clock=wall).append)
        # published before anything is delegated (SPEC §6, §10 rule 6): a view that cannot
        # be written here stops the run before it starts anything
        view = views.refresh_routine_view(paths, plan.proof)
        refuse_if_owner_lives(view, paths)
        registered = _register(ctx, defs, view)
        view = _run_candidates(ctx, report, candidates, registered, explicit=routine_id is not None)
        if not _stop_if_lock_lost(ctx, report) and paths.retention.auto and routine_id is None:
            _prune_as_we_go(ctx, report, wall)
        if view is not registered:  # a run that recorded nothing left every cursor as is
            _remember_cursors(defs, candidates, view, the_now)
        definitions.remember(defs)
    return report


def _new_report(defs: Definitions, env: Mapping[str, str], *, dry_run: bool) -> RunReport:
    """An empty report of this run, with the errors of the definitions it could not load."""
    report = RunReport(dry_run=dry_run, prefix=prefix.specdojo_prefix(env), defs=defs)
    report.errors.extend(str(p) for p in defs.errors)
    return report


def _input_overrides(
    candidates: list[Routine], defs: Definitions, routine_id: str | None,
    inputs: Sequence[str], env: Mapping[str, str],
) -> dict[str, str]:
    """``run --id ID --input k=v``: the parsed overrides of that routine's Job inputs;
    refused (exit 2) without ``--id``, before anything is recorded."""
    from specdojo_routine.app import run_inputs

    if routine_id is None:
        raise UsageError("--input overrides one routine's inputs: use it with --id ID")
    return run_inputs.parse(candidates[0], defs, inputs, tuple(secret_values(env)))


def _run_candidates(
    ctx: _Context, report: RunReport, candidates: list[Routine], view: views.RoutineView, *,
    explicit: bool,
) -> views.RoutineView:
    """Each candidate routine in turn until the lock is lost; the view as the last one left
    it. An OSError aborts the run; the attempts it finished are still reported."""
    try:
        for routine in candidates:
            if _stop_if_lock_lost(ctx, report):
                break
            view = _run_routine(ctx, report, routine, view, explicit=explicit)
    except OSError as exc:
        report.errors.append(f"error: run aborted: {fsfacts.describe(exc)}")
    return view


def _remember_cursors(
    defs: Definitions, candidates: list[Routine], view: views.RoutineView, now: datetime,
) -> None:
    """Keep in the definition cache the next occurrence after each cron routine's cursor as
    the run left it, so the next call, and ``list``, need not iterate the schedules again
    (the selection already asked for the cursors a run that recorded nothing left)."""
    if defs.cache is not None:
        for routine in candidates:
            _none_due(defs.cache, routine, view.routines.get(routine.id), now)


def _prune_as_we_go(ctx: _Context, report: RunReport, wall: Callable[[], datetime]) -> None:
    """``retention.auto``: prune within the time budget, after the due work, under the
    routine lock (SPEC §15). A failure to prune is a warning, never the run's result."""
    from specdojo_routine.app import prune

    try:
        report.pruned = prune.prune_during_run(ctx.paths, views.load_routine_view(ctx.paths),
                                               now=ctx.now, clock=wall, env=ctx.env)
    except (RoutineError, OSError) as exc:
        report.prune_error = str(exc) if isinstance(exc, RoutineError) else \
            fsfacts.describe(exc)


def _dry_run(
    report: RunReport, candidates: list[Routine], paths: ProjectPaths, routine_id: str | None,
    now: datetime, env: Mapping[str, str], wall: Callable[[], datetime],
    defs_cache: DefinitionCache | None = None,
) -> RunReport:
    """``run --dry-run``: what a run would select, from the imported view in memory (SPEC
    §10); reads the routine lock's state without taking it and writes nothing. A conflict
    in ``routine-state.json`` is an error, as in the run it previews, which refuses (SPEC
    §10 rule 4): the selection from the rest of the file is still shown, as for an invalid
    definition (SPEC §8)."""
    plan = adopt.plan_routine_imports(paths)
    report.errors.extend(f"error: {c} (`run` refuses until then)" for c in plan.conflicts)
    view = plan.view
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
        if not _close_if_resumable(ctx, report, routine, state or {}):
            return ctx.refresh()  # what its notice recorded
        view = ctx.refresh()
        state = view.routines.get(routine.id)
    if not explicit:
        ran, dropped = _retry_or_supersede(ctx, report, routine, state)
        if ran:
            return ctx.refresh()
        if dropped is not None:  # with what it recorded
            view, state = dropped, dropped.routines.get(routine.id)
    accounted = False
    for occ in _occurrences(report, routine, state, ctx.now, explicit, ctx.defs.cache):
        if _stop_if_lock_lost(ctx, report):
            break
        # selected at the run's now, started (or missed) at the instant it is about to start
        chosen = _choose(report, routine, state, occ, ctx.instant(), ctx.paths.project_id)
        if isinstance(chosen, policy.Decision):  # paused, held or missed: the cursor moves on
            _record_decision(ctx, routine, chosen)
            accounted = True
            continue
        if accounted:
            view, accounted = ctx.refresh(), False
            state = view.routines.get(routine.id)
        _attempt(ctx, chosen, state, report.results)
        view = ctx.refresh()
        state = view.routines.get(routine.id)  # a failure under hold holds the rest at once
    return ctx.refresh() if accounted else view


def _close_if_resumable(
    ctx: _Context, report: RunReport, routine: Routine, state: Mapping[str, Any],
) -> bool:
    """The routine's interrupted attempt (we hold the lock, so an open one is interrupted):
    True once closed under ``on_interrupted: resume``; False when refused until ``resolve``,
    or skipped because one of its actions still runs."""
    opened: Mapping[str, Any] = state.get("open_attempt") or {}
    if routine.policy.on_interrupted is not OnInterrupted.RESUME:
        report.interrupted.append(routine.id)
        ctx.notify(routine, "interrupted", cause="attempt_started",
                   attempt_id=state.get("attempt_id"), scheduled_for=opened.get("scheduled_for"),
                   reason="its runner died mid-attempt; waiting for resolve")
        return False
    from specdojo_routine.app import job_resolve  # only for an attempt left open

    runs = job_resolve.attempt_runs(ctx.paths, routine, state)
    if job_resolve.outlived(ctx.paths, str(state["attempt_id"]), runs) is not None:
        report.still_running.append(routine.id)  # a busy skip, not a second execution
        return False
    _close_interrupted(ctx, routine, state)
    report.closed_interrupted.append(routine.id)
    ctx.notify(routine, "interrupted", cause="attempt_ended", attempt_id=state.get("attempt_id"),
               scheduled_for=opened.get("scheduled_for"), result="failure",
               reason="interrupted")
    return True


def _record_decision(ctx: _Context, routine: Routine, chosen: policy.Decision) -> None:
    """Record an occurrence paused, held or missed, and notify the held and missed ones (an
    operator's pause is not an alarm, SPEC §13)."""
    recorded = ctx.record(policy.record(routine, chosen))
    if chosen.verdict != "pause":
        from specdojo_routine.core import events  # only when there is one to record

        ctx.notify(routine, "held" if chosen.verdict == "hold" else "missed",
                   cause=events.tag_of(recorded), scheduled_for=recorded.scheduled_for,
                   reason=recorded.reason)


def _retry_or_supersede(
    ctx: _Context, report: RunReport, routine: Routine, state: Mapping[str, Any] | None,
) -> tuple[bool, views.RoutineView | None]:
    """SPEC §13: start the retry the routine's failed last attempt waits for once its delay
    has passed (True), or drop it for the next occurrence that became due first (recorded
    ``retry_superseded``; False: that occurrence is selected as usual). A dropped retry makes
    the failure it would have retried final, so that failure is notified then, as if its
    attempt had ended without a retry; then with the view that records both."""
    pending, superseded_by, chosen = _retry_selection(ctx.paths, routine, state, ctx.now)
    if pending is not None and superseded_by is not None:
        # only when there is one to record
        from specdojo_routine.core import retry_rules, routine_events

        when = superseded_by if superseded_by != "many" else format_ms(ctx.now)
        ctx.record(routine_events.RetrySuperseded(
            routine_id=routine.id, attempt_id=pending.failed_attempt_id,
            retry_of=pending.first_attempt_id, scheduled_for=pending.scheduled_for,
            superseded_by=when, reason=retry_rules.superseded_reason(when)))
        ctx.notify(routine, "failure", cause="retry_superseded",
                   attempt_id=pending.failed_attempt_id, scheduled_for=pending.scheduled_for,
                   result="failure", reason=(state or {}).get("last_reason"))
        return False, ctx.refresh()
    if chosen is None:
        return False, None
    report.selected.append(chosen)
    _attempt(ctx, chosen, state, report.results)
    return True, None


def _register(ctx: _Context, defs: Definitions, view: views.RoutineView) -> views.RoutineView:
    """T-01: record every valid definition seen for the first time or with a new digest."""
    changed = [r for r in defs.routines if view.get(r.id).get("digest") != r.digest]
    if not changed:
        return view
    from specdojo_routine.core import routine_events  # created only when there is one to record

    for routine in changed:
        ctx.record(routine_events.RoutineRegistered(
            routine_id=routine.id, digest=routine.digest, path=routine.path))
    return ctx.refresh()
