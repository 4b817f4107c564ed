"""`status` (SPEC §14): the overview, worst first, and one routine in depth, on a project with
a real week of history; the health rule it shares with `list`."""

from __future__ import annotations

import re

import orjson
import pytest

from specdojo_routine.core.cronwords import cron_words
from tests.conftest import Project
from tests.weekhistory import AFTER, SECRET, Week


def test_the_overview_is_worst_first_and_exits_1_naming_the_unhealthy(week: Week) -> None:
    """One line per routine, failures first, within 80 columns; the last line says which
    routines are unhealthy."""
    done = week.cli("status", "--now", AFTER)
    lines = done.stdout.splitlines()
    assert (1, ["ID", "STATE", "LAST", "RUN", "NEXT", "WHY"]) == (done.returncode,
                                                                   lines[0].split())
    assert [["rtn-cleanup", "failure"], ["rtn-nightly-export", "failure"],
            ["rtn-sync", "success"], ["rtn-weekly-report", "success"]] == [
        line.split()[:2] for line in lines[1:5]]
    assert ([], "unhealthy: 2 of 4 routine(s): rtn-cleanup, rtn-nightly-export") == (
        [line for line in lines if len(line) > 80], lines[-1])


def test_the_overview_json_says_healthy_or_not_and_why(week: Week) -> None:
    """`status --json`: `healthy`, the unhealthy ids, and each routine's state and problems,
    worst first."""
    doc = week.json("status", "--json", "--now", AFTER)
    assert (False, ["rtn-cleanup", "rtn-nightly-export"], "2026-08-10T00:30:00Z") == (
        doc["healthy"], doc["unhealthy"], doc["now"])
    assert [("rtn-cleanup", "failure", ["last result failure"]),
            ("rtn-nightly-export", "failure", ["last result failure"]),
            ("rtn-sync", "success", []), ("rtn-weekly-report", "success", [])] == [
        (r["id"], r["state"], r["problems"]) for r in doc["routines"]]


def test_status_of_a_failing_routine_shows_why_and_where(week: Week) -> None:
    """`status ID`: schedule in words and in its zone, policy, state, the next 3 occurrences
    (local, UTC, relative), the last 5 attempts, the stderr tail and the evidence path."""
    done = week.cli("status", "rtn-nightly-export", "--now", AFTER)
    text = done.stdout
    assert (1, "rtn-nightly-export - Nightly export") == (done.returncode, text.splitlines()[0])
    for expected in (
        "  schedule  at 02:00 every day (Europe/Berlin); cron 0 2 * * *",
        "  policy    missed_run latest, on_failure continue, on_interrupted review",
        "  actions   1. job job-export",
        "  state     failure - unhealthy: last result failure",
        "  next      2026-08-11 02:00 CEST  2026-08-11 00:00 UTC  in 23h",
        "            2026-08-12 02:00 CEST  2026-08-12 00:00 UTC  in 1d",
        "  attempts  last 5, oldest first:",
        "  failed    action 1 (job): command exited with code 3",
        "    | ERROR: disk /var/export full",
    ):
        assert expected in text.splitlines(), expected
    # how long it waited and took is real time: 0s, or more on a loaded machine
    assert any(re.fullmatch(r"    2026-08-10 00:00  00:00 +\d+s +\d+s +failure  action 1 \(job\): "
                            r"command exi…", line) for line in text.splitlines()), text
    evidence = next(line.split()[1] for line in text.splitlines()
                    if line.startswith("  evidence  "))
    assert (True, [], 5) == ((week.root / evidence).is_file(),  # a path is never cut
                             [line for line in text.splitlines()
                              if len(line) > 80 and not line.startswith("  evidence  ")],
                             text.count("      job runs: JBR-export-"))


def test_status_json_of_a_routine_has_attempts_next_and_evidence(week: Week) -> None:
    """`status ID --json`: the last 5 attempts with scheduled, started, duration, late by,
    result, reason and Job Run ids; the next 3; the stderr tail; the evidence path."""
    doc = week.json("status", "rtn-nightly-export", "--json", "--now", AFTER)
    routine = doc["routines"][0]
    last = routine["attempts"][-1]
    assert (5, 3, ["ERROR: disk /var/export full"]) == (
        len(routine["attempts"]), len(routine["next"]), routine["stderr_tail"])
    assert ("2026-08-10T00:00:00.000Z", "2026-08-10T00:00:00Z", 0, 0, "failure",
            "action 1 (job): command exited with code 3", "due") == (
        last["scheduled_for"], last["started_at"], last["duration_s"], last["late_by_s"],
        last["result"], last["reason"], last["trigger"])
    assert (1, routine["evidence_ref"]) == (len(last["job_run_ids"]),
                                           last["actions"][0]["evidence_ref"])
    assert ("at 02:00 every day (Europe/Berlin)", "2026-08-11T00:00:00.000Z") == (
        routine["schedule_words"], routine["next"][0]["utc"])


