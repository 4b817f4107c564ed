"""Import of files another tool wrote (SPEC §10): read them, plan the import, append it.

A view file is *ours* only if its bytes equal the fold of its ledger; anything else is foreign
and its facts are imported before anything replaces it. :func:`plan_routine_imports` and
:func:`plan_job_imports` read the files and compute, in memory, the import events and the
views that would follow (read-only commands show those and write nothing);
:func:`apply_routine_imports` / :func:`apply_job_imports` append the events and publish the
affected views (the caller holds the routine / exec lock). The decisions are
:mod:`specdojo_routine.core.adopt`'s.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import orjson

from specdojo_routine.core import adopt as rules
from specdojo_routine.core import events as ev
from specdojo_routine.core import jobfold
from specdojo_routine.core.errors import RoutineError
from specdojo_routine.core.fold import RoutineView, apply_all
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.ledger import codec, proven, views
from specdojo_routine.store.ledger import journal as ledger

__all__ = ["ImportConflict", "JobImports", "RoutineImports", "apply_job_imports",
           "apply_routine_imports", "checkpoint", "import_job_runs", "import_routine_state",
           "load_run", "plan_job_imports", "plan_routine_imports", "plan_run",
           "run_checkpoints", "run_ids"]

_IN_MEMORY_AT = "1970-01-01T00:00:00.000Z"


class ImportConflict(RoutineError):
    """A foreign file contradicts our ledgers (SPEC §10 rule 4); nothing was overwritten."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _parse(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _raw(event: Any, seq: int, at: str) -> dict[str, Any]:
    """The parsed ledger line ``event`` would be (to fold it in memory)."""
    return {"version": 1, "seq": seq, "type": ev.tag_of(event), "at": at, **codec.payload(event)}


# --- the routine ledger ----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class RoutineImports:
    """What importing ``routine-state.json`` would append, and the view that would follow."""

    events: list[ev.RoutineStateImported]
    conflicts: list[str]
    view: RoutineView  # the fold of the ledger plus ``events`` (in memory)
    foreign: bool  # the file on disk is not the fold of our ledger


def plan_routine_imports(paths: ProjectPaths) -> RoutineImports:
    """Whose is ``routine-state.json``? A view the ledger proves (:mod:`.proven`: its digest,
    the ledger's identity and chain head) is ours; any other is compared with the full fold
    (another tool may have rewritten it in our shape) and its newer entries are imported."""
    data = _read(paths.routine_state)
    found = proven.prove(paths.routine_ledger, paths.routine_state)
    document = found.document()
    if data is None or found.resumed_at > 0 or data == views.render(document):
        return RoutineImports(events=[], conflicts=[], view=RoutineView(
            document=document, torn_line=found.tail.torn_line), foreign=False)
    events, conflicts = _routine_entries(paths, data, document["routines"])
    if events:
        seq = found.state.seq
        raws = [_raw(e, seq + i, _IN_MEMORY_AT) for i, e in enumerate(events, 1)]
        apply_all(found.state, raws, where="<import>", upgrade=codec.upgrade)
        document = found.content()  # in memory only: it covers lines not yet written
    view = RoutineView(document=document, torn_line=found.tail.torn_line)
    return RoutineImports(events=events, conflicts=conflicts, view=view, foreign=True)


def _routine_entries(
    paths: ProjectPaths, data: bytes, ours: Mapping[str, Any]
) -> tuple[list[ev.RoutineStateImported], list[str]]:
    source = paths.rel(paths.routine_state)
    doc = _parse(data)
    routines = doc.get("routines") if isinstance(doc, dict) else None
    if not isinstance(routines, dict):
        return [], [f"conflict: {source} is not a routine state document (no \"routines\" "
                    "object); move it aside or fix it, then run `import` again"]
    found, conflicts, sha = [], [], _sha256(data)
    for routine_id, record in routines.items():
        verdict = rules.routine_entry_verdict(record, ours.get(routine_id))
        if verdict == "import" and ev.ROUTINE_ID.fullmatch(routine_id):
            found.append(ev.RoutineStateImported(routine_id=routine_id, record=record,
                                              source=source, source_sha256=sha))
        elif verdict in ("import", "conflict"):
            conflicts.append(f"conflict: {source} entry {routine_id!r} cannot be imported (it "
                             "needs a routine id, a last_run and a last_result of success, "
                             "failure or skipped); fix or remove the entry")
    return found, conflicts


