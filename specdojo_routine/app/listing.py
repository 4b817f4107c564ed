"""``list``: every routine's status, due-ness and next occurrence; writes nothing (SPEC §8)."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs

from specdojo_routine.core import health, pausefold, policy, schedule
from specdojo_routine.core.errors import EXIT_FAILURE, EXIT_OK, TooManyMissedOccurrences
from specdojo_routine.core.model import Routine
from specdojo_routine.core.timefmt import format_ms, format_s, to_utc, try_parse_instant
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.definitions.defcache import UNKNOWN, DefinitionCache
from specdojo_routine.store.locks import routine as locks


@attrs.frozen(kw_only=True)
class RoutineRow:
    id: str
    enabled: bool
    schedule: str
    kinds: list[str]
    status: str
    interrupted: bool
    last_run: str | None
    last_result: str | None
    last_scheduled_for: str | None
    last_reason: str | None
    due: bool
    next_occurrence: str | None
    held: bool = False  # SPEC §9.1
    held_occurrences: int = 0
    hold_reason: str | None = None
    last_missed: dict[str, str] | None = None  # SPEC §9.2: the last miss since the last success
    #: SPEC §13: ``{by, at, note}`` of the pause while the routine is paused, else None
    paused: dict[str, Any] | None = None
    #: SPEC §13: ``retrying (2/3) at <time>`` while a failed attempt waits for its retry
    retrying: str | None = None
    #: the pending retry gives way to the next occurrence (``retrying`` says so): not retrying
    retry_gives_way: bool = False

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self)
        del data["hold_reason"], data["retry_gives_way"]
        return data

    @property
    def facts(self) -> health.Facts:
        """What the health rule of ``status`` and ``list`` looks at."""
        return health.Facts(enabled=self.enabled, status=self.status,
                            last_result=self.last_result, interrupted=self.interrupted,
                            held=self.held, missed=self.last_missed is not None,
                            paused=self.paused is not None,
                            retrying=self.retrying is not None and not self.retry_gives_way)

    @property
    def problems(self) -> list[str]:
        """Why this routine is unhealthy (empty: healthy); :mod:`health` decides."""
        return health.problems(self.facts)

    @property
    def state(self) -> str:
        """The one word ``status`` shows (:func:`health.state_of`)."""
        return health.state_of(self.facts)


@attrs.frozen(kw_only=True)
class StateProblem:
    """What is wrong with the routine state itself, not with a routine's last attempts: a
    ``routine-state.json`` in conflict with our ledger (every run refuses until it is
    resolved: SPEC §10 rule 4), or a cron cursor later than now."""

    routine_id: str | None  # None: the whole project
    message: str  # one line: what is wrong, where, and what to do


@attrs.frozen(kw_only=True)
class Listing:
    now: datetime
    rows: list[RoutineRow]
    lock: locks.LockInfo
    problems: list[str]  # invalid definitions
    state_problems: list[StateProblem] = attrs.field(factory=list)

    def state_problems_of(self, routine_ids: Collection[str] = ()) -> list[StateProblem]:
        """The routine state's problems of ``routine_ids`` and of the whole project (a
        conflict refuses every run); all of them when no id is given."""
        return [p for p in self.state_problems
                if not routine_ids or p.routine_id is None or p.routine_id in routine_ids]

    def problem_texts(self, routine_ids: Collection[str] = ()) -> list[str]:
        """The ``problems`` of ``list --json``, ``status --json`` and the report: invalid
        definitions, then :meth:`state_problems_of` ``routine_ids``."""
        return [*self.problems, *(p.message for p in self.state_problems_of(routine_ids))]

    @property
    def unhealthy(self) -> list[RoutineRow]:
        """The routines the health rule counts, in listing order."""
        return [row for row in self.rows if row.problems]

    @property
    def exit_code(self) -> int:
        """1 when a definition is invalid, the routine state has a problem or any enabled
        routine is unhealthy, else 0: the health check ``list`` and ``status`` share."""
        bad = self.problems or self.state_problems or self.unhealthy
        return EXIT_FAILURE if bad else EXIT_OK


def list_routines(
    paths: ProjectPaths, *, now: datetime | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Listing:
    """Every valid routine with its status, due-ness and next occurrence; writes nothing.

    An attempt is called interrupted only when the ledger, read again after its runner was
    found gone, still has it open: a run that ended its attempt and exited between the first
    read and that check is no crash, and the listing is then made again from the new state."""
    for _ in range(_LIST_TRIES - 1):
        shown, opened = _list_once(paths, now=now, clock=clock)
        gone = {row.id: opened.get(row.id) for row in shown.rows if row.interrupted}
        if not gone or still_open(paths, gone):
            return shown
    return _list_once(paths, now=now, clock=clock)[0]


_LIST_TRIES = 3


def still_open(paths: ProjectPaths, attempts: Mapping[str, str | None]) -> bool:
    """Whether each routine's attempt in ``attempts`` (routine id -> attempt id) is still
    its open attempt in the routine state read now (a runner found gone records nothing
    more, so an attempt still open then was interrupted)."""
    states = routine_states(paths)[0]
    return all(attempt_id is not None and open_attempt_id(states.get(routine_id) or {})
               == attempt_id for routine_id, attempt_id in attempts.items())


def open_attempt_id(state: Mapping[str, Any]) -> str | None:
    """The id of the routine's open attempt in its state entry (None: none open)."""
    found = (state.get("open_attempt") or {}).get("attempt_id")
    return found if isinstance(found, str) else None


