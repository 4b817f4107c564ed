"""Routine evidence is pruned on the routine ledger's word (SPEC §15): an attempt whose
``attempt_started`` and end the ledger records, its routine and times from there, never from
the evidence's own ``evidence.json``; the ledger read forward from where the last prune
stopped, resumable at a deadline (copied projects too); a removal a crash left half done
finished without a second record."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.app import prune, prune_facts, prune_ledger
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.ledger import chain
from tests import jobhelper, ledgergen
from tests.conftest import REPO, Project
from tests.test_prune import LATER, T0, assert_views_rebuild, attempts, routine_records

__all__ = ["attempts"]  # the fixture, shared with test_prune


def evidence(paths: ProjectPaths, attempt_id: str, routine_id: str, *,
             day: str = "2025-01-01") -> Path:
    """An attempt's evidence folder as delegated calls leave it, its ``evidence.json``
    naming ``routine_id``, plus a file of the operator's own."""
    action = paths.evidence_dir / "routines" / attempt_id / "action-1"
    action.mkdir(parents=True)
    (action / "evidence.json").write_bytes(orjson.dumps({
        "schema_version": 1, "routine_id": routine_id, "attempt_id": attempt_id, "action": 1,
        "started_at": f"{day}T08:00:05Z", "completed_at": f"{day}T08:00:06Z"}))
    (action.parent / "notes.txt").write_text("mine\n")
    return action.parent


def test_evidence_kept_when_the_routine_ledger_was_moved_aside(
    project: Project, attempts: list[str],
) -> None:
    """A new routine ledger beside the old evidence: nothing is recorded for routines the
    new ledger has never seen (a record its fold refuses would make every command fail),
    nothing is removed, each attempt is reported kept; every command still works."""
    paths = jobhelper.paths_of(project.root)
    shutil.move(paths.routine_ledger.parent, project.root / "old-generated")
    done = project.cli("prune", "--keep-days", "0", "--keep-runs", "0", "--now",
                       LATER.isoformat())
    assert 0 == done.returncode, done.stderr
    assert [] == routine_records(project)
    assert sorted(attempts) == sorted(p.name for p in (paths.evidence_dir / "routines").iterdir())
    assert 5 == done.stderr.count("the routine ledger has no attempt_started for this attempt")
    for command in (("list",), ("fold", "--check"), ("prune", "--keep-days", "0")):
        assert 0 == project.cli(*command).returncode, command


@pytest.mark.parametrize("routine_id", ["rtn-ghost", "rtn-a"])
def test_evidence_of_an_attempt_the_ledger_never_started_is_kept(
    project: Project, attempts: list[str], routine_id: str,
) -> None:
    """An attempt folder no ledger line accounts for, whatever routine its evidence.json
    names (unknown, or one that exists): kept with every file in it, nothing recorded for
    it; the attempts the ledger knows are pruned."""
    paths = jobhelper.paths_of(project.root)
    forged = evidence(paths, "att-20250101T080005Z-feedface", routine_id)
    report = prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
    assert sorted(attempts) == sorted(r.owner for r in report.removed)
    assert ["action-1", "notes.txt"] == sorted(p.name for p in forged.iterdir())
    assert sorted(attempts) == sorted(r["attempt_id"] for r in routine_records(project))
    assert any(s.startswith("att-20250101T080005Z-feedface:") for s in report.skipped)
    assert_views_rebuild(paths)


def test_the_window_counts_from_the_end_the_ledger_records(
    project: Project, attempts: list[str],
) -> None:
    """An evidence.json that says its attempt ended long ago does not make it prunable: the
    window counts from the end in the routine ledger (the newest attempt, 27 days before
    ``now``, stays with keep_days 30)."""
    paths = jobhelper.paths_of(project.root)
    newest = paths.evidence_dir / "routines" / attempts[-1] / "action-1" / "evidence.json"
    doc = orjson.loads(newest.read_bytes())
    newest.write_bytes(orjson.dumps({**doc, "started_at": "2020-01-01T00:00:00Z",
                                     "completed_at": "2020-01-01T00:00:01Z"}))
    report = prune.prune(paths, keep_days=30, keep_runs=0, now=T0 + timedelta(days=31),
                         env={})
    assert sorted(attempts[:1]) == sorted(r.owner for r in report.removed)


# --- reading the ledger forward ----------------------------------------------------------------


def long_ledger(paths: ProjectPaths) -> list[str]:
    """A routine ledger of ~6,000 lines (many chunks); evidence for two of its attempts."""
    ledgergen.write_ledger(paths.routine_ledger, 6000, ["rtn-a"])
    wanted = ["att-00000002", "att-00001400"]
    for attempt_id in wanted:
        (paths.evidence_dir / "routines" / attempt_id).mkdir(parents=True)
    return wanted


def one_chunk_each() -> Callable[[], bool]:
    """A deadline that lets each call read one chunk of the ledger."""
    calls = [0]

    def late() -> bool:
        calls[0] += 1
        return calls[0] > 1
    return late


