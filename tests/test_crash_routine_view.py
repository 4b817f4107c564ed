"""The routine view keeps up with an attempt, and an attempt an environment error cuts short is
ended by its runner (SPEC §5, §6.5).

- A runner killed (SIGKILL) while an action runs leaves the view as current as its ledger:
  the view is published after each action's start and end too, so `fold --check` right after
  the crash finds no drift (the attempt is open, as the ledger says).
- A full or read-only disk mid-attempt (here an `OSError` from a Job action, or from the
  view's publish) ends the attempt as a failure whose reason names the error: the runner
  lives, so it must not leave an attempt open for the next run to call interrupted.
"""

from __future__ import annotations

import os
import signal

import pytest
from conftest import Project, period_job, wait_for_text

from specdojo_routine.app import handlers
from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.ledger import views


def test_a_runner_killed_mid_action_leaves_a_view_fold_check_finds_current(
        project: Project) -> None:
    """SIGKILL of `run --id` while its Job action's command runs: `fold --check` exits 0,
    and the published view shows the action that was running."""
    project.job("job-slow", period_job("job-slow", "'echo $$ > pid.txt; sleep 60'"))
    project.routine("rtn-slow", "interval: 1h\naction: {kind: job, job: job-slow, "
                                "inputs: {period: W1}}\n")
    proc = project.popen("run", "--id", "rtn-slow")
    pgid = int(wait_for_text(project.root / "pid.txt"))
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    os.killpg(pgid, signal.SIGKILL)

    checked = project.cli("fold", "--check")
    assert 0 == checked.returncode, checked.stdout + checked.stderr
    entry = project.state()["routines"]["rtn-slow"]
    assert "running" == entry["status"]
    assert [1] == [a["index"] for a in entry["open_attempt"]["actions"]]


def _full_disk(project: Project) -> OSError:
    return OSError(28, "No space left on device", str(project.root / "execution" / "x"))


def test_an_environment_error_in_an_action_ends_the_attempt_as_a_failure(
        project: Project) -> None:
    """The Job action raises ENOSPC: the attempt ends `failure`, reason `run aborted: …`, the
    view says so, and the next run does not find it interrupted."""
    project.job("job-x", period_job("job-x", "'true'"))
    project.routine("rtn-b", "interval: 1h\naction: {kind: job, job: job-x, "
                             "inputs: {period: W1}}\n")

    def full_disk(*_args: object, **_kw: object) -> handlers.JobActionOutcome:
        raise _full_disk(project)

    report = handlers.run(resolve_project(project.root), env=project.env(),
                          job_runner=full_disk)  # type: ignore[arg-type]
    assert 1 == report.exit_code and report.errors[0].startswith("error: run aborted: ")
    ended = [e for e in project.events() if e["type"] == "attempt_ended"]
    assert [("failure", "run aborted: " + str(project.root / "execution" / "x") +
             ": No space left on device (free some space on that file system and run the "
             "command again)")] == [(e["result"], e["reason"]) for e in ended]
    entry = project.state()["routines"]["rtn-b"]
    assert ("failure", None) == (entry["status"], entry.get("open_attempt"))
    assert 0 == project.cli("fold", "--check").returncode
    again = project.cli("run", "--due", "--now", "2099-01-01T00:00:00Z")
    assert "interrupted" not in again.stdout + again.stderr


def test_a_view_that_cannot_be_published_before_delegating_ends_the_attempt(
        project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """The publish of `running` before the first action fails (a full disk): nothing is
    delegated, and the attempt ends `failure` with the reason instead of staying open."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    real = views.refresh_routine_view

    def refresh(*args: object, **kw: object) -> object:
        recorded = project.events()
        if recorded and recorded[-1]["type"] == "attempt_started":  # publishing `running`
            raise _full_disk(project)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(views, "refresh_routine_view", refresh)
    report = handlers.run(resolve_project(project.root), env=project.env())
    assert 1 == report.exit_code
    kinds = [e["type"] for e in project.events() if e.get("routine_id") == "rtn-a"]
    assert ["routine_registered", "attempt_started", "attempt_ended"] == kinds
    assert [] == project.calls()  # nothing was delegated


def test_a_job_action_cut_short_by_the_environment_says_where_and_what_to_do(
        project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Job Run that cannot be written (ENOSPC on its ledger) fails the routine's `job`
    action with the reason every environment error has - the file, what failed, what to do -
    not Python's `[Errno 28] ...`."""
    from specdojo_routine.app import jobs

    project.job("job-x", period_job("job-x", "'true'"))
    project.routine("rtn-b", "interval: 1h\naction: {kind: job, job: job-x, "
                             "inputs: {period: W1}}\n")

    def full_disk(*_args: object, **_kw: object) -> object:
        raise _full_disk(project)

    monkeypatch.setattr(jobs, "run_job", full_disk)
    report = handlers.run(resolve_project(project.root), env=project.env(),
                          job_runner=jobs.routine_job_runner)
    assert [("rtn-b", "failure")] == [(r.routine_id, r.result) for r in report.results]
    ended = next(e for e in project.events() if e["type"] == "action_ended")
    assert str(project.root / "execution" / "x") + ": No space left on device (free some " \
        "space on that file system and run the command again)" == ended["reason"]