def test_status_of_a_delegated_failure_redacts_its_stderr(week: Week) -> None:
    """The stderr tail of a SpecDojo call that printed a token shows it redacted."""
    done = week.cli("status", "rtn-cleanup", "--now", AFTER)
    assert "    | using token [REDACTED]" in done.stdout.splitlines()
    assert (SECRET in done.stdout, "    | ERROR: quota exceeded on /srv/cache" in
            done.stdout.splitlines()) == (False, True)


def test_status_of_healthy_routines_exits_0(week: Week) -> None:
    """The health rule judges the routines shown: two healthy ones exit 0."""
    done = week.cli("status", "rtn-sync", "rtn-weekly-report", "--now", AFTER)
    assert (0, 2) == (done.returncode, done.stdout.count("  state     success"))


def test_status_now_moves_the_clock(week: Week) -> None:
    """`--now` is the time the next occurrences and relative times are measured from."""
    doc = week.json("status", "rtn-weekly-report", "--json", "--now", "2026-08-01T00:00:00Z")
    assert ("2026-08-01T00:00:00Z", "2026-08-14T08:00:00.000Z") == (
        doc["now"], doc["routines"][0]["next"][0]["utc"])


def test_status_of_an_unknown_id_says_did_you_mean(week: Week) -> None:
    """A typo is a usage error (exit 2) with the closest ids."""
    done = week.cli("status", "rtn-nightly-exprot")
    assert (2, "", 'error: unknown routine "rtn-nightly-exprot"; did you mean '
            "rtn-nightly-export? (see `status`)\n") == (done.returncode, done.stdout,
                                                        done.stderr)


@pytest.mark.parametrize(("expr", "words"), [
    ("0 2 * * *", "at 02:00 every day"),
    ("0 17 * * 5", "at 17:00 on Fri"),
    ("30 9 * * 1-5", "at 09:30 on Mon-Fri"),
    ("*/15 * * * *", "every 15 minutes"),
    ("5 * * * *", "every hour at :05"),
    ("0 */6 * * *", "every 6 hours at :00"),
    ("0 8,20 1 * *", "at 08:00, 20:00 on day 1 of the month"),
    ("0 0 13 * 5", "at 00:00 on day 13 of the month if it is a Fri (both must hold)"),
    ("0 3 * 1,7 *", "at 03:00 every day in Jan, Jul"),
    ("0-10/2 3 * * *", "cron 0-10/2 3 * * *"),
])
def test_cron_in_words(expr: str, words: str) -> None:
    """Common shapes in words; any other is the expression itself."""
    assert words == cron_words(expr)


