"""A long scripted timeline: `--now` stepping over a week that crosses Europe's spring-forward
change; the final views equal the expected table and a replay of the ledger (SPEC §4-§6)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from specdojo_routine.store.ledger import views
from tests.conftest import Project


def _stamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_timeline_over_spring_forward(project: Project) -> None:
    """Every occurrence is attempted once, the 02:30 slot of the gap day fires at 03:00 CEST,
    a failure is not retried early, and views == replay(ledger) == the expected table."""
    project.routine("rtn-berlin", """\
        trigger: {cron: "30 2 * * *", timezone: Europe/Berlin}
        policy: {missed_run: all}
        action: {kind: specdojo, args: [berlin]}
        """)
    project.routine("rtn-weekly", """\
        trigger: {cron: "0 17 * * 5", timezone: Asia/Tokyo}
        action: {kind: specdojo, args: [weekly]}
        """)
    project.routine("rtn-daily", "interval: 1d\naction: {kind: specdojo, args: [daily]}\n")
    step = datetime(2026, 3, 27, tzinfo=UTC)
    end = datetime(2026, 4, 3, tzinfo=UTC)
    while step <= end:
        failing = step == datetime(2026, 3, 29, 6, tzinfo=UTC)
        project.exit_codes({"berlin": 1} if failing else {})
        proc = project.cli("run", "--due", "--now", _stamp(step))
        assert proc.returncode in (0, 1), proc.stderr
        assert "Traceback" not in proc.stderr
        step += timedelta(hours=6)

    scheduled = [e["scheduled_for"] for e in project.events()
                 if e["type"] == "attempt_started" and e["routine_id"] == "rtn-berlin"]
    assert [
        "2026-03-26T01:30:00.000Z", "2026-03-27T01:30:00.000Z", "2026-03-28T01:30:00.000Z",
        "2026-03-29T01:00:00.000Z", "2026-03-30T00:30:00.000Z", "2026-03-31T00:30:00.000Z",
        "2026-04-01T00:30:00.000Z", "2026-04-02T00:30:00.000Z",
    ] == scheduled
    weekly = [e["scheduled_for"] for e in project.events()
              if e["type"] == "attempt_started" and e["routine_id"] == "rtn-weekly"]
    assert ["2026-03-20T08:00:00.000Z", "2026-03-27T08:00:00.000Z"] == weekly
    daily = [e["last_run"] for e in project.events()
             if e["type"] == "attempt_started" and e["routine_id"] == "rtn-daily"]
    assert [f"2026-{d}T00:00:00Z" for d in ("03-27", "03-28", "03-29", "03-30", "03-31",
                                             "04-01", "04-02", "04-03")] == daily

    routines = project.state()["routines"]
    table = {rid: (r["status"], r["last_run"], r.get("last_scheduled_for"))
             for rid, r in routines.items()}
    assert {
        "rtn-berlin": ("success", "2026-04-02T06:00:00Z", "2026-04-02T00:30:00.000Z"),
        "rtn-weekly": ("success", "2026-03-27T12:00:00Z", "2026-03-27T08:00:00.000Z"),
        "rtn-daily": ("success", "2026-04-03T00:00:00Z", None),
    } == table
    failures = [e for e in project.events()
                if e["type"] == "attempt_ended" and e["result"] == "failure"]
    assert ["rtn-berlin"] == [e["routine_id"] for e in failures]
    assert project.state() == views.replay(project.ledger)["routine-state.json"]
    assert 0 == project.cli("fold", "--check").returncode
