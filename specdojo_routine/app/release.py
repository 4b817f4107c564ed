"""``release`` and backfill (SPEC §9.1, §9.3): operator actions that start attempts.

Both reuse the run handler's attempt machinery (:func:`run_attempt._attempt`), so an attempt they
start is recorded, executed and ended exactly like a due one; only its ``trigger`` differs.
Neither looks at the starting deadline; backfill ignores the hold and never moves the cursor.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Literal, TextIO

from specdojo_routine.app import handlers, run_attempt, run_select
from specdojo_routine.app.handlers import JobActionRunner
from specdojo_routine.app.run_report import RunReport, Selected
from specdojo_routine.app.who import operator_name
from specdojo_routine.core import decide, policy, routine_events, schedule
from specdojo_routine.core.errors import RoutineError, TooManyMissedOccurrences, UsageError
from specdojo_routine.core.model import Routine
from specdojo_routine.core.timefmt import format_ms, parse_instant, to_utc
from specdojo_routine.execute import runner
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger import adopt
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.locks import routine as locks

ReleaseRun = Literal["none", "latest", "all"]
Clock = Callable[[], datetime]


def _wall(clock: Clock | None) -> Clock:
    return clock or (lambda: datetime.now(UTC))


def _setup(
    paths: ProjectPaths, routine_id: str, env: Mapping[str, str] | None, dry_run: bool = False,
) -> tuple[definitions.Definitions, Routine, RunReport, dict[str, str]]:
    the_env = dict(os.environ if env is None else env)
    defs = definitions.load_definitions(paths)
    found = run_select._routines_to_consider(defs, routine_id)
    report = RunReport(dry_run=dry_run, prefix=runner.specdojo_prefix(the_env))
    report.errors.extend(str(p) for p in defs.errors)
    return defs, found[0], report, the_env


def release(
    paths: ProjectPaths, routine_id: str, *, run: ReleaseRun = "none", note: str | None = None,
    by: str | None = None, now: datetime | None = None, env: Mapping[str, str] | None = None,
    echo: TextIO | None = None, job_runner: JobActionRunner | None = None,
    clock: Clock | None = None,
) -> tuple[list[str], RunReport]:
    """End a routine's hold (SPEC §9.1); returns (the held occurrences, what ran)."""
    wall = _wall(clock)
    who = operator_name(by)
    if note is not None and not note.strip():
        raise UsageError("release --note must not be blank (leave it out for no note)")
    defs, routine, report, the_env = _setup(paths, routine_id, env)
    the_now = to_utc(now if now is not None else wall())
    with locks.routine_lock(paths.routine_locks_dir, clock=wall, project=paths.project_id) as lk:
        plan = adopt.import_routine_state(paths, wall)  # import first, under the lock (SPEC §10)
        log = ledger.Ledger(paths.routine_ledger, clock=wall)
        ctx = run_attempt._Context(paths=paths, defs=defs, now=the_now, env=the_env, echo=echo,
                                job_runner=job_runner, append=log.append, lock_lost=lk.lost,
                                warnings=report.warnings)
        view = handlers._register(ctx, defs, ctx.refresh(plan.proof))
        state = view.get(routine_id)
        if not policy.is_held(state):
            status = state["status"]
            raise RoutineError(f"routine {routine_id} is not held; nothing to release "
                               f"(status: {status})")
        if handlers._is_open(state):
            raise RoutineError(f"routine {routine_id} has an open attempt; `resolve` it first")
        held = list(state["held_occurrences"])
        ctx.record(routine_events.RoutineReleased(routine_id=routine_id, run=run, note=note,
                                          released_by=who))
        chosen = {"none": [], "latest": held[-1:], "all": held}[run]
        _run_each(ctx, report, routine, [parse_instant(t) for t in chosen], "release")
    return held, report


