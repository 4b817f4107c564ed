"""``import`` and ``fold``: adopting another tool's files under our locks (SPEC §10).

Recording commands import first, under the locks they hold
(:func:`specdojo_routine.store.ledger.adopt.import_routine_state`);
``import`` does only that and reports; ``fold`` imports, then rebuilds every view except the
files a conflict keeps; ``fold --check`` compares each view with the fold after an in-memory
import, so a foreign file that would import cleanly is not drift.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs

from specdojo_routine.core import adopt as rules
from specdojo_routine.core.job_events import CheckpointImported, RunImported
from specdojo_routine.core.jobfold import job_state_document
from specdojo_routine.store.config import ProjectPaths, read_regular
from specdojo_routine.store.ledger import adopt, documents, foreign, views
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.locks import execlock
from specdojo_routine.store.locks import routine as locks

FOLD_ACTOR = "specdojo_routine fold"
IMPORT_ACTOR = "specdojo_routine import"
Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@attrs.frozen(kw_only=True, repr=False)
class ImportReport:
    """What ``import`` found (and, unless ``dry_run``, appended)."""

    dry_run: bool
    routine_states: int
    job_runs: int
    checkpoints: int
    conflicts: list[str]
    #: upstream run lines whose result the fold does not take (shown; not conflicts)
    warnings: list[str] = attrs.field(factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.conflicts else 0

    def summary(self) -> str:
        def n(count: int, one: str, many: str) -> str:
            return f"{count} {one if count == 1 else many}"

        verb = "would import" if self.dry_run else "imported"
        return (f"{verb} {n(self.routine_states, 'routine state', 'routine states')}, "
                f"{n(self.job_runs, 'Job Run', 'Job Runs')}, "
                f"{n(self.checkpoints, 'checkpoint', 'checkpoints')}; "
                f"{n(len(self.conflicts), 'conflict', 'conflicts')}")

    def to_json(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "routine_states": self.routine_states,
                "job_runs": self.job_runs, "checkpoints": self.checkpoints,
                "conflicts": self.conflicts, "warnings": self.warnings}


@contextlib.contextmanager
def _locks(paths: ProjectPaths, actor: str, clock: Clock) -> Iterator[None]:
    """The routine lock, and the exec lock when Job Runs exist (busy: exit 75)."""
    with contextlib.ExitStack() as held:
        held.enter_context(locks.routine_lock(paths.routine_locks_dir, clock=clock,
                                              project=paths.project_id))
        if paths.runs_dir.is_dir() or paths.job_state.exists():
            held.enter_context(execlock.exec_lock(paths.exec_locks_dir, actor=actor))
        yield


def _report(
    paths: ProjectPaths, routine: adopt.RoutineImports, jobs: adopt.JobImports, *, dry_run: bool
) -> ImportReport:
    return ImportReport(dry_run=dry_run, routine_states=len(routine.events),
                        job_runs=jobs.count(RunImported),
                        checkpoints=jobs.count(CheckpointImported),
                        conflicts=[*routine.conflicts, *jobs.conflicts.values()],
                        warnings=foreign.upstream_line_warnings(paths))


def import_project(
    paths: ProjectPaths, *, dry_run: bool = False, clock: Clock | None = None
) -> ImportReport:
    """``import [--dry-run]``: import every foreign file; dry-run reads without any lock."""
    wall = clock or _utc_now
    if dry_run:
        return _report(paths, adopt.plan_routine_imports(paths), adopt.plan_job_imports(paths),
                       dry_run=True)
    with _locks(paths, IMPORT_ACTOR, wall):
        routine, jobs = _import_all(paths, wall)
    return _report(paths, routine, jobs, dry_run=False)


def _import_all(paths: ProjectPaths, clock: Clock) -> tuple[adopt.RoutineImports,
                                                            adopt.JobImports]:
    routine = adopt.plan_routine_imports(paths)
    adopt.apply_routine_imports(paths, routine, clock)
    jobs = adopt.plan_job_imports(paths)
    adopt.apply_job_imports(paths, jobs, clock)
    return routine, jobs


@attrs.frozen(kw_only=True, repr=False)
class FoldReport:
    drifted: list[str]  # fold: the views rewritten (by the import or the fold); --check: differ
    moved: list[str]
    conflicts: list[str]
    warnings: list[str] = attrs.field(factory=list)  # as ImportReport's


def fold(
    paths: ProjectPaths, *, check: bool = False, repair: bool = False,
    clock: Clock | None = None,
) -> FoldReport:
    """``fold [--check] [--repair]`` with the import first (SPEC §10 rule 3)."""
    if check:
        return _check(paths)
    wall = clock or _utc_now
    with _locks(paths, FOLD_ACTOR, wall):
        moved = []
        if repair:
            ledgers = [paths.routine_ledger, *sorted(paths.runs_dir.glob("*.jsonl"))]
            moved = [paths.rel(m) for m in map(ledger.repair, ledgers) if m is not None]
        before = _view_stamps(paths)
        routine, jobs = _import_all(paths, wall)
        imported = [paths.rel(p) for p, s in _view_stamps(paths).items() if s != before.get(p)]
        keep = jobs.keep(paths) + ([paths.routine_state] if routine.conflicts else [])
        drifted = views.fold_all(paths, keep=keep, scratch=routine.proof)
    conflicts = [*routine.conflicts, *jobs.conflicts.values()]
    rewritten = imported + [d for d in drifted if d not in imported]
    return FoldReport(drifted=rewritten, moved=moved, conflicts=conflicts,
                      warnings=foreign.upstream_line_warnings(paths))


def _view_stamps(paths: ProjectPaths) -> dict[Path, tuple[int, int, int, int]]:
    """Every view file there is, with its identity, size and modification time: a view the
    import republishes is renamed into place (a new inode), so comparing two of these tells
    which views the import rewrote - the fold after it finds those already up to date."""
    runs = sorted(paths.runs_dir.glob("*.json")) if paths.runs_dir.is_dir() else []
    stamps = {}
    for path in (paths.routine_state, paths.job_state, *runs):
        with contextlib.suppress(FileNotFoundError):
            st = os.stat(path)
            stamps[path] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    return stamps


def _published(path: Path) -> bytes | None:
    """The bytes of a view file, or None when there is none or it is not a regular file (a
    FIFO there must not hang the check)."""
    try:
        return read_regular(path)
    except OSError:  # missing, or not a regular file (NotRegularFile)
        return None


#: Pauses (seconds) before the views that differed are compared again (see :func:`_check`).
RECHECK_PAUSES = (0.1, 0.5)


def _pause(seconds: float) -> None:
    time.sleep(seconds)


def _check(paths: ProjectPaths) -> FoldReport:
    """:func:`_check_once`, with drift only where it stays: ``fold --check`` takes no lock,
    and a run appends a line and publishes its views a moment later, so a check that read
    between the two would call a view drift that is gone then. A view is drift only when it
    differs in every look: looked at again at once when no run holds a lock (a run that
    released its lock has published), else after each pause of :data:`RECHECK_PAUSES`; a
    view a killed writer left behind its ledger stays different and is named."""
    report = _check_once(paths)
    for seconds in RECHECK_PAUSES:
        if not report.drifted:
            break
        writing = _writing(paths)
        if writing:
            _pause(seconds)
        again = _check_once(paths)
        report = attrs.evolve(again, drifted=[d for d in again.drifted if d in report.drifted])
        if not writing:
            break
    return report


def _writing(paths: ProjectPaths) -> bool:
    """Whether a run may be between an append and its publish: the routine lock or the
    project's exec lock is held (read only: nothing is taken)."""
    held = locks.routine_lock_status(paths.routine_locks_dir, now=datetime.now(UTC),
                                     project=paths.project_id).held
    return held or execlock.live_holder(paths.exec_locks_dir) is not None


