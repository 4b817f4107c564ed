"""SPEC §4 and §10 together: what another tool wrote never moves our cursors back.

Upstream appends a run line, or rewrites routine-state.json, naming an occurrence older than
the one we completed: the routine takes its last run and result (the newest record's), but
``last_scheduled_for`` and ``last_accounted_for`` keep the later value, so nothing we
completed is selected again, and a file whose only difference is that older cursor is neither
a fact to import again and again nor drift.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from conftest import Project

from specdojo_routine.core import adopt as rules
from tests.test_adopt_upstream import run_line as _line
from tests.test_adopt_upstream import write_doc as _write

NOW = "2026-12-01T07:00:30Z"
LATER = "2026-12-01T07:30:00Z"


def _append(project: Project, *lines: bytes) -> None:
    with project.ledger.open("ab") as f:
        f.write(b"".join(lines))


def _row(project: Project, now: str) -> dict[str, Any]:
    proc = project.cli("list", "--json", "--now", now)  # exit 1 after a failure
    assert "" == proc.stderr
    row: dict[str, Any] = orjson.loads(proc.stdout)["routines"][0]
    return row


@pytest.fixture
def cron(project: Project) -> Project:
    project.routine("rtn-hourly", 'trigger: {cron: "0 * * * *", timezone: UTC}\n'
                                  "action: {kind: specdojo, args: [index, build]}\n")
    assert 0 == project.cli("run", "--due", "--now", NOW).returncode  # runs 07:00
    return project


@pytest.fixture
def interval(project: Project) -> Project:
    project.routine("rtn-sweep", "interval: 1h\naction: {kind: specdojo, args: [index, build]}\n")
    assert 0 == project.cli("run", "--due", "--now", NOW).returncode
    return project


def test_an_older_upstream_run_line_leaves_the_cron_cursor_where_it_is(cron: Project) -> None:
    """Upstream's line for 06:00, written after we ran 07:00: the routine shows upstream's
    run and result, but 07:00 is not selected again and fold --check is clean."""
    _append(cron, _line("rtn-hourly", "2026-12-01T07:10:00Z", "2026-12-01T06:00:00.000Z",
                        "failure"))
    row = _row(cron, LATER)
    assert ("2026-12-01T07:10:00Z", "failure", "2026-12-01T07:00:00.000Z", False) == (
        row["last_run"], row["last_result"], row["last_scheduled_for"], row["due"])
    dry = cron.cli("run", "--due", "--dry-run", "--now", LATER)
    assert (0, "no due routines\n") == (dry.returncode, dry.stdout), dry.stderr
    assert 0 == cron.cli("fold").returncode
    entry = cron.state()["routines"]["rtn-hourly"]
    assert ("2026-12-01T07:00:00.000Z", "2026-12-01T07:00:00.000Z") == (
        entry["last_scheduled_for"], entry["last_accounted_for"])
    assert 0 == cron.cli("fold", "--check").returncode


def test_an_older_upstream_run_line_leaves_the_interval_anchor(interval: Project) -> None:
    """last_accounted_for, the interval routines' anchor, does not move back either: the
    sweep that ran at 07:00:30 is not due again at 07:30 because upstream's line (started
    06:00) set last_run back."""
    _append(interval, _line("rtn-sweep", "2026-12-01T06:00:00Z", "2026-12-01T06:00:00.000Z"))
    row = _row(interval, LATER)
    assert ("2026-12-01T06:00:00Z", False) == (row["last_run"], row["due"])
    dry = interval.cli("run", "--due", "--dry-run", "--now", LATER)
    assert (0, "no due routines\n") == (dry.returncode, dry.stdout), dry.stderr


def _merge(project: Project, **facts: str) -> bytes:
    """Upstream's shallow merge of the entry (every other key kept)."""
    doc = orjson.loads(project.state_path.read_bytes())
    doc["routines"]["rtn-hourly"] = {**doc["routines"]["rtn-hourly"], **facts}
    _write(project.state_path, doc)
    return project.state_path.read_bytes()


