"""What retention must know about each owner that still has files (SPEC §15), cached.

Deciding what ``prune`` removes needs, for every Job Run and routine attempt that still has
files, its group, when it began and ended, and for a run the paths a crash may have left
recorded but not removed, and the checkpoints it holds. Reading that opens each run's ledger
and view and each attempt's evidence: a cost that grows with what is kept. A private cache,
``E/.cache/retention.json`` (git-ignored, machine-local, safe to delete), keyed by the stamps of
the files the facts came from, lets the next prune read only what changed, and lets a prune
stopped by its deadline (``retention.auto`` inside ``run --due``) go on where it stopped.

The cache records the fingerprint of the code that gathered its facts
(:func:`~specdojo_routine.store.codeprint.fingerprint`, which covers retention's modules): after
an upgrade every owner's files are read again once, as with no cache.

An attempt's evidence that no ``evidence.json`` describes (a crash between an action's logs
and that file) says neither its routine nor its end: those come from the routine ledger, read
from its end back to when the attempt began, and are cached once the ledger shows it ended.

Facts that must be looked at again are never cached: a run whose view another tool wrote (it
is imported when pruned) or that conflicts with its ledger (kept), an attempt still open.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import orjson

from specdojo_routine.core import jobfold, retention
from specdojo_routine.core.retention import Owner
from specdojo_routine.core.timefmt import try_parse_instant
from specdojo_routine.execute import prunefiles
from specdojo_routine.store import codeprint
from specdojo_routine.store.config import ProjectPaths, read_private
from specdojo_routine.store.ledger import adopt, backwards, stamps

CACHE_VERSION = 2


@attrs.frozen(kw_only=True, repr=False)
class RunFacts:
    """A Job Run that has files: as an owner, the paths recorded as pruned that a crash may
    have left, and (job, updated_at) of each checkpoint it holds."""

    owner: Owner
    pending: tuple[str, ...]
    checkpoints: tuple[tuple[str, str], ...]


@attrs.frozen(kw_only=True, repr=False)
class AttemptFacts:
    """A routine attempt that has evidence: what its actions' ``evidence.json`` say."""

    routine_id: str | None
    started_at: str | None
    completed_at: str | None
    marked: bool  # a removal was begun (see :mod:`.prune`)


@attrs.frozen(kw_only=True, repr=False)
class Facts:
    runs: dict[str, RunFacts]
    attempts: dict[str, AttemptFacts]
    complete: bool  # every owner with files is here (False: the deadline came first)


def cache_path(paths: ProjectPaths) -> Path:
    return paths.exec_cache_dir / "retention.json"


def gather(
    paths: ProjectPaths, *, open_attempts: Collection[str], late: Callable[[], bool],
    write: bool, recent_after: datetime | None = None,
) -> Facts:
    """The facts of every owner with files, from the cache where its files' stamps match;
    reading stops once ``late()`` (the rest is read next time). ``write``: keep the cache.

    ``recent_after``: a cached run that ended after it (inside the window) is taken as cached
    without a look at its ledger: whatever changed, it cannot be pruned before its cached end
    leaves the window, and then its ledger is looked at again (a run the window still holds
    is most of what a project keeps)."""
    cached, before = _load(cache_path(paths))
    keep: dict[str, dict[str, Any]] = {"runs": {}, "attempts": {}}
    runs, complete = _runs(paths, cached.get("runs", {}), keep["runs"], late, recent_after)
    attempts, done = _attempts(paths, cached.get("attempts", {}), keep["attempts"], late,
                               open_attempts)
    if write:
        _save(cache_path(paths), keep, before)
    return Facts(runs=runs, attempts=attempts, complete=complete and done)


def _runs(
    paths: ProjectPaths, cached: Mapping[str, Any], keep: dict[str, Any],
    late: Callable[[], bool], recent_after: datetime | None,
) -> tuple[dict[str, RunFacts], bool]:
    """Every run with files. A run's facts come from its ledger (its view is checked again,
    and imported if another tool wrote it, when the run is pruned), so the ledger's stamp is
    what the cached facts are keyed by: one ``stat`` a run."""
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
            facts, cacheable = _read_run(paths, run_id)
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
    paths: ProjectPaths, cached: Mapping[str, Any], keep: dict[str, Any],
    late: Callable[[], bool], open_attempts: Collection[str],
) -> tuple[dict[str, AttemptFacts], bool]:
    found: dict[str, AttemptFacts] = {}
    complete = True
    orphans: dict[str, tuple[str, AttemptFacts]] = {}
    for attempt_id in sorted(prunefiles.attempts_with_files(paths)):
        digest = prunefiles.stamp(prunefiles.attempt_files(paths, attempt_id))
        entry = cached.get(attempt_id)
        if isinstance(entry, list) and len(entry) == 5 and _fresh(entry, digest):
            facts = AttemptFacts(routine_id=entry[1], started_at=entry[2],
                                 completed_at=entry[3], marked=bool(entry[4]))
        elif late():
            complete = False
            continue
        else:
            read = prunefiles.attempt_facts(paths, attempt_id)
            facts = AttemptFacts(routine_id=read["routine_id"], started_at=read["started_at"],
                                 completed_at=read["completed_at"],
                                 marked=prunefiles.removal_marked(paths, attempt_id))
            if facts.routine_id is None and attempt_id not in open_attempts:
                orphans[attempt_id] = digest, facts  # no evidence.json: the ledger says
                continue
            entry = _attempt_to_cache(digest, facts)
        found[attempt_id] = facts
        if attempt_id not in open_attempts:
            keep[attempt_id] = entry
    if orphans:
        complete &= _orphans(paths, orphans, found, keep, late)
    return found, complete


