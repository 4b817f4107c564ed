"""The embedding API: what other SpecDojo tooling calls (re-exported by the package).

Each function is the library form of a CLI command and takes the project's
:class:`~specdojo_routine.store.config.ProjectPaths` (see :func:`load_project`). Each checks its
arguments first and raises only the package's errors (:mod:`specdojo_routine.app.calls`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from specdojo_routine.app import handlers, jobs, listing, run_report
from specdojo_routine.app.calls import library_call
from specdojo_routine.core.errors import UsageError
from specdojo_routine.core.jobmodel import InputValue
from specdojo_routine.core.jobplan import JobRunOutcome, Trigger
from specdojo_routine.execute.agent import AgentExecutor
from specdojo_routine.store.config import ProjectPaths, resolve_project
from specdojo_routine.store.definitions.load import Definitions, load_definitions
from specdojo_routine.store.ledger import views

if TYPE_CHECKING:
    from specdojo_routine.app.prune import PruneReport
    from specdojo_routine.core.events import Event
    from specdojo_routine.store.ledger.codec import Recorded


@library_call
def load_project(root: Path | str | None = None, project: str | None = None) -> ProjectPaths:
    """Find the project: ``root`` (or a walk up from the cwd to
    ``.specdojo/specdojo.config.json``), then ``project``, ``$SPECDOJO_PROJECT``,
    ``current_project`` or the first project."""
    return resolve_project(Path(root) if root is not None else None, project)


@library_call
def validate(paths: ProjectPaths) -> Definitions:
    """Every routine and Job Definition, validated; problems are in ``.problems``."""
    return load_definitions(paths)


@library_call
def run_due(
    paths: ProjectPaths, *, now: datetime | None = None, dry_run: bool = False,
    agent: AgentExecutor | None = None, env: Mapping[str, str] | None = None,
    echo: TextIO | None = None,
) -> run_report.RunReport:
    """``run --due``: run every due occurrence (raises :class:`~specdojo_routine.LockBusy`
    when another run holds the routine lock). ``report.exit_code`` is the CLI's exit code."""
    return handlers.run(paths, dry_run=dry_run, now=now, env=env, echo=echo,
                        job_runner=jobs.RoutineJobRunner(agent=agent, env=env))


@library_call
def run_routine(
    paths: ProjectPaths, routine_id: str, *, now: datetime | None = None,
    dry_run: bool = False, agent: AgentExecutor | None = None,
    env: Mapping[str, str] | None = None, echo: TextIO | None = None,
) -> run_report.RunReport:
    """``run --id``: run one routine now, even when disabled or not due."""
    return handlers.run(paths, routine_id=routine_id, dry_run=dry_run, now=now, env=env,
                        echo=echo, job_runner=jobs.RoutineJobRunner(agent=agent, env=env))


@library_call
def list_routines(paths: ProjectPaths, *, now: datetime | None = None) -> listing.Listing:
    """``list``: status, due-ness and next occurrence of every routine; writes nothing."""
    return listing.list_routines(paths, now=now)


@library_call
def resolve(
    paths: ProjectPaths, routine_id: str, *, result: str, note: str, by: str | None = None
) -> str:
    """``resolve``: record the outcome of an interrupted attempt; returns the attempt id."""
    return handlers.resolve(paths, routine_id, result=result, note=note, by=by)


@library_call
def fold_views(paths: ProjectPaths, *, check: bool = False, repair: bool = False) -> list[str]:
    """``fold``: rebuild every view from the ledgers; with ``check`` write nothing and return
    the views that differ. Files another tool wrote are imported first (SPEC §10); a conflict
    raises :class:`~specdojo_routine.store.ledger.adopt.ImportConflict` (nothing overwritten)."""
    return handlers.fold(paths, check=check, repair=repair)[0]


@library_call
def history(
    paths: ProjectPaths, routine_id: str | None = None, *, limit: int | None = None
) -> list[dict[str, Any]]:
    """The routine ledger's events (upgraded to the current version), oldest first. An id
    that no definition and no ledger entry names is a :class:`~specdojo_routine.UsageError`
    (as ``history ID``), not an empty history."""
    if routine_id is not None:
        from specdojo_routine.app.recent import check_routine_id

        check_routine_id(paths, routine_id)
    return [event for _raw, event in handlers.history(paths, routine_id, limit)]


