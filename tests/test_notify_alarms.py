"""SPEC §13 "Notifications": which failures are announced and which successes are
recoveries. A failure is announced once it is final - when its attempt ends without a retry,
or when the retry it waited for gives way to the next occurrence - and ``recovered`` fires on
the first success after a failure: the routine's most recent outcome other than ``skipped``
was ``failure``, whether or not that failure was announced. Real hooks in real runs.
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


def test_the_last_failure_of_exhausted_retries_is_notified_and_a_retried_one_recovers(
    project: Project,
) -> None:
    """rtn-r: attempts 1 and 2 fail and are retried (not announced); attempt 3, the last,
    fails and is announced. rtn-s: a failure retried into a success is not announced, but
    the success is the first after a failure, so it sends `recovered`."""
    for rid, arg in (("rtn-r", "go"), ("rtn-s", "flaky")):
        project.routine(rid, f"interval: 1d\naction: {{kind: specdojo, args: [{arg}]}}\n"
                        + _hook_policy("failure, recovered", "retry: {attempts: 3, delay: 1m}, "))
    project.exit_codes({"go": 1, "flaky": 1})
    project.cli("run", "--due", "--now", "2026-01-01T00:00:10Z")
    project.exit_codes({"go": 1})
    for at in ("00:02:00", "00:04:00"):
        project.cli("run", "--due", "--now", f"2026-01-01T{at}Z")
    ended = [(e["routine_id"], e["result"], e["attempt_id"]) for e in project.events()
             if e["type"] == "attempt_ended"]
    assert [("rtn-r", "failure"), ("rtn-s", "failure"), ("rtn-r", "failure"),
            ("rtn-s", "success"), ("rtn-r", "failure")] == [e[:2] for e in ended]
    assert [("recovered", ended[3][2]), ("failure", ended[4][2])] == _sent(project)


def test_a_retried_failure_then_success_sends_recovered_to_a_hook_on_recovered_only(
    project: Project,
) -> None:
    """on: [recovered]; the first attempt fails and is retried, the retry succeeds: that
    success is a recovery (SPEC §13), and it is the only notification."""
    project.routine("rtn-t", "interval: 1d\naction: {kind: specdojo, args: [go]}\n"
                    + _hook_policy("recovered", "retry: {attempts: 2, delay: 1m}, "))
    project.exit_codes({"go": 1})
    assert 1 == project.cli("run", "--due", "--now", "2026-01-01T00:00:10Z").returncode
    project.exit_codes({})
    assert 0 == project.cli("run", "--due", "--now", "2026-01-01T00:02:00Z").returncode
    first, retry = _attempts(project)
    assert retry == next(e["attempt_id"] for e in project.events()
                         if e["type"] == "attempt_started" and e.get("retry_of") == first)
    assert [("recovered", retry)] == _sent(project)


def test_recovered_fires_after_failure_skipped_success(project: Project) -> None:
    """failure, skipped, skipped, success: the skips in between do not erase the failure, so
    the success sends `recovered`; the success after it sends nothing."""
    project.routine("rtn-k", "interval: 1h\naction: {kind: specdojo, args: [go]}\n"
                    + _hook_policy("failure, recovered"))
    for hour, code in (("00", 1), ("01", 75), ("02", 75), ("03", 0), ("04", 0)):
        project.exit_codes({"go": code})
        project.cli("run", "--due", "--now", f"2026-01-01T{hour}:00:10Z")
    attempts = _attempts(project)
    results = [e["result"] for e in project.events() if e["type"] == "attempt_ended"]
    assert ["failure", "skipped", "skipped", "success", "success"] == results
    assert [("failure", attempts[0]), ("recovered", attempts[3])] == _sent(project)


def test_no_recovered_after_success_skipped_success(project: Project) -> None:
    """success, skipped, success: the outcome before the skip was a success, so the second
    success recovers from nothing."""
    project.routine("rtn-n", "interval: 1h\naction: {kind: specdojo, args: [go]}\n"
                    + _hook_policy("recovered"))
    for hour, code in (("00", 0), ("01", 75), ("02", 0)):
        project.exit_codes({"go": code})
        project.cli("run", "--due", "--now", f"2026-01-01T{hour}:00:10Z")
    assert [] == _sent(project)


def test_recovered_fires_for_a_hook_on_recovered_only(project: Project) -> None:
    """on: [recovered] alone: the failure is not announced, yet the success after it, past
    a skipped attempt, is the first after a failure and sends `recovered`."""
    project.routine("rtn-q", "interval: 1h\naction: {kind: specdojo, args: [go]}\n"
                    + _hook_policy("recovered"))
    for hour, code in (("00", 1), ("01", 75), ("02", 0)):
        project.exit_codes({"go": code})
        project.cli("run", "--due", "--now", f"2026-01-01T{hour}:00:10Z")
    assert [("recovered", _attempts(project)[2])] == _sent(project)
    assert 0 == project.cli("fold", "--check").returncode


def _ended(attempt: str, result: str, **extra: Any) -> dict[str, Any]:
    return {"type": "attempt_ended", "routine_id": "rtn-x", "attempt_id": attempt,
            "result": result, **extra}


def test_last_outcome_looks_past_skips_and_takes_overrides_and_imports() -> None:
    """The rule `recovered` reads (newest first): skips are looked past, the attempt that
    just ended is left out, other routines and accounted-for occurrences are no outcome, an
    operator's override stands for its attempt, and an imported result counts."""
    from specdojo_routine.core.attempts import last_outcome

    older = [_ended("a3", "skipped"),
             {"type": "occurrence_missed", "routine_id": "rtn-x"},
             _ended("o1", "success", routine_id="rtn-other"),
             _ended("a2", "skipped"), _ended("a1", "failure")]
    assert "failure" == last_outcome([_ended("a4", "success"), *older], "rtn-x", before="a4")
    override = {"type": "attempt_resolved", "routine_id": "rtn-x", "attempt_id": "a1",
                "result": "success", "overrides": True}
    assert "success" == last_outcome([override, *older], "rtn-x")
    imported = {"type": "upstream_run_recorded", "routine_id": "rtn-x",
                "record": {"result": "failure"}}
    assert "failure" == last_outcome([_ended("b1", "skipped"), imported], "rtn-x")
    assert None is last_outcome([_ended("b1", "skipped")], "rtn-x")


def test_a_recovery_past_skips_under_an_invalid_default_hook_is_warned_not_lost(
    project: Project,
) -> None:
    """failure, skipped, success with the config's `routine.notify` invalid: the success is
    a recovery the default hook would have announced, so the run warns that the `recovered`
    notification was not sent, as it does for the failure."""
    config = project.root / ".specdojo" / "specdojo.config.json"
    data = orjson.loads(config.read_bytes())
    data["projects"]["demo"]["routine"] = {"notify": {"on": ["recovered", "later"],
                                                      "command": "true"}}
    config.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    project.routine("rtn-k", "interval: 1h\naction: {kind: specdojo, args: [go]}\n")
    said = []
    for hour, code in (("00", 1), ("01", 75), ("02", 0)):
        project.exit_codes({"go": code})
        done = project.cli("run", "--due", "--now", f"2026-01-01T{hour}:00:10Z")
        said += [line.split(":")[2].strip() for line in done.stderr.splitlines()
                 if line.startswith("warning: rtn-k: the ")]
    assert ["the failure notification was not sent",
            "the recovered notification was not sent"] == said
