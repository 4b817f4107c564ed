"""The foreign-file check of a Job's runs, reading only the files that changed (SPEC §10, §15).

Before a Job action records anything it must know that no ``runs/<run_id>.json`` of that Job
holds facts our ledgers lack (another tool added an attempt) and what the Job's latest
checkpoint is. Reading every run's ledger and view for that costs what the project's age costs;
instead a snapshot of stamps remembers, per run, the identity, size and change times of its two
files when both were last found to be ours (the view is byte for byte the fold of the ledger),
with the run's checkpoints. A run whose files still carry those stamps is *settled*: it is not
read again. Only runs whose stamps changed (or that the snapshot does not know) are read and
checked, as :mod:`.adopt` always did.

The snapshot is private and machine-local (``E/.cache/job-runs/<job_id>.json``, git-ignored,
never read by other tools): it holds inode numbers, which a copy or a restore changes, and
then every run is simply read once and a new snapshot written. Deleting it is always safe. It
records the fingerprint of the code that checked the runs (:func:`codeprint.fingerprint`): a
run an earlier version found ours is checked again by this one after an upgrade, as with no
snapshot. It is written only by commands that hold the exec lock; read-only commands use it
and write nothing. A change that keeps a file's size and both its times in the same clock
tick is the one change a stamp cannot see, as for the routine ledger (:mod:`.stamps`): so a
run whose files changed in the tick the snapshot was written in, or later (a file system
that keeps whole seconds: ext3, ext4 with 128-byte inodes, FAT), is not settled by it but read
again, as the routine view's snapshot is (:mod:`.proven`).
"""

from __future__ import annotations

import contextlib
import os
import string
from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from specdojo_routine.core import event_parts, jobfold
from specdojo_routine.store import codeprint
from specdojo_routine.store.config import ProjectPaths, read_private
from specdojo_routine.store.ledger import adopt, views
from specdojo_routine.store.ledger.stamps import replace_private

__all__ = ["checkpoint", "import_job_runs", "plan", "snapshot_path"]

SNAPSHOT_VERSION = 1
_WHICH = {".jsonl": 0, ".json": 1}  # a run's ledger, then its view: their place in a stamp
_ID_CHARS = frozenset(string.ascii_letters + string.digits + "-")  # what event_parts.RUN_ID allows
_ENTRY_KEYS = ("checkpoint", "last_run_id", "updated_at")  # a checkpoint, as merged
Settled = dict[str, dict[str, jobfold.JobCheckpointDoc]]


def snapshot_path(paths: ProjectPaths, job_id: str) -> Path:
    """Where the stamps of ``job_id``'s runs are kept."""
    if not event_parts.JOB_ID.fullmatch(job_id):
        raise ValueError(f"not a Job id: {job_id!r}")
    return paths.exec_cache_dir / "job-runs" / f"{job_id}.json"


