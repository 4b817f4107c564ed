"""Import of files another tool wrote (SPEC §10): read them, plan the import, append it.

A view file is *ours* only if its bytes equal the fold of its ledger; anything else is foreign
and its facts are imported before anything replaces it. :func:`plan_routine_imports` and
:func:`plan_job_imports` read the files and compute, in memory, the import events and the
views that would follow (read-only commands show those and write nothing);
:func:`apply_routine_imports` / :func:`apply_job_imports` append the events and publish the
affected views (the caller holds the routine / exec lock). The decisions are
:mod:`specdojo_routine.core.adopt`'s.

An unreadable view holds no facts (SPEC §10 rule 8): a ``routine-state.json``,
``runs/<run_id>.json`` or ``job-state.json`` that is not JSON, is empty, is not an object, has
no ``routines`` / ``jobs`` object, or is not a regular file at all (a FIFO is never opened for
a blocking read) is, while its ledger exists, nothing to import and nothing to keep. The plan
names it; applying the plan moves it aside as ``<name>.unreadable-<UTC yyyymmddThhmmssZ>``
(renamed, never deleted), prints one ``warning:`` line naming both paths on stderr and rebuilds
the view from the ledger, and the command goes on. Read-only commands show the fold and leave
the file where it is. Without its ledger such a file may be the only record of another tool's
facts: it stays a conflict, and is kept.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from specdojo_routine.core import adopt as rules
from specdojo_routine.core import jobfold
from specdojo_routine.core.errors import RoutineError
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.ledger import codec, documents, views
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.ledger.foreign import (
    IN_MEMORY_AT,
    RoutineImports,
    import_before_publishing,
    look,
    move_aside,
    plan_routine_imports,
    raw_event,
    sha256_hex,
)

if TYPE_CHECKING:  # the event classes are created where an import event is made
    from specdojo_routine.core import job_events

__all__ = ["ImportConflict", "JobImports", "RoutineImports", "apply_job_imports",
           "apply_routine_imports", "checkpoint", "import_before_publishing", "import_job_runs",
           "import_routine_state",
           "load_run", "needed_run", "plan_job_imports", "plan_routine_imports", "plan_run",
           "run_checkpoints", "run_ids"]


class ImportConflict(RoutineError):
    """A foreign file contradicts our ledgers (SPEC §10 rule 4); nothing was overwritten."""


def apply_routine_imports(
    paths: ProjectPaths, plan: RoutineImports, clock: Callable[[], datetime]
) -> None:
    """Move an unreadable file aside, append the planned events, and publish the view
    unless a conflict keeps the file.

    A fold proven from scratch while planning is published as it is, so the command's next
    refresh continues from it instead of verifying the chain again: a foreign file is replaced,
    and our own view (its bytes already right) gets the snapshot it lacked. A missing view is
    left to the caller (``fold`` reports what it rebuilds; ``import`` writes no view it did
    not import into)."""
    if plan.unreadable is not None:
        move_aside(paths, paths.routine_state, plan.unreadable,
                    paths.rel(paths.routine_ledger), clock)
    if plan.events:
        ledger.Ledger(paths.routine_ledger, clock=clock).append_many(plan.events)
        if not plan.conflicts:
            views.refresh_routine_view(paths)  # the foreign file is unproven: from scratch
    elif plan.proof is not None and not plan.conflicts and paths.routine_ledger.exists() and (
            plan.foreign or (plan.proof.resumed_at == 0 and paths.routine_state.exists())):
        plan.proof.publish(paths.routine_state, paths.routine_snapshot)


def import_routine_state(paths: ProjectPaths, clock: Callable[[], datetime]) -> RoutineImports:
    """Import first (the caller holds the routine lock); a conflict refuses the command."""
    plan = plan_routine_imports(paths)
    apply_routine_imports(paths, plan, clock)
    if plan.conflicts:
        raise ImportConflict("; ".join(plan.conflicts))
    return plan


# --- Job Runs and checkpoints ----------------------------------------------------------------


@attrs.frozen(kw_only=True, repr=False)
class JobImports:
    """What importing the Job Run records and ``job-state.json`` would append."""

    events: dict[str, list[job_events.JobEvent]]  # per run ledger, in order
    conflicts: dict[str, str]  # run id (or "job-state") -> message
    folds: dict[str, jobfold.RunFold]  # every run read, folded, with the planned events applied
    #: run id (or "job-state") -> why the file holds no facts (SPEC §10 rule 8): move it aside
    unreadable: dict[str, str] = attrs.field(factory=dict)
    #: runs not read, known to be ours (:mod:`.runcheck`): their checkpoints per job
    settled: dict[str, dict[str, jobfold.JobCheckpointDoc]] = attrs.field(factory=dict)
    #: runs whose view our ledger gave earlier, or is missing (a crash or a full disk between
    #: an append and its publish), or that hold the checkpoint a stale ``job-state.json``
    #: entry lacks: no fact to import, only a view to publish again
    stale: set[str] = attrs.field(factory=set)

    def document(self, run_id: str) -> jobfold.JobRunDoc | None:
        """The run's view as it is after the import (None: no such run)."""
        fold = self.folds.get(run_id)
        return jobfold.run_document(fold) if fold is not None else None

    def jobs(self) -> dict[str, jobfold.JobCheckpointDoc]:
        """The latest checkpoint per job after the import (``job-state.json``)."""
        merged: dict[str, jobfold.JobCheckpointDoc] = {}
        holders = {run_id for run_id, fold in self.folds.items() if fold.checkpoints}
        holders.update(run_id for run_id, best in self.settled.items()
                       if best and run_id not in self.folds)  # a run without one adds none
        candidates: list[dict[str, Any]] = []
        for run_id in sorted(holders):
            fold = self.folds.get(run_id)
            candidates += fold.checkpoints if fold is not None \
                else run_checkpoints(self.settled[run_id])
        jobfold.merge_checkpoints(merged, candidates)
        return merged

    def checkpoint(self, job_id: str) -> dict[str, Any] | None:
        """``job_id``'s latest checkpoint after the import (None: it never advanced)."""
        found = self.jobs().get(job_id)
        return dict(found["checkpoint"]) if found is not None else None

    def count(self, kind: type[Any]) -> int:
        return sum(isinstance(e, kind) for events in self.events.values() for e in events)

    def keep(self, paths: ProjectPaths) -> list[Path]:
        """Files a conflict keeps as they are."""
        return [paths.job_state if key == "job-state" else paths.run_view(key)
                for key in self.conflicts]


