"""Attempts gathered from routine-ledger events given newest first (core/attempts.py), and a
running routine in `status` with its holder."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

from specdojo_routine.core.attempts import Attempt, Gatherer, matches
from specdojo_routine.core.timefmt import parse_instant
from tests.weekhistory import Week

STARTED = {"type": "attempt_started", "routine_id": "rtn-a", "attempt_id": "att-1",
           "trigger": "due", "scheduled_for": "2026-08-07T02:00:00.000Z",
           "last_run": "2026-08-07T02:03:00Z"}
ACTION = {"routine_id": "rtn-a", "attempt_id": "att-1", "index": 1, "kind": "job"}


def _gather(*newest_first: dict[str, Any]) -> list[Attempt]:
    gather = Gatherer()
    return [a for e in newest_first if (a := gather.feed(e)) is not None]


def test_an_ended_attempt_has_its_times_result_reason_and_actions() -> None:
    """attempt_ended gives the end, result, reason and Job Run ids; action_ended the action."""
    ended = {"type": "attempt_ended", "routine_id": "rtn-a", "attempt_id": "att-1",
             "result": "failure", "reason": "action 1 (job): command exited with code 3",
             "completed_at": "2026-08-07T02:03:07Z", "job_run_ids": ["JBR-x-0123456789ab"]}
    action = {**ACTION, "type": "action_ended", "result": "failure", "exit_code": 3,
              "job_run_id": "JBR-x-0123456789ab", "evidence_ref": "e/evidence.json"}
    [attempt] = _gather(ended, action, {**ACTION, "type": "action_started"}, STARTED)
    assert (7, 180, "failure", ("JBR-x-0123456789ab",), 3, "e/evidence.json") == (
        attempt.duration_s, attempt.late_by_s, attempt.result, attempt.job_run_ids,
        attempt.actions[0].exit_code, attempt.failed_action().evidence_ref)  # type: ignore[union-attr]


def test_an_open_attempt_has_no_result_and_its_started_actions() -> None:
    """No end yet: result None (history shows `running`), the action started but not ended."""
    [attempt] = _gather({**ACTION, "type": "action_started"}, STARTED)
    assert (None, None, None) == (attempt.result, attempt.completed_at,
                                  attempt.actions[0].result)
    assert matches(attempt, since=None, until=None, result="running")


def test_a_resolved_attempt_takes_the_operators_result_and_note() -> None:
    """attempt_resolved: its result, the note as the reason, who resolved it."""
    resolved = {"type": "attempt_resolved", "routine_id": "rtn-a", "attempt_id": "att-1",
                "result": "success", "note": "checked the export", "resolved_by": "alice",
                "at": "2026-08-07T09:00:00.123Z"}
    [attempt] = _gather(resolved, STARTED)
    assert ("success", "checked the export", "alice", "2026-08-07T09:00:00Z") == (
        attempt.result, attempt.reason, attempt.resolved_by, attempt.completed_at)


def test_an_upstream_run_record_is_one_attempt() -> None:
    """A line the upstream CLI appended is an attempt by itself (no attempt id, no trigger)."""
    record = {"routine_id": "rtn-a", "scheduled_for": "2026-08-07T02:00:00.000Z",
              "started_at": "2026-08-07T02:00:01Z", "completed_at": "2026-08-07T02:00:05Z",
              "result": "success", "job_run_ids": []}
    [attempt] = _gather({"type": "upstream_run_recorded", "routine_id": "rtn-a",
                         "record": record})
    assert (None, None, "success", 4) == (attempt.attempt_id, attempt.trigger, attempt.result,
                                          attempt.duration_s)


def test_filters_look_at_the_scheduled_time_and_the_result() -> None:
    """since/until are inclusive on scheduled_for; result must match."""
    [attempt] = _gather(STARTED)
    at = parse_instant("2026-08-07T02:00:00Z")
    assert [True, False, True, False] == [
        matches(attempt, since=at, until=at, result=None),
        matches(attempt, since=parse_instant("2026-08-07T02:00:01Z"), until=None,
                result=None),
        matches(attempt, since=None, until=None, result="running"),
        matches(attempt, since=None, until=None, result="failure")]


def test_status_of_a_running_routine_names_its_holder(week_copy: Week) -> None:
    """While an attempt runs, `status ID` says running and which process holds it."""
    (week_copy.root / "jobs" / "job-slow.yaml").write_text(
        "id: job-slow\nname: Slow\ntask:\n  mode: command\n  command: sleep 8\n"
        'run:\n  idempotency_key: "{{job_id}}:{{scheduled_at}}"\n')
    (week_copy.root / "routines" / "rtn-slow.yaml").write_text(
        "id: rtn-slow\ninterval: 1d\naction: {kind: job, job: job-slow}\n")
    runner = subprocess.Popen([sys.executable, "-m", "specdojo_routine", "run", "--id",
                               "rtn-slow", "--root", str(week_copy.root)], env=week_copy.env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(120):
            state = week_copy.root / "routines" / "generated" / "routine-state.json"
            if b'"rtn-slow"' in state.read_bytes() and b'"running"' in state.read_bytes():
                break
            time.sleep(0.1)
        done = week_copy.cli("status", "rtn-slow")
    finally:
        runner.wait(timeout=60)
    state_line = next(line for line in done.stdout.splitlines()
                      if line.startswith("  state     "))
    assert (0, f"  state     running (pid {runner.pid} on ") == (
        done.returncode, state_line[: len(f"  state     running (pid {runner.pid} on ")])