def _list_once(
    paths: ProjectPaths, *, now: datetime | None, clock: Callable[[], datetime] | None,
) -> tuple[Listing, dict[str, str | None]]:
    """:func:`list_routines` from one read of the routine state and the lock, with the open
    attempt of each routine in that read."""
    the_now, wall = instants(now, clock)
    routines, conflicts = routine_states(paths)
    # The lock is read right after the view, as a run would see them: an attempt the view
    # shows open while the lock is free is interrupted.
    lock_status = locks.status_soon(paths.routine_locks_dir, now=wall, project=paths.project_id)
    defs = definitions.load_definitions(paths)
    states: list[Mapping[str, Any]] = [routines.get(r.id) or {} for r in defs.routines]
    when = [_remembered(defs.cache, r, state, the_now) or _when(r, state, the_now)
            for r, state in zip(defs.routines, states, strict=True)]
    lock = lock_status()
    rows = [_row(r, state, the_now, lock.held, *due_next)
            for r, state, due_next in zip(defs.routines, states, when, strict=True)]
    rows = [_with_retry(paths, r, state, row, the_now)
            for r, state, row in zip(defs.routines, states, rows, strict=True)]
    shown = Listing(now=the_now, rows=rows, lock=lock, problems=[str(p) for p in defs.errors],
                    state_problems=state_problems(defs.routines, states, conflicts,
                                                  max(the_now, wall)))
    return shown, {r.id: open_attempt_id(state) for r, state in zip(defs.routines, states,
                                                                      strict=True)}


def instants(
    now: datetime | None, clock: Callable[[], datetime] | None = None,
) -> tuple[datetime, datetime]:
    """(the time asked about, the clock's time), both UTC: ``now`` when given, else the
    clock (``clock`` or the wall clock). :func:`state_problems` judges at the later of them,
    so a replay of the past flags nothing the clock would not."""
    wall = to_utc((clock or (lambda: datetime.now(UTC)))())
    return (to_utc(now) if now is not None else wall), wall


def state_problems(
    routines: Sequence[Routine], states: Sequence[Mapping[str, Any]], conflicts: Sequence[str],
    now: datetime,
) -> list[StateProblem]:
    """What is wrong with the routine state (:class:`StateProblem`) of ``routines``, given
    their entries and the conflicts :func:`routine_states` found, at ``now`` (the later of the
    clock and the time asked about): what ``list``, ``status``, ``next`` and the report say."""
    found = [StateProblem(routine_id=None, message=f"{c} (until then `run` refuses)")
             for c in conflicts]
    return found + _future_cursors(routines, states, now)


def _future_cursors(
    routines: Sequence[Routine], states: Sequence[Mapping[str, Any]], now: datetime,
) -> list[StateProblem]:
    """Cron routines whose cursor (:func:`schedule.cron_cursor`: ``last_scheduled_for``, or
    the occurrence last accounted for) is later than ``now`` (the later of the clock and the
    time asked about, so a replay of the past flags nothing): no occurrence up to it is due,
    and none is ever selected twice, so the cursor never moves back."""
    found = []
    for routine, state in zip(routines, states, strict=True):
        cursor = schedule.cron_cursor(state.get("last_scheduled_for"),
                                      state.get("last_accounted_for"))
        if routine.trigger is None or cursor is None or cursor <= now:
            continue
        found.append(StateProblem(routine_id=routine.id, message=(
            f"{routine.id}: its cron cursor {format_ms(cursor)} is later than now "
            f"({format_s(now)}): no occurrence runs until after it, and no command moves a "
            f"cursor back; `run --id {routine.id}` runs it now (the cursor stays), or leave "
            "it to resume after that instant")))
    return found


def _with_retry(
    paths: ProjectPaths, routine: Routine, state: Mapping[str, Any], row: RoutineRow,
    now: datetime,
) -> RoutineRow:
    """The row with the retry its failed last attempt waits for (SPEC §13), if any, told as
    ``next`` tells it: one that gives way to the next occurrence never runs."""
    if routine.policy.retry is None:
        return row
    from specdojo_routine.app import retry  # only for routines with policy.retry

    outlook = retry.outlook(paths, routine, state, now)
    return row if outlook is None else attrs.evolve(
        row, retrying=outlook.label, retry_gives_way=outlook.gives_way,
        due=row.due or outlook.starts_now(now))  # run --due starts a due retry too