def _attempt_to_cache(digest: str, facts: AttemptFacts) -> list[Any]:
    return [digest, facts.routine_id, facts.started_at, facts.completed_at, facts.marked]


def _orphans(
    paths: ProjectPaths, orphans: Mapping[str, tuple[str, AttemptFacts]],
    found: dict[str, AttemptFacts], keep: dict[str, Any], late: Callable[[], bool],
) -> bool:
    """The facts of attempts whose evidence no ``evidence.json`` describes (a crash or a
    SIGKILL between an action's logs and its ``evidence.json``), from the routine ledger: its
    routine, when it began and when it ended (``attempt_ended``, ``attempt_resolved``). One
    the ledger shows ended, or does not know at all, is cached; one it shows still open is
    kept, unknown, and looked at again next time. False when ``late()`` came first."""
    ended = _ledger_attempts(paths, set(orphans), late)
    if ended is None:
        return False
    for attempt_id, (digest, facts) in orphans.items():
        known = ended.get(attempt_id)
        if known is not None:
            routine_id, began, completed = known
            facts = attrs.evolve(facts, routine_id=routine_id if completed else None,
                                 started_at=began, completed_at=completed)
        found[attempt_id] = facts
        if known is None or facts.completed_at is not None:
            keep[attempt_id] = _attempt_to_cache(digest, facts)
    return True


#: How far before an attempt's id stamp its ``attempt_started`` may be (clock steps)
_ORPHAN_SLACK = timedelta(days=1)


def _ledger_attempts(
    paths: ProjectPaths, wanted: set[str], late: Callable[[], bool],
) -> dict[str, tuple[str, str | None, str | None]] | None:
    """attempt id -> (routine, ``attempt_started``'s ``at``, when it ended or None) for the
    ``wanted`` attempts the routine ledger holds, read from its end back to where the
    earliest of them began (its id says when); None when ``late()`` came first."""
    stamps_ = [retention.attempt_began(a) for a in wanted]
    floor = None if None in stamps_ else min(
        (t for s in stamps_ if (t := try_parse_instant(s)) is not None), default=None)
    seen: dict[str, tuple[str, str | None, str | None]] = {}
    ends: dict[str, str] = {}
    for count, (_text, event) in enumerate(backwards.read_backwards(paths.routine_ledger)):
        if count % 1024 == 1023 and late():
            return None
        attempt_id, kind = event.get("attempt_id"), event.get("type")
        if attempt_id in wanted and kind in ("attempt_ended", "attempt_resolved"):
            end = event.get("completed_at") if kind == "attempt_ended" else None
            ends.setdefault(attempt_id, end if isinstance(end, str) else str(event.get("at")))
        elif attempt_id in wanted and kind == "attempt_started" \
                and isinstance(event.get("routine_id"), str):
            at = event.get("at")
            seen[attempt_id] = (event["routine_id"], at if isinstance(at, str) else None,
                                ends.get(attempt_id))
            if len(seen) == len(wanted):
                break
        at = try_parse_instant(event.get("at")) if floor is not None else None
        if at is not None and floor is not None and at < floor - _ORPHAN_SLACK:
            break
    return seen


def attempt_owner(attempt_id: str, facts: AttemptFacts, open_attempts: Collection[str]) -> Owner:
    """An attempt as an owner. Its end is its actions' latest end, else its start (an attempt
    that is not open has ended, some time after it began); an attempt whose routine no file
    names is kept."""
    began = facts.started_at or retention.attempt_began(attempt_id)
    owner = retention.attempt_owner(attempt_id, facts.routine_id or f"?{attempt_id}",
                                    started_at=began,
                                    completed_at=facts.completed_at or began,
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