def test_a_stopped_reading_goes_on_next_time_in_a_copy_too(project: Project,
                                                            tmp_path: Path) -> None:
    """Each call with a deadline reads on from where the last stopped, the position kept in
    the cache; a copy of the project (new inodes and stamps) goes on from there as well.
    Once read to the end, a call reads nothing: its cost does not grow with the ledger."""
    paths = jobhelper.paths_of(project.root)
    wanted = long_ledger(paths)
    offsets = []
    for n in range(3):
        if n == 2:
            shutil.copytree(project.root, tmp_path / "copy", symlinks=True)
            paths = jobhelper.paths_of(tmp_path / "copy")
        facts = prune_facts.gather(paths, late=one_chunk_each(), write=True)
        assert not facts.complete
        offsets.append(orjson.loads(prune_facts.cache_path(paths).read_bytes())
                       ["ledger"]["offset"])
    assert 0 < offsets[0] < offsets[1] < offsets[2], offsets
    calls = 3
    while not prune_facts.gather(paths, late=one_chunk_each(), write=True).complete:
        calls += 1
    assert calls <= paths.routine_ledger.stat().st_size / chain.READ_BUFFER + 1  # a chunk each
    facts = prune_facts.gather(paths, late=lambda: False, write=True)
    assert {a: ("rtn-a", True) for a in wanted} == {
        a: (f.routine_id, f.completed_at is not None) for a, f in facts.attempts.items()}


def test_a_replaced_ledger_is_read_from_its_start(project: Project,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The line at the remembered position must be the one read there (its hash): a ledger
    moved aside and started anew is read again from line 1, what the old one said
    forgotten; an unchanged ledger is not read at all."""
    paths = jobhelper.paths_of(project.root)
    wanted = long_ledger(paths)
    assert set(wanted) == set(prune_facts.gather(paths, late=lambda: False, write=True)
                              .attempts)
    read: list[int] = []
    real = chain.positioned_chunks

    def spy(f: Any, path: Any, offset: int, *args: Any, **kwargs: Any) -> Any:
        read.append(offset)
        return real(f, path, offset, *args, **kwargs)

    monkeypatch.setattr(chain, "positioned_chunks", spy)
    assert {"rtn-a"} == {f.routine_id for f in prune_facts.gather(
        paths, late=lambda: False, write=True).attempts.values()}
    assert [] == read
    paths.routine_ledger.unlink()
    ledgergen.write_ledger(paths.routine_ledger, 40, ["rtn-b"])
    facts = prune_facts.gather(paths, late=lambda: False, write=True)
    assert ([0], {"rtn-b", None}) == (read, {f.routine_id for f in facts.attempts.values()})


def test_the_reading_remembers_only_what_is_kept(project: Project) -> None:
    """Attempts that ended with no evidence are not remembered: the cache stays the size of
    what the project keeps, not of its history."""
    paths = jobhelper.paths_of(project.root)
    wanted = long_ledger(paths)
    prune_facts.gather(paths, late=lambda: False, write=True)
    remembered = orjson.loads(prune_facts.cache_path(paths).read_bytes())["ledger"]
    assert sorted(wanted) == sorted(remembered["attempts"])
    assert prune_ledger.read(paths, remembered, wanted, lambda: False)[2]


# --- a removal a crash left half done ------------------------------------------------------------

KILL_BEFORE_RMDIR = """
import os, pathlib, signal, sys
from datetime import datetime
from pathlib import Path
sys.path.insert(0, {repo!r})
pathlib.Path.rmdir = lambda self: os.kill(os.getpid(), signal.SIGKILL)
from specdojo_routine.app import prune
from specdojo_routine.store.config import resolve_project
prune.prune(resolve_project(Path({root!r}), env={{}}), keep_days=0, keep_runs=0,
            now=datetime.fromisoformat({now!r}), env={{}})
"""


@pytest.mark.parametrize("keep_days", [0, 3650])
def test_a_crash_before_the_empty_folder_goes_is_finished_without_a_record(
    project: Project, attempts: list[str], keep_days: int,
) -> None:
    """SIGKILL after an attempt's files and marker are gone, before its folder is: the next
    prune (whatever its window) removes the empty folder and records nothing new."""
    paths = jobhelper.paths_of(project.root)
    code = KILL_BEFORE_RMDIR.format(repo=str(REPO), root=str(project.root),
                                    now=LATER.isoformat())
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=jobhelper.clean_env())
    assert -signal.SIGKILL == done.returncode, done.stderr
    folder = paths.evidence_dir / "routines" / attempts[0]
    assert [attempts[0]] == [r["attempt_id"] for r in routine_records(project)]
    assert (True, []) == (folder.is_dir(), list(folder.iterdir()))
    prune.prune(paths, keep_days=keep_days, keep_runs=0, now=LATER, env={})
    assert not folder.exists()
    records = [r["attempt_id"] for r in routine_records(project)]
    assert 1 == records.count(attempts[0]), records
