"""SPEC §13 "Retry with backoff": a failed attempt (trigger due, release or retry) is started
again by a later `run --due` once min(delay x backoff^(n-1), max_delay) has passed since it
ended, as `trigger: retry` with the same scheduled_for and `retry_of`; a Job action reuses its
Job Run; `on_failure: hold` holds only after the last one; `list` shows `retrying (n/N) at`;
a retry still pending when the next occurrence is due is dropped (`retry_superseded`).
Real runs of `python -m specdojo_routine`, time moved with `--now`.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.conftest import Project


def _started(project: Project) -> list[dict[str, Any]]:
    return [e for e in project.events() if e["type"] == "attempt_started"]


def _ended(project: Project) -> list[dict[str, Any]]:
    return [e for e in project.events() if e["type"] == "attempt_ended"]


def test_a_job_action_is_retried_with_backoff_in_its_own_job_run(project: Project) -> None:
    """attempts 3, delay 1m, backoff 2: the first retry 1m after the failure, the second 2m
    after the first retry; nothing starts before; the Job Run is reused (one run, three
    attempts); the last attempt's success is the routine's result."""
    command = orjson.dumps(f'test -e "{project.root}/ok"').decode()
    project.job("job-flaky", f"""\
        name: Flaky
        task: {{mode: command, command: {command}}}
        run: {{idempotency_key: "{{{{job_id}}}}:{{{{scheduled_at}}}}"}}
        """)
    project.routine("rtn-retry", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        policy: {retry: {attempts: 3, delay: 1m, backoff: 2.0}}
        action: {kind: job, job: job-flaky}
        """)
    assert 1 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    listed = project.cli("list", "--now", "2026-05-01T10:00:30Z")
    assert "rtn-retry: retrying (2/3) at 2026-05-01T10:01:10Z" in listed.stdout, listed.stdout
    early = project.cli("run", "--due", "--now", "2026-05-01T10:01:05Z")
    assert (0, 1) == (early.returncode, len(_started(project))), early.stdout
    assert 1 == project.cli("run", "--due", "--now", "2026-05-01T10:01:10Z").returncode
    status = project.cli("status", "--json", "--now", "2026-05-01T10:02:00Z")
    shown = orjson.loads(status.stdout)
    row = next(r for r in shown["routines"] if r["id"] == "rtn-retry")
    assert "retrying (3/3) at 2026-05-01T10:03:10Z" == row["retrying"]
    (project.root / "ok").touch()
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:03:10Z").returncode
    starts = _started(project)
    first = starts[0]["attempt_id"]
    history = project.cli("history", "rtn-retry").stdout
    assert f"T-07 retry for 2026-05-01T10:00:00.000Z, retry 3 of {first}" in history
    assert [("due", None, None), ("retry", first, 2), ("retry", first, 3)] == [
        (e["trigger"], e.get("retry_of"), e.get("retry_attempt")) for e in starts]
    assert {"2026-05-01T10:00:00.000Z"} == {e["scheduled_for"] for e in starts}
    assert ["failure", "failure", "success"] == [e["result"] for e in _ended(project)]
    runs = {tuple(e["job_run_ids"]) for e in _ended(project)}
    assert 1 == len(runs)
    (run_id,) = runs.pop()
    view = orjson.loads((project.root / "execution" / "jobs" / "runs" /
                         f"{run_id}.json").read_bytes())
    assert ["failed", "failed", "succeeded"] == [a["status"] for a in view["attempts"]]
    state = project.state()["routines"]["rtn-retry"]
    assert ("success", "2026-05-01T10:00:00.000Z") == (state["status"],
                                                        state["last_scheduled_for"])
    assert "retrying" not in project.cli("list", "--now", "2026-05-01T10:04:00Z").stdout