def test_an_imported_entry_with_an_older_cursor_keeps_ours(cron: Project) -> None:
    """An entry upstream rewrote with its own later run but an older occurrence: imported
    once (last_run, last_result are its), the cursor stays at 07:00, a second import
    appends nothing and fold --check is clean."""
    data = _merge(cron, last_run="2026-12-01T07:10:00Z", last_result="failure",
                  last_scheduled_for="2026-12-01T05:00:00.000Z")
    assert "would import 1 routine state," in cron.cli("import", "--dry-run").stdout
    assert 0 == cron.cli("fold", "--check").returncode
    assert "imported 1 routine state," in cron.cli("import").stdout
    [event] = [e for e in cron.events() if e["type"] == "routine_state_imported"]
    assert orjson.loads(data)["routines"]["rtn-hourly"] == event["record"]
    entry = cron.state()["routines"]["rtn-hourly"]
    assert ("2026-12-01T07:10:00Z", "failure", "2026-12-01T07:00:00.000Z",
            "2026-12-01T07:00:00.000Z") == (entry["last_run"], entry["last_result"],
                                            entry["last_scheduled_for"],
                                            entry["last_accounted_for"])
    dry = cron.cli("run", "--due", "--dry-run", "--now", LATER)
    assert (0, "no due routines\n") == (dry.returncode, dry.stdout), dry.stderr
    assert "imported 0 routine states," in cron.cli("import").stdout
    assert 0 == cron.cli("fold", "--check").returncode


def test_a_file_that_differs_only_by_an_older_cursor_is_neither_imported_nor_drift(
    cron: Project,
) -> None:
    """After we ran 07:00, a copy of the entry with the cursor at 06:00 holds nothing to
    import (applying it would change nothing): import says so, fold --check is clean, and
    the next recording command replaces it without an import event."""
    _merge(cron, last_scheduled_for="2026-12-01T06:00:00.000Z")
    assert "would import 0 routine states, 0 Job Runs, 0 checkpoints; 0 conflicts\n" == \
        cron.cli("import", "--dry-run").stdout
    check = cron.cli("fold", "--check")
    assert (0, "") == (check.returncode, check.stderr)
    assert 0 == cron.cli("run", "--due", "--now", LATER).returncode
    assert not [e for e in cron.events() if e["type"] == "routine_state_imported"]
    assert "2026-12-01T07:00:00.000Z" == cron.state()["routines"]["rtn-hourly"][
        "last_scheduled_for"]


@pytest.mark.parametrize(("theirs", "verdict"), [
    ("2026-12-01T06:00:00.000Z", "same"),
    (None, "same"),
    ("2026-12-01T07:00:00.000Z", "same"),
    ("2026-12-01T08:00:00.000Z", "import"),
], ids=["older", "none", "equal", "newer"])
def test_a_cursor_that_would_not_move_is_no_fact(theirs: Any, verdict: str) -> None:
    """The verdict on an entry whose only difference from ours is its cursor."""
    ours = {"last_run": "2026-12-01T07:00:01Z", "last_result": "success", "status": "success",
            "last_scheduled_for": "2026-12-01T07:00:00.000Z"}
    record = {"last_run": ours["last_run"], "last_result": "success",
              "last_scheduled_for": theirs}
    assert verdict == rules.routine_entry_verdict(record, ours)
    doc = {"routines": {"rtn-a": {**ours, "last_scheduled_for": theirs}}}
    assert (verdict == "same") == rules.holds_nothing_new(doc, {"routines": {"rtn-a": ours}},
                                                          "routines")


# --- a cron routine whose view has no cursor ----------------------------------------------