def _run_each(
    ctx: run_attempt._Context, report: RunReport, routine: Routine, times: list[datetime],
    trigger: Literal["release", "backfill"],
) -> None:
    """One attempt per scheduled time, oldest first, each with its own ``scheduled_for``."""
    for at in times:
        if handlers._stop_if_lock_lost(ctx, report):
            break
        view = ctx.refresh()
        state = view.routines.get(routine.id)
        occ = schedule.Occurrence(routine_id=routine.id, scheduled_for=at, trigger=trigger)
        chosen = Selected(routine=routine, occurrence=occ,
                          actions=decide.plan_actions(routine, at, ctx.paths.project_id))
        report.selected.append(chosen)
        run_attempt._attempt(ctx, chosen, state, report.results)
    handlers._stop_if_lock_lost(ctx, report)
    ctx.refresh()


def backfill_times(
    routine: Routine, start: datetime, end: datetime, now: datetime,
) -> list[datetime]:
    """The occurrences of ``routine`` in ``[start, end]``; refused (exit 2) for an interval
    routine, a reversed range, a range that ends after ``now`` (its occurrences have not
    come: run early and recorded under their own times, ``run --due`` would run them again)
    or more than 1000 occurrences, before anything runs."""
    if routine.trigger is None:
        raise UsageError(f"{routine.id} is an interval routine: there is no calendar to "
                         "backfill (use `run --id` to run it now)")
    if to_utc(start) > to_utc(end):
        raise UsageError(f"--from {format_ms(to_utc(start))} is after --to "
                         f"{format_ms(to_utc(end))}")
    if to_utc(end) > to_utc(now):
        raise UsageError(f"--to {format_ms(to_utc(end))} is after now ({format_ms(to_utc(now))})"
                         ": a backfill runs past occurrences only; end the range at or before "
                         "now and let `run --due` run the coming ones")
    try:
        return schedule.occurrences_in(routine, start, end, cap=schedule.MAX_MISSED)
    except TooManyMissedOccurrences:
        raise UsageError(
            f"backfill of {routine.id} from {format_ms(to_utc(start))} to "
            f"{format_ms(to_utc(end))} covers more than {schedule.MAX_MISSED} occurrences; "
            "split the range") from None


def backfill(
    paths: ProjectPaths, routine_id: str, *, start: datetime, end: datetime,
    dry_run: bool = False, now: datetime | None = None, env: Mapping[str, str] | None = None,
    echo: TextIO | None = None, job_runner: JobActionRunner | None = None,
    clock: Clock | None = None,
) -> RunReport:
    """``run --id ID --from T1 --to T2`` (SPEC §9.3): every occurrence in the range, each its
    own attempt with ``trigger: backfill``; the cursor, the hold and the deadline are left."""
    wall = _wall(clock)
    defs, routine, report, the_env = _setup(paths, routine_id, env, dry_run)
    times = backfill_times(routine, start, end, to_utc(now if now is not None else wall()))
    if not times:  # said as such, not as "no due routines"
        report.nothing = (f"no occurrence of {routine.id} from {format_ms(to_utc(start))} to "
                          f"{format_ms(to_utc(end))}: nothing to backfill")
    if dry_run:
        for at in times:
            occ = schedule.Occurrence(routine_id=routine.id, scheduled_for=at, trigger="backfill")
            report.selected.append(Selected(routine=routine, occurrence=occ, actions=(
                decide.plan_actions(routine, at, paths.project_id))))
        return report
    with locks.routine_lock(paths.routine_locks_dir, clock=wall, project=paths.project_id) as lk:
        plan = adopt.import_routine_state(paths, wall)  # import first, under the lock (SPEC §10)
        log = ledger.Ledger(paths.routine_ledger, clock=wall)
        the_now = to_utc(now if now is not None else wall())  # when the attempts start
        ctx = run_attempt._Context(paths=paths, defs=defs, now=the_now, env=the_env,
                                echo=echo, job_runner=job_runner, append=log.append,
                                lock_lost=lk.lost, warnings=report.warnings)
        view = handlers._register(ctx, defs, ctx.refresh(plan.proof))
        if handlers._is_open(view.routines.get(routine_id)):
            report.interrupted.append(routine_id)
            return report
        _run_each(ctx, report, routine, times, "backfill")
    return report
