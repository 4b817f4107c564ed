"""SPEC §13 "Notifications": which failures are announced and which successes answer them.
A failure is announced once it is final - when its attempt ends without a retry, or when the
retry it waited for gives way to the next occurrence - and ``recovered`` answers the alarm the
hook last sent (failure, held, interrupted), never a failure that was not announced. Real
hooks in real runs.
"""

from __future__ import annotations

from typing import Any

import orjson

from tests.conftest import Project


def _hook_policy(on: str, extra: str = "") -> str:
    hook = orjson.dumps('printf "%s|%s\\n" "$SPECDOJO_NOTIFY_EVENT" "$SPECDOJO_ATTEMPT_ID" '
                        '>> hook.out').decode()
    return f"policy: {{{extra}notify: {{on: [{on}], command: {hook}}}}}\n"


def _sent(project: Project) -> list[tuple[str, Any]]:
    return [(e["event"], e["attempt_id"]) for e in project.events()
            if e["type"] == "notification_sent"]


def _attempts(project: Project) -> list[str]:
    return [e["attempt_id"] for e in project.events() if e["type"] == "attempt_started"]


def test_a_failure_whose_retry_gives_way_is_notified_once_when_the_retry_is_dropped(
    project: Project,
) -> None:
    """Each hourly attempt fails and would be retried after 2 h, so each retry gives way to
    the next occurrence: the failure it would have retried is announced then, once, and the
    success after the last one answers it with `recovered`."""
    project.routine("rtn-c", "interval: 1h\naction: {kind: specdojo, args: [go]}\n"
                    + _hook_policy("failure, recovered",
                                   "retry: {attempts: 3, delay: 2h}, "))
    project.exit_codes({"go": 1})
    for hour in ("00", "01", "02"):
        assert 1 == project.cli("run", "--due", "--now", f"2026-01-01T{hour}:00:10Z").returncode
    first, second, third = _attempts(project)
    assert [("failure", first), ("failure", second)] == _sent(project)
    project.exit_codes({})
    assert 0 == project.cli("run", "--due", "--now", "2026-01-01T03:00:10Z").returncode
    fourth = _attempts(project)[-1]
    assert [("failure", first), ("failure", second), ("failure", third),
            ("recovered", fourth)] == _sent(project)
    assert 4 == len((project.root / "hook.out").read_text().splitlines())
    assert 0 == project.cli("fold", "--check").returncode


def test_the_last_failure_of_exhausted_retries_is_notified_and_a_retried_one_is_not(
    project: Project,
) -> None:
    """rtn-r: attempts 1 and 2 fail and are retried (no alarm); attempt 3, the last, fails
    and is announced. rtn-s: a failure retried into a success announces nothing, so no
    `recovered` either."""
    for rid, arg in (("rtn-r", "go"), ("rtn-s", "flaky")):
        project.routine(rid, f"interval: 1d\naction: {{kind: specdojo, args: [{arg}]}}\n"
                        + _hook_policy("failure, recovered", "retry: {attempts: 3, delay: 1m}, "))
    project.exit_codes({"go": 1, "flaky": 1})
    project.cli("run", "--due", "--now", "2026-01-01T00:00:10Z")
    project.exit_codes({"go": 1})
    for at in ("00:02:00", "00:04:00"):
        project.cli("run", "--due", "--now", f"2026-01-01T{at}Z")
    ended = [(e["routine_id"], e["result"]) for e in project.events()
             if e["type"] == "attempt_ended"]
    assert [("rtn-r", "failure"), ("rtn-s", "failure"), ("rtn-r", "failure"),
            ("rtn-s", "success"), ("rtn-r", "failure")] == ended
    last = [e["attempt_id"] for e in project.events() if e["type"] == "attempt_started"][-1]
    assert [("failure", last)] == _sent(project)


def test_recovered_answers_an_alarm_even_after_a_skipped_attempt(project: Project) -> None:
    """failure (announced), skipped, success: the skip in between does not erase the alarm,
    so the success sends `recovered`; the success after it sends nothing."""
    project.routine("rtn-k", "interval: 1h\naction: {kind: specdojo, args: [go]}\n"
                    + _hook_policy("failure, recovered"))
    for hour, code in (("00", 1), ("01", 75), ("02", 0), ("03", 0)):
        project.exit_codes({"go": code})
        project.cli("run", "--due", "--now", f"2026-01-01T{hour}:00:10Z")
    attempts = _attempts(project)
    results = [e["result"] for e in project.events() if e["type"] == "attempt_ended"]
    assert ["failure", "skipped", "success", "success"] == results
    assert [("failure", attempts[0]), ("recovered", attempts[2])] == _sent(project)


def test_no_recovered_without_an_alarm_sent(project: Project) -> None:
    """A hook that does not list `failure` sends no alarm, so no `recovered` answers one: the
    rule reads the notifications the ledger records."""
    project.routine("rtn-q", "interval: 1h\naction: {kind: specdojo, args: [go]}\n"
                    + _hook_policy("recovered"))
    project.exit_codes({"go": 1})
    project.cli("run", "--due", "--now", "2026-01-01T00:00:10Z")
    project.exit_codes({})
    assert 0 == project.cli("run", "--due", "--now", "2026-01-01T01:00:10Z").returncode
    assert [] == _sent(project)