def apply_routine_imports(
    paths: ProjectPaths, plan: RoutineImports, clock: Callable[[], datetime]
) -> None:
    """Append the planned events; publish the view unless a conflict keeps the file."""
    if plan.events:
        ledger.Ledger(paths.routine_ledger, clock=clock).append_many(plan.events)
    if plan.foreign and not plan.conflicts:
        views.refresh_routine_view(paths)  # the foreign file is unproven: folded from scratch


def import_routine_state(paths: ProjectPaths, clock: Callable[[], datetime]) -> RoutineImports:
    """Import first (the caller holds the routine lock); a conflict refuses the command."""
    plan = plan_routine_imports(paths)
    apply_routine_imports(paths, plan, clock)
    if plan.conflicts:
        raise ImportConflict("; ".join(plan.conflicts))
    return plan


# --- Job Runs and checkpoints ----------------------------------------------------------------


@attrs.frozen(kw_only=True)
class JobImports:
    """What importing the Job Run records and ``job-state.json`` would append."""

    events: dict[str, list[ev.JobEvent]]  # per run ledger, in order
    conflicts: dict[str, str]  # run id (or "job-state") -> message
    folds: dict[str, jobfold.RunFold]  # every run read, folded, with the planned events applied
    #: runs not read, known to be ours (:mod:`.runcheck`): their checkpoints per job
    settled: dict[str, dict[str, jobfold.JobCheckpointDoc]] = attrs.field(factory=dict)

    def document(self, run_id: str) -> jobfold.JobRunDoc | None:
        """The run's view as it is after the import (None: no such run)."""
        fold = self.folds.get(run_id)
        return jobfold.run_document(fold) if fold is not None else None

    def jobs(self) -> dict[str, jobfold.JobCheckpointDoc]:
        """The latest checkpoint per job after the import (``job-state.json``)."""
        merged: dict[str, jobfold.JobCheckpointDoc] = {}
        for run_id in sorted({*self.folds, *self.settled}):
            fold = self.folds.get(run_id)
            if fold is not None:
                jobfold.merge_checkpoints(merged, fold.checkpoints)
            else:
                jobfold.merge_checkpoints(merged, run_checkpoints(self.settled[run_id]))
        return merged

    def count(self, kind: type[Any]) -> int:
        return sum(isinstance(e, kind) for events in self.events.values() for e in events)

    def keep(self, paths: ProjectPaths) -> list[Path]:
        """Files a conflict keeps as they are."""
        return [paths.job_state if key == "job-state" else paths.run_view(key)
                for key in self.conflicts]


def _run_ids(paths: ProjectPaths, job_id: str | None) -> list[str]:
    if not paths.runs_dir.is_dir():
        return []
    slug = "*" if job_id is None else f"JBR-{job_id.removeprefix('job-')}-{'?' * 12}"
    names = {p.name.rsplit(".", 1)[0] for ext in ("json", "jsonl")
             for p in paths.runs_dir.glob(f"{slug}.{ext}")}
    return sorted(n for n in names if ev.RUN_ID.fullmatch(n))


def run_checkpoints(best: Mapping[str, jobfold.JobCheckpointDoc]) -> list[dict[str, Any]]:
    """A settled run's checkpoints per job as fold candidates (for ``merge_checkpoints``)."""
    return [{"job_id": job, **entry} for job, entry in best.items()]


def run_ids(paths: ProjectPaths, job_id: str | None = None) -> list[str]:
    """The runs that have a ledger or a view (of ``job_id`` only, when given)."""
    return _run_ids(paths, job_id)


def plan_job_imports(
    paths: ProjectPaths, *, job_id: str | None = None, only: list[str] | None = None,
    settled: Mapping[str, dict[str, jobfold.JobCheckpointDoc]] | None = None,
) -> JobImports:
    """Compare every ``runs/<run_id>.json`` (of ``job_id`` only, when given) and
    ``job-state.json`` with the folds of our ledgers. ``only``: read just these runs, the
    others being ``settled`` (known ours, with their checkpoints: :mod:`.runcheck`)."""
    plan = JobImports(events={}, conflicts={}, folds={}, settled=dict(settled or {}))
    for run_id in _run_ids(paths, job_id) if only is None else only:
        fold = plan.folds[run_id] = views.fold_run(paths, run_id)
        _plan_run(paths, plan, run_id, fold)
    return _plan_checkpoints(paths, plan, job_id)


def plan_run(paths: ProjectPaths, run_id: str) -> JobImports:
    """What importing ``runs/<run_id>.json`` alone would append (checkpoints aside)."""
    plan = JobImports(events={}, conflicts={}, folds={})
    fold = plan.folds[run_id] = views.fold_run(paths, run_id)
    _plan_run(paths, plan, run_id, fold)
    return plan