def _no_cursor_yet(project: Project, how: str) -> None:
    """A cron routine with a last_run but no last_scheduled_for: it ran as an interval
    routine before, or its only attempt was a backfill (which never moves the cursor)."""
    cron = 'trigger: {cron: "*/5 * * * *", timezone: UTC}\n'
    action = "action: {kind: specdojo, args: [index, build]}\n"
    if how == "was-interval":
        project.routine("rtn-five", "interval: 1m\n" + action)
        assert 0 == project.cli("run", "--due", "--now", "2026-12-01T22:00:00Z").returncode
        project.routine("rtn-five", cron + action)
    else:
        project.routine("rtn-five", cron + action)
        assert 0 == project.cli("run", "--id", "rtn-five", "--from", "2026-12-01T20:00:00Z",
                                "--to", "2026-12-01T20:00:00Z",
                                "--now", "2026-12-01T22:00:00Z").returncode
    entry = project.state()["routines"]["rtn-five"]
    assert entry["last_run"] is not None and "last_scheduled_for" not in entry


@pytest.mark.parametrize("how", ["was-interval", "backfill-only"])
def test_upstreams_occurrence_does_not_run_again_without_a_cursor(
    project: Project, how: str,
) -> None:
    """Upstream ran the 23:00 occurrence and appended its line. The fold cannot tell this
    routine from an interval one (the view keeps no last_scheduled_for, SPEC §5), but the
    line's occurrence is accounted for: run --due at 23:02 selects nothing, list says not
    due, and next and list's next occurrence say 23:05 even when asked from before 23:00."""
    _no_cursor_yet(project, how)
    _append(project, _line("rtn-five", "2026-12-01T23:00:01Z", "2026-12-01T23:00:00.000Z"))
    dry = project.cli("run", "--due", "--dry-run", "--now", "2026-12-01T23:02:00Z")
    assert (0, "no due routines\n") == (dry.returncode, dry.stdout), dry.stderr
    row = _row(project, "2026-12-01T23:02:00Z")
    assert (None, False) == (row["last_scheduled_for"], row["due"])
    upcoming = orjson.loads(project.cli("next", "rtn-five", "--json", "--now",
                                        "2026-12-01T22:58:00Z").stdout)
    assert "2026-12-01T23:05:00.000Z" == upcoming["occurrences"][0]["utc"]
    assert "2026-12-01T23:05:00.000Z" == _row(project, "2026-12-01T22:58:00Z")["next_occurrence"]
    proc = project.cli("run", "--due", "--now", "2026-12-01T23:05:10Z")
    assert 0 == proc.returncode, proc.stderr
    started = [e["scheduled_for"] for e in project.events() if e.get("type") == "attempt_started"
               and e["trigger"] == "due" and e["routine_id"] == "rtn-five"]
    assert "2026-12-01T23:05:00.000Z" == started[-1]


# --- an upstream run line without a result the fold can take -------------------------------


def _bad_line(result: str) -> bytes:
    record: dict[str, Any] = {"version": 1, "routine_id": "rtn-hourly",
                              "scheduled_for": "2026-12-01T08:00:00.000Z",
                              "started_at": "2026-12-01T08:00:05Z",
                              "completed_at": "2026-12-01T08:00:09Z", "job_run_ids": []}
    if result != "missing":
        record["result"] = None if result == "null" else result
    return orjson.dumps(record) + b"\n"