@library_call
def run_job(
    paths: ProjectPaths, job_id: str, inputs: Mapping[str, InputValue] | None = None, *,
    scheduled_at: datetime | None = None, trigger: Trigger = "manual",
    agent: AgentExecutor | None = None, env: Mapping[str, str] | None = None,
    echo: TextIO | None = None,
) -> JobRunOutcome:
    """``job run``: materialise (or find) the Job Run for these inputs and run one attempt."""
    defs = load_definitions(paths)
    return jobs.run_job(paths, defs, job_id, dict(inputs or {}),
                        scheduled_at=scheduled_at or datetime.now(UTC), trigger=trigger,
                        agent=agent, echo=echo, env=env)


@library_call
def release(
    paths: ProjectPaths, routine_id: str, *, run: str = "none", note: str | None = None,
    by: str | None = None, now: datetime | None = None, agent: AgentExecutor | None = None,
    env: Mapping[str, str] | None = None, echo: TextIO | None = None,
) -> tuple[list[str], run_report.RunReport]:
    """``release``: end a routine's hold (SPEC §9.1); returns (the held occurrences, what ran
    under ``run`` = ``none`` | ``latest`` | ``all``)."""
    from specdojo_routine.app import release as releasing

    return releasing.release(paths, routine_id, run=run, note=note, by=by,  # type: ignore[arg-type]
                             now=now, env=env, echo=echo,
                             job_runner=jobs.RoutineJobRunner(agent=agent, env=env))


@library_call
def backfill(
    paths: ProjectPaths, routine_id: str, *, start: datetime, end: datetime,
    dry_run: bool = False, now: datetime | None = None, agent: AgentExecutor | None = None,
    env: Mapping[str, str] | None = None, echo: TextIO | None = None,
) -> run_report.RunReport:
    """``run --id ID --from START --to END``: every occurrence in the range (SPEC §9.3)."""
    from specdojo_routine.app import release as releasing

    return releasing.backfill(paths, routine_id, start=start, end=end, dry_run=dry_run,
                              now=now, env=env, echo=echo,
                              job_runner=jobs.RoutineJobRunner(agent=agent, env=env))


@library_call
def upcoming(
    paths: ProjectPaths, routine_id: str, *, count: int = 5, now: datetime | None = None,
) -> list[dict[str, Any]]:
    """``next ID --json``'s occurrences: ``{local, utc, note, latest_start}`` (SPEC §9.4)."""
    from specdojo_routine.app import preview

    return [item.to_json() for item in preview.preview_routine(
        paths, routine_id, count=count, now=now)[1]]


@library_call
def prune(
    paths: ProjectPaths, *, keep_days: int | None = None, keep_runs: int | None = None,
    dry_run: bool = False, now: datetime | None = None, env: Mapping[str, str] | None = None,
) -> PruneReport:
    """``prune``: remove the evidence, plans and results of old ended Job Runs and routine
    attempts, each recorded as ``evidence_pruned`` before it goes (SPEC §15). ``keep_days`` and
    ``keep_runs`` default to the config's ``retention``; ``dry_run`` writes nothing and takes no
    lock. Raises :class:`~specdojo_routine.LockBusy` when a run holds a lock."""
    from specdojo_routine.app import prune as pruning

    return pruning.prune(paths, keep_days=keep_days, keep_runs=keep_runs, dry_run=dry_run,
                         now=now, env=env)


@library_call
def replay(*sources: Path | str | Iterable[Event | Recorded]) -> dict[str, Any]:
    """Fold ledger files and/or events into view documents in memory
    (:func:`specdojo_routine.store.ledger.views.replay`). A file that does not exist is a
    :class:`~specdojo_routine.FileSystemError`, not an empty ledger: an audit of a mistyped
    path must not pass on no events at all."""
    for source in sources:
        if isinstance(source, str | Path):
            Path(source).stat()  # FileNotFoundError: the edge says which path
        elif not isinstance(source, Iterable):
            raise UsageError(f"replay takes ledger paths and iterables of events (got "
                             f"{type(source).__name__})")
    return views.replay(*sources)
