"""What retention must know about each owner that still has files (SPEC §15), cached.

Deciding what ``prune`` removes needs, for every Job Run and routine attempt that still has
files, its group, when it began and ended, and for a run the paths a crash may have left
recorded but not removed, and the checkpoints it holds. Reading that opens each run's ledger
and view, and reads the routine ledger: a cost that grows with what is kept and with age. A
private cache, ``E/.cache/retention.json`` (git-ignored, machine-local, safe to delete), keyed
by the stamps of the files the facts came from (and, for the routine ledger, by where it was
read to), lets the next prune read only what changed, and lets a prune stopped by its
deadline (``retention.auto`` inside ``run --due``) go on where it stopped.

The cache records the fingerprint of the code that gathered its facts
(:func:`~specdojo_routine.store.codeprint.fingerprint`, which covers retention's modules): after
an upgrade every owner's files are read again once, as with no cache.

A routine attempt's facts (its routine, when it began and ended, whether its removal is
recorded) come from the routine ledger, never from its evidence's files, read forward from
where the last prune stopped (:mod:`.prune_ledger`, whose position the cache keeps too).

Facts that must be looked at again are never cached: a run whose view another tool wrote (it
is imported when pruned) or that conflicts with its ledger (kept).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import orjson

from specdojo_routine.app import prune_ledger
from specdojo_routine.core import jobfold, retention
from specdojo_routine.core.errors import LedgerError
from specdojo_routine.core.retention import Owner
from specdojo_routine.execute import prunefiles
from specdojo_routine.store import codeprint, fsfacts
from specdojo_routine.store.config import ProjectPaths, read_private
from specdojo_routine.store.ledger import adopt, stamps

CACHE_VERSION = 3


@attrs.frozen(kw_only=True, repr=False)
class RunFacts:
    """A Job Run that has files: as an owner, the paths recorded as pruned that a crash may
    have left, and (job, updated_at) of each checkpoint it holds."""

    owner: Owner
    pending: tuple[str, ...]
    checkpoints: tuple[tuple[str, str], ...]


@attrs.frozen(kw_only=True, repr=False)
class AttemptFacts:
    """A routine attempt that has evidence: what the routine ledger records of it (routine
    None: the ledger has no ``attempt_started`` for it)."""

    routine_id: str | None
    started_at: str | None
    completed_at: str | None  # None: the ledger records no end
    pruned: bool  # its evidence_pruned is in the ledger: a removal to finish, not to record
    marked: bool  # a removal was begun (see :mod:`.prune`)


@attrs.frozen(kw_only=True, repr=False)
class Facts:
    runs: dict[str, RunFacts]
    attempts: dict[str, AttemptFacts]
    complete: bool  # every owner with files is here (False: the deadline came first)
    failed: dict[str, str]  # owner -> why its files could not be read: kept for now


def cache_path(paths: ProjectPaths) -> Path:
    return paths.exec_cache_dir / "retention.json"


def gather(
    paths: ProjectPaths, *, late: Callable[[], bool], write: bool,
    recent_after: datetime | None = None,
) -> Facts:
    """The facts of every owner with files, from the cache where its files' stamps match;
    reading stops once ``late()`` (the rest is read next time). ``write``: keep the cache.

    ``recent_after``: a cached run that ended after it (inside the window) is taken as cached
    without a look at its ledger: whatever changed, it cannot be pruned before its cached end
    leaves the window, and then its ledger is looked at again (a run the window still holds
    is most of what a project keeps)."""
    cached, before = _load(cache_path(paths))
    keep: dict[str, dict[str, Any]] = {"runs": {}}
    failed: dict[str, str] = {}
    runs, complete = _runs(paths, cached.get("runs", {}), keep["runs"], late, recent_after,
                           failed)
    attempts, keep["ledger"], done = _attempts(paths, cached.get("ledger"), late)
    if write:
        _save(cache_path(paths), keep, before)
    return Facts(runs=runs, attempts=attempts, complete=complete and done, failed=failed)


def _runs(
    paths: ProjectPaths, cached: Mapping[str, Any], keep: dict[str, Any],
    late: Callable[[], bool], recent_after: datetime | None, failed: dict[str, str],
) -> tuple[dict[str, RunFacts], bool]:
    """Every run with files. A run's facts come from its ledger (its view is checked again,
    and imported if another tool wrote it, when the run is pruned), so the ledger's stamp is
    what the cached facts are keyed by: one ``stat`` a run. A run whose files cannot be read
    is left out, and why is in ``failed``: one such run does not stop the others."""
    found: dict[str, RunFacts] = {}
    complete = True
    runs_dir = os.fspath(paths.runs_dir)
    for run_id in sorted(prunefiles.runs_with_files(paths)):
        entry = cached.get(run_id)
        facts = _recent(run_id, entry, recent_after)
        if facts is None:
            digest = _stamp(os.path.join(runs_dir, f"{run_id}.jsonl"))
            facts = _run_from_cache(run_id, entry) if _fresh(entry, digest) else None
        if facts is None:
            if late():
                complete = False
                continue
            try:
                facts, cacheable = _read_run(paths, run_id)
            except (OSError, LedgerError) as exc:
                failed[run_id] = fsfacts.describe(exc) \
                    if isinstance(exc, OSError) else str(exc)
                continue
            if facts is None:
                continue  # files with no record of a run: nobody says they may go
            entry = [digest, *_run_to_cache(facts)] if cacheable else None
        found[run_id] = facts
        if entry is not None:
            keep[run_id] = entry
    return found, complete


def _recent(run_id: str, entry: Any, after: datetime | None) -> RunFacts | None:
    """The cached facts of a run that ended after ``after`` with nothing pending, else None."""
    if after is None or not isinstance(entry, list) or len(entry) != 6 \
            or type(entry[3]) is not float or entry[3] <= after.timestamp():
        return None
    facts = _run_from_cache(run_id, entry)
    return facts if facts is not None and not facts.pending else None


def _stamp(path: str) -> str:
    """A file's identity, size and change times as one string ("-": no file)."""
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _read_run(paths: ProjectPaths, run_id: str) -> tuple[RunFacts | None, bool]:
    """A run's facts from its ledger and view (another tool's record imported in memory; a
    conflicting one makes the run live: it is kept until the conflict is resolved)."""
    plan = adopt.plan_run(paths, run_id)
    doc = plan.document(run_id)
    if doc is None:
        return None, False
    fold = plan.folds[run_id]
    owner = retention.run_owner(doc)
    if run_id in plan.conflicts:
        owner = attrs.evolve(owner, ended_at=None)
    best: dict[str, jobfold.JobCheckpointDoc] = {}
    jobfold.merge_checkpoints(best, fold.checkpoints)
    facts = RunFacts(owner=owner, pending=tuple(fold.prune_pending),
                     checkpoints=tuple((job, e["updated_at"]) for job, e in sorted(best.items())))
    return facts, not plan.events and not plan.conflicts


