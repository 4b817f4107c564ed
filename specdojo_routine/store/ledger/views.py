"""Views on disk (SPEC §2, §5, §7.6): fold the ledgers, publish the documents atomically.

A view is pretty JSON (2-space indent, keys in a fixed order) with a trailing newline, written
to a temp file in its directory and moved into place with ``os.replace``; an unchanged view is
not rewritten. Every view is a function of its ledgers' bytes alone: the routine view records
what it covers as ``ledger``: seq, offset and chain head, nothing of one machine. Whether a
refresh may continue from it or must refold from scratch - and the machine-local snapshot that
decides it - is :mod:`.proven`'s, in one place.

A torn ledger tail (a crash mid-append) is left out of every fold: it was never acknowledged.
Refreshing and loading carry on without it (the next locked append repairs it); ``fold_all``
refuses with :class:`TornLedgerError` unless asked to ``repair``.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import orjson

from specdojo_routine.core.errors import CorruptLedgerError, TornLedgerError
from specdojo_routine.core.fold import (
    RoutineFold,
    RoutineStateDoc,
    RoutineView,
    apply_all,
    routine_document,
)
from specdojo_routine.core.jobfold import (
    JobCheckpointDoc,
    JobRunDoc,
    RunFold,
    apply_run,
    job_state_document,
    merge_checkpoints,
    run_document,
)
from specdojo_routine.store import codeprint
from specdojo_routine.store.config import NotRegularFile, ProjectPaths, read_private, read_regular
from specdojo_routine.store.ledger import chain, codec, documents, foreign, proven, stamps
from specdojo_routine.store.ledger import journal as ledger

if TYPE_CHECKING:  # the event classes are created where an event is replayed
    from specdojo_routine.core.events import Event

__all__ = [
    "ROUTINE_LEDGER_NAME",
    "RoutineView",
    "ViewNotWritten",
    "content",
    "fold_all",
    "fold_run",
    "load_job_run",
    "load_job_state",
    "load_routine_view",
    "proven_job_state",
    "publish",
    "refresh_job_views",
    "refresh_routine_view",
    "render",
    "replay",
]

ROUTINE_LEDGER_NAME = "routine-runs.jsonl"
_PLACEHOLDER_AT = "1970-01-01T00:00:00.000Z"


# --- documents <-> files ---------------------------------------------------------------------


def content(document: Any) -> Any:
    """A routine view document with ``ledger`` as just ``{seq, offset}``: the form a replay of
    bare events gives (they have no chain head until appended); golden files keep it."""
    position = document["ledger"]
    return {**document, "ledger": {"seq": position["seq"], "offset": position["offset"]}}


#: A view document as stored: 2-space indented JSON and a trailing newline.
render = proven.render


def publish(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically unless it is already there; True if written."""
    return stamps.replace(path, data)


# --- the routine view ------------------------------------------------------------------------


def _proven(paths: ProjectPaths, *, incremental: bool) -> proven.Proven:
    """The routine fold the ledger proves (the protocol is :mod:`.proven`'s); not
    ``incremental``: from scratch, the whole chain checked."""
    if not incremental:
        return proven.from_scratch(paths.routine_ledger)
    return proven.prove(paths.routine_ledger, paths.routine_state, paths.routine_snapshot)


def refresh_routine_view(paths: ProjectPaths, proof: proven.Proven | None = None) -> RoutineView:
    """Fold the routine ledger (incrementally) and publish ``routine-state.json`` with the
    snapshot that proves it to the next command. ``proof``: the fold the command's import
    check proved a moment ago (:attr:`.foreign.RoutineImports.proof`), taken as it is while
    the ledger and the view are still the ones proven (:meth:`.proven.Proven.still_holds`),
    so a command does not prove the same bytes twice.

    Never over a foreign write (SPEC §10 rule 1): a file whose bytes are neither what we last
    published (the snapshot proves that, the common case: nothing more is read) nor the fold
    was written by another tool since - upstream's shallow merge while our run delegated - so
    its facts are imported first (:func:`.foreign.import_before_publishing`); a file whose
    entries cannot be imported is kept as it is."""
    if proof is None or not proof.still_holds(paths.routine_ledger, paths.routine_state):
        proof = _proven(paths, incremental=True)
    found = proof
    if not paths.routine_ledger.exists():
        return RoutineView(document=found.document(), torn_line=found.tail.torn_line)
    if found.resumed_at == 0 and _foreign(paths.routine_state, found):
        imported = foreign.import_before_publishing(paths, found)
        if imported is False:
            return RoutineView(document=found.document(), torn_line=found.tail.torn_line)
        if imported:
            found = _proven(paths, incremental=True)
    try:
        document = found.publish(paths.routine_state, paths.routine_snapshot)
    except OSError as exc:
        view = RoutineView(document=found.document(), torn_line=found.tail.torn_line)
        raise ViewNotWritten(exc, view) from exc
    return RoutineView(document=document, torn_line=found.tail.torn_line)


