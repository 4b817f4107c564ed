"""Operator controls (SPEC §13): ``pause`` / ``resume``, ``resolve --attempt`` and ``stop``.

Every control is an event in the routine ledger with who and why, recorded under the routine
lock (busy: exit 75) after the foreign state is imported, like ``resolve`` and ``release``. A
wrong target (resuming a routine that is not paused, stopping one with nothing running,
overriding an attempt that is still open or unknown) is refused before anything is recorded.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime

from specdojo_routine.app import handlers, run_attempt, run_select
from specdojo_routine.app.run_owner import _is_open
from specdojo_routine.app.viewwarn import Warn, refresh_after
from specdojo_routine.app.who import operator_name
from specdojo_routine.core import decide, pausefold, routine_events
from specdojo_routine.core.errors import RoutineError, UsageError
from specdojo_routine.core.model import Result
from specdojo_routine.core.timefmt import format_ms, to_utc
from specdojo_routine.execute import stop as stop_signals
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger import adopt, views
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.locks import routine as locks
from specdojo_routine.store.locks import stoprequest

Clock = Callable[[], datetime]


def _note(note: str | None, command: str) -> str | None:
    if note is not None and not note.strip():
        raise UsageError(f"{command} --note must not be blank (leave it out for no note)")
    return note


def _targets(defs: definitions.Definitions, routine_id: str | None) -> list[str]:
    """The routine asked for (an unknown id: exit 2 with "did you mean"), or every valid one."""
    return [r.id for r in run_select._routines_to_consider(defs, routine_id)]


def set_paused(
    paths: ProjectPaths, routine_id: str | None, *, paused: bool, note: str | None = None,
    by: str | None = None, now: datetime | None = None, clock: Clock | None = None,
    warn: Warn | None = None,
) -> list[str]:
    """``pause`` / ``resume`` one routine, or every routine when ``routine_id`` is None
    (``--all``: the ones not already in that state); returns the routines recorded.

    One routine already in the asked state, or ``--all`` with none to change, is refused
    (exit 1) and nothing is recorded. Once recorded it is done: a view that cannot be
    written afterwards is a warning to ``warn`` (:mod:`.viewwarn`), not a failure."""
    wall = clock or (lambda: datetime.now(UTC))
    command = "pause" if paused else "resume"
    who, text = operator_name(by), _note(note, command)
    defs = definitions.load_definitions(paths)
    wanted = _targets(defs, routine_id)
    with locks.routine_lock(paths.routine_locks_dir, clock=wall, project=paths.project_id):
        plan = adopt.import_routine_state(paths, wall)  # import first, under the lock (SPEC §10)
        log = ledger.Ledger(paths.routine_ledger, clock=wall)
        at = format_ms(to_utc(now if now is not None else wall()))
        ctx = run_attempt._Context(paths=paths, defs=defs, now=to_utc(wall()), env=os.environ,
                                echo=None, job_runner=None, append=log.append)
        view = handlers._register(ctx, defs, views.refresh_routine_view(paths, plan.proof))
        todo = [rid for rid in wanted if pausefold.is_paused(view.routines.get(rid)) != paused]
        if not todo:
            if routine_id is None:  # --all
                raise RoutineError("every routine is already paused; nothing to pause" if paused
                                   else "no routine is paused; nothing to resume")
            raise RoutineError(f"{routine_id} is already paused; nothing to pause" if paused
                               else f"{routine_id} is not paused; nothing to resume")
        for rid in todo:
            if paused:
                ctx.record(routine_events.RoutinePaused(routine_id=rid, note=text, paused_by=who,
                                                paused_at=at))
            else:
                ctx.record(routine_events.RoutineResumed(routine_id=rid, note=text, resumed_by=who,
                                                 resumed_at=at))
        refresh_after(paths, done=f"the {command} of {', '.join(todo)}", warn=warn)
    return todo


def _ended_attempts(paths: ProjectPaths, routine_id: str) -> tuple[set[str], set[str]]:
    """(the routine's attempts that started, those that ended or were resolved)."""
    started: set[str] = set()
    ended: set[str] = set()
    for _raw, event in ledger.read_lines(paths.routine_ledger):
        if event.get("routine_id") != routine_id:
            continue
        kind = event.get("type")
        if kind == "attempt_started":
            started.add(str(event.get("attempt_id")))
        elif kind in ("attempt_ended", "attempt_resolved"):
            ended.add(str(event.get("attempt_id")))
    return started, ended


def override(
    paths: ProjectPaths, routine_id: str, attempt_id: str, *, result: str, note: str,
    by: str | None = None, clock: Clock | None = None, warn: Warn | None = None,
) -> str:
    """``resolve ID --attempt ATTEMPT_ID``: change an ended attempt's outcome (SPEC §13), as
    ``attempt_resolved`` with ``overrides: true``; returns the attempt id. A view that
    cannot be written once it is recorded is a warning to ``warn`` (:mod:`.viewwarn`)."""
    wall = clock or (lambda: datetime.now(UTC))
    who = operator_name(by)
    if not note.strip():
        raise UsageError("resolve needs a --note saying what was checked (got an empty note)")
    from specdojo_routine.app.recent import check_routine_id

    check_routine_id(paths, routine_id)  # a typo: exit 2 with did you mean (SPEC §14)
    with locks.routine_lock(paths.routine_locks_dir, clock=wall, project=paths.project_id):
        plan = adopt.import_routine_state(paths, wall)
        log = ledger.Ledger(paths.routine_ledger, clock=wall)
        view = views.refresh_routine_view(paths, plan.proof)
        started, ended = _ended_attempts(paths, routine_id)
        state = view.routines.get(routine_id)
        if attempt_id not in started:
            raise RoutineError(f"routine {routine_id} has no attempt {attempt_id}; see "
                               f"`history {routine_id} --attempts`")
        if attempt_id not in ended:
            raise RoutineError(f"attempt {attempt_id} of {routine_id} is still open; resolve "
                               f"it without --attempt (nothing was recorded)")
        if state is not None and _is_open(state):
            raise RoutineError(f"routine {routine_id} has an open attempt "
                               f"{state['attempt_id']}; resolve it first")
        outcome = Result(result)
        log.append(routine_events.AttemptResolved(
            routine_id=routine_id, attempt_id=attempt_id,
            transition=decide.END_TRANSITIONS[outcome], result=outcome.value, note=note,
            resolved_by=who, overrides=True))
        refresh_after(paths, done=f"the override of attempt {attempt_id}", warn=warn)
    return attempt_id


#: How long ``stop`` waits for the runner to record the attempt's end (SPEC §13).
STOP_WAIT_S = 30.0


def _ended(paths: ProjectPaths, routine_id: str, attempt_id: str) -> bool:
    return attempt_id in _ended_attempts(paths, routine_id)[1]


def stop(
    paths: ProjectPaths, routine_id: str, *, note: str | None = None, by: str | None = None,
    wait_s: float = STOP_WAIT_S,
) -> str:
    """``stop ID``: SIGTERM to the runner of the routine's open attempt, which then records
    it as stopped (SPEC §6.5); returns the attempt id once its end is recorded.

    The runner is signalled only when it is proven to be the attempt's owner: on this host,
    alive with the start time the attempt recorded (a reused pid is another process), and
    holding the routine lock. A dead runner is refused (nothing is recorded: ``resolve`` is
    for that), as is a routine with no open attempt or whose end is not recorded in time.
    A second ``stop`` while one is under way keeps the first one's name and note and, within
    the action's grace, sends nothing (a second SIGTERM would cut that grace short); it waits
    for the end too."""
    from specdojo_routine.app.recent import check_routine_id

    who, text = operator_name(by), _note(note, "stop")
    check_routine_id(paths, routine_id)
    view = adopt.plan_routine_imports(paths).view  # read only: the runner holds the lock
    state = view.routines.get(routine_id)
    opened = state.get("open_attempt") if state is not None else None
    if state is None or opened is None or not _is_open(state):
        status = state["status"] if state is not None else "never"
        raise RoutineError(f"routine {routine_id} has no running attempt to stop "
                           f"(status: {status}); nothing was recorded")
    attempt_id, owner = opened["attempt_id"], opened["owner"]
    pid, host, start = owner["pid"], owner["host"], owner.get("start")
    start = _check_runner(paths, routine_id, attempt_id, pid, host, start)
    locks_dir = paths.routine_locks_dir
    if stoprequest.leave(locks_dir, attempt_id, by=who, note=text) or stoprequest.older_than(
            locks_dir, attempt_id, stop_signals.GRACE_S):
        _signal_verified(pid, start, routine_id, attempt_id)
    # else a stop is under way, within its grace: wait for its end, signal nothing more
    _wait_for_end(paths, routine_id, attempt_id, pid, wait_s)
    return str(attempt_id)


def _wait_for_end(
    paths: ProjectPaths, routine_id: str, attempt_id: str, pid: int, wait_s: float,
) -> None:
    """Wait until the stopped attempt's end is recorded; refused after ``wait_s`` seconds."""
    deadline = time.monotonic() + wait_s
    while not _ended(paths, routine_id, attempt_id):
        if time.monotonic() > deadline:
            raise RoutineError(
                f"attempt {attempt_id} of {routine_id}: pid {pid} was sent SIGTERM but has not "
                f"recorded its end within {wait_s:g}s; check it with `status {routine_id}`")
        time.sleep(0.05)


def _check_runner(
    paths: ProjectPaths, routine_id: str, attempt_id: str, pid: object, host: object,
    start: object,
) -> int:
    """Refuse (nothing sent) unless ``pid`` is provably the live runner of the attempt;
    returns its recorded start time."""
    where = f"attempt {attempt_id} of {routine_id}"
    if host != locks.this_host():
        raise RoutineError(f"{where} runs on host {host}, not here: stop it there")
    if type(pid) is not int or type(start) is not int:
        raise RoutineError(f"{where} did not record its runner's start time, so its pid "
                           f"cannot be verified; nothing was sent")
    if locks.owner_alive(pid, host, start) is not True:
        from specdojo_routine.execute import groups

        pgid = groups.action_still_running(paths, attempt_id)
        if pgid is not None:  # resolve refuses while it runs (SPEC §6.5): say what to do
            raise RoutineError(
                f"{where}: its runner (pid {pid}) is dead, but its action's process group "
                f"{pgid} still runs; nothing was sent or recorded; end it with `kill -TERM -- "
                f"-{pgid}` (or wait for it), then record what happened with `resolve "
                f"{routine_id} --result success|failure|skipped --note TEXT`")
        raise RoutineError(
            f"{where}: its runner (pid {pid}) is dead, so there is nothing to stop and nothing "
            f"was recorded; record what happened with `resolve {routine_id} --result "
            f"success|failure|skipped --note TEXT`")
    lock = locks.routine_lock_status(paths.routine_locks_dir, now=datetime.now(UTC),
                                     project=paths.project_id)
    if not lock.held or lock.pid != pid:
        raise RoutineError(f"{where}: pid {pid} does not hold the routine lock (holder: "
                           f"{lock.pid}), so it is not proven to be the runner; nothing was "
                           "sent")
    return start


def _signal_verified(pid: int, start: int, routine_id: str, attempt_id: str) -> None:
    """SIGTERM to ``pid`` through a pidfd opened and re-checked first, so the signal cannot
    reach a process that took the pid after the check."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        raise RoutineError(f"attempt {attempt_id} of {routine_id}: its runner (pid {pid}) "
                           f"ended just now; see `status {routine_id}`") from None
    try:
        if locks.process_start(pid) != start:
            raise RoutineError(f"attempt {attempt_id} of {routine_id}: pid {pid} is another "
                               "process now; nothing was sent")
        signal.pidfd_send_signal(fd, signal.SIGTERM)
    finally:
        os.close(fd)
