"""``prune`` when a file fails it or a stop arrives (SPEC §15): one owner's failure keeps that
owner for now and the others are pruned (exit 1, one line per owner), a stop waits for the
owner being pruned, a failed append leaves no view behind its ledger; and a Job Run whose
ledger is empty is said to be so, not "unknown"."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from specdojo_routine.app import adoption, prune
from specdojo_routine.core.retention import Retention
from specdojo_routine.execute import prunefiles
from specdojo_routine.store.ledger import journal, stamps, views
from tests import jobhelper
from tests.conftest import REPO, Project
from tests.test_prune import (
    JOB,
    LATER,
    T0,
    assert_views_rebuild,
    attempts,
    exists,
    make_run,
    records,
    root,
    routine_records,
    run_id,
)

__all__ = ["attempts", "root"]  # the fixtures, shared with test_prune

PRUNE = ("prune", "--keep-days", "0", "--keep-runs", "0", "--now", LATER.isoformat())


def test_a_fifo_for_a_run_ledger_keeps_that_run_and_prunes_the_others(root: Path,
                                                                       project: Project) -> None:
    """A FIFO where one run's ledger should be: that run is kept (its path named, exit 1),
    the other runs are pruned; the FIFO is never opened (prune does not hang)."""
    paths = jobhelper.paths_of(root)
    fifo = paths.run_ledger(run_id("p0"))
    fifo.unlink()
    os.mkfifo(fifo)
    done = project.cli(*PRUNE, timeout=60)
    assert 1 == done.returncode
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {run_id('p0')}: {fifo}: not a regular file"), line
    assert [[True] * 3] + [[False] * 3] * 3 == [exists(paths, run_id(f"p{n}"))
                                                for n in range(4)]  # p4: the checkpoint


def test_a_marker_that_is_a_directory_keeps_that_attempt_only(
    project: Project, attempts: list[str],
) -> None:
    """A directory named like the removal marker in one attempt's evidence: that attempt is
    kept (nothing recorded for it, exit 1 naming the path and what to do), the others go."""
    paths = jobhelper.paths_of(project.root)
    odd = paths.evidence_dir / "routines" / attempts[0] / prunefiles.REMOVAL_MARKER
    odd.mkdir()
    done = project.cli(*PRUNE, timeout=60)
    assert 1 == done.returncode
    [line] = done.stderr.splitlines()
    assert f"{odd}: Is a directory (a directory is where a file should be: move it aside)" \
        in line
    assert "pruned 0 Job Run(s) and 4 routine attempt(s)" in done.stdout
    assert attempts[1:] == [r["attempt_id"] for r in routine_records(project)]
    assert [attempts[0]] == [p.name for p in (paths.evidence_dir / "routines").iterdir()]
    assert_views_rebuild(paths)


def chattr(flag: str, path: Path) -> bool:
    return subprocess.run(["chattr", flag, str(path)], capture_output=True,
                          check=False).returncode == 0


def test_a_file_that_cannot_be_removed_stops_only_its_run(root: Path, project: Project) -> None:
    """An immutable file in the oldest run's evidence: the record is appended and that run is
    reported (exit 1, the file's path), the other runs are pruned; once the file can go, the
    next prune finishes the run without a second record. Under ``retention.auto`` the same:
    a warning, and the rest pruned."""
    paths = jobhelper.paths_of(root)
    stuck = next((paths.evidence_dir / run_id("p0")).rglob("*.log"))
    if not chattr("+i", stuck):
        pytest.skip("chattr +i is not available here")
    try:
        done = project.cli(*PRUNE, timeout=60)
        assert (1, 1) == (done.returncode, len(done.stderr.splitlines())), done.stderr
        assert f"{stuck}: Operation not permitted" in done.stderr
        assert [False] * 3 == [exists(paths, run_id(f"p{n}"))[0] for n in range(1, 4)]
        auto = attrs.evolve(paths, retention=Retention(keep_days=0, keep_runs=0, auto=True))
        again = prune.prune_during_run(auto, views.load_routine_view(paths), now=LATER,
                                       clock=lambda: LATER, env={}, budget_s=60)
        assert [run_id("p0")] == [line.split(":")[0] for line in again.failed]
    finally:
        chattr("-i", stuck)
    assert 0 == project.cli(*PRUNE).returncode
    assert ([False] * 3, 1) == (exists(paths, run_id("p0")), len(records(paths, run_id("p0"))))
    assert_views_rebuild(paths)


def test_a_failed_append_leaves_the_routine_view_in_step(
    project: Project, attempts: list[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A full disk at the third attempt's record: the two recorded are in the routine view
    (fold --check finds no drift), the others are reported kept for now."""
    paths = jobhelper.paths_of(project.root)
    real, count = journal.Ledger.append, [0]

    def append(self: journal.Ledger, event: Any) -> int:
        count[0] += 1
        if count[0] >= 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
        return real(self, event)

    monkeypatch.setattr(journal.Ledger, "append", append)
    report = prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
    monkeypatch.undo()
    assert (2, 3) == (len(routine_records(project)), len(report.failed))
    assert all("No space left on device" in line for line in report.failed)
    assert [] == adoption.fold(paths, check=True).drifted


STOP_AFTER_APPEND = """
import os, signal, sys
from datetime import datetime
sys.path.insert(0, {repo!r})
from specdojo_routine.execute import stop
from specdojo_routine.store.ledger import journal
real = journal.Ledger.append
def append(self, event):
    seq = real(self, event)
    os.kill(os.getpid(), signal.SIGTERM)  # the operator's stop, right after the record
    return seq
journal.Ledger.append = append
stop.install()
from specdojo_routine.cli import main
sys.exit(main({argv!r}))
"""


def test_a_stop_waits_for_the_owner_being_pruned(root: Path, project: Project) -> None:
    """SIGTERM just after a run's record: that run's view is published and its files go
    before the command stops (exit 143); no temporary file is left, the views stay in step
    with the ledgers, and the next prune goes on with the other runs."""
    paths = jobhelper.paths_of(root)
    argv = [*PRUNE, "--root", str(root)]
    done = subprocess.run([sys.executable, "-c", STOP_AFTER_APPEND.format(
        repo=str(REPO), argv=argv)], capture_output=True, text=True, timeout=120,
        env=jobhelper.clean_env())
    assert 143 == done.returncode, done.stderr
    assert [False] * 3 == exists(paths, run_id("p0"))
    assert [] == list(paths.runs_dir.glob(".*.tmp"))
    assert [] == adoption.fold(paths, check=True).drifted
    assert 0 == project.cli(*PRUNE).returncode
    assert [[False] * 3] * 4 == [exists(paths, run_id(f"p{n}")) for n in range(4)]


def test_a_stop_as_the_temp_file_is_made_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C right after the temporary file of a replace is made: it is removed too."""
    real = os.open

    def made_then_stopped(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real(name, flags, *args, **kwargs)
        if flags & os.O_CREAT:
            os.close(fd)
            raise KeyboardInterrupt
        return fd

    monkeypatch.setattr(os, "open", made_then_stopped)
    with pytest.raises(KeyboardInterrupt):
        stamps.replace(tmp_path / "view.json", b"{}")
    assert [] == list(tmp_path.iterdir())


def test_job_show_of_a_run_whose_ledger_is_empty(project: Project) -> None:
    """A run ledger a full disk left empty: `job show` says so and what to do (exit 1), and
    never suggests the very id it was given."""
    project.job("job-n", JOB)
    make_run(project.root, "p0", T0)
    paths = jobhelper.paths_of(project.root)
    empty = paths.run_ledger("JBR-x")
    empty.touch()
    done = project.cli("job", "show", "JBR-x")
    assert 1 == done.returncode
    assert f"error: {empty}: the ledger of Job Run JBR-x is empty" in done.stderr
    assert "did you mean JBR-x" not in done.stderr
    empty.unlink()
    (paths.runs_dir / "JBR-x.jsonl.torn-1").touch()  # a name that is not a run's
    assert "did you mean JBR-x?" not in project.cli("job", "show", "JBR-x").stderr