class ViewNotWritten(OSError):
    """The routine ledger was folded but ``routine-state.json`` could not be written (a full
    disk, a folder this user may not write): the same ``OSError`` for a caller that treats
    every one alike, with the folded view (``.view``), so a caller whose work is already in the
    ledger can carry on from it and warn, instead of failing what was recorded."""

    def __init__(self, error: OSError, view: RoutineView) -> None:
        super().__init__(error.errno, error.strerror, error.filename, None, error.filename2)
        self.view = view


def _foreign(path: Path, found: proven.Proven) -> bool:
    """Something is at ``path`` and it is not the fold's own view."""
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return False
    except NotRegularFile:
        return True
    return data != render(found.document())


def load_routine_view(paths: ProjectPaths) -> RoutineView:
    """The routine view as :func:`refresh_routine_view` computes it, without writing anything."""
    found = _proven(paths, incremental=True)
    return RoutineView(document=found.document(), torn_line=found.tail.torn_line)


# --- Job Run views ---------------------------------------------------------------------------


def _run_ids(paths: ProjectPaths) -> list[str]:
    if not paths.runs_dir.is_dir():
        return []
    return sorted(p.name[: -len(".jsonl")] for p in paths.runs_dir.glob("*.jsonl"))


def _fold_run(path: Path, torn: Literal["raise", "stop"]) -> RunFold:
    state = RunFold()
    for found in ledger.read(path, torn=torn):
        try:
            raw = codec.upgrade(found.raw)
        except ValueError as exc:
            raise CorruptLedgerError(str(path), found.line, str(exc)) from None
        apply_run(state, raw, where=str(path), line=found.line)
    run_id = state.record.get("run_id")
    if run_id is not None and f"{run_id}.jsonl" != path.name:
        raise CorruptLedgerError(str(path), 1, f"run {run_id} does not match the file name")
    return state


def fold_run(paths: ProjectPaths, run_id: str) -> RunFold:
    """The fold of ``runs/<run_id>.jsonl`` (an empty fold when there is no ledger)."""
    return _fold_run(paths.run_ledger(run_id), "stop")


def load_job_run(paths: ProjectPaths, run_id: str) -> JobRunDoc | None:
    """The ``runs/<run_id>.json`` document folded from its ledger (None: no such run)."""
    return run_document(_fold_run(paths.run_ledger(run_id), "stop"))


def load_job_state(paths: ProjectPaths) -> dict[str, JobCheckpointDoc]:
    """The latest checkpoint per job, folded from every Job Run ledger."""
    jobs: dict[str, JobCheckpointDoc] = {}
    for run_id in _run_ids(paths):
        merge_checkpoints(jobs, _fold_run(paths.run_ledger(run_id), "stop").checkpoints)
    return jobs


def _job_state_proof(data: bytes, stamp: stamps.Stamp) -> bytes:
    """The private snapshot (never the view: SPEC §5) that proves ``job-state.json`` holds
    ``data`` as published by this code: its fingerprint (:func:`codeprint.fingerprint`: a file
    an earlier version folded is folded again), the file's :class:`~.stamps.Stamp` (a restore
    or a copy is another file, even with the same bytes), and the sha256 of its bytes."""
    return orjson.dumps({
        "version": 1, "code": codeprint.fingerprint(), "view_file": stamp.to_json(),
        "view_sha256": hashlib.sha256(data).hexdigest()}) + b"\n"


def proven_job_state(paths: ProjectPaths) -> dict[str, JobCheckpointDoc] | None:
    """``job-state.json`` when this machine's snapshot (:attr:`ProjectPaths.job_state_snapshot`)
    proves it is the file this module published last, else None.

    A view is evidence, not truth (SPEC §5): a backup put back, a copy from another project or
    machine, another tool's rewrite may be in this module's very form and still disagree with
    the run ledgers. Only the file written here - the same inode, size and change time, the
    same bytes - stands for the fold of the ledgers it was published from; anything else is
    checked against them (the caller refolds). Safe to lose: no snapshot costs one refold."""
    try:
        stamp = stamps.Stamp.at(paths.job_state)
        data = read_regular(paths.job_state)
        proof = read_private(paths.job_state_snapshot)
    except OSError:  # no view, no snapshot, or not regular files
        return None
    if proof != _job_state_proof(data, stamp):
        return None
    try:
        jobs: dict[str, JobCheckpointDoc] = dict(documents.parse(data)["jobs"])
    except (KeyError, TypeError, ValueError):
        return None
    return jobs if render(job_state_document(jobs)) == data else None