def _run_ids(paths: ProjectPaths, job_id: str | None) -> list[str]:
    from specdojo_routine.core import event_parts

    if not paths.runs_dir.is_dir():
        return []
    slug = "*" if job_id is None else f"JBR-{job_id.removeprefix('job-')}-{'?' * 12}"
    names = {p.name.rsplit(".", 1)[0] for ext in ("json", "jsonl")
             for p in paths.runs_dir.glob(f"{slug}.{ext}")}
    return sorted(n for n in names if event_parts.RUN_ID.fullmatch(n))


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


def needed_run(paths: ProjectPaths, run_id: str) -> tuple[jobfold.JobRunDoc | None, bool]:
    """:func:`load_run` for a recording command that needs the run, and whether its file
    holds facts still to import, is unreadable or is behind its ledger (the command imports
    them, or moves it aside and rebuilds it, or publishes it again, under its lock before it
    answers: SPEC §10 rules 3, 8; a crash between an append and its publish). A record
    in conflict with our ledger refuses the command (SPEC §10 rule 4) instead of being
    answered from our side of it."""
    plan = plan_run(paths, run_id)
    if run_id in plan.conflicts:
        raise ImportConflict(plan.conflicts[run_id])
    behind = bool(plan.stale) or _job_state_behind(paths, plan.folds[run_id])
    return plan.document(run_id), bool(plan.events or plan.unreadable or behind)