@pytest.mark.parametrize("result", ["null", "missing", "partial"])
def test_a_run_line_without_a_usable_result_accounts_for_its_occurrence_only(
    cron: Project, result: str,
) -> None:
    """SPEC §10 rule 4: the result is not guessed and one foreign line stops nothing. The
    line accounts for 08:00 (not run again), the routine keeps our last run and result, and
    import and fold (--check) name the line in a warning without failing."""
    before = cron.state()["routines"]["rtn-hourly"]
    _append(cron, _bad_line(result))
    line = len(cron.events())
    row = _row(cron, "2026-12-01T08:30:00Z")
    assert (before["last_run"], "success", "2026-12-01T08:00:00.000Z", False) == (
        row["last_run"], row["last_result"], row["last_scheduled_for"], row["due"])
    dry = cron.cli("run", "--due", "--dry-run", "--now", "2026-12-01T08:30:00Z")
    assert (0, "no due routines\n") == (dry.returncode, dry.stdout), dry.stderr
    why = {"null": "result null", "missing": "no result", "partial": 'result "partial"'}[result]
    warning = (f"warning: routines/generated/routine-runs.jsonl:{line}: upstream run line of "
               f"rtn-hourly has {why}: it accounts for its scheduled_for only; last_run and "
               "last_result stay as they were\n")
    for args in (("import", "--dry-run"), ("import",), ("fold", "--check"), ("fold",)):
        proc = cron.cli(*args)
        assert (0, warning) == (proc.returncode, proc.stderr), args
    assert [warning.rstrip("\n")] == orjson.loads(cron.cli("import", "--json").stdout)["warnings"]
    assert [warning.rstrip("\n")] == orjson.loads(
        cron.cli("fold", "--check", "--json").stdout)["warnings"]
    done = cron.cli("run", "--due", "--now", "2026-12-01T09:00:30Z")
    assert 0 == done.returncode, done.stderr
    entry = cron.state()["routines"]["rtn-hourly"]
    assert ("success", "2026-12-01T09:00:00.000Z") == (entry["last_result"],
                                                      entry["last_scheduled_for"])


@pytest.mark.parametrize("cron", ["*/5 * * * *", "* * * * *"])
def test_a_routine_that_was_interval_has_its_first_cron_run_not_a_backlog(
    project: Project, cron: str,
) -> None:
    """SPEC §4's first-run rule: an interval routine made cron (`missed_run: all`) a day
    after its last run starts with the most recent occurrence only, not every occurrence
    since its last interval run (287, or a "Too many missed" that never ends)."""
    action = "action: {kind: specdojo, args: [index, build]}\n"
    project.routine("rtn-switch", "interval: 1h\n" + action)
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:07:00Z").returncode
    project.routine("rtn-switch", f'trigger: {{cron: "{cron}", timezone: UTC}}\n'
                    "policy: {missed_run: all}\n" + action)
    proc = project.cli("run", "--due", "--now", "2026-05-02T10:00:30Z")
    assert 0 == proc.returncode, proc.stderr
    started = [e["scheduled_for"] for e in project.events()
               if e.get("type") == "attempt_started" and e["trigger"] == "due"]
    assert "2026-05-02T10:00:00.000Z" == started[-1] and 2 == len(started), started


def test_an_anchor_in_the_future_is_named_like_a_cursor_in_the_future(project: Project) -> None:
    """A routine made cron after an interval run recorded in the future (a clock that ran
    ahead) has no last_scheduled_for, but its first cron run waits for that instant: list
    and status name it as they name a cron cursor in the future."""
    action = "action: {kind: specdojo, args: [index, build]}\n"
    project.routine("rtn-ahead", "interval: 1h\n" + action)
    assert 0 == project.cli("run", "--id", "rtn-ahead", "--now", "2099-01-01T00:00:00Z").returncode
    project.routine("rtn-ahead", 'trigger: {cron: "0 * * * *", timezone: UTC}\n' + action)
    listed = project.cli("list", "--json")
    assert 1 == listed.returncode
    problems = orjson.loads(listed.stdout)["problems"]
    assert [p for p in problems if p.startswith(
        "rtn-ahead: its cron cursor 2099-01-01T00:00:00.000Z is later than now")], problems
    assert "unhealthy: rtn-ahead: its cron cursor" in project.cli("status").stdout
    page = project.root / "report.html"
    assert 0 == project.cli("report", "--html", str(page)).returncode
    assert "rtn-ahead: its cron cursor 2099-01-01T00:00:00.000Z is later than now" in (
        page.read_text())
