"""Hold, release, deadlines, backfill and preview end to end, in real subprocesses (SPEC §9)."""

from __future__ import annotations

import os
import signal
from typing import Any

import orjson
import pytest

from tests.conftest import Project, children, period_job, wait_for

HOURLY_HOLD = """\
trigger: {cron: "0 * * * *", timezone: UTC}
policy: {missed_run: all, on_failure: hold}
action: {kind: specdojo, args: [work]}
"""


def _json(proc: Any) -> Any:
    assert "Traceback" not in proc.stderr, proc.stderr
    return orjson.loads(proc.stdout)


def _row(project: Project, now: str) -> tuple[int, dict[str, Any]]:
    proc = project.cli("list", "--json", "--now", now)
    return proc.returncode, _json(proc)["routines"][0]


def _held_after_a_failure(project: Project, body: str = HOURLY_HOLD) -> None:
    """rtn-h (``body``) fails at 10:00, then 11:00 and 12:00 become due while it is held."""
    project.routine("rtn-h", body)
    project.exit_codes({"work": 1})
    assert 1 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    project.exit_codes({})
    held = project.cli("run", "--due", "--now", "2026-05-01T12:30:00Z", "--json")
    assert 0 == held.returncode, held.stderr
    doc = _json(held)
    reason = doc["held"][0]["reason"]
    assert reason.startswith("held after failure of att-")
    assert ([], ["2026-05-01T11:00:00.000Z", "2026-05-01T12:00:00.000Z"]) == (
        doc["results"], [h["scheduled_for"] for h in doc["held"]])


@pytest.mark.parametrize(("run", "expected"), [
    ("none", []),
    ("latest", ["2026-05-01T12:00:00.000Z"]),
    ("all", ["2026-05-01T11:00:00.000Z", "2026-05-01T12:00:00.000Z"]),
])
def test_hold_then_run_id_then_release(project: Project, run: str, expected: list[str]) -> None:
    """Held: list exits 1 and is not due; run --id runs but keeps the hold; release --run X
    runs exactly the chosen held occurrences with trigger release; then all is normal."""
    _held_after_a_failure(project)
    code, row = _row(project, "2026-05-01T12:30:00Z")
    assert (1, True, 2, False) == (code, row["held"], row["held_occurrences"], row["due"])
    assert 0 == project.cli("run", "--id", "rtn-h", "--now", "2026-05-01T12:40:00Z").returncode
    code, row = _row(project, "2026-05-01T12:41:00Z")
    assert (1, True, "success") == (code, row["held"], row["last_result"])
    calls = len(project.calls())
    done = project.cli("release", "rtn-h", "--run", run, "--note", "disk replaced", "--by",
                       "alice", "--now", "2026-05-01T12:45:00Z")
    assert 0 == done.returncode, done.stderr
    starts = [e for e in project.events() if e["type"] == "attempt_started"][2:]
    assert (expected, ["release"] * len(expected)) == (
        [e["scheduled_for"] for e in starts], [e["trigger"] for e in starts])
    assert len(expected) == len(project.calls()) - calls
    released = next(e for e in project.events() if e["type"] == "routine_released")
    assert (run, "disk replaced", "alice") == (released["run"], released["note"],
                                               released["released_by"])
    code, row = _row(project, "2026-05-01T12:46:00Z")
    assert (0, False, 0) == (code, row["held"], row["held_occurrences"])
    after = project.cli("run", "--due", "--now", "2026-05-01T13:00:30Z")
    assert "2026-05-01T13:00:00.000Z  success" in after.stdout
    assert 0 == project.cli("fold", "--check").returncode


def test_coalesced_occurrences_while_held_are_neither_counted_nor_run(project: Project) -> None:
    """SPEC §9.5: under `latest` a held routine's coalesced occurrences (inside the held one's
    `passed_over_since` span) are neither counted in held_occurrences nor run by release."""
    project.routine("rtn-h", HOURLY_HOLD.replace("missed_run: all", "missed_run: latest"))
    project.exit_codes({"work": 1})
    assert 1 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    project.exit_codes({})
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T13:30:00Z").returncode
    assert [("2026-05-01T13:00:00.000Z", "2026-05-01T11:00:00.000Z")] == [
        (e["scheduled_for"], e["passed_over_since"]) for e in project.events()
        if e["type"] == "occurrence_held"]
    assert 1 == _row(project, "2026-05-01T13:31:00Z")[1]["held_occurrences"]
    calls = len(project.calls())
    done = project.cli("release", "rtn-h", "--run", "all", "--now", "2026-05-01T13:45:00Z")
    assert 0 == done.returncode, done.stderr
    assert ["2026-05-01T13:00:00.000Z"] == [e["scheduled_for"] for e in project.events()
                                            if e.get("trigger") == "release"]
    assert 1 == len(project.calls()) - calls


def test_release_refuses_a_routine_that_is_not_held(project: Project) -> None:
    """release on a free routine: exit 1, one error line, nothing appended."""
    project.routine("rtn-h", HOURLY_HOLD)
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    before = project.ledger.read_bytes()
    proc = project.cli("release", "rtn-h")
    assert (1, ["error: routine rtn-h is not held; nothing to release (status: success)"]) == (
        proc.returncode, proc.stderr.splitlines())
    assert before == project.ledger.read_bytes()