def _publish_job_state(paths: ProjectPaths, data: bytes) -> None:
    """Make ``data`` ``job-state.json`` (unless it is already), then write the snapshot that
    proves it to the next command; a crash between the two costs that command one refold."""
    publish(paths.job_state, data)
    with contextlib.suppress(OSError):  # a shortcut only: without it the next one refolds
        stamps.replace_private(paths.job_state_snapshot,
                               _job_state_proof(data, stamps.Stamp.at(paths.job_state)))


def refresh_job_views(paths: ProjectPaths, run_ids: Iterable[str] | None = None) -> None:
    """Publish ``runs/<run_id>.json`` for the given runs (None: every run) and
    ``job-state.json``: the given runs' checkpoints merged into the published one when
    :func:`proven_job_state` proves it, else folded from every run ledger."""
    ids = _run_ids(paths) if run_ids is None else sorted(set(run_ids))
    jobs = None if run_ids is None else proven_job_state(paths)
    candidates: list[dict[str, Any]] = []
    for run_id in ids:
        state = _fold_run(paths.run_ledger(run_id), "stop")
        document = run_document(state)
        if document is not None:
            publish(paths.run_view(run_id), render(document))
        candidates += state.checkpoints
    if jobs is None:
        jobs = {} if run_ids is None else load_job_state(paths)
    merge_checkpoints(jobs, candidates)
    if _has_runs(paths, ids):
        _publish_job_state(paths, render(job_state_document(jobs)))


def _has_runs(paths: ProjectPaths, ids: Iterable[str]) -> bool:
    """Whether any run ledger exists: one of ``ids`` (the runs just published, the common
    case: nothing is listed), else the first one a listing of ``runs/`` finds, so publishing
    one run does not cost a listing of every run."""
    if any(paths.run_ledger(run_id).exists() for run_id in ids):
        return True
    return paths.runs_dir.is_dir() and next(paths.runs_dir.glob("*.jsonl"), None) is not None


# --- fold / check / repair -------------------------------------------------------------------


def _from_scratch(paths: ProjectPaths, scratch: proven.Proven | None) -> proven.Proven:
    """A fold of the routine ledger from scratch: ``scratch`` when it is one and the ledger
    is still the file, at the tail, it was made from (nothing appended or changed since)."""
    if scratch is not None and scratch.resumed_at == 0 and (
            scratch.tail == ledger.tail(paths.routine_ledger)):
        return scratch
    return _proven(paths, incremental=False)


def _expected_views(
    paths: ProjectPaths, scratch: proven.Proven | None = None,
) -> Iterator[tuple[Path, bytes, proven.Proven | None]]:
    """Every view a full fold of the ledgers produces (a torn tail raises); the routine view
    comes with its fold, which publishes it with its snapshot."""
    if paths.routine_ledger.exists():
        found = _from_scratch(paths, scratch)
        if found.tail.torn:
            raise TornLedgerError(str(paths.routine_ledger), found.tail.seq + 1)
        yield paths.routine_state, render(found.document()), found
    jobs: dict[str, JobCheckpointDoc] = {}
    run_ids = _run_ids(paths)
    for run_id in run_ids:
        state = _fold_run(paths.run_ledger(run_id), "raise")
        document = run_document(state)
        if document is not None:
            yield paths.run_view(run_id), render(document), None
        merge_checkpoints(jobs, state.checkpoints)
    if run_ids:
        yield paths.job_state, render(job_state_document(jobs)), None