def _attempts(
    paths: ProjectPaths, cached: Any, late: Callable[[], bool],
) -> tuple[dict[str, AttemptFacts], dict[str, Any], bool]:
    """Every attempt with evidence, as the routine ledger records it; (facts, what the cache
    keeps of the ledger's reading, whether the ledger was read to its end). With no
    evidence, nothing is read and the cache keeps what it had."""
    with_files = prunefiles.attempts_with_files(paths)
    if not with_files:
        return {}, cached if isinstance(cached, dict) else {}, True
    known, kept, complete = prune_ledger.read(paths, cached, with_files, late)
    found = {}
    for attempt_id in sorted(with_files):
        of = known.get(attempt_id)
        found[attempt_id] = AttemptFacts(
            routine_id=of.routine_id if of else None, started_at=of.started_at if of else None,
            completed_at=of.ended_at if of else None, pruned=of.pruned if of else False,
            marked=prunefiles.removal_marked(paths, attempt_id))
    return found, kept, complete


def attempt_owner(attempt_id: str, facts: AttemptFacts, open_attempts: Collection[str]) -> Owner:
    """An attempt as an owner: one the routine ledger does not show ended is kept."""
    began = facts.started_at or retention.attempt_began(attempt_id)
    owner = retention.attempt_owner(attempt_id, facts.routine_id or f"?{attempt_id}",
                                    started_at=began, completed_at=facts.completed_at,
                                    open_attempts=open_attempts)
    return owner if facts.routine_id else attrs.evolve(owner, ended_at=None)


# --- the cache -----------------------------------------------------------------------------


def _fresh(entry: Any, digest: str) -> bool:
    return isinstance(entry, list) and bool(entry) and entry[0] == digest


def _run_to_cache(facts: RunFacts) -> list[Any]:
    o = facts.owner
    return [o.group, _epoch(o.began_at), _epoch(o.ended_at), list(facts.pending),
            [list(c) for c in facts.checkpoints]]


def _run_from_cache(run_id: str, entry: Any) -> RunFacts | None:
    try:
        _, group, began, ended, pending, checkpoints = entry
        return RunFacts(owner=Owner(key=run_id, group=str(group), began_at=_instant(began),
                                    ended_at=_instant(ended)),
                        pending=tuple(str(p) for p in pending),
                        checkpoints=tuple((str(j), str(u)) for j, u in checkpoints))
    except (TypeError, ValueError, OverflowError):
        return None


def _epoch(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _instant(value: Any) -> datetime | None:
    if value is None:
        return None
    if type(value) not in (int, float):
        raise TypeError("not a time")
    return datetime.fromtimestamp(value, UTC)


def _load(path: Path) -> tuple[dict[str, Any], bytes | None]:
    try:
        data = read_private(path)  # a FIFO is not opened: it would wait for ever
        doc = orjson.loads(data)
    except (OSError, orjson.JSONDecodeError):
        return {}, None
    if not isinstance(doc, dict) or type(doc.get("version")) is not int \
            or doc["version"] != CACHE_VERSION or doc.get("code") != codeprint.fingerprint():
        return {}, data
    return {k: v for k, v in doc.items() if isinstance(v, dict)}, data


def _save(path: Path, keep: Mapping[str, Any], before: bytes | None) -> None:
    data = orjson.dumps({"version": CACHE_VERSION, "code": codeprint.fingerprint(), **keep})
    if data == before:
        return
    with contextlib.suppress(OSError):  # a cache: failing to write it costs a re-read
        stamps.replace_private(path, data)