def test_hold_waits_for_the_last_retry_and_run_id_is_never_retried(project: Project) -> None:
    """Under on_failure: hold with attempts 2, the first failure does not hold, the failed
    retry does; an operator's failed `run --id` waits for no retry."""
    project.routine("rtn-hold", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        policy: {on_failure: hold, retry: {attempts: 2, delay: 30s}}
        action: {kind: specdojo, args: [boom]}
        """)
    project.routine("rtn-manual", """\
        enabled: false
        trigger: {cron: "0 0 1 1 *", timezone: UTC}
        policy: {retry: {attempts: 5}}
        action: {kind: specdojo, args: [boom]}
        """)
    project.exit_codes({"boom": 1})
    project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z")
    assert not project.state()["routines"]["rtn-hold"]["held"]
    project.cli("run", "--id", "rtn-manual", "--now", "2026-05-01T10:00:20Z")
    project.cli("run", "--due", "--now", "2026-05-01T10:00:45Z")
    assert project.state()["routines"]["rtn-hold"]["held"]
    triggers = [(e["routine_id"], e["trigger"]) for e in _started(project)]
    assert [("rtn-hold", "due"), ("rtn-manual", "id"), ("rtn-hold", "retry")] == triggers
    listed = project.cli("list", "--now", "2026-05-01T10:05:00Z")
    assert "retrying" not in listed.stdout and 1 == listed.returncode


def test_a_pending_retry_gives_way_to_the_next_occurrence(project: Project) -> None:
    """A retry whose delay outlasts the hour is dropped when the next occurrence is due:
    `retry_superseded` names both, and the new occurrence runs as a due attempt."""
    project.routine("rtn-slow", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        policy: {retry: {attempts: 3, delay: 2h}}
        action: {kind: specdojo, args: [boom]}
        """)
    project.exit_codes({"boom": 1})
    project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z")
    project.cli("run", "--due", "--now", "2026-05-01T11:00:10Z")
    dropped = [e for e in project.events() if e["type"] == "retry_superseded"]
    starts = _started(project)
    assert 1 == len(dropped)
    assert (starts[0]["attempt_id"], starts[0]["attempt_id"], "2026-05-01T10:00:00.000Z",
            "2026-05-01T11:00:00.000Z") == (
        dropped[0]["attempt_id"], dropped[0]["retry_of"], dropped[0]["scheduled_for"],
        dropped[0]["superseded_by"])
    assert [("due", "2026-05-01T10:00:00.000Z"), ("due", "2026-05-01T11:00:00.000Z")] == [
        (e["trigger"], e["scheduled_for"]) for e in starts]
    history = project.cli("history", "rtn-slow")
    assert "retry_superseded" in history.stdout
    assert f"retry of {starts[0]['attempt_id']} for 2026-05-01T10:00:00.000Z dropped" in \
        history.stdout


def test_validate_locates_bad_retry_keys(project: Project) -> None:
    project.routine("rtn-bad", """\
        interval: 1h
        policy:
          retry: {attempts: 11, backoff: 0.5, delay: soon, jitter: 1}
        action: {kind: specdojo, args: [x]}
        """)
    project.routine("rtn-none", """\
        interval: 1h
        policy: {retry: {delay: 1m}}
        action: {kind: specdojo, args: [x]}
        """)
    done = project.cli("validate")
    text = done.stdout + done.stderr
    assert 1 == done.returncode
    for expected in (
        "routines/rtn-bad.yaml:4:52: policy.retry has unknown key(s): jitter",
        "routines/rtn-bad.yaml:4:21: policy.retry.attempts must be an integer from 2 to 10",
        "routines/rtn-bad.yaml:4:34: policy.retry.backoff must be a number from 1 to 10",
        "routines/rtn-bad.yaml:4:46: policy.retry.delay must be <n>s|m|h|d|w",
        "routines/rtn-none.yaml:3:10: policy.retry.attempts is required",
    ):
        assert expected in text, text