def test_release_by_defaults_to_user_and_the_note_is_optional(project: Project) -> None:
    """SPEC §9.5: `release --by` defaults to $USER as for `resolve`; without --note the
    note is recorded as null; the default --run is none (nothing runs). ($USER, not
    LOGNAME, which getpass would prefer.)"""
    _held_after_a_failure(project)
    calls = len(project.calls())
    done = project.cli("release", "rtn-h", "--now", "2026-05-01T12:45:00Z",
                       env=project.env(USER="carol", LOGNAME="dave"))
    assert 0 == done.returncode, done.stderr
    released = [e for e in project.events() if e["type"] == "routine_released"]
    assert [("none", None, "carol")] == [(e["run"], e["note"], e["released_by"])
                                         for e in released]
    assert calls == len(project.calls())


def test_release_waits_for_the_routine_lock(project: Project) -> None:
    """release takes the routine lock: busy while a run holds it (exit 75, nothing written)."""
    _held_after_a_failure(project)
    project.routine("rtn-slow", "interval: 1h\naction: {kind: specdojo, args: [sleep-3]}\n")
    slow = project.popen("run", "--id", "rtn-slow")
    wait_for(lambda: any("sleep-3" in c for c in project.calls()))
    proc = project.cli("release", "rtn-h", "--run", "all")
    slow.communicate(timeout=60)
    assert 75 == proc.returncode, proc.stderr
    assert "Another routine run is in progress" in proc.stderr
    assert not any(e["type"] == "routine_released" for e in project.events())
    assert (1, True) == (lambda r: (r[0], r[1]["held"]))(_row(project, "2026-05-01T12:50:00Z"))


def _kill_run(proc: Any) -> None:
    """SIGKILL a runner, then its command's process group (the command runs in its own)."""
    sleepers = children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    for child in sleepers:
        os.killpg(child, signal.SIGKILL)


