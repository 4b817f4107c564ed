"""The routine commands besides ``run``: ``resolve``, ``history`` and ``fold`` (SPEC §5, §6.5).

Moved out of :mod:`.handlers` (which re-exports them).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from specdojo_routine.app.run_owner import _is_open, refuse_if_owner_lives
from specdojo_routine.app.viewwarn import Warn, refresh_after
from specdojo_routine.app.who import operator_name
from specdojo_routine.core import decide, errors
from specdojo_routine.core.errors import RoutineError, UsageError
from specdojo_routine.core.model import Result
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.ledger import adopt, views
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.locks import routine as locks


def resolve(
    paths: ProjectPaths, routine_id: str, *, result: str, note: str, by: str | None = None,
    clock: Callable[[], datetime] | None = None, warn: Warn | None = None,
) -> str:
    """Record an operator's outcome for an interrupted attempt (SPEC §6.5); returns its id.
    A view that cannot be written once it is recorded is a warning to ``warn``
    (:mod:`.viewwarn`), not a failure."""
    from specdojo_routine.core import routine_events

    wall = clock or (lambda: datetime.now(UTC))
    who = operator_name(by)
    if not note.strip():
        raise UsageError("resolve needs a --note saying what was checked (got an empty note)")
    from specdojo_routine.app.recent import check_routine_id

    check_routine_id(paths, routine_id)  # a typo: exit 2 with did you mean (SPEC §14)
    with locks.routine_lock(paths.routine_locks_dir, clock=wall, project=paths.project_id):
        plan = adopt.import_routine_state(paths, wall)  # import first, under the lock (SPEC §10)
        log = ledger.Ledger(paths.routine_ledger, clock=wall)  # before the fold: pinned to it
        view = views.refresh_routine_view(paths, plan.proof)
        refuse_if_owner_lives(view, paths)
        state = view.routines.get(routine_id)
        if state is None or not _is_open(state):
            status = state.get("status", "unknown") if state is not None else "never"
            raise RoutineError(
                f"routine {routine_id} has no open attempt to resolve (status: {status})")
        assert state is not None
        outcome = Result(result)
        attempt_id = str(state.get("attempt_id"))
        from specdojo_routine.app import job_resolve
        from specdojo_routine.store.definitions import load as definitions

        routine = definitions.load_definitions(paths).routine(routine_id)
        runs = job_resolve.attempt_runs(paths, routine, state)
        _refuse_if_action_lives(paths, routine_id, attempt_id, runs)
        log.append(routine_events.AttemptResolved(
            routine_id=routine_id, attempt_id=attempt_id,
            transition=decide.END_TRANSITIONS[outcome], result=outcome.value, note=note,
            resolved_by=who))
        refresh_after(paths, done=f"the resolve of attempt {attempt_id}", warn=warn)
        # one decision covers both (SPEC §7.3): its interrupted Job Runs get the same outcome
        job_resolve.resolve_started_by(paths, runs, result=outcome.value, note=note, who=who,
                                       clock=wall)
        return attempt_id


def _refuse_if_action_lives(
    paths: ProjectPaths, routine_id: str, attempt_id: str, runs: list[str],
) -> None:
    """The runner is gone, but what its attempt started may not be (SPEC §6.5): closing the
    attempt while that still runs would let its work be done twice."""
    from specdojo_routine.app import job_resolve

    live = job_resolve.outlived(paths, attempt_id, runs)
    if live is not None:
        what, pgid = live
        raise errors.LockBusy(
            f"attempt {attempt_id} of {routine_id}: {what} is still running (process "
            f"group {pgid} outlived its runner); wait for it to end or stop it "
            f"(kill -TERM -- -{pgid}), then resolve; nothing was recorded")


def history(
    paths: ProjectPaths, routine_id: str | None = None, limit: int | None = None
) -> list[tuple[bytes, dict[str, Any]]]:
    """Routine ledger events, oldest first: (the line exactly as stored, the upgraded event).
    An unknown event type is a :class:`CorruptLedgerError` naming the file and line (SPEC §5)."""
    from specdojo_routine.core import routine_events

    lines: list[tuple[bytes, dict[str, Any]]] = []
    path = paths.routine_ledger
    for line_no, (raw, event) in enumerate(ledger.read_lines(path), 1):
        if (kind := event.get("type")) not in routine_events.ROUTINE_EVENT_TYPES:
            reason = f"unknown routine event type {kind!r}"
            raise errors.CorruptLedgerError(str(path), line_no, reason)
        if routine_id is None or event.get("routine_id") == routine_id:
            lines.append((raw, event))
    return lines[-limit:] if limit else lines


def fold(
    paths: ProjectPaths, *, check: bool = False, repair: bool = False,
) -> tuple[list[str], list[str]]:
    """``fold``: rebuild every view; returns (views that differed, torn fragments moved aside).

    ``check`` only reads. Otherwise the routine lock and, when Job Runs exist, the project exec
    lock are held, so a concurrent run cannot append between the fold and its publication
    (busy: exit 75). Foreign files are imported first (SPEC §10); a conflict raises
    :class:`adopt.ImportConflict` after every other view was rebuilt."""
    from specdojo_routine.app.adoption import fold as fold_adopting

    report = fold_adopting(paths, check=check, repair=repair)
    if report.conflicts:
        raise adopt.ImportConflict("; ".join(report.conflicts))
    return report.drifted, report.moved