def _stamps(paths: ProjectPaths, job_id: str) -> dict[str, str]:
    """Every run of ``job_id`` that has a ledger or a view, with both files' identity, size
    and change times as one string (``stat`` only: nothing is opened). This is the one part
    of the check that visits every run, so it does no more per file than the stat: the
    name is tested with string operations, the stamp is the numbers themselves, and each
    file is stat-ed by its name in the open directory (the kernel does not walk the whole
    path again for every file)."""
    prefix = f"JBR-{job_id.removeprefix('job-')}-"
    size = len(prefix) + 12
    found: dict[str, list[str]] = {}
    try:
        fd = os.open(paths.runs_dir, os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                name = entry.name
                which = _WHICH.get(name[size:]) if name.startswith(prefix) else None
                if which is None or not _ID_CHARS.issuperset(name[size - 12:size]):
                    continue
                try:
                    st = entry.stat()
                except FileNotFoundError:
                    continue
                facts = found.setdefault(name[:size], ["-", "-"])
                facts[which] = \
                    f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    finally:
        os.close(fd)
    return {run_id: " ".join(facts) for run_id, facts in found.items()}


def _load(path: Path) -> tuple[dict[str, Any], bytes | None, int]:
    """The snapshot's runs (empty when it is missing, not one of ours or written by other
    code), its bytes and its change time. Only a regular file is read, never through a
    symlink: a FIFO in its place would block every Job action (and the dry run) forever;
    anything else there is no snapshot, and the next recording command replaces it. The
    change time is taken before the bytes are read, as :meth:`.proven.Snapshot.read` does."""
    try:
        written_ns = os.lstat(path).st_ctime_ns
        data = read_private(path)
        doc = orjson.loads(data)
    except (OSError, orjson.JSONDecodeError):
        return {}, None, 0
    if not isinstance(doc, dict) or doc.get("version") != SNAPSHOT_VERSION \
            or type(doc.get("version")) is not int or not isinstance(doc.get("runs"), dict) \
            or doc.get("code") != codeprint.fingerprint():
        return {}, data, 0
    return doc["runs"], data, written_ns


def _settled(known: Mapping[str, Any], stamps: Mapping[str, str],
             racy: Collection[str]) -> Settled:
    """The runs whose stamps are the snapshot's, with their checkpoints per job (a run whose
    checkpoints are not what :func:`_save` writes is not settled: it is read again, and so is
    one of ``racy``, whose files changed no earlier than the snapshot was written)."""
    settled: Settled = {}
    for run_id, digest in stamps.items():
        if run_id in racy:
            continue
        entry = known.get(run_id)
        if isinstance(entry, str) and entry == digest:
            settled[run_id] = {}
        elif isinstance(entry, list) and len(entry) == 2 and entry[0] == digest \
                and _checkpoints_of(run_id, entry[1]):
            settled[run_id] = entry[1]
    return settled


def _changed_ns(digest: str) -> int:
    """The latest change time in a run's stamp (:func:`_stamps`: each file's fields, its
    change time last, or ``-`` for no file)."""
    return max((int(facts.rsplit(":", 1)[1]) for facts in digest.split(" ") if facts != "-"),
               default=0)


def _checkpoints_of(run_id: str, best: Any) -> bool:
    """Whether ``best`` is a run's checkpoints per job as :func:`_save` writes them: a
    non-empty mapping of job ids to entries whose ``checkpoint`` is a mapping and whose
    ``last_run_id`` is this run (a damaged snapshot, still JSON, must not be trusted, nor
    make the command fail)."""
    return isinstance(best, dict) and bool(best) and all(
        isinstance(entry, dict) and tuple(entry) == _ENTRY_KEYS
        and isinstance(entry["checkpoint"], dict) and entry["last_run_id"] == run_id
        for entry in best.values())


def plan(paths: ProjectPaths, job_id: str) -> adopt.JobImports:
    """What importing ``job_id``'s runs would append, reading only the runs whose stamps
    changed (in memory; writes nothing)."""
    return _plan(paths, job_id)[0]


def _plan(
    paths: ProjectPaths, job_id: str, *, every: bool = False
) -> tuple[adopt.JobImports, dict[str, str], bytes | None]:
    """The plan, the stamps seen and the snapshot's bytes. The stamps are taken before any
    file is read, so a file that changes while it is read no longer matches its stamp and
    is read again next time. ``every``: plan the import of every run and of every Job's
    ``job-state.json`` entry, reading them all."""
    stamps = _stamps(paths, job_id)
    known, before, written_ns = _load(snapshot_path(paths, job_id))
    if every:
        return adopt.plan_job_imports(paths), stamps, before
    racy = {run_id for run_id, digest in stamps.items() if _changed_ns(digest) >= written_ns}
    settled = _settled(known, stamps, racy)
    if not racy.isdisjoint(known):
        before = None  # written again even with the same bytes: a later tick settles them
    changed = sorted(r for r in stamps if r not in settled)
    found = adopt.plan_job_imports(paths, job_id=job_id, only=changed, settled=settled)
    return found, stamps, before


def checkpoint(paths: ProjectPaths, job_id: str) -> dict[str, Any] | None:
    """The Job's latest checkpoint after an import (in memory; writes nothing)."""
    return plan(paths, job_id).checkpoint(job_id)


def import_job_runs(
    paths: ProjectPaths, clock: Callable[[], datetime], *, job_id: str, needed: str | None,
) -> adopt.JobImports:
    """Import first (the caller holds the exec lock), then remember the runs found ours; a
    conflict on the run ``needed`` (or on ``job-state.json``) refuses the command.

    The command republishes ``job-state.json`` whole, so when that file is not the one this
    machine published last (:func:`.views.proven_job_state`: another tool rewrote it, a backup
    was put back) the entries of every Job in it are checked, not just this Job's: the facts
    our ledgers lack are imported before the file is replaced (SPEC §10 rule 1)."""
    every = paths.job_state.exists() and views.proven_job_state(paths) is None
    found, stamps, before = _plan(paths, job_id, every=every)
    adopt.apply_job_imports(paths, found, clock)
    _save(paths, job_id, found, stamps, before)
    refused = [m for k, m in found.conflicts.items() if k in (needed, "job-state")]
    if refused:
        raise adopt.ImportConflict("; ".join(refused))
    return found


def _save(paths: ProjectPaths, job_id: str, found: adopt.JobImports,
          stamps: Mapping[str, str], before: bytes | None) -> None:
    """Write the snapshot when it changed: every run settled or read and found ours (a run
    that gets import events, is in conflict or had a stale view is read again next time:
    its files changed, or publishing failed and must be tried again)."""
    runs: dict[str, Any] = {}
    for run_id in sorted(stamps):
        if run_id in found.events or run_id in found.conflicts or run_id in found.stale:
            continue
        fold = found.folds.get(run_id)
        if fold is None:
            best = found.settled.get(run_id)
            if best is None:
                continue
        else:
            best = {}
            jobfold.merge_checkpoints(best, fold.checkpoints)
        runs[run_id] = [stamps[run_id], best] if best else stamps[run_id]
    data = orjson.dumps({"version": SNAPSHOT_VERSION, "code": codeprint.fingerprint(),
                         "job_id": job_id, "runs": runs})
    if data != before:
        with contextlib.suppress(OSError):  # a cache: failing to write it costs a re-read
            replace_private(snapshot_path(paths, job_id), data)
