"""`next` answers "what runs next" with the pending retry included (SPEC §13, §9.4, §14): the
agenda lists a retry that will run as an entry of its own at its due time, `next ID` says so
before the occurrences, a retry that gives way to the next occurrence (`retry_superseded`) is
never listed as something that runs, and a paused or held routine's retry is described as
`run --due` treats it. Real runs of `python -m specdojo_routine`, time moved with `--now`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import orjson

from tests.conftest import Project

RAN = "2026-05-01T10:00:10Z"  # the hourly routine's 10:00 occurrence runs and fails
OCCURRENCE = "2026-05-01T10:00:00.000Z"


def _at(project: Project, after: timedelta) -> str:
    """``after`` past the end of the failed attempt, as recorded: ``--now`` plus the real time
    the attempt took, a second or more on a loaded machine, so the retry's due time is read
    from the ledger, not assumed."""
    (ended,) = [e for e in project.events()
                if e["type"] == "attempt_ended" and e["result"] == "failure"]
    at = datetime.fromisoformat(ended["completed_at"]) + after
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _due(project: Project) -> str:
    """The first retry's due time: 1m after the failed attempt ended."""
    return _at(project, timedelta(minutes=1))


def _look(project: Project) -> str:
    """When the tests look: 40 s before the retry is due."""
    return _at(project, timedelta(seconds=20))


def _failing(project: Project, rid: str = "rtn-retry", delay: str = "1m",
             extra: str = "") -> str:
    """An hourly routine whose 10:00 attempt failed; the failed attempt's id."""
    project.routine(rid, f"""\
        trigger: {{cron: "0 * * * *", timezone: UTC}}
        policy: {{retry: {{attempts: 3, delay: {delay}}}{extra}}}
        action: {{kind: specdojo, args: [boom]}}
        """)
    project.exit_codes({"boom": 1})
    assert 1 == project.cli("run", "--due", "--now", RAN).returncode
    (started,) = [e for e in project.events()
                  if e["type"] == "attempt_started" and e["routine_id"] == rid]
    attempt_id: str = started["attempt_id"]
    return attempt_id


def _json(project: Project, *args: str) -> dict[str, Any]:
    done = project.cli(*args, "--json")
    assert 0 == done.returncode, done.stderr
    doc: dict[str, Any] = orjson.loads(done.stdout)
    return doc


def _tokyo(project: Project) -> None:
    project.routine("rtn-tokyo", """\
        trigger: {cron: "30 * * * *", timezone: Asia/Tokyo}
        action: {kind: specdojo, args: [ok]}
        """)


def test_the_agenda_lists_a_pending_retry_at_its_due_time(project: Project) -> None:
    """The retry due in 40 s is the first row: relative, UTC, local like any row, and a note
    naming retry 2/3 of the 10:00 occurrence and its exact due time; the routine's next
    occurrence follows in its place."""
    _tokyo(project)
    _failing(project)
    done = project.cli("next", "--now", _look(project))
    assert (0, [
        "IN      UTC               LOCAL                 ROUTINE",
        "in 40s  2026-05-01 10:01  -                     rtn-retry",
        f"  note: retry 2/3 of the occurrence of {OCCURRENCE}, due {_due(project)}",
        "in 29m  2026-05-01 10:30  2026-05-01 19:30 JST  rtn-tokyo",
        "in 59m  2026-05-01 11:00  -                     rtn-retry",
    ]) == (done.returncode, done.stdout.splitlines())


def test_the_agenda_json_gives_each_entry_a_retry_key(project: Project) -> None:
    """`next --json`: the retry's entry carries `retry` {number, of, scheduled_for,
    failed_attempt_id} beside every key an occurrence has; occurrences carry `retry: null`;
    `-n 2` still counts two occurrences per routine, plus the one retry."""
    _tokyo(project)
    failed = _failing(project)
    doc = _json(project, "next", "-n", "2", "--now", _look(project))
    entries = doc["occurrences"]
    due = _due(project)
    assert {
        "routine_id": "rtn-retry", "timezone": "UTC", "local": due.replace("Z", "+00:00"),
        "utc": due.replace("Z", ".000Z"), "note": None, "latest_start": None,
        "standing": None, "retry": {"number": 2, "of": 3, "scheduled_for": OCCURRENCE,
                                    "failed_attempt_id": failed},
        "supersedes": None,
    } == entries[0]
    assert [("rtn-retry", True), ("rtn-tokyo", False), ("rtn-retry", False),
            ("rtn-tokyo", False), ("rtn-retry", False)] == [
        (e["routine_id"], e["retry"] is not None) for e in entries]
    assert all(e["supersedes"] is None for e in entries)