def fold_all(
    paths: ProjectPaths, *, check: bool = False, repair: bool = False,
    keep: Iterable[Path] = (), scratch: proven.Proven | None = None,
) -> list[str]:
    """Rebuild every view from scratch; returns the views that differed (root-relative). The
    routine view's snapshot is written too, also when the view was right (after a copy or a
    restore the view is, and the snapshot names another file).

    ``check``: write nothing (not even a repair), only report. ``repair``: first move every
    ledger's torn tail aside (``<ledger>.torn-<seq>``); without it a torn tail raises
    :class:`TornLedgerError`. ``keep``: files never overwritten (another tool's files whose
    facts conflict with our ledgers, SPEC §10 rule 4). ``scratch``: a fold of the routine
    ledger from scratch the caller already made (its import check); reused when nothing was
    appended or changed since, so a long ledger is verified once per command, not twice.
    """
    kept = set(keep)
    if repair and not check:
        for path in [paths.routine_ledger, *map(paths.run_ledger, _run_ids(paths))]:
            ledger.repair(path)
    drifted = []
    for path, data, found in _expected_views(paths, scratch):
        differs = documents.stored(path) != data
        if differs:
            drifted.append(paths.rel(path))
        if check or path in kept:
            continue
        if found is not None:  # also when the view is right: its snapshot may be stale
            found.publish(path, paths.routine_snapshot)
        elif path == paths.job_state:  # likewise
            _publish_job_state(paths, data)
        elif differs:
            publish(path, data)
    return drifted


# --- replay ----------------------------------------------------------------------------------


def replay(*sources: Path | str | Iterable[Event | codec.Recorded]) -> dict[str, Any]:
    """Fold ledger files and/or events into view documents without touching disk.

    Keys: ``routine-state.json``, ``runs/<run_id>.json``, ``job-state.json`` (over every run
    given). A file named ``routine-runs.jsonl`` is the routine ledger, any other a Job Run
    ledger; a torn tail is left out, as in the published views (a file's routine view is the
    published one, chain head included; :func:`content` leaves only seq and offset, the form
    bare events replay to). Events may be
    bare (numbered in order, stamped ``1970-01-01T00:00:00.000Z``, chained) or
    :class:`codec.Recorded`.
    """
    views: dict[str, Any] = {}
    runs: list[RunFold] = []
    for source in sources:
        if isinstance(source, str | Path) and Path(source).name == ROUTINE_LEDGER_NAME:
            views["routine-state.json"] = proven.from_scratch(Path(source)).document()
        elif isinstance(source, str | Path):
            runs.append(_fold_run(Path(source), "stop"))
        else:
            routine, by_run = _raw_ledgers(source)
            if routine:
                views["routine-state.json"] = _replay_routine(routine)
            runs += [_replay_run(run_id, raws) for run_id, raws in by_run.items()]
    return views | (_job_views(runs) if runs else {})


def _replay_routine(raws: list[dict[str, Any]]) -> RoutineStateDoc:
    state = RoutineFold()
    apply_all(state, raws, where="<events>", upgrade=codec.upgrade)
    return routine_document(state, sum(len(orjson.dumps(raw)) + 1 for raw in raws))


def _replay_run(run_id: str, raws: list[dict[str, Any]]) -> RunFold:
    state = RunFold()
    for line, raw in enumerate(raws, 1):
        apply_run(state, raw, where=f"<events of {run_id}>", line=line)
    return state


def _job_views(folds: list[RunFold]) -> dict[str, Any]:
    views: dict[str, Any] = {}
    jobs: dict[str, JobCheckpointDoc] = {}
    for state in folds:
        document = run_document(state)
        if document is not None:
            views[f"runs/{document['run_id']}.json"] = document
        merge_checkpoints(jobs, state.checkpoints)
    return views | {"job-state.json": job_state_document(jobs)}


def _raw_ledgers(
    items: Iterable[Event | codec.Recorded],
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The ledger lines (parsed) the events would make: the routine ledger and each run's.
    Bare events are chained as an append chains them; recorded ones keep the ``prev`` they had."""
    from specdojo_routine.core import events as ev
    from specdojo_routine.core.job_events import CheckpointImported
    from specdojo_routine.core.routine_events import RoutineEvent

    routine: list[dict[str, Any]] = []
    runs: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        recorded = item if isinstance(item, codec.Recorded) else None
        event = recorded.event if recorded is not None else item
        assert not isinstance(event, codec.Recorded)
        kind, tag = ev.TAGS[type(event)]
        if kind == "routine":
            lines = routine
        else:
            assert not isinstance(event, RoutineEvent)
            run_id = event.last_run_id if isinstance(event, CheckpointImported) else event.run_id
            lines = runs.setdefault(run_id, [])
        seq = recorded.seq if recorded is not None else len(lines) + 1
        at = recorded.at if recorded is not None else _PLACEHOLDER_AT
        line: dict[str, Any] = {"version": 1, "seq": seq, "type": tag, "at": at}
        prev = recorded.prev if recorded is not None else (
            chain.line_hash(orjson.dumps(lines[-1])) if lines else chain.EMPTY_HEAD)
        if prev is not None:
            line["prev"] = prev
        lines.append(line | codec.payload(event))
    return routine, runs