def test_status_of_a_held_missed_or_retrying_routine_says_why_in_its_state_line(
    project: Project,
) -> None:
    """`status ID` says in its state line what `list` and the overview say: why a routine is
    held (and how many occurrences it held), which occurrence it missed and why, and when its
    failed attempt is retried - none of it is an attempt, so the rows below never showed it."""
    action = "action: {kind: specdojo, args: [%s]}\n"
    project.routine("rtn-held", "interval: 1h\npolicy: {on_failure: hold}\n" + action % "boom")
    project.routine("rtn-late", "trigger: {cron: '0 * * * *', timezone: UTC}\n"
                                "policy: {starting_deadline: 2m}\n" + action % "ok")
    project.routine("rtn-retry", "interval: 1d\npolicy: {retry: {attempts: 3, delay: 1h}}\n"
                                 + action % "boom")
    project.exit_codes({"boom": 3})
    for now in ("2026-08-07T08:30:00Z", "2026-08-07T09:30:00Z"):
        project.cli("run", "--due", "--now", now)
    held, late, retry = (project.cli("status", rid, "--now", "2026-08-07T09:45:00Z")
                         for rid in ("rtn-held", "rtn-late", "rtn-retry"))
    attempt = next(e["attempt_id"] for e in project.events()
                   if e["type"] == "attempt_started" and e["routine_id"] == "rtn-held")
    assert [(1, f"  state     held (held after failure of {attempt}; 1 held occurrence(s), "
                "`release rtn-held`) - unhealthy: held, last result failure"),
            (1, "  state     missed (missed 2026-08-07T09:00:00.000Z: started 30m late "
                "(deadline 2m)) - unhealthy: missed since its last success"),
            (1, "  state     retrying (3/3) at 2026-08-07T10:30:00Z - unhealthy: "
                "last result failure")] == [
        (done.returncode, next(x for x in done.stdout.splitlines() if x.startswith("  state")))
        for done in (held, late, retry)]
    # SPEC §14: the state of a routine whose failed attempt waits for its retry is `retrying`,
    # in the overview and in --json too (still unhealthy: its last result is a failure)
    overview = project.cli("status", "--now", "2026-08-07T09:45:00Z")
    assert re.search(r"^rtn-retry +retrying ", overview.stdout, re.M), overview.stdout
    shown = orjson.loads(project.cli("status", "rtn-retry", "--json", "--now",
                                     "2026-08-07T09:45:00Z").stdout)
    assert ("retrying", ["last result failure"]) == (
        shown["routines"][0]["state"], shown["routines"][0]["problems"])


def test_the_healthy_footer_counts_only_the_routines_it_checked(project: Project) -> None:
    """A disabled routine is not judged by the health rule, so `status` does not count it
    among the healthy ones: it says how many are disabled."""
    project.routine("rtn-on", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    project.routine("rtn-off", "interval: 1h\nenabled: false\n"
                               "action: {kind: specdojo, args: [two]}\n")
    assert 0 == project.cli("run", "--id", "rtn-on").returncode
    done = project.cli("status")
    assert (0, "healthy: 1 routine(s) (1 disabled, not checked)") == (
        done.returncode, done.stdout.splitlines()[-1]), done.stdout + done.stderr


def test_a_paused_routine_that_last_failed_is_listed_among_the_unhealthy(
        project: Project) -> None:
    """A pause hides no failure: the overview lists the paused routine whose last attempt
    failed first, with the pause and the failure in WHY, and exits 1."""
    project.routine("rtn-a-ok", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    project.routine("rtn-z-bad", "interval: 1h\naction: {kind: specdojo, args: [two]}\n")
    project.exit_codes({"two": 1})
    project.cli("run", "--due")
    assert 0 == project.cli("pause", "rtn-z-bad", "--by", "alice", "--note", "looking").returncode
    done = project.cli("status")
    rows = [line.split()[:2] for line in done.stdout.splitlines()[1:3]]
    assert (1, [["rtn-z-bad", "paused"], ["rtn-a-ok", "success"]]) == (done.returncode, rows), (
        done.stdout)
    bad = done.stdout.splitlines()[1]
    assert "  failure: action 1 (specdojo): command exi" in bad, bad  # cut to the width


def test_a_running_routines_why_shows_no_earlier_attempts_reason(project: Project) -> None:
    """While a routine runs, WHY never shows the reason of the attempt before (it read as the
    running attempt's): it names what keeps the routine unhealthy in the words of `status ID`
    (`last result failure`), as `list` shows no reason beside a running routine."""
    import time

    gate = project.root / "go"
    project.routine("rtn-a", f"interval: 1h\naction: {{kind: specdojo, args: [work, "
                             f"gate-{gate}]}}\n")
    gate.touch()
    project.exit_codes({"work": 3})
    assert 1 == project.cli("run", "--due").returncode
    gate.unlink()
    project.exit_codes({})
    runner = project.popen("run", "--id", "rtn-a")
    try:
        deadline = time.monotonic() + 60
        while len(project.calls()) < 2:
            assert time.monotonic() < deadline and runner.poll() is None, project.calls()
            time.sleep(0.02)
        done = project.cli("status")
        single = project.cli("status", "rtn-a")
    finally:
        gate.touch()
        runner.wait(timeout=60)
    row = done.stdout.splitlines()[1]
    assert (1, "running", True) == (
        done.returncode, row.split()[1], row.endswith("  last result failure")), done.stdout
    assert "exited with code 3" not in done.stdout
    assert "unhealthy: last result failure" in single.stdout
