"""The Job Run an operator names on the command line (``job show``, ``job logs``, ``job
resolve``): the id checked by the ledger's own rule (:data:`core.event_parts.RUN_ID`, which also
keeps it a plain file name), and an id that names nothing answered with what was meant - the
closest run ids, or, for a Job's id, where its runs are. Writes nothing."""

from __future__ import annotations

from specdojo_routine.core.errors import JobError, UsageError
from specdojo_routine.core.event_parts import RUN_ID
from specdojo_routine.core.jobfold import JobRunDoc
from specdojo_routine.core.suggest import unknown
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger import adopt


def check(paths: ProjectPaths, run_id: str) -> None:
    """Refuse (exit 2) an id that cannot be a Job Run's, saying what it is when it is a Job."""
    if RUN_ID.fullmatch(run_id):
        return
    if run_id.startswith("job-") and definitions.load_jobs(paths).job(run_id) is not None:
        raise UsageError(f"{run_id} is a Job, not a Job Run; `job list` shows its runs "
                         "(JBR-<slug>-<hash>)")
    raise UsageError(f"invalid Job Run id {run_id!r} (expected JBR-<slug>-<hash>; see "
                     "`job list`)")


def load(paths: ProjectPaths, run_id: str) -> JobRunDoc:
    """The run's view as it is after an import (in memory, SPEC §10); an unknown id is a
    usage error naming the closest run ids. A run known only from a file in conflict (SPEC
    §10 rule 4) is refused with that conflict, not called unknown."""
    check(paths, run_id)
    plan = adopt.plan_run(paths, run_id)
    found = plan.document(run_id)
    if found is None:
        if run_id in plan.conflicts:
            raise adopt.ImportConflict(plan.conflicts[run_id])
        _refuse_empty(paths, run_id)
        raise UsageError(unknown("Job Run", run_id, known_run_ids(paths), "job list"))
    return found


def _refuse_empty(paths: ProjectPaths, run_id: str) -> None:
    """A run whose ledger is there but empty is not a typo: the file was created and nothing
    was recorded in it (a crash or a full disk as the run began). Say so (exit 1), not
    "unknown", which would suggest the very id given."""
    ledger = paths.run_ledger(run_id)
    try:
        empty = ledger.lstat().st_size == 0 and not paths.run_view(run_id).exists()
    except OSError:
        return
    if empty:
        raise JobError(f"{ledger}: the ledger of Job Run {run_id} is empty: it was created but "
                       "nothing was recorded in it (a crash or a full disk as the run began); "
                       "unless that run is starting now, remove the empty file, and run its "
                       "Job again if it should run")


def known_run_ids(paths: ProjectPaths) -> list[str]:
    """The ids of the run files in ``runs/`` (views and ledgers alike)."""
    if not paths.runs_dir.is_dir():
        return []
    return sorted({p.name.split(".")[0] for p in paths.runs_dir.glob("JBR-*.json*")})