def test_a_hold_survives_sigkill_and_a_rebuilt_view(project: Project) -> None:
    """The runner is SIGKILLed after the failure that began the hold: the hold is in the
    ledger, so list, a refold from scratch and the next run all still see it."""
    project.routine("rtn-a-hold", HOURLY_HOLD)
    project.routine("rtn-b-slow", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        action: {kind: specdojo, args: [sleep-30]}
        """)
    project.exit_codes({"work": 1})
    proc = project.popen("run", "--due", "--now", "2026-05-01T10:00:10Z")
    wait_for(lambda: any("sleep-30" in c for c in project.calls()))
    _kill_run(proc)
    (project.root / "routines" / "generated" / "routine-state.json").unlink()
    assert 0 == project.cli("fold").returncode
    code, row = _row(project, "2026-05-01T10:30:00Z")
    assert (1, True, "failure") == (code, row["held"], row["status"])
    project.exit_codes({})
    calls = len(project.calls())
    again = project.cli("run", "--due", "--now", "2026-05-01T11:00:30Z")
    assert "rtn-a-hold  2026-05-01T11:00:00.000Z  held - held after failure of att-" in again.stdout
    assert calls == len(project.calls())  # held: not run; rtn-b-slow: interrupted, not run


def test_a_resolved_failure_of_a_killed_attempt_holds(project: Project) -> None:
    """An interrupted attempt started under hold, resolved as failure, holds the routine."""
    project.routine("rtn-h", HOURLY_HOLD.replace("[work]", "[sleep-30]"))
    proc = project.popen("run", "--due", "--now", "2026-05-01T10:00:10Z")
    wait_for(lambda: any("sleep-30" in c for c in project.calls()))
    _kill_run(proc)
    assert 0 == project.cli("resolve", "rtn-h", "--result", "failure", "--note", "it broke",
                            "--by", "ops").returncode
    code, row = _row(project, "2026-05-01T10:30:00Z")
    assert (1, True) == (code, row["held"])


# --- deadlines ---------------------------------------------------------------------------------


def _deadline_routine(project: Project, schedule: str, policy: str) -> None:
    project.routine("rtn-d", f"{schedule}\npolicy: {policy}\naction: {{kind: specdojo, "
                             "args: [work]}\n")


def test_deadline_under_all_misses_each_late_occurrence(project: Project) -> None:
    """all + 90m: 11:00 is missed (2h 30m late), 12:00 is exactly at the deadline (runs),
    13:00 runs; the miss is reported; list exits 1 until... a success after it (here: yes)."""
    _deadline_routine(project, 'trigger: {cron: "0 * * * *", timezone: UTC}',
                      "{missed_run: all, starting_deadline: 90m}")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    proc = project.cli("run", "--due", "--now", "2026-05-01T13:30:00Z", "--json")
    doc = _json(proc)
    assert 0 == proc.returncode
    assert [{"routine_id": "rtn-d", "scheduled_for": "2026-05-01T11:00:00.000Z",
             "reason": "started 2h 30m late (deadline 90m)"}] == doc["missed"]
    assert ["2026-05-01T12:00:00.000Z", "2026-05-01T13:00:00.000Z"] == [
        r["scheduled_for"] for r in doc["results"]]
    missed = next(e for e in project.events() if e["type"] == "occurrence_missed")
    assert (9000, 5400, None) == (missed["late_by_s"], missed["deadline_s"],
                                  missed["passed_over_since"])
    assert 0 == _row(project, "2026-05-01T13:30:00Z")[0]  # successes came after the miss


def test_deadline_under_latest_misses_the_late_newest(project: Project) -> None:
    """latest + 20m: the newest (13:00, 30m late) is missed with passed_over_since; list
    shows the miss and exits 1 until the next success; history names the reason."""
    _deadline_routine(project, 'trigger: {cron: "0 * * * *", timezone: UTC}',
                      "{starting_deadline: 20m}")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    proc = project.cli("run", "--due", "--now", "2026-05-01T13:30:00Z")
    assert (0, "rtn-d  2026-05-01T13:00:00.000Z  missed (coalesces occurrences since "
               "2026-05-01T11:00:00.000Z) - started 30m late (deadline 20m)\n") == (
        proc.returncode, proc.stdout)
    code, row = _row(project, "2026-05-01T13:40:00Z")
    assert (1, {"scheduled_for": "2026-05-01T13:00:00.000Z",
                "reason": "started 30m late (deadline 20m)"}, False) == (
        code, row["last_missed"], row["due"])
    assert "started 30m late (deadline 20m)" in project.cli("history").stdout
    on_time = project.cli("run", "--due", "--now", "2026-05-01T14:05:00Z")
    assert "2026-05-01T14:00:00.000Z  success" in on_time.stdout
    assert (0, None) == (lambda r: (r[0], r[1]["last_missed"]))(
        _row(project, "2026-05-01T14:06:00Z"))


def test_run_id_ignores_the_deadline(project: Project) -> None:
    """An explicit run is an operator decision: it starts whatever the deadline."""
    _deadline_routine(project, 'trigger: {cron: "0 * * * *", timezone: UTC}',
                      "{starting_deadline: 1m}")
    doc = _json(project.cli("run", "--id", "rtn-d", "--now", "2026-05-01T13:30:00Z", "--json"))
    assert ([], 1) == (doc["missed"], len(doc["results"]))


def test_the_deadline_is_checked_when_the_occurrence_really_starts(project: Project) -> None:
    """SPEC §9.2, seed 004: rtn-a's action takes 3 s, so rtn-u's 10:00 occurrence is about to
    start at 10:00:03 - late for its 2 s deadline, so missed, not a success reported as the
    on-time run; rtn-v (no deadline) runs and records when it really started."""
    project.routine("rtn-a", 'trigger: {cron: "0 * * * *", timezone: UTC}\n'
                             "action: {kind: specdojo, args: [sleep-3]}\n")
    _deadline_routine(project, 'trigger: {cron: "0 * * * *", timezone: UTC}',
                      "{starting_deadline: 2s}")
    project.routine("rtn-v", 'trigger: {cron: "0 * * * *", timezone: UTC}\n'
                             "action: {kind: specdojo, args: [work]}\n")
    doc = _json(project.cli("run", "--due", "--now", "2026-05-01T10:00:00Z", "--json"))
    assert (["rtn-d"], ["rtn-a", "rtn-v"]) == (
        [m["routine_id"] for m in doc["missed"]], [r["routine_id"] for r in doc["results"]])
    missed = next(e for e in project.events() if e["type"] == "occurrence_missed")
    assert missed["late_by_s"] >= 3 and missed["reason"].startswith("started 3s late")
    started = {e["routine_id"]: e for e in project.events() if e["type"] == "attempt_started"}
    ended = {e["routine_id"]: e for e in project.events() if e["type"] == "attempt_ended"}
    assert "2026-05-01T10:00:00Z" == started["rtn-a"]["last_run"]
    assert "2026-05-01T10:00:03Z" <= started["rtn-v"]["last_run"] < "2026-05-01T10:00:09Z"
    assert started["rtn-v"]["last_run"] == ended["rtn-v"]["started_at"]
    assert ended["rtn-v"]["started_at"] <= ended["rtn-v"]["completed_at"]
    assert started["rtn-v"]["last_run"] == project.state()["routines"]["rtn-v"]["last_run"]


def test_interval_deadline_counts_from_when_the_interval_elapsed(project: Project) -> None:
    """1h + 2m: never run → no deadline; 60 s late runs; 8m 50s late is missed with
    scheduled_for = now and anchors the next interval."""
    _deadline_routine(project, "interval: 1h", "{starting_deadline: 2m}")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T11:01:10Z").returncode
    doc = _json(project.cli("run", "--due", "--now", "2026-05-01T12:10:00Z", "--json"))
    assert [{"routine_id": "rtn-d", "scheduled_for": "2026-05-01T12:10:00.000Z",
             "reason": "started 8m 50s late (deadline 2m)"}] == doc["missed"]
    assert "no due routines\n" == project.cli("run", "--due", "--now",
                                              "2026-05-01T13:09:00Z").stdout
    ran = _json(project.cli("run", "--due", "--now", "2026-05-01T13:10:30Z", "--json"))
    assert ([], ["success"]) == (ran["missed"], [r["result"] for r in ran["results"]])


def test_an_interval_occurrence_is_the_runs_now_however_long_the_attempts_before_it_took(
    project: Project,
) -> None:
    """SPEC §4, §9.5: an interval routine's occurrence has scheduled_for = now, the run's
    now, and its lateness is measured at that same now, so `run --due --now T` records the
    same thing however long the attempts before it took. rtn-a, due first, takes 3 s; rtn-i
    (due since 10:00, deadline 5m) is judged at 10:04:59: on time, scheduled for 10:04:59
    exactly, and its next interval is anchored there."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [sleep-3]}\n")
    project.routine("rtn-i", "interval: 1h\npolicy: {starting_deadline: 5m}\n"
                             "action: {kind: specdojo, args: [work]}\n")
    for rid in ("rtn-a", "rtn-i"):  # each last ran at 09:00:00
        assert 0 == project.cli("run", "--id", rid, "--now", "2026-05-01T09:00:00Z").returncode
    doc = _json(project.cli("run", "--due", "--now", "2026-05-01T10:04:59Z", "--json"))
    assert [] == [e for e in project.events() if e["type"] == "occurrence_missed"]
    started = [e for e in project.events()
               if e["type"] == "attempt_started" and e["trigger"] == "due"]
    assert [("rtn-a", "2026-05-01T10:04:59.000Z"), ("rtn-i", "2026-05-01T10:04:59.000Z")] == [
        (e["routine_id"], e["scheduled_for"]) for e in started]
    assert ["rtn-a", "rtn-i"] == [r["routine_id"] for r in doc["results"]]
    assert "2026-05-01T10:04:59.000Z" == project.state()["routines"]["rtn-i"][
        "last_accounted_for"]


