"""The pure §9 decisions (core/policy, core/preview): hold before deadline, the deadline's edge,
interval anchors, operator triggers, reasons, preview cursor and latest start."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest

from specdojo_routine.core import model, policy, preview, schedule

NOW = datetime(2026, 5, 1, 13, 30, tzinfo=UTC)
HOURLY = model.Routine(
    id="rtn-p", path="routines/rtn-p.yaml", digest="0" * 64,
    trigger=model.CronTrigger(cron="0 * * * *", timezone="UTC"),
    policy=model.Policy(starting_deadline=model.Duration(text="90m", seconds=5400)),
    actions=(model.SpecdojoAction(args=("x",)),))
INTERVAL = attrs.evolve(HOURLY, trigger=None, interval=model.Interval(text="1h", seconds=3600),
                        policy=model.Policy(starting_deadline=model.Duration(text="2m",
                                                                             seconds=120)))


def occ(at: datetime, trigger: str = "due", due_at: datetime | None = None) -> schedule.Occurrence:
    return schedule.Occurrence(routine_id="rtn-p", scheduled_for=at,
                               trigger=trigger, due_at=due_at)  # type: ignore[arg-type]


@pytest.mark.parametrize(("seconds", "text"), [
    (1, "1s"), (60, "1m"), (3720, "1h 2m"), (10920, "3h 2m"), (90061, "1d 1h 1m 1s"),
    (86400, "1d"), (3601, "1h 1s")])
def test_span_text_leaves_out_zero_parts(seconds: int, text: str) -> None:
    """d h m s with the zero parts left out (SPEC §9.5)."""
    assert text == policy.span_text(seconds)


def test_exactly_at_the_deadline_is_on_time_one_second_later_is_missed() -> None:
    """late == deadline runs; late == deadline + 1 s is missed with late_by_s and reason."""
    at = NOW - timedelta(minutes=90)
    assert "run" == policy.classify(HOURLY, {}, occ(at), NOW).verdict
    late = policy.classify(HOURLY, {}, occ(at - timedelta(seconds=1)), NOW)
    assert ("miss", 5401, 5400, "started 1h 30m 1s late (deadline 90m)") == (
        late.verdict, late.late_by_s, late.deadline_s, late.reason)


def test_hold_comes_before_the_deadline() -> None:
    """A held routine's late occurrence is held, not missed."""
    state = {"held": True, "hold_attempt_id": "att-1"}
    decision = policy.classify(HOURLY, state, occ(NOW - timedelta(days=3)), NOW)
    assert ("hold", "held after failure of att-1") == (decision.verdict, decision.reason)


@pytest.mark.parametrize("trigger", ["id", "release", "backfill"])
def test_operator_triggers_ignore_hold_and_deadline(trigger: str) -> None:
    """run --id, release --run and backfill always start."""
    decision = policy.classify(HOURLY, {"held": True}, occ(NOW - timedelta(days=3), trigger),
                               NOW)
    assert "run" == decision.verdict


def test_interval_deadline_counts_from_the_anchor_plus_interval() -> None:
    """Interval: measured from due_at; a routine that never ran (no due_at) has no deadline."""
    assert "run" == policy.classify(INTERVAL, {}, occ(NOW), NOW).verdict
    late = policy.classify(INTERVAL, {}, occ(NOW, due_at=NOW - timedelta(minutes=3)), NOW)
    assert ("miss", 180) == (late.verdict, late.late_by_s)


def test_a_held_or_missed_interval_occurrence_anchors_the_next() -> None:
    """due_occurrences measures from the later of last_run and last_accounted_for."""
    found = schedule.due_occurrences(
        INTERVAL, last_run="2026-05-01T10:00:00Z", last_scheduled_for=None, now=NOW,
        last_accounted_for="2026-05-01T12:40:00.000Z")
    assert [] == found
    [due] = schedule.due_occurrences(
        INTERVAL, last_run="2026-05-01T10:00:00Z", last_scheduled_for=None, now=NOW,
        last_accounted_for="2026-05-01T12:20:00.000Z")
    assert datetime(2026, 5, 1, 13, 20, tzinfo=UTC) == due.due_at