def test_next_id_says_the_retry_runs_before_the_occurrences(project: Project) -> None:
    """`next ID`: a `note:` line before the table says when the retry runs, in the words
    `list` uses; `--json` has a top-level `retry` with `at` (and `superseded_by` null)."""
    failed = _failing(project)
    due, look = _due(project), _look(project)
    lines = project.cli("next", "rtn-retry", "-n", "1", "--now", look).stdout.splitlines()
    assert [
        f"note: rtn-retry is retrying (2/3) at {due}: the occurrence of {OCCURRENCE} runs "
        "again at the first `run --due` from then, before these occurrences",
        "LOCAL (UTC)                UTC                       LATEST START  NOTE",
        "2026-05-01T11:00:00+00:00  2026-05-01T11:00:00.000Z  -",
    ] == [line.rstrip() for line in lines]
    doc = _json(project, "next", "rtn-retry", "--now", look)
    assert ({"number": 2, "of": 3, "scheduled_for": OCCURRENCE, "failed_attempt_id": failed,
             "at": due, "superseded_by": None}, 5) == (doc["retry"], len(doc["occurrences"]))
    assert ["routine_id", "timezone", "standing", "occurrences", "retry"] == list(doc)


def test_list_status_and_next_name_the_same_due_time(project: Project) -> None:
    """The one due time of the retry, as `list`, `status ID`, `next ID` and the agenda say it,
    and the retry then starts at exactly that time, not before."""
    _failing(project)
    due, look = _due(project), _look(project)
    label = f"retrying (2/3) at {due}"
    listed = project.cli("list", "--now", look).stdout
    status = project.cli("status", "rtn-retry", "--now", look).stdout
    one = project.cli("next", "rtn-retry", "--now", look).stdout
    agenda = project.cli("next", "--now", look).stdout
    assert (True, True, True, True) == (f"rtn-retry: {label}" in listed, label in status,
                                        label in one, f", due {due}" in agenda)
    assert _json(project, "next", "rtn-retry", "--now", look)["retry"]["at"] == due
    project.cli("run", "--due", "--now", _at(project, timedelta(seconds=59)))
    project.cli("run", "--due", "--now", due)
    assert [("due", RAN), ("retry", due)] == [
        (e["trigger"], e["last_run"]) for e in project.events()
        if e["type"] == "attempt_started"]


def test_a_retry_that_gives_way_is_not_listed_as_something_that_runs(
    project: Project,
) -> None:
    """A 2h delay, capped by max_delay at 1h, ends after the 11:00 occurrence: `next ID` says
    the retry gives way to it; the agenda has no entry for the retry but a note under that
    occurrence (JSON: `supersedes`); and `run --due` at 11:00 records that `retry_superseded`."""
    failed = _failing(project, "rtn-slow", delay="2h")
    at, look = _at(project, timedelta(hours=1)), _look(project)
    one = project.cli("next", "rtn-slow", "-n", "1", "--now", look).stdout.splitlines()
    assert (f"note: rtn-slow is retrying (2/3) at {at}, but the occurrence of "
            "2026-05-01T11:00:00.000Z becomes due first: the retry gives way to it (recorded "
            "as retry_superseded) and does not run") == one[0]
    retry = _json(project, "next", "rtn-slow", "--now", look)["retry"]
    assert (at, "2026-05-01T11:00:00.000Z") == (retry["at"],
                                                                    retry["superseded_by"])
    agenda = project.cli("next", "-n", "2", "--now", look).stdout.splitlines()
    assert [
        "IN      UTC               LOCAL  ROUTINE",
        "in 59m  2026-05-01 11:00  -      rtn-slow",
        f"  note: retry 2/3 of the occurrence of {OCCURRENCE} (due {at}) "
        "gives way to this occurrence: recorded as retry_superseded, not run",
        "in 1h   2026-05-01 12:00  -      rtn-slow",
    ] == [line.rstrip() for line in agenda]
    entries = _json(project, "next", "-n", "2", "--now", look)["occurrences"]
    assert [(None, {"number": 2, "of": 3, "scheduled_for": OCCURRENCE,
                    "failed_attempt_id": failed}), (None, None)] == [
        (e["retry"], e["supersedes"]) for e in entries]
    project.cli("run", "--due", "--now", at)
    (dropped,) = [e for e in project.events() if e["type"] == "retry_superseded"]
    assert (failed, "2026-05-01T11:00:00.000Z") == (dropped["attempt_id"],
                                                   dropped["superseded_by"])