def _job_state_behind(paths: ProjectPaths, fold: jobfold.RunFold) -> bool:
    """Whether ``job-state.json`` lacks a checkpoint this run advanced to (a crash or a full
    disk between the run's ledger and that file), or cannot say: missing, unreadable, an
    entry that is not a checkpoint. Only the run's own jobs' entries are looked at."""
    if not fold.checkpoints:
        return False
    data, unreadable = look(paths.job_state, "jobs")
    if data is None or unreadable is not None:
        return True
    entries = documents.parse(data)["jobs"]
    jobs = {c["job_id"] for c in fold.checkpoints}
    if not all(rules.checkpoint_entry_ok(entries.get(jid)) for jid in jobs):
        return True
    published = {jid: entries[jid] for jid in jobs}
    merged = dict(published)
    jobfold.merge_checkpoints(merged, fold.checkpoints)
    return merged != published


def checkpoint(paths: ProjectPaths, job_id: str) -> dict[str, Any] | None:
    """The job's latest checkpoint after an import (in memory): its runs' checkpoints and
    its ``job-state.json`` entry when our ledgers do not account for it."""
    return plan_job_imports(paths, job_id=job_id).checkpoint(job_id)


def _plan_run(paths: ProjectPaths, plan: JobImports, run_id: str, fold: jobfold.RunFold) -> None:
    from specdojo_routine.core import job_events

    data, unreadable = look(paths.run_view(run_id), None)
    ours = jobfold.run_document(fold)
    if unreadable is not None:
        if paths.run_ledger(run_id).exists():
            plan.unreadable[run_id] = unreadable
        else:  # no ledger: it may be the only record of another tool's run
            plan.conflicts[run_id] = _run_conflict(paths, run_id, None, ours)
        return
    if data is None or (ours is not None and data == views.render(ours)):
        if data is None and ours is not None:  # the ledger was written, its view never
            plan.stale.add(run_id)
        return
    record = documents.parse(data)
    if rules.run_record_usable(record) and not rules.run_record_usable(record, run_id):
        plan.conflicts[run_id] = _misnamed(paths, run_id, record)
        return
    verdict = rules.run_record_verdict(record, ours)
    if verdict in ("import", "conflict") and ours is not None:  # unless ours gave it earlier
        verdict = rules.run_record_verdict(record, ours, _run_history(paths, run_id))
    if verdict == "stale":
        plan.stale.add(run_id)
    elif verdict == "conflict":
        plan.conflicts[run_id] = _run_conflict(paths, run_id, record, ours)
    elif verdict == "import":
        event = job_events.RunImported(run_id=run_id, record=record, source_sha256=sha256_hex(data))
        _add(plan, run_id, event)


def _run_history(paths: ProjectPaths, run_id: str) -> list[jobfold.JobRunDoc]:
    """Every view our ledger of ``run_id`` gave, line by line (only read for a foreign file)."""
    state, history = jobfold.RunFold(), []
    path = paths.run_ledger(run_id)
    for found in ledger.read(path, torn="stop"):
        jobfold.apply_run(state, codec.upgrade(found.raw), where=str(path), line=found.line)
        doc = jobfold.run_document(state)
        if doc is not None:
            history.append(orjson.loads(orjson.dumps(doc)))
            history += jobfold.earlier_shapes(history[-1])  # our views before an upgrade
    return history


def _run_conflict(paths: ProjectPaths, run_id: str, record: Any,
                  ours: jobfold.JobRunDoc | None) -> str:
    return rules.conflict_message(paths.rel(paths.run_view(run_id)), record,
                                  paths.rel(paths.run_ledger(run_id)), ours)


def _misnamed(paths: ProjectPaths, run_id: str, record: Mapping[str, Any]) -> str:
    """The conflict of a record another run's id sits in (a copy under another name, say):
    it is no fact about ``run_id``, and it is kept where it is."""
    view = paths.rel(paths.run_view(run_id))
    return (f"conflict: {view} {rules.run_summary(record)} holds run_id {record['run_id']!r}, "
            f"not {run_id!r} as its file name says; nothing is imported from it: move it out "
            f"of {paths.rel(paths.runs_dir)}/ or give it the name of the run it holds")