def test_interval_hold_records_one_occurrence_per_interval(project: Project) -> None:
    """A held interval routine: one occurrence_held per elapsed interval, not per call."""
    project.routine("rtn-i", "interval: 1h\npolicy: {on_failure: hold}\n"
                             "action: {kind: specdojo, args: [work]}\n")
    project.exit_codes({"work": 1})
    project.cli("run", "--due", "--now", "2026-05-01T10:00:00Z")
    for now in ("10:30", "11:00", "11:10", "11:59", "12:00", "12:05"):
        project.cli("run", "--due", "--now", f"2026-05-01T{now}:00Z")
    held = [e["scheduled_for"] for e in project.events() if e["type"] == "occurrence_held"]
    assert ["2026-05-01T11:00:00.000Z", "2026-05-01T12:00:00.000Z"] == held


def test_a_clock_gone_back_does_not_move_the_interval_anchor_back(project: Project) -> None:
    """SPEC §4, §9.5: ``last_accounted_for`` is the newest occurrence accounted for. A held
    interval routine held 11:30; an explicit run at 09:00 (a clock gone back) runs, but the
    anchor stays at 11:30, so 11:45 is not a second interval and records no second hold."""
    project.routine("rtn-i", "interval: 1h\npolicy: {on_failure: hold}\n"
                             "action: {kind: specdojo, args: [work]}\n")
    project.exit_codes({"work": 1})
    project.cli("run", "--id", "rtn-i", "--now", "2026-05-01T10:00:00Z")
    project.cli("run", "--due", "--now", "2026-05-01T11:30:00Z")
    project.cli("run", "--id", "rtn-i", "--now", "2026-05-01T09:00:00Z")
    assert "2026-05-01T11:30:00.000Z" == project.state()["routines"]["rtn-i"][
        "last_accounted_for"]
    project.cli("run", "--due", "--now", "2026-05-01T11:45:00Z")
    held = [e["scheduled_for"] for e in project.events() if e["type"] == "occurrence_held"]
    assert ["2026-05-01T11:30:00.000Z"] == held


# --- backfill -----------------------------------------------------------------------------------