def test_list_and_status_say_a_retry_gives_way_as_next_does(project: Project) -> None:
    """`list` and `status` tell the retry of the 2h-delay routine by `next`'s rule: it gives
    way to the 11:00 occurrence and does not run, so the routine is not `retrying` but failed
    (unhealthy, exit 1), and no line tells the operator to wait for the retry."""
    _failing(project, "rtn-slow", delay="2h")
    look = _look(project)
    said = ("retry (2/3) gives way to the occurrence of 2026-05-01T11:00:00.000Z (recorded as "
            "retry_superseded) and does not run")
    listed = project.cli("list", "--now", look)
    assert f"  rtn-slow: {said}" in listed.stdout.splitlines(), listed.stdout
    assert "retrying (" not in listed.stdout and 1 == listed.returncode
    status = project.cli("status", "rtn-slow", "--now", look)
    state = next(line for line in status.stdout.splitlines() if "state" in line.lower())
    assert "failure" in state and said in state and "retrying (" not in status.stdout, state
    (row,) = _json_rows(project, look)
    assert ("failure", said) == (row["state"], row["retrying"])


def _json_rows(project: Project, look: str) -> list[dict[str, Any]]:
    done = project.cli("status", "--json", "--now", look)
    rows: list[dict[str, Any]] = orjson.loads(done.stdout)["routines"]
    return rows


def test_a_paused_routines_retry_waits_for_resume(project: Project) -> None:
    """While paused, `run --due` starts no retry (it stays pending); `next` says the retry
    waits for `resume` and then runs unless the next occurrence comes first, and the agenda
    marks its entry paused; after `resume` the next `run --due` starts it."""
    _failing(project, "rtn-p", delay="10m")
    due = _at(project, timedelta(minutes=10))
    assert 0 == project.cli("pause", "rtn-p", "--by", "dave", "--now",
                            "2026-05-01T10:01:00Z").returncode
    at = "2026-05-01T10:15:00Z"
    one = project.cli("next", "rtn-p", "-n", "1", "--now", at).stdout.splitlines()
    assert (f"note: rtn-p is retrying (2/3) at {due}, but it is paused: the "
            "retry waits for `resume rtn-p`, then runs at the first `run --due`, unless the "
            "occurrence of 2026-05-01T11:00:00.000Z becomes due first (then it gives way to "
            "it, recorded as retry_superseded)") == one[1]
    assert one[0].startswith("note: rtn-p is paused (by dave)")
    agenda = project.cli("next", "--now", at).stdout.splitlines()
    assert [
        "IN      UTC               LOCAL  ROUTINE",
        "4m ago  2026-05-01 10:10  -      rtn-p",
        f"  note: retry 2/3 of the occurrence of {OCCURRENCE}, due {due}",
        "  note: paused: the retry waits for `resume rtn-p`",
        "in 45m  2026-05-01 11:00  -      rtn-p",
        "  note: paused: recorded as paused, not run, until `resume rtn-p`",
    ] == [line.rstrip() for line in agenda]
    entry = _json(project, "next", "--now", at)["occurrences"][0]
    assert ("paused", 2) == (entry["standing"], entry["retry"]["number"])
    # what `next` said is what `run --due` does
    assert 0 == project.cli("run", "--due", "--now", at).returncode
    assert ["due"] == [e["trigger"] for e in project.events() if e["type"] == "attempt_started"]
    assert 0 == project.cli("resume", "rtn-p", "--now", "2026-05-01T10:20:00Z").returncode
    project.cli("run", "--due", "--now", "2026-05-01T10:20:30Z")
    assert ["due", "retry"] == [e["trigger"] for e in project.events()
                                if e["type"] == "attempt_started"]