def load_run(paths: ProjectPaths, run_id: str) -> jobfold.JobRunDoc | None:
    """``runs/<run_id>.json`` as it is after an import (in memory; a conflicting record is
    not imported, so our ledger's run is shown)."""
    return plan_run(paths, run_id).document(run_id)


def checkpoint(paths: ProjectPaths, job_id: str) -> dict[str, Any] | None:
    """The job's latest checkpoint after an import (in memory): its runs' checkpoints and
    its ``job-state.json`` entry when our ledgers do not account for it."""
    found = plan_job_imports(paths, job_id=job_id).jobs().get(job_id)
    return dict(found["checkpoint"]) if found is not None else None


def _plan_run(paths: ProjectPaths, plan: JobImports, run_id: str, fold: jobfold.RunFold) -> None:
    data = _read(paths.run_view(run_id))
    ours = jobfold.run_document(fold)
    if data is None or (ours is not None and data == views.render(ours)):
        return
    record = _parse(data)
    verdict = rules.run_record_verdict(record, ours)
    if verdict == "conflict":
        plan.conflicts[run_id] = rules.conflict_message(
            paths.rel(paths.run_view(run_id)), record, paths.rel(paths.run_ledger(run_id)), ours)
    elif verdict == "import":
        event = ev.RunImported(run_id=run_id, record=record, source_sha256=_sha256(data))
        _add(plan, run_id, event)


def _add(plan: JobImports, run_id: str, event: ev.JobEvent) -> None:
    fold = plan.folds.setdefault(run_id, jobfold.RunFold())
    plan.events.setdefault(run_id, []).append(event)
    jobfold.apply_run(fold, _raw(event, 0, _IN_MEMORY_AT), where="<import>", line=0)


def _plan_checkpoints(paths: ProjectPaths, plan: JobImports, job_id: str | None) -> JobImports:
    data = _read(paths.job_state)
    ours = plan.jobs()
    if data is None or data == views.render(jobfold.job_state_document(ours)):
        return plan
    doc = _parse(data)
    entries = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(entries, dict):
        plan.conflicts["job-state"] = (f"conflict: {paths.rel(paths.job_state)} is not a "
                                       "job state document (no \"jobs\" object)")
        return plan
    sha = _sha256(data)
    for jid, entry in entries.items():
        if job_id is not None and jid != job_id:
            continue
        verdict = rules.checkpoint_verdict(entry, ours.get(jid))
        if verdict == "import" and ev.RUN_ID.fullmatch(entry["last_run_id"]):
            if plan.settled.pop(entry["last_run_id"], None) is not None:  # read it after all
                plan.folds[entry["last_run_id"]] = views.fold_run(paths, entry["last_run_id"])
            _add(plan, entry["last_run_id"], ev.CheckpointImported(
                job_id=jid, checkpoint=entry["checkpoint"], last_run_id=entry["last_run_id"],
                updated_at=entry["updated_at"], source_sha256=sha))
        elif verdict in ("import", "conflict"):
            plan.conflicts["job-state"] = (f"conflict: {paths.rel(paths.job_state)} entry "
                                           f"{jid!r} is not a checkpoint entry")
    return plan


def apply_job_imports(
    paths: ProjectPaths, plan: JobImports, clock: Callable[[], datetime]
) -> list[str]:
    """Append the planned events (the caller holds the exec lock), then publish the views of
    the runs they touch and ``job-state.json``, except files a conflict keeps; returns the
    runs whose ledgers grew."""
    touched = sorted(plan.events)
    for run_id in touched:
        ledger.Ledger(paths.run_ledger(run_id), clock=clock).append_many(plan.events[run_id])
    publish = [r for r in touched if r not in plan.conflicts]
    if publish and "job-state" not in plan.conflicts:
        views.refresh_job_views(paths, publish)
    return touched


def import_job_runs(
    paths: ProjectPaths, clock: Callable[[], datetime], *, job_id: str | None = None,
    needed: str | None = None,
) -> JobImports:
    """Import first (the caller holds the exec lock); a conflict on the run ``needed`` (or on
    ``job-state.json``) refuses the command."""
    plan = plan_job_imports(paths, job_id=job_id)
    apply_job_imports(paths, plan, clock)
    refused = [m for k, m in plan.conflicts.items() if k in (needed, "job-state")]
    if refused:
        raise ImportConflict("; ".join(refused))
    return plan