@pytest.mark.parametrize(("trigger", "reason", "retried"), [
    ("due", "action 1 (specdojo): command exited with code 1", True),
    ("release", "action 1 (specdojo): command exited with code 1", True),
    ("retry", "action 1 (specdojo): command exited with code 1", True),
    ("due", "stopped by SIGTERM", False),  # an operator's stop (SPEC §6.5)
    ("due", "stopped by SIGINT", False),
    ("due", "stopped by SIGTERM (stop by carol: maintenance)", False),
    ("due", "interrupted", False),  # closed under on_interrupted: resume
    ("id", "action 1 (specdojo): command exited with code 1", False),  # an operator's run
    ("backfill", "action 1 (specdojo): command exited with code 1", False),
])
def test_only_a_scheduled_attempt_that_failed_on_its_own_is_retried(
    trigger: str, reason: str, retried: bool,
) -> None:
    """SPEC §13: a failed attempt is retried - not a stopped or interrupted one, never an
    operator's ``run --id`` or a backfill - and the retry waits ``delay`` (30 s when the key
    is left out) after it ended."""
    from datetime import UTC, datetime, timedelta

    from specdojo_routine.core import retry_rules
    from specdojo_routine.core.model import Retry

    ended = datetime(2026, 8, 7, 8, 0, 5, tzinfo=UTC)
    last = retry_rules.LastAttempt(
        attempt_id="att-1", trigger=trigger, scheduled_for="2026-08-07T08:00:00.000Z",
        retry_of=None, number=1, result="failure", reason=reason, completed_at=ended)
    found = retry_rules.pending(Retry(attempts=3), last)
    assert retried == (found is not None)
    if found is not None:
        assert (2, 3, ended + timedelta(seconds=30)) == (found.number, found.of, found.due_at)


def test_release_run_none_drops_the_retry_of_the_failure_that_began_the_hold(
    project: Project,
) -> None:
    """SPEC §9.1/§9.5: `release --run none` leaves the held work unrun. A `policy.retry`
    added while the routine was held does not make the next `run --due` retry the failed
    attempt that began the hold; `list` shows no retry, and the next occurrence runs as a
    due attempt."""
    body = """\
        trigger: {{cron: "0 * * * *", timezone: UTC}}
        policy: {{on_failure: hold{retry}}}
        action: {{kind: specdojo, args: [work]}}
        """
    project.routine("rtn-held", body.format(retry=""))
    project.exit_codes({"work": 1})
    assert 1 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    project.routine("rtn-held", body.format(retry=", retry: {attempts: 3, delay: 30s}"))
    project.exit_codes({})
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T11:00:10Z").returncode
    assert ["2026-05-01T11:00:00.000Z"] == project.state()["routines"]["rtn-held"][
        "held_occurrences"]
    released = project.cli("release", "rtn-held", "--run", "none", "--now",
                           "2026-05-01T11:10:00Z")
    assert 0 == released.returncode, released.stderr
    listed = project.cli("list", "--now", "2026-05-01T11:15:00Z")
    assert "retrying" not in listed.stdout, listed.stdout
    after = project.cli("run", "--due", "--now", "2026-05-01T11:20:00Z")
    assert (0, "no due routines") == (after.returncode, after.stdout.strip()), after.stdout
    assert ["due"] == [e["trigger"] for e in _started(project)]
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T12:00:10Z").returncode
    assert [("due", "2026-05-01T10:00:00.000Z"), ("due", "2026-05-01T12:00:00.000Z")] == [
        (e["trigger"], e["scheduled_for"]) for e in _started(project)]


@pytest.mark.parametrize(("event", "cancels"), [
    ({"type": "routine_released", "run": "none"}, True),
    ({"type": "routine_released", "run": "latest"}, False),  # its attempts cancel it
    ({"type": "retry_superseded"}, True),
    ({"type": "attempt_resolved"}, True),
    ({"type": "attempt_started"}, True),
    ({"type": "occurrence_held"}, False),
    ({"type": "routine_registered"}, False),  # a YAML edit is not an operator's decision
])
def test_what_recorded_after_a_failure_cancels_its_retry(
    event: dict[str, Any], cancels: bool,
) -> None:
    """A newer attempt, a dropped retry, an operator's resolve or `release --run none` after
    a failed attempt's end cancel its retry; a held occurrence or a definition change do not."""
    from specdojo_routine.core import retry_rules

    assert cancels == retry_rules.cancels({"routine_id": "rtn-x", **event})