def _check_once(paths: ProjectPaths) -> FoldReport:
    """Drift after an in-memory import: a foreign file that would import cleanly is not
    drift - one whose facts would be imported without a conflict, or one that holds nothing
    our fold does not hold (upstream's own copy of the facts: its shape, our values, the
    entries it cannot read left out)."""
    routine = adopt.plan_routine_imports(paths)
    jobs = adopt.plan_job_imports(paths)
    clean = set()
    state = _document(paths.routine_state)
    if routine.foreign and not routine.conflicts and (routine.events or (
            state is not None and rules.holds_nothing_new(state, routine.view.document,
                                                          "routines"))):
        clean.add(paths.rel(paths.routine_state))
    clean |= {paths.rel(paths.run_view(r)) for r in jobs.events if r not in jobs.conflicts}
    expected_jobs = job_state_document(jobs.jobs())
    published_jobs = _document(paths.job_state)
    imports_checkpoints = any(isinstance(e, CheckpointImported)
                              for events in jobs.events.values() for e in events)
    if "job-state" not in jobs.conflicts and published_jobs is not None and (
            imports_checkpoints or rules.holds_nothing_new(published_jobs, expected_jobs,
                                                           "jobs")):
        clean.add(paths.rel(paths.job_state))
    drifted = [d for d in views.fold_all(paths, check=True) if d not in clean]
    return FoldReport(drifted=drifted, moved=[],
                      conflicts=[*routine.conflicts, *jobs.conflicts.values()],
                      warnings=foreign.upstream_line_warnings(paths))


def _document(path: Path) -> Any:
    """The JSON document of a view file (None: none there, not regular, not JSON)."""
    data = _published(path)
    return None if data is None else documents.parse(data)
