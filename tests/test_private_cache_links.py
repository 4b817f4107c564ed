"""The private caches under ``R/.cache`` and ``E/.cache`` (SPEC §5: machine-local, safe to
delete, rebuilt) are never read or written through a symbolic link standing where their
directory belongs: what such a link names is not ours, wherever it points."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from specdojo_routine.app import prune_facts
from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.definitions.defcache import DefinitionCache
from specdojo_routine.store.ledger import proven, runcheck, views
from tests.conftest import Project

NOW = "2026-08-07T08:00:00Z"


def _state(directory: Path) -> dict[str, tuple[bytes, int] | None]:
    """Every file and folder under ``directory``, with the bytes and modification time of
    each file: what must stay exactly as it is."""
    found: dict[str, tuple[bytes, int] | None] = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        found[rel] = (path.read_bytes(), path.stat().st_mtime_ns) if path.is_file() else None
    return found


def _caches(project: Project) -> tuple[Path, Path]:
    return project.root / "routines" / ".cache", project.root / "execution" / ".cache"


def test_a_cache_directory_linked_out_of_the_project_is_neither_read_nor_written(
    project: Project, tmp_path: Path,
) -> None:
    """``R/.cache`` and ``E/.cache`` as links to directories outside the project: every cache
    (definitions, the routine view's snapshot, job-state's snapshot, the import check's
    stamps, retention's facts) was written into them, and read from them. Now the commands
    work as without the caches, and what the links name stays untouched: byte for byte, no
    file added, none read (the valid caches put there by this very code are not taken)."""
    project.routine("rtn-a", 'trigger: {cron: "0 * * * *", timezone: UTC}\n'
                              "action: {kind: job, job: job-a}\n")
    project.job("job-a", 'name: A\ntask: {mode: command, command: "echo hi"}\n'
                         'run: {idempotency_key: "{{job_id}}:{{scheduled_at}}"}\n')
    for args in (["run", "--id", "rtn-a", "--now", NOW], ["prune", "--now", NOW]):
        done = project.cli(*args)
        assert 0 == done.returncode, done.stdout + done.stderr
    routine_cache, exec_cache = _caches(project)
    outside = tmp_path / "outside"
    outside.mkdir()
    for name, cache in (("R", routine_cache), ("E", exec_cache)):
        shutil.move(cache, outside / name)  # valid caches, written by this code
        cache.symlink_to(outside / name, target_is_directory=True)
    (outside / "E" / "unrelated.txt").write_text("not yours\n")
    before = _state(outside)
    assert {"R/definitions.json", "R/routine-state.snapshot.json", "E/job-state.snapshot.json",
            "E/job-runs/job-a.json", "E/retention.json"} <= set(before)

    paths = resolve_project(project.root, None)
    assert proven.Snapshot.read(paths.routine_snapshot) is None
    assert views.proven_job_state(paths) is None
    assert {} == DefinitionCache(paths.routine_cache_dir)._old
    assert ({}, None, 0) == runcheck._load(runcheck.snapshot_path(paths, "job-a"))
    assert ({}, None) == prune_facts._load(prune_facts.cache_path(paths))

    for args in (["run", "--id", "rtn-a", "--now", "2026-08-07T09:00:00Z"],
                 ["job", "run", "--job", "job-a"], ["list", "--now", NOW],
                 ["prune", "--now", NOW], ["fold"], ["fold", "--check"], ["validate"]):
        done = project.cli(*args)
        assert (0, "") == (done.returncode, done.stderr), (args, done.stdout)
    assert before == _state(outside)
    assert all(os.path.islink(cache) for cache in _caches(project))
