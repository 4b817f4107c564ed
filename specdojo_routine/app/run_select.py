"""Which occurrences a run starts (SPEC §6, §9, §13): the routines to consider, their due
occurrences (answered from the definitions cache when nothing is due), each one started or
accounted for as held, missed or paused, and the retry a failed attempt waits for.

Nothing here records: :mod:`.handlers` records what is chosen, and ``run --dry-run``
(:func:`plan_selection`) only reports it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from specdojo_routine.app import retry
from specdojo_routine.app.run_owner import _is_open
from specdojo_routine.app.run_report import RunReport, Selected
from specdojo_routine.core import decide, pausefold, policy, schedule, suggest, timefmt
from specdojo_routine.core.errors import RoutineError, TooManyMissedOccurrences, UsageError
from specdojo_routine.core.model import OnInterrupted, Routine
from specdojo_routine.core.timefmt import format_ms, parse_instant
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions.defcache import UNKNOWN, DefinitionCache
from specdojo_routine.store.definitions.load import Definitions
from specdojo_routine.store.ledger import views

if TYPE_CHECKING:  # what starts and runs an attempt (retries) is loaded where one starts
    from specdojo_routine.core import retry_rules


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
    try:  # SPEC §13: a pause's span is accounted for as paused, only later ones run
        return policy.due_occurrences(routine, state, now, explicit=explicit)
    except TooManyMissedOccurrences as exc:
        report.errors.append(str(exc))
        return []


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
    occ = decision.occurrence  # an interval routine's: scheduled for ``now`` (SPEC §9.5)
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


def _due_now(routine: Routine, state: Mapping[str, Any] | None, now: datetime) -> str | None:
    """The ``scheduled_for`` of the routine's first due occurrence, if one is due."""
    try:
        due = policy.due_occurrences(routine, state, now)
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
    from specdojo_routine.core import retry_rules  # loaded by pending_retry already

    if not retry_rules.starts_now(pending, now, paused=pausefold.is_paused(state),
                                  gives_way=False):  # no occurrence is due (above)
        return pending, None, None
    at = parse_instant(pending.scheduled_for)
    occ = schedule.Occurrence(routine_id=routine.id, scheduled_for=at, trigger="retry")
    chosen = Selected(routine=routine, occurrence=occ,
                      actions=decide.plan_actions(routine, at, ctx_paths.project_id),
                      retry_of=pending.first_attempt_id, retry_number=pending.number)
    return pending, None, chosen


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
