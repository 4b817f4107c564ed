"""The Job Run an operator names on the command line (``job show``, ``job logs``, ``job
resolve``): the id checked by the ledger's own rule (:data:`core.event_parts.RUN_ID`, which also
keeps it a plain file name), and an id that names nothing answered with what was meant - the
closest run ids, or, for a Job's id, where its runs are. Writes nothing."""

from __future__ import annotations

from specdojo_routine.core.errors import UsageError
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
    usage error naming the closest run ids."""
    check(paths, run_id)
    found = adopt.load_run(paths, run_id)
    if found is None:
        raise UsageError(unknown("Job Run", run_id, known_run_ids(paths), "job list"))
    return found


def known_run_ids(paths: ProjectPaths) -> list[str]:
    """The ids of the run files in ``runs/`` (views and ledgers alike)."""
    if not paths.runs_dir.is_dir():
        return []
    return sorted({p.name.split(".")[0] for p in paths.runs_dir.glob("JBR-*.json*")})
