"""An attempt is interrupted only if it is still open once its runner is found gone (SPEC
§6.5): a run that ends its attempt and exits between a reader's read of the routine state and
its check of the runner is no crash. Found with `list`/`status` in a loop beside `run`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specdojo_routine.app import listing, recent
from specdojo_routine.store.config import ProjectPaths, resolve_project
from tests.conftest import REPO, cli_environ, copy_source, demo_that_ran

DEMO = REPO / "fixtures" / "demo"


@pytest.fixture
def ended_meanwhile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProjectPaths:
    """A demo project whose ledger ends with an open attempt of rtn-heartbeat (its runner, a
    real process, has exited); the first check of a runner puts the attempt's end back, as
    the runner would have appended it just before it exited."""
    paths = demo_that_ran(tmp_path, "rtn-heartbeat")
    lines = paths.routine_ledger.read_bytes().splitlines(keepends=True)
    assert b'"attempt_ended"' in lines[-1]
    paths.routine_ledger.write_bytes(b"".join(lines[:-1]))
    real: Callable[..., Any] = listing.locks.owner_alive

    def finished_then_checked(*args: Any) -> Any:
        if not paths.routine_ledger.read_bytes().endswith(lines[-1]):
            with paths.routine_ledger.open("ab") as f:
                f.write(lines[-1])
        return real(*args)

    monkeypatch.setattr(listing.locks, "owner_alive", finished_then_checked)
    return paths


def test_list_does_not_call_an_attempt_that_ended_meanwhile_interrupted(
        ended_meanwhile: ProjectPaths) -> None:
    rows = {row.id: row for row in listing.list_routines(ended_meanwhile).rows}
    assert (False, "success") == (rows["rtn-heartbeat"].interrupted,
                                  rows["rtn-heartbeat"].status)


def test_history_does_not_call_an_attempt_that_ended_meanwhile_interrupted(
        ended_meanwhile: ProjectPaths) -> None:
    opened = listing.routine_states(ended_meanwhile)[0]["rtn-heartbeat"]["open_attempt"]
    check = recent.RunnerCheck(ended_meanwhile)
    assert not check.gone("rtn-heartbeat", opened["attempt_id"])


def test_an_attempt_still_open_after_the_check_is_interrupted(tmp_path: Path,
                                                               ended_meanwhile: ProjectPaths,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               ) -> None:
    """A runner that really died: the attempt stays open, and list says interrupted."""
    monkeypatch.setattr(listing.locks, "owner_alive", lambda *args: False)
    rows = {row.id: row for row in listing.list_routines(ended_meanwhile).rows}
    assert (True, "running") == (rows["rtn-heartbeat"].interrupted,
                                 rows["rtn-heartbeat"].status)


def test_a_job_run_attempt_that_ended_meanwhile_is_not_interrupted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`job list` / `job show`: the same race for a Job Run's attempt and its runner."""
    from specdojo_routine.app import job_resolve
    from specdojo_routine.store.ledger import views

    copy_source(DEMO, tmp_path / "demo")
    subprocess.run([sys.executable, "-m", "specdojo_routine", "job", "run", "--job",
                    "job-heartbeat", "--root", str(tmp_path / "demo")], env=cli_environ(),
                   check=True, capture_output=True)
    paths = resolve_project(tmp_path / "demo")
    (run_ledger,) = paths.runs_dir.glob("*.jsonl")
    run_id = run_ledger.stem
    lines = run_ledger.read_bytes().splitlines(keepends=True)
    cut = max(i for i, line in enumerate(lines) if b'"attempt_started"' in line) + 1
    run_ledger.write_bytes(b"".join(lines[:cut]))
    view = views.load_job_run(paths, run_id)
    real: Callable[..., Any] = job_resolve.locks.owner_alive

    def finished_then_checked(*args: Any) -> Any:
        run_ledger.write_bytes(b"".join(lines))
        return real(*args)

    monkeypatch.setattr(job_resolve.locks, "owner_alive", finished_then_checked)
    assert job_resolve.open_attempt(view) == 1
    assert not job_resolve.interrupted(paths, run_id, view)