def test_a_held_routine_has_no_retry_to_show(project: Project) -> None:
    """A held routine whose failed attempt would otherwise be retried (the retry policy was
    added after the hold began): `run --due` records the occurrence held and starts no retry,
    so `next ID` and the agenda show the hold, no retry, as `list` does."""
    project.routine("rtn-h", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        policy: {on_failure: hold}
        action: {kind: specdojo, args: [boom]}
        """)
    project.exit_codes({"boom": 1})
    project.cli("run", "--due", "--now", RAN)
    project.routine("rtn-h", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        policy: {on_failure: hold, retry: {attempts: 3, delay: 1m}}
        action: {kind: specdojo, args: [boom]}
        """)
    at = "2026-05-01T10:05:00Z"
    one = project.cli("next", "rtn-h", "-n", "1", "--now", at).stdout.splitlines()
    assert (3, True) == (len(one), one[0].startswith("note: rtn-h is on hold"))
    assert None is _json(project, "next", "rtn-h", "--now", at)["retry"]
    assert [None] == [e["retry"] for e in _json(project, "next", "--now", at)["occurrences"]]
    assert "retrying" not in project.cli("list", "--now", at).stdout
    project.cli("run", "--due", "--now", at)
    assert ["due"] == [e["trigger"] for e in project.events() if e["type"] == "attempt_started"]


def test_a_retry_runs_only_when_its_delay_ends_before_the_next_occurrence() -> None:
    """The pure rule behind the notes: the retry gives way when the next occurrence becomes
    due at or before the retry's due time, or is due already; it runs when due first."""
    from datetime import UTC, datetime

    from specdojo_routine.core import retry_rules

    due = datetime(2026, 5, 1, 10, 59, 30, tzinfo=UTC)
    pending = retry_rules.PendingRetry(
        failed_attempt_id="att-1", first_attempt_id="att-1", scheduled_for=OCCURRENCE,
        number=2, of=3, due_at=due)
    hour = datetime(2026, 5, 1, 11, tzinfo=UTC)
    early = datetime(2026, 5, 1, 10, 30, tzinfo=UTC)
    assert [False, True, True, False] == [
        retry_rules.gives_way(pending, hour, early),
        retry_rules.gives_way(pending, due, early),  # due together: the occurrence wins
        retry_rules.gives_way(pending, hour, datetime(2026, 5, 1, 11, 0, 5, tzinfo=UTC)),
        retry_rules.gives_way(pending, None, early),  # no next occurrence: nothing drops it
    ]


def test_routines_without_a_retry_policy_load_no_retry_code(project: Project) -> None:
    """`next` and `next ID` look for a pending retry only in a routine with `policy.retry`:
    for the others the retry rules are not imported."""
    from tests.test_idle_run import _imported

    project.routine("rtn-plain", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        action: {kind: specdojo, args: [boom]}
        """)
    project.exit_codes({"boom": 1})
    project.cli("run", "--due", "--now", RAN)
    unneeded = ("specdojo_routine.core.retry_rules",)
    for args in (("next",), ("next", "rtn-plain"), ("next", "--json")):
        done = project.cli(*args, "--now", _look(project),
                           env=project.env(PYTHONPROFILEIMPORTTIME="1"), process=True)
        imported = _imported(done.stderr)
        assert (0, True, []) == (done.returncode, "specdojo_routine.app.preview" in imported,
                                 [m for m in unneeded if m in imported]), args