def test_backfill_runs_each_occurrence_once_in_total(project: Project) -> None:
    """Backfill 08:00-11:00 after a due run did 10:00: 08, 09, 11 execute, 10 is a duplicate
    complete (its side effect happens once in total); the cursor stays at 10:00."""
    project.job("job-report", period_job(
        "report", """'printf "%s\\n" "{{inputs.period}}" >> effects.log'"""))
    project.routine("rtn-b", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        action: {kind: job, job: job-report, inputs: {period: "{{scheduled_at}}"}}
        """)
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    dry = project.cli("run", "--id", "rtn-b", "--from", "2026-05-01T08:00:00Z", "--to",
                      "2026-05-01T11:00:00Z", "--dry-run", "--json")
    assert 4 == len(_json(dry)["selected"])
    proc = project.cli("run", "--id", "rtn-b", "--from", "2026-05-01T08:00:00Z", "--to",
                       "2026-05-01T11:00:00Z", "--now", "2026-05-01T12:00:00Z")
    assert 0 == proc.returncode, proc.stderr
    assert {"2026-05-01T12:00:00Z"} == {e["last_run"] for e in project.events()
                                        if e.get("trigger") == "backfill"}
    effects = (project.root / "effects.log").read_text().splitlines()
    assert sorted(effects) == [f"2026-05-01T{h}:00:00.000Z" for h in ("08", "09", "10", "11")]
    starts = [e for e in project.events() if e["type"] == "attempt_started"]
    assert ["due"] + ["backfill"] * 4 == [e["trigger"] for e in starts]
    state = project.state()["routines"]["rtn-b"]
    assert ("2026-05-01T10:00:00.000Z", "2026-05-01T10:00:00.000Z", "success") == (
        state["last_scheduled_for"], state["last_accounted_for"], state["last_result"])


def test_backfill_ignores_the_hold_and_the_deadline(project: Project) -> None:
    """SPEC §9.3: backfill ignores the starting deadline and the hold. A held routine with a
    1m deadline, backfilled over 07:00-09:00 hours later: each occurrence is attempted with
    trigger backfill, none is recorded held or missed, and the routine stays held (§9.1: only
    `release` ends a hold)."""
    _held_after_a_failure(project, HOURLY_HOLD.replace(
        "on_failure: hold}", "on_failure: hold, starting_deadline: 1m}"))
    before, calls = len(project.events()), len(project.calls())
    proc = project.cli("run", "--id", "rtn-h", "--from", "2026-05-01T07:00:00Z", "--to",
                       "2026-05-01T09:00:00Z", "--now", "2026-05-01T12:40:00Z")
    assert 0 == proc.returncode, proc.stderr
    new = project.events()[before:]
    starts = [e for e in new if e["type"] == "attempt_started"]
    assert ([f"2026-05-01T0{h}:00:00.000Z" for h in (7, 8, 9)], ["backfill"] * 3) == (
        [e["scheduled_for"] for e in starts], [e["trigger"] for e in starts])
    assert 3 == len(project.calls()) - calls
    assert [] == [e for e in new if e["type"] in ("occurrence_held", "occurrence_missed")]
    code, row = _row(project, "2026-05-01T12:41:00Z")
    assert (1, True, 2) == (code, row["held"], row["held_occurrences"])


def test_backfill_updates_last_run_and_last_result(project: Project) -> None:
    """SPEC §9.5: backfill attempts update the view's last_run and last_result (a failing
    backfill after a successful due run leaves failure, last_run = the backfill's start)."""
    project.routine("rtn-b", 'trigger: {cron: "0 * * * *", timezone: UTC}\n'
                             "action: {kind: specdojo, args: [work]}\n")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    project.exit_codes({"work": 1})
    proc = project.cli("run", "--id", "rtn-b", "--from", "2026-05-01T08:00:00Z", "--to",
                       "2026-05-01T08:00:00Z", "--now", "2026-05-01T12:00:00Z")
    assert 1 == proc.returncode, proc.stderr
    state = project.state()["routines"]["rtn-b"]
    assert ("2026-05-01T12:00:00Z", "failure") == (state["last_run"], state["last_result"])


def test_backfill_ignores_the_366_day_window(project: Project) -> None:
    """SPEC §9.5: the 366-day window does not apply to backfill: an occurrence two years
    before --now inside [--from, --to] is run."""
    project.routine("rtn-y", 'trigger: {cron: "0 0 1 1 *", timezone: UTC}\n'
                             "action: {kind: specdojo, args: [work]}\n")
    proc = project.cli("run", "--id", "rtn-y", "--from", "2024-01-01T00:00:00Z", "--to",
                       "2024-01-01T00:00:00Z", "--now", "2026-05-01T12:00:00Z")
    assert 0 == proc.returncode, proc.stderr
    assert ["2024-01-01T00:00:00.000Z"] == [e["scheduled_for"] for e in project.events()
                                            if e.get("trigger") == "backfill"]
    assert 1 == len(project.calls())


@pytest.mark.parametrize(("args", "message"), [
    (("--id", "rtn-i", "--from", "2026-05-01T08:00:00Z", "--to", "2026-05-01T09:00:00Z"),
     "error: rtn-i is an interval routine: there is no calendar to backfill"),
    (("--id", "rtn-c", "--from", "2026-05-01T09:00:00Z", "--to", "2026-05-01T08:00:00Z"),
     "error: --from 2026-05-01T09:00:00.000Z is after --to 2026-05-01T08:00:00.000Z"),
    (("--due", "--from", "2026-05-01T08:00:00Z", "--to", "2026-05-01T09:00:00Z"),
     "error: --from/--to backfill one routine: use them with --id ID"),
    (("--id", "rtn-c", "--from", "2026-04-01T00:00:00Z", "--to", "2026-04-01T16:40:00Z"),
     "error: backfill of rtn-c from 2026-04-01T00:00:00.000Z to 2026-04-01T16:40:00.000Z "
     "covers more than 1000 occurrences; split the range"),
    (("--id", "rtn-c", "--from", "2026-05-01T00:00:00Z", "--to", "2026-05-03T00:00:00Z",
      "--now", "2026-05-02T00:00:00Z"),
     "error: --to 2026-05-03T00:00:00.000Z is after now (2026-05-02T00:00:00.000Z): a "
     "backfill runs past occurrences only; end the range at or before now"),
], ids=["interval", "reversed", "without-id", "over-1000", "future"])
@pytest.mark.parametrize("dry", [(), ("--dry-run",)], ids=["run", "dry-run"])
def test_backfill_refusals(project: Project, args: tuple[str, ...], message: str,
                           dry: tuple[str, ...]) -> None:
    """Refused with exit 2 and one error line before anything runs or is written."""
    project.routine("rtn-i", "interval: 1h\naction: {kind: specdojo, args: [work]}\n")
    project.routine("rtn-c", 'trigger: {cron: "* * * * *", timezone: UTC}\n'
                             "action: {kind: specdojo, args: [work]}\n")
    proc = project.cli("run", *args, *dry)
    assert (2, [], []) == (proc.returncode, project.calls(), project.events())
    assert [message] == [line[:len(message)] for line in proc.stderr.splitlines()]


def test_a_backfill_of_a_range_without_occurrences_says_so(project: Project) -> None:
    """An empty range is not "no due routines": it says the range holds no occurrence."""
    project.routine("rtn-c", 'trigger: {cron: "0 12 * * *", timezone: UTC}\n'
                             "action: {kind: specdojo, args: [work]}\n")
    for dry in ((), ("--dry-run",)):
        proc = project.cli("run", "--id", "rtn-c", "--from", "2026-05-01T13:00:00Z", "--to",
                           "2026-05-01T14:00:00Z", "--now", "2026-05-02T00:00:00Z", *dry)
        assert (0, "no occurrence of rtn-c from 2026-05-01T13:00:00.000Z to "
                   "2026-05-01T14:00:00.000Z: nothing to backfill\n") == (
            proc.returncode, proc.stdout), proc.stderr


def test_backfill_of_exactly_1000_runs(project: Project) -> None:
    """The cap is 'more than 1000': 1000 occurrences are accepted (shown by a dry run)."""
    project.routine("rtn-c", 'trigger: {cron: "* * * * *", timezone: UTC}\n'
                             "action: {kind: specdojo, args: [work]}\n")
    proc = project.cli("run", "--id", "rtn-c", "--from", "2026-04-01T00:00:00Z", "--to",
                       "2026-04-01T16:39:00Z", "--dry-run", "--json")
    assert (0, 1000) == (proc.returncode, len(_json(proc)["selected"]))


# --- preview ------------------------------------------------------------------------------------


def _next(project: Project, *args: str) -> list[dict[str, Any]]:
    proc = project.cli("next", *args, "--json")
    assert 0 == proc.returncode, proc.stderr
    occurrences: list[dict[str, Any]] = _json(proc)["occurrences"]
    return occurrences


@pytest.mark.parametrize(("zone", "spring", "gap_utc"), [
    ("Europe/Berlin", "2026-03-29", "2026-03-29T01:00:00.000Z"),
    ("America/New_York", "2026-03-08", "2026-03-08T07:00:00.000Z"),
])
def test_preview_spring_forward(project: Project, zone: str, spring: str, gap_utc: str) -> None:
    """02:30 on the spring-forward day does not exist: it fires once, at 03:00."""
    items = _next(project, "--cron", "30 2 * * *", "--timezone", zone, "--now",
                  f"{spring}T00:00:00Z", "-n", "2")
    assert (gap_utc, f"02:30 does not exist on {spring}: fires at 03:00", f"{spring}T03:00:00") \
        == (items[0]["utc"], items[0]["note"], items[0]["local"][:19])
    assert None is items[1]["note"]


@pytest.mark.parametrize(("zone", "fall", "first_utc"), [
    ("Europe/Berlin", "2026-10-25", "2026-10-25T00:30:00.000Z"),
    ("America/New_York", "2026-11-01", "2026-11-01T05:30:00.000Z"),
])
def test_preview_fall_back(project: Project, zone: str, fall: str, first_utc: str) -> None:
    """A fixed hour in the overlap fires once, at the first; hour * fires at both."""
    fixed = _next(project, "--cron", "30 1,2 * * *" if zone == "America/New_York" else
                  "30 2 * * *", "--timezone", zone, "--now", f"{fall}T00:00:00Z", "-n", "1")
    assert "occurs twice: fires once, at the first" in fixed[0]["note"]
    real = _next(project, "--cron", "30 * * * *", "--timezone", zone, "--now",
                 f"{fall}T00:00:00Z", "-n", "8")
    twice = [i for i in real if i["note"]]
    assert 2 == len(twice) and twice[0]["local"][11:16] == twice[1]["local"][11:16]
    assert twice[0]["local"][19:] != twice[1]["local"][19:]  # two offsets, one wall time
    assert first_utc in [i["utc"] for i in fixed + real]


def test_next_for_a_routine_shows_the_latest_start_and_follows_the_cursor(
        project: Project) -> None:
    """next ID: after max(now, cursor); latest_start = time + starting_deadline; text too."""
    project.routine("rtn-n", 'trigger: {cron: "0 17 * * 5", timezone: Asia/Tokyo}\n'
                             "policy: {starting_deadline: 2h}\naction: {kind: exec-resume}\n")
    items = _next(project, "rtn-n", "--now", "2026-08-01T00:00:00Z", "-n", "2")
    assert [("2026-08-07T17:00:00+09:00", "2026-08-07T08:00:00.000Z", "2026-08-07T10:00:00Z"),
            ("2026-08-14T17:00:00+09:00", "2026-08-14T08:00:00.000Z",
             "2026-08-14T10:00:00Z")] == [(i["local"], i["utc"], i["latest_start"])
                                          for i in items]
    text = project.cli("next", "rtn-n", "--now", "2026-08-01T00:00:00Z", "-n", "1").stdout
    assert "LOCAL (Asia/Tokyo)" in text and "2026-08-07T10:00:00Z" in text


def test_next_of_an_overdue_interval_routine_counts_its_deadline_from_when_it_was_due(
        project: Project) -> None:
    """SPEC §9.2/§9.4: due since 11:00 with a 5m deadline, asked at 11:30: its latest start is
    11:05 (not 11:35), and a note says run --due will record it missed; the next entry is
    one interval after; run --due then misses it as the preview said."""
    _deadline_routine(project, "interval: 1h", "{starting_deadline: 5m}")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:00Z").returncode
    items = _next(project, "rtn-d", "--now", "2026-05-01T11:30:00Z", "-n", "2")
    assert [("2026-05-01T11:30:00.000Z", "2026-05-01T11:05:00Z"),
            ("2026-05-01T12:30:00.000Z", "2026-05-01T12:35:00Z")] == [
        (i["utc"], i["latest_start"]) for i in items]
    text = project.cli("next", "rtn-d", "--now", "2026-05-01T11:30:00Z").stdout
    assert text.startswith("note: rtn-d is overdue past its starting deadline (latest start "
                           "2026-05-01T11:05:00Z): the next `run --due` records it as missed")
    on_time = _next(project, "rtn-d", "--now", "2026-05-01T11:03:00Z", "-n", "1")
    assert "2026-05-01T11:05:00Z" == on_time[0]["latest_start"]
    ran = _json(project.cli("run", "--due", "--now", "2026-05-01T11:30:00Z", "--json"))
    assert ([], 1) == (ran["results"], len(ran["missed"]))


def test_next_and_list_of_an_interval_routine_after_resume_follow_the_run(
        project: Project) -> None:
    """SPEC §13: due since 11:00, paused over it, resumed at 12:30: the next run --due only
    records it as paused and anchors the interval there, so next, list (DUE no, NEXT in 1h)
    and the agenda show 13:30, not "now"; and 13:30 is when it really runs."""
    project.routine("rtn-i", "interval: 1h\naction: {kind: specdojo, args: [work]}\n")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:00Z").returncode
    assert 0 == project.cli("pause", "rtn-i", "--now", "2026-05-01T10:30:00Z").returncode
    assert 0 == project.cli("resume", "rtn-i", "--now", "2026-05-01T12:30:00Z").returncode
    now = ("--now", "2026-05-01T12:30:00Z")
    assert ["2026-05-01T13:30:00.000Z", "2026-05-01T14:30:00.000Z"] == [
        i["utc"] for i in _next(project, "rtn-i", *now, "-n", "2")]
    row = _json(project.cli("list", "--json", *now))["routines"][0]
    assert (False, "2026-05-01T13:30:00Z") == (row["due"], row["next_occurrence"])
    agenda = _json(project.cli("next", "--json", *now))
    assert "2026-05-01T13:30:00.000Z" == agenda["occurrences"][0]["utc"], agenda
    ran = _json(project.cli("run", "--due", *now, "--json"))
    assert ([], ["2026-05-01T12:30:00.000Z"]) == (
        ran["results"], [p["scheduled_for"] for p in ran["paused"]])
    assert [] == _json(project.cli("run", "--due", "--now", "2026-05-01T13:29:00Z",
                                   "--json"))["results"]
    assert 1 == len(_json(project.cli("run", "--due", "--now", "2026-05-01T13:30:00Z",
                                      "--json"))["results"])


def test_next_ends_the_listing_at_year_9999_with_a_note(project: Project) -> None:
    """Near year 9999 a schedule simply ends (croniter and dateutil raise ValueError there,
    which was an internal error): the listing stops at the last occurrence a date can hold
    and a note says so; exit 0."""
    one = project.cli("next", "--cron", "0 0 1 1 *", "--timezone", "UTC", "--now",
                      "9998-06-01T00:00:00Z")
    assert (0, "note: dates end with year 9999: no occurrence after 9999-01-01T00:00:00.000Z "
               "can be listed (1 of 5)") == (one.returncode, one.stdout.splitlines()[0]), one.stderr
    many = project.cli("next", "--cron", "0 0 29 2 1", "--timezone", "UTC", "-n", "1000",
                       "--json")
    assert 0 == many.returncode, many.stderr
    assert _json(many)["occurrences"][-1]["utc"].startswith("99")
    project.routine("rtn-y", 'trigger: {cron: "0 0 1 1 *", timezone: UTC}\n'
                             "action: {kind: exec-resume}\n")
    text = project.cli("next", "rtn-y", "--now", "9998-06-01T00:00:00Z").stdout
    assert text.startswith("note: dates end with year 9999"), text


def test_next_lists_at_most_1000_occurrences(project: Project) -> None:
    """`-n` above 1000 (a mistyped 100000000 held every occurrence in memory before printing
    one, until the machine ran out of it): exit 2, one line saying the range; 1000 is listed."""
    project.routine("rtn-n", "interval: 5m\naction: {kind: exec-resume}\n")
    assert 1000 == len(_next(project, "rtn-n", "-n", "1000"))
    for args in (["rtn-n"], ["--cron", "* * * * *", "--timezone", "UTC"], []):
        done = project.cli("next", *args, "-n", "1001", timeout=60)
        assert (2, ["error: python -m specdojo_routine next: argument -n: expected a number of "
                    "occurrences from 1 to 1000, got '1001' (see `python -m "
                    "specdojo_routine next --help`)"]) == (done.returncode,
                                                           done.stderr.splitlines())


def test_next_json_for_a_routine_has_the_documented_keys(project: Project) -> None:
    """SPEC §9.5: `next ID --json` is {"routine_id", "timezone", "occurrences": [{"local",
    "utc", "note", "latest_start"}]}, naming the routine and its zone, plus its `standing`
    (paused, held or null, as the agenda's entries) and the pending `retry` (SPEC §13; null:
    none)."""
    project.routine("rtn-n", 'trigger: {cron: "0 17 * * 5", timezone: Asia/Tokyo}\n'
                             "action: {kind: exec-resume}\n")
    doc = _json(project.cli("next", "rtn-n", "--now", "2026-08-01T00:00:00Z", "-n", "1",
                            "--json"))
    assert (["routine_id", "timezone", "standing", "occurrences", "retry"], "rtn-n",
            "Asia/Tokyo", [["local", "utc", "note", "latest_start"]], None, None) == (
        list(doc), doc.get("routine_id"), doc.get("timezone"),
        [list(o) for o in doc["occurrences"]], doc["retry"], doc["standing"])


def test_next_defaults_to_five_occurrences_strictly_after_now(project: Project) -> None:
    """SPEC §9.4/§9.5: `next` lists N = 5 occurrences by default, strictly after --now (an
    occurrence exactly at --now is not listed), for a routine and for a bare --cron alike."""
    project.routine("rtn-c", 'trigger: {cron: "0 * * * *", timezone: UTC}\n'
                             "action: {kind: specdojo, args: [work]}\n")
    hours = [f"2026-05-01T{h}:00:00.000Z" for h in range(11, 16)]
    for args in (("rtn-c",), ("--cron", "0 * * * *", "--timezone", "UTC")):
        items = _next(project, *args, "--now", "2026-05-01T10:00:00Z")
        assert hours == [i["utc"] for i in items], args


@pytest.mark.parametrize("args", [("--cron", "0 25 * * *", "--timezone", "UTC"),
                                  ("--cron", "0 1 * * *", "--timezone", "Mars/Olympus"),
                                  ("--cron", "0 1 * * *", "--timezone", "localtime"),
                                  ("--cron", "0 1 * * *", "--timezone", "right/UTC"),
                                  ("--cron", "0 1 * * *")])
def test_next_usage_errors(project: Project, args: tuple[str, ...]) -> None:
    """A bad cron or zone, or --cron without --timezone: exit 2, one error line (neither ID
    nor --cron is the agenda of SPEC §14)."""
    proc = project.cli("next", *args)
    assert (2, 1) == (proc.returncode, len(proc.stderr.splitlines()))
    assert proc.stderr.startswith("error: ")


def test_dry_run_shows_would_be_held_and_missed_and_writes_nothing(project: Project) -> None:
    """run --due --dry-run lists would-be held and missed occurrences as such, writes nothing."""
    _held_after_a_failure(project)
    project.routine("rtn-late", 'trigger: {cron: "0 * * * *", timezone: UTC}\n'
                                "policy: {starting_deadline: 1m}\n"
                                "action: {kind: specdojo, args: [late]}\n")
    before = project.files()
    proc = project.cli("run", "--due", "--dry-run", "--now", "2026-05-01T13:30:00Z")
    assert 0 == proc.returncode, proc.stderr
    lines = proc.stdout.splitlines()
    assert "dry run - nothing is recorded or executed" == lines[0]
    assert lines[1].startswith("rtn-h  2026-05-01T13:00:00.000Z  would be held - held after")
    assert ("rtn-late  2026-05-01T13:00:00.000Z  would be missed - started 30m late "
            "(deadline 1m)") == lines[2]
    assert before == project.files()


def test_the_embedding_api_releases_backfills_and_previews(project: Project) -> None:
    """specdojo_routine.api.release / backfill / upcoming are the library forms of the CLI."""
    from datetime import UTC, datetime

    from specdojo_routine import api

    _held_after_a_failure(project)
    paths = api.load_project(project.root)
    held, report = api.release(paths, "rtn-h", run="latest", by="lib",
                               now=datetime(2026, 5, 1, 12, 45, tzinfo=UTC),
                               env=project.env())
    assert (2, ["2026-05-01T12:00:00.000Z"]) == (
        len(held), [r.scheduled_for for r in report.results])
    filled = api.backfill(paths, "rtn-h", start=datetime(2026, 5, 1, 8, tzinfo=UTC),
                          end=datetime(2026, 5, 1, 9, tzinfo=UTC), dry_run=True)
    assert 2 == len(filled.selected)
    [nxt] = api.upcoming(paths, "rtn-h", count=1, now=datetime(2026, 5, 1, 12, 50, tzinfo=UTC))
    assert "2026-05-01T13:00:00.000Z" == nxt["utc"]


def test_next_and_status_take_an_interval_or_deadline_that_ends_after_year_9999(
        project: Project) -> None:
    """validate accepts an interval or a starting_deadline as long as a timedelta holds; one
    that ends after year 9999 stops the preview there instead of failing ``next`` (for every
    routine) and ``status`` with "a time is out of range"."""
    project.routine("rtn-long", "interval: 999999999d\npolicy: {starting_deadline: 999999999d}\n"
                                "action: {kind: exec-resume}\n")
    project.routine("rtn-n", 'trigger: {cron: "0 17 * * 5", timezone: Asia/Tokyo}\n'
                             "policy: {starting_deadline: 999999999d}\n"
                             "action: {kind: exec-resume}\n")
    assert 0 == project.cli("validate").returncode
    assert 0 == project.cli("run", "--id", "rtn-long", "--now", "2026-08-01T00:00:00Z").returncode
    items = _next(project, "--now", "2026-08-01T00:00:01Z", "-n", "2")
    assert [("rtn-n", "2026-08-07T08:00:00.000Z", None),  # rtn-long: none before year 9999
            ("rtn-n", "2026-08-14T08:00:00.000Z", None)] == [
        (i["routine_id"], i["utc"], i["latest_start"]) for i in items]
    for args in (("next", "rtn-long"), ("status", "rtn-long"), ("status", "rtn-n")):
        done = project.cli(*args, "--now", "2026-08-01T00:00:01Z")
        assert 0 == done.returncode and "out of range" not in done.stderr, (args, done.stderr)
