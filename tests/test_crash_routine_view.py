"""The routine view keeps up with an attempt, and an attempt an environment error cuts short is
ended by its runner (SPEC §5, §6.5).

- A runner killed (SIGKILL) while an action runs leaves the view as current as its ledger:
  the view is published after each action's start and end too, so `fold --check` right after
  the crash finds no drift (the attempt is open, as the ledger says).
- A full or read-only disk mid-attempt (here an `OSError` from a Job action, or from the
  refresh of the view that is not its write: the ledger cannot be read back) ends the
  attempt as a failure whose reason names the error: the runner lives, so it must not leave
  an attempt open for the next run to call interrupted. A view that only cannot be written
  ends nothing (tests/test_view_unwritable.py).
"""

from __future__ import annotations

import os
import signal

import orjson
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


def _failing_publish(project: Project, monkeypatch: pytest.MonkeyPatch, after: str) -> None:
    """The view's refresh fails once, right after the ledger recorded ``after``, with an
    ``OSError`` raised before anything is written (not :class:`views.ViewNotWritten`)."""
    real, failed = views.refresh_routine_view, []

    def refresh(*args: object, **kw: object) -> object:
        recorded = project.events()
        if not failed and recorded and recorded[-1]["type"] == after:
            failed.append(after)
            raise _full_disk(project)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(views, "refresh_routine_view", refresh)


def _two_actions_and_a_failure_hook(project: Project) -> None:
    project.routine("rtn-two", f"""\
        interval: 1h
        policy:
          notify: {{on: [failure], command: "echo $SPECDOJO_RESULT >> {project.root}/told"}}
        action:
          - {{kind: specdojo, args: [one]}}
          - {{kind: specdojo, args: [two]}}
        """)


def test_an_attempt_cut_short_after_an_action_keeps_it_and_is_reported_and_told(
        project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC on the publish after action 1 ended: the attempt's end keeps action 1's
    success in its results, the run reports the failed attempt (not "Ran 0"), and the
    failure hook runs, as for any final failure."""
    _two_actions_and_a_failure_hook(project)
    _failing_publish(project, monkeypatch, "action_ended")
    report = handlers.run(resolve_project(project.root), env=project.env())
    assert 1 == report.exit_code and report.errors[0].startswith("error: run aborted: ")
    [ended] = [e for e in project.events() if e["type"] == "attempt_ended"]
    assert ("failure", [{"index": 1, "kind": "specdojo", "result": "success"}]) == (
        ended["result"], ended["action_results"])
    assert [("rtn-two", "failure")] == [(r.routine_id, r.result) for r in report.results]
    assert [1] == [a.index for a in report.results[0].actions]
    assert "failure\n" == (project.root / "told").read_text()
    assert ["one --project demo"] == project.calls()


def test_the_action_an_environment_error_cuts_short_ends_with_the_attempt(
        project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC on the publish after action 1 started: action 1 is recorded as ended, failure
    with the attempt's reason, so neither `logs` nor `status` shows it running for ever."""
    _two_actions_and_a_failure_hook(project)
    _failing_publish(project, monkeypatch, "action_started")
    report = handlers.run(resolve_project(project.root), env=project.env())
    assert 1 == report.exit_code
    kinds = [(e["type"], e.get("index"), e.get("result")) for e in project.events()
             if e.get("routine_id") == "rtn-two"]
    assert [("routine_registered", None, None), ("attempt_started", None, None),
            ("action_started", 1, None), ("action_ended", 1, "failure"),
            ("attempt_ended", None, "failure"), ("notification_sent", None, None)] == kinds
    reasons = {e["type"]: e.get("reason") for e in project.events()}
    assert reasons["action_ended"] == reasons["attempt_ended"]
    assert reasons["attempt_ended"].startswith("run aborted: ")
    logs = project.cli("logs", "rtn-two")
    assert "running" not in logs.stdout, logs.stdout
    assert [] == project.calls()  # the action was cut short before it delegated


def test_the_attempts_end_is_published_before_the_hook_runs(project: Project) -> None:
    """While the failure hook runs, routine-state.json already says the attempt failed:
    upstream reads the view, not the ledger (SPEC §6), and a runner killed during the hook
    leaves a view as current as its ledger."""
    state = project.root / "routines" / "generated" / "routine-state.json"
    project.routine("rtn-f", f"""\
        interval: 1h
        policy:
          notify: {{on: [failure], command: "cp {state} {project.root}/seen.json"}}
        action: {{kind: specdojo, args: [boom]}}
        """)
    project.exit_codes({"boom": 3})
    assert 1 == project.cli("run", "--due").returncode
    seen = orjson.loads((project.root / "seen.json").read_bytes())["routines"]["rtn-f"]
    assert ("failure", None) == (seen["status"], seen.get("open_attempt"))


def test_an_attempt_whose_end_cannot_be_published_is_still_told(
        project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC on the publish after `attempt_ended`: the end is recorded, so the failure hook
    runs (SPEC §13: after recording the event), and then the run stops with the error."""
    _two_actions_and_a_failure_hook(project)
    project.exit_codes({"two": 3})
    _failing_publish(project, monkeypatch, "attempt_ended")
    report = handlers.run(resolve_project(project.root), env=project.env())
    assert 1 == report.exit_code and report.errors[0].startswith("error: run aborted: ")
    assert [("rtn-two", "failure")] == [(r.routine_id, r.result) for r in report.results]
    assert "failure\n" == (project.root / "told").read_text()