def _add(plan: JobImports, run_id: str, event: job_events.JobEvent) -> None:
    fold = plan.folds.setdefault(run_id, jobfold.RunFold())
    plan.events.setdefault(run_id, []).append(event)
    jobfold.apply_run(fold, raw_event(event, 0, IN_MEMORY_AT), where="<import>", line=0)


def _plan_checkpoints(paths: ProjectPaths, plan: JobImports, job_id: str | None) -> JobImports:
    from specdojo_routine.core import event_parts, job_events

    data, unreadable = look(paths.job_state, "jobs")
    if unreadable is not None:
        if any(paths.runs_dir.glob("*.jsonl")):
            plan.unreadable["job-state"] = unreadable
        else:
            plan.conflicts["job-state"] = (f"conflict: {paths.rel(paths.job_state)} is not a "
                                           f"job state document ({unreadable})")
        return plan
    ours = plan.jobs()
    if data is None or data == views.render(jobfold.job_state_document(ours)):
        return plan
    entries = documents.parse(data)["jobs"]  # a dict: look found the document readable
    sha = sha256_hex(data)
    for jid, entry in entries.items():
        if job_id is not None and jid != job_id:
            continue
        verdict = rules.checkpoint_verdict(entry, ours.get(jid), _candidates(plan, jid))
        if verdict == "stale" and jid in ours:  # republished with the run that holds ours
            plan.stale.add(ours[jid]["last_run_id"])
        elif verdict == "import" and event_parts.RUN_ID.fullmatch(entry["last_run_id"]):
            if plan.settled.pop(entry["last_run_id"], None) is not None:  # read it after all
                plan.folds[entry["last_run_id"]] = views.fold_run(paths, entry["last_run_id"])
            _add(plan, entry["last_run_id"], job_events.CheckpointImported(
                job_id=jid, checkpoint=entry["checkpoint"], last_run_id=entry["last_run_id"],
                updated_at=entry["updated_at"], source_sha256=sha))
        elif verdict in ("import", "conflict"):
            plan.conflicts["job-state"] = (f"conflict: {paths.rel(paths.job_state)} entry "
                                           f"{jid!r} is not a checkpoint entry")
    return plan


def _candidates(plan: JobImports, job_id: str) -> list[dict[str, Any]]:
    """Every checkpoint of ``job_id`` our run ledgers recorded (the fold keeps the latest)."""
    found = [c for fold in plan.folds.values() for c in fold.checkpoints]
    found += [c for best in plan.settled.values() for c in run_checkpoints(best)]
    return [c for c in found if c.get("job_id") == job_id]


def apply_job_imports(
    paths: ProjectPaths, plan: JobImports, clock: Callable[[], datetime]
) -> list[str]:
    """Move unreadable files aside and append the planned events (the caller holds the exec
    lock), then publish the views of the runs they touch (and of the runs moved aside, and
    of the stale ones) and ``job-state.json``, except files a conflict keeps; returns the
    runs whose ledgers grew."""
    for key, reason in sorted(plan.unreadable.items()):
        if key == "job-state":
            move_aside(paths, paths.job_state, reason, "the Job Run ledgers", clock)
        else:
            move_aside(paths, paths.run_view(key), reason, paths.rel(paths.run_ledger(key)),
                        clock)
    touched = sorted(plan.events)
    for run_id in touched:
        ledger.Ledger(paths.run_ledger(run_id), clock=clock).append_many(plan.events[run_id])
    rebuilt = {k for k in plan.unreadable if k != "job-state"}
    publish = sorted({r for r in touched if r not in plan.conflicts} | rebuilt)
    if "job-state" in plan.conflicts:
        return touched
    if publish or "job-state" in plan.unreadable:
        views.refresh_job_views(paths, publish)
    if plan.stale:  # no fact at stake: a full disk leaves them for the next command
        with contextlib.suppress(OSError):
            views.refresh_job_views(paths, sorted(plan.stale))
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
