"""SPEC §13 "Timeouts for every action": `policy.timeout` bounds a whole attempt, an action's
own `timeout` bounds that action (the smaller wins); on expiry the action's process group is
killed (SIGTERM, 10 s grace, SIGKILL) and the action fails `timed out after <d>`; the remaining
actions still run with what is left of the attempt's budget, or are skipped `attempt timed out`
when none is left. A delegated call without a timeout is bounded by 6h; a Job action has no
default (the Job's `task.timeout` applies).

Real runners in subprocesses, real sleeping children and grandchildren.
"""

from __future__ import annotations

import os
import time

import orjson

from specdojo_routine.app import actions
from specdojo_routine.core import timeouts
from specdojo_routine.core.model import Duration
from tests.conftest import Project, group_members

T0 = "2026-05-01T10:00:30Z"



def _sleepy_cli(project: Project) -> dict[str, str]:
    """A SpecDojo CLI stand-in that leads its group, records it, and sleeps in a child and a
    grandchild (neither would end on its own within the test)."""
    script = project.root / "sleepy-cli"
    script.write_text("#!/bin/sh\n"
                      f'echo $$ >> "{project.root}/pgids"\n'
                      "sh -c 'sleep 60 & sleep 60'\n")
    script.chmod(0o755)
    return project.env(SPECDOJO_CLI=str(script))


def test_an_attempt_budget_times_out_each_action_in_turn_and_leaves_no_process(
    project: Project,
) -> None:
    """policy.timeout 3s; the first action's own 1s wins and it is killed at 1s; the second
    gets what is left of the attempt (about 2s) and is killed then; the third is not started
    (`attempt timed out`). After the run, no process of either action remains."""
    project.routine("rtn-slow", """\
        interval: 1h
        policy: {timeout: 3s}
        action:
          - {kind: specdojo, args: [one], timeout: 1s}
          - {kind: specdojo, args: [two]}
          - {kind: specdojo, args: [three]}
        """)
    done = project.cli("run", "--due", "--now", T0, env=_sleepy_cli(project))
    assert 1 == done.returncode, done.stderr
    pgids = [int(x) for x in (project.root / "pgids").read_text().split()]
    assert 2 == len(pgids)  # the third action never started
    assert all(not group_members(pgid) for pgid in pgids), [group_members(p) for p in pgids]
    ended = [e for e in project.events() if e["type"] == "action_ended"]
    assert [(1, "failure", "timed out after 1s"), (2, "failure", "timed out after 2s"),
            (3, "skipped", "attempt timed out")] == [
        (e["index"], e["result"], e["reason"]) for e in ended]
    started = [e["index"] for e in project.events() if e["type"] == "action_started"]
    assert [1, 2] == started
    attempt = project.events()[-1]
    assert ("attempt_ended", "failure") == (attempt["type"], attempt["result"])
    assert "timed out after 1s" in attempt["reason"]


def test_a_job_action_is_bounded_by_the_routine_timeout(project: Project) -> None:
    """A Job without task.timeout, under policy.timeout 1s: its command (child and grandchild)
    is killed at 1s, the action fails `timed out after 1s` and the Job Run attempt is failed."""
    command = f'echo $$ > "{project.root}/pgid"; sh -c "sleep 60 & sleep 60"'
    project.job("job-sleepy", f"""\
        name: Sleepy
        task:
          mode: command
          command: {orjson.dumps(command).decode()}
        run:
          idempotency_key: "{{{{job_id}}}}"
        """)
    project.routine("rtn-job", """\
        interval: 1h
        policy: {timeout: 1s}
        action: {kind: job, job: job-sleepy}
        """)
    done = project.cli("run", "--due", "--now", T0)
    assert 1 == done.returncode, done.stderr
    assert not group_members(int((project.root / "pgid").read_text()))
    ended = next(e for e in project.events() if e["type"] == "action_ended")
    assert ("failure", "timed out after 1s") == (ended["result"], ended["reason"])
    run_id = ended["job_run_id"]
    view = orjson.loads((project.root / "execution" / "jobs" / "runs" /
                         f"{run_id}.json").read_bytes())
    assert "failed" == view["attempts"][-1]["status"]