def routine_states(paths: ProjectPaths) -> tuple[Mapping[str, Any], list[str]]:
    """The entries of the routine view, with what another tool wrote there imported in memory
    (writes nothing), and the conflicts that keep the rest out (SPEC §10 rules 3, 4). A
    project that never ran, by us or by another tool, has neither the ledger nor the view:
    nothing to fold or import, and the ledger's code is not loaded."""
    if _absent(paths.routine_ledger) and _absent(paths.routine_state):
        return {}, []
    from specdojo_routine.store.ledger import adopt

    plan = adopt.plan_routine_imports(paths)
    return plan.view.routines, list(plan.conflicts)


def _absent(path: Path) -> bool:
    """Whether nothing is at ``path``: only "no such file" says so. A path that cannot be
    looked at (a directory without permission) is not taken for an empty project: the
    ledger's reader then says what is wrong."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        pass
    return False


def _remembered(
    cache: DefinitionCache | None, routine: Routine, state: Mapping[str, Any], now: datetime,
) -> tuple[bool, str | None] | None:
    """:func:`_when` from the next occurrence after the routine's cursor that a run
    remembered in the definitions cache, when that occurrence lies after ``now``: then no
    occurrence is due (:func:`schedule.none_due`) and it is the next one. None: work it out."""
    cursor, trigger = state.get("last_scheduled_for"), routine.trigger
    if cache is None or trigger is None or not routine.enabled or not isinstance(cursor, str):
        return None
    if try_parse_instant(cursor) is None:
        return None
    found = cache.next_after(trigger.cron, trigger.timezone, cursor)
    if found == UNKNOWN:
        return None
    at = try_parse_instant(found) if found is not None else None
    if found is not None and (at is None or at <= now):
        return None
    return False, (format_ms(at) if at is not None else None)


def _when(routine: Routine, state: Mapping[str, Any], now: datetime) -> tuple[bool, str | None]:
    """(whether ``run --due`` would start one of its occurrences now, the next occurrence) of
    a routine."""
    try:  # the run's own decision: not only recorded as paused, held or missed
        due = policy.starts_now(routine, state, now)
    except TooManyMissedOccurrences:
        due = True
    if not routine.enabled:
        next_text = None  # a disabled routine has no next occurrence until it is enabled
    elif routine.trigger is not None:
        # after the clock went back, nothing up to the cursor runs again: the next
        # occurrence that will really run is the first one after both
        last = schedule.cron_cursor(state.get("last_scheduled_for"),
                                    state.get("last_accounted_for"))
        nxt = schedule.next_occurrence(routine, now=max(now, last) if last else now)
        next_text = format_ms(nxt) if nxt else None
    else:  # an overdue interval routine is due now (unless the run will record it paused)
        nxt = policy.interval_next(routine, state, now)
        next_text = format_s(nxt) if nxt is not None else None
    return due, next_text


def _row(
    routine: Routine, state: Mapping[str, Any], now: datetime, lock_held: bool, due: bool,
    next_text: str | None,
) -> RoutineRow:
    status = state.get("status") or "never"
    interrupted = status == "running" and runner_gone(state, lock_held)
    return RoutineRow(
        id=routine.id, enabled=routine.enabled, schedule=routine.schedule_text,
        kinds=[a.kind for a in routine.actions], status=status, interrupted=interrupted,
        last_run=state.get("last_run"), last_result=state.get("last_result"),
        last_scheduled_for=state.get("last_scheduled_for"), last_reason=state.get("last_reason"),
        due=(due and routine.enabled and status != "running" and not policy.is_held(state)
             and not pausefold.is_paused(state)),
        next_occurrence=next_text, held=policy.is_held(state),
        held_occurrences=len(state.get("held_occurrences") or []),
        hold_reason=(policy.held_reason(state.get("hold_attempt_id"))
                     if policy.is_held(state) else None),
        last_missed=state.get("last_missed"),
        paused=({k: state["pause"][k] for k in ("by", "at", "note")}
                if pausefold.is_paused(state) else None),
    )


def runner_gone(state: Mapping[str, Any], lock_held: bool) -> bool:
    """Whether the open attempt's runner is gone (SPEC §6.5). A recorded owner on this host
    answers for itself: alive, the attempt runs (the living are never robbed); dead, it is
    interrupted even while another run holds the lock, as that run did not start it. An owner
    that cannot be checked (another host, none recorded) runs while the lock is held."""
    owner = (state.get("open_attempt") or {}).get("owner") or {}
    if owner.get("pid") is None:
        return not lock_held
    alive = locks.owner_alive(owner.get("pid"), owner.get("host"), owner.get("start"))
    return alive is False or (alive is None and not lock_held)