def test_preview_follows_the_cursor_and_shows_the_latest_start() -> None:
    """next lists after max(now, cursor); latest_start = utc + deadline."""
    state = {"last_scheduled_for": "2026-05-01T15:00:00.000Z"}
    items = preview.routine_upcoming(HOURLY, state, now=NOW, count=2)
    assert [("2026-05-01T16:00:00.000Z", "2026-05-01T17:30:00Z"),
            ("2026-05-01T17:00:00.000Z", "2026-05-01T18:30:00Z")] == [
        (i.utc, i.latest_start) for i in items]


def test_interval_preview_starts_at_the_anchor_and_never_run_has_no_first_deadline() -> None:
    """Interval: max(now, anchor + interval), one interval apart; never run → due now."""
    items = preview.routine_upcoming(INTERVAL, {"last_run": "2026-05-01T13:00:00Z"}, now=NOW,
                                     count=2)
    assert ["2026-05-01T14:00:00.000Z", "2026-05-01T15:00:00.000Z"] == [i.utc for i in items]
    fresh = preview.routine_upcoming(INTERVAL, None, now=NOW, count=2)
    assert (None, "2026-05-01T14:32:00Z") == (fresh[0].latest_start, fresh[1].latest_start)


def test_slots_on_one_instant_are_previewed_once() -> None:
    """02:00 and 02:30 both fall in Berlin's gap and fire once, at 03:00 (with 03:00's own)."""
    items = preview.cron_upcoming("0,30 2,3 * * *", "Europe/Berlin",
                                  after=datetime(2026, 3, 28, 23, 0, tzinfo=UTC), count=3)
    assert ["2026-03-29T03:00:00+02:00", "2026-03-29T03:30:00+02:00",
            "2026-03-30T02:00:00+02:00"] == [i.local for i in items]
    assert "02:00 does not exist on 2026-03-29: fires at 03:00" == items[0].note


PAUSED = {"pause": {"by": "alice", "at": "2026-05-01T10:00:00.000Z", "note": "window",
                    "resumed_at": None}, "held": True, "hold_attempt_id": "att-1"}
RESUMED = {"pause": {**PAUSED["pause"], "resumed_at": "2026-05-01T12:00:00.000Z"}}  # type: ignore[dict-item]


def test_pause_comes_before_hold_and_deadline_and_operators_still_run() -> None:
    """SPEC §13: while paused every due occurrence is paused (even a held, late one), with
    `paused by <name>: <note>`; run --id still runs."""
    late = occ(NOW - timedelta(days=3))
    decision = policy.classify(HOURLY, PAUSED, late, NOW)
    assert ("pause", "paused by alice: window") == (decision.verdict, decision.reason)
    assert "run" == policy.classify(HOURLY, PAUSED, occ(NOW, "id"), NOW).verdict


@pytest.mark.parametrize(("routine", "became_due", "verdict"), [
    (HOURLY, datetime(2026, 5, 1, 12, 0, tzinfo=UTC), "pause"),  # scheduled at the resume
    (HOURLY, datetime(2026, 5, 1, 13, 0, tzinfo=UTC), "run"),
    (INTERVAL, datetime(2026, 5, 1, 11, 0, tzinfo=UTC), "pause"),  # elapsed while paused
    (INTERVAL, datetime(2026, 5, 1, 13, 29, tzinfo=UTC), "run"),
    (INTERVAL, None, "run"),  # never ran: nothing became due inside the pause
])
def test_after_a_resume_what_became_due_by_it_is_still_paused(
    routine: model.Routine, became_due: datetime | None, verdict: str,
) -> None:
    """A cron occurrence by its scheduled time, an interval one by when its interval elapsed."""
    at = became_due if routine.trigger is not None and became_due else NOW
    decision = policy.classify(routine, RESUMED, occ(at, due_at=became_due), NOW)
    assert verdict == decision.verdict