def test_the_defaults_and_the_smaller_bound() -> None:
    """6h for delegated calls, none for Job actions; the smaller of the action's own and
    what is left of the attempt wins; a used-up budget is a zero limit; the grace is 10 s."""
    assert timeouts.action_limit(None, "specdojo", attempt=None, used_s=0) == timeouts.Limit(
        seconds=6 * 3600, text="6h")
    for legacy in ("register", "exec-auto", "exec-resume", "exec-cycle"):
        limit = timeouts.action_limit(None, legacy, attempt=None, used_s=0)
        assert limit is not None and limit.seconds == 6 * 3600
    assert timeouts.action_limit(None, "job", attempt=None, used_s=0) is None
    ten = Duration(text="10m", seconds=600)
    assert timeouts.action_limit(None, "job", attempt=ten, used_s=0) == timeouts.Limit(
        seconds=600, text="10m")
    own = Duration(text="90s", seconds=90)
    assert timeouts.action_limit(own, "job", attempt=ten, used_s=550) == timeouts.Limit(
        seconds=50, text="50s")
    assert timeouts.action_limit(own, "specdojo", attempt=ten, used_s=0).text == "90s"  # type: ignore[union-attr]
    gone = timeouts.action_limit(None, "specdojo", attempt=ten, used_s=700)
    assert gone is not None and gone.seconds == 0
    assert "timed out after 90s" == timeouts.Limit(seconds=90, text="90s").reason
    assert 10.0 == actions.TIMEOUT_GRACE_S


def test_validate_locates_bad_timeouts(project: Project) -> None:
    project.routine("rtn-bad", """\
        interval: 1h
        policy: {timeout: soon}
        action:
          - {kind: specdojo, args: [x], timeout: 0s}
        """)
    done = project.cli("validate")
    assert 0 != done.returncode
    path = os.path.join("routines", "rtn-bad.yaml")
    assert f"{path}:3:19: policy.timeout must be <n>s|m|h|d|w" in done.stdout + done.stderr
    assert f"{path}:5:42: action[0].timeout must be" in done.stdout + done.stderr


def _stubborn_job(project: Project, timeout: str = "") -> None:
    """job-stubborn: its shell ignores SIGTERM (and so does its sleep), records its group and
    sleeps; ``timeout``: the Job's own task.timeout."""
    command = f"trap '' TERM; echo $$ > \"{project.root}/pgid\"; sleep 60"
    project.job("job-stubborn", f"""\
        name: Stubborn
        task:
          mode: command
          command: {orjson.dumps(command).decode()}
          {f"timeout: {timeout}" if timeout else ""}
        run:
          idempotency_key: "{{{{job_id}}}}:{{{{scheduled_at}}}}"
        """)


def test_a_job_action_timeout_gives_the_command_the_10s_grace(project: Project) -> None:
    """SPEC §13: on a routine action's timeout the Job's command gets SIGTERM, 10 s, then
    SIGKILL - as a delegated call does - not the runner's 2 s (it ended about 4 s after
    start with a 2 s timeout)."""
    _stubborn_job(project)
    project.routine("rtn-stubborn", """\
        interval: 1h
        action: {kind: job, job: job-stubborn, timeout: 1s}
        """)
    started = time.monotonic()
    done = project.cli("run", "--due", "--now", T0, timeout=60)
    took = time.monotonic() - started
    assert 1 == done.returncode, done.stderr
    assert 10.5 <= took < 30, took
    assert not group_members(int((project.root / "pgid").read_text()))
    ended = next(e for e in project.events() if e["type"] == "action_ended")
    assert ("failure", "timed out after 1s") == (ended["result"], ended["reason"])


def test_a_jobs_own_task_timeout_keeps_the_runners_grace(project: Project) -> None:
    """SPEC §7.3: the Job's own `task.timeout` (smaller than the routine's) kills the group
    with the runner's short grace, under a routine or by `job run`."""
    _stubborn_job(project, timeout="1s")
    project.routine("rtn-stubborn", """\
        interval: 1h
        action: {kind: job, job: job-stubborn, timeout: 1m}
        """)
    for args in (("run", "--due", "--now", T0), ("job", "run", "--job", "job-stubborn")):
        started = time.monotonic()
        done = project.cli(*args, timeout=60)
        took = time.monotonic() - started
        assert 1 == done.returncode, done.stdout + done.stderr
        assert took < 9, (args, took)
        assert not group_members(int((project.root / "pgid").read_text()))
