"""The fold's §9 events: the hold region, the cursor moving past held and missed occurrences."""

from __future__ import annotations

from typing import Any

import pytest

from specdojo_routine.cli import render
from specdojo_routine.core import events as ev
from specdojo_routine.core import routine_events as rev
from specdojo_routine.core.errors import InvalidTransition
from specdojo_routine.core.fold import (
    HOLD_TRANSITIONS,
    RoutineFold,
    fold_from_document,
    routine_document,
)
from tests.test_fold import OWNER, ended, entry, folded, registered, resolved

T0 = "2026-08-07T08:00:00.000Z"
T1 = "2026-08-07T09:00:00.000Z"
T2 = "2026-08-07T10:00:00.000Z"


def started(aid: str = "a1", transition: str = "T-02", *, trigger: str = "due", hold: bool = True,
            scheduled_for: str = T0, schedule: str = "cron") -> rev.AttemptStarted:
    return rev.AttemptStarted(
        routine_id="rtn-a", attempt_id=aid, transition=transition,  # type: ignore[arg-type]
        trigger=trigger, scheduled_for=scheduled_for,  # type: ignore[arg-type]
        last_run="2026-08-07T08:00:03Z", passed_over_since=None, owner=OWNER,
        schedule=schedule, on_failure="hold" if hold else None)  # type: ignore[arg-type]


def held(at: str, since: str | None = None, schedule: str = "cron") -> rev.OccurrenceHeld:
    return rev.OccurrenceHeld(routine_id="rtn-a", scheduled_for=at, passed_over_since=since,
                             reason="held after failure of a1", schedule=schedule)  # type: ignore[arg-type]


def missed(at: str, schedule: str = "cron") -> rev.OccurrenceMissed:
    return rev.OccurrenceMissed(routine_id="rtn-a", scheduled_for=at, deadline_s=120,
                               late_by_s=3720, reason="started 1h 2m late (deadline 2m)",
                               passed_over_since=None, schedule=schedule)  # type: ignore[arg-type]


def released(run: str = "none") -> rev.RoutineReleased:
    return rev.RoutineReleased(routine_id="rtn-a", run=run, note=None,  # type: ignore[arg-type]
                              released_by="ops")


def hold_of(state: RoutineFold) -> tuple[Any, ...]:
    doc = entry(state)
    return doc["held"], doc["hold_attempt_id"], doc["held_occurrences"]


HELD = (registered(), started(), ended(result="failure"))


def test_a_failure_under_hold_begins_a_hold() -> None:
    """attempt_ended failure of an attempt started under on_failure: hold holds the routine."""
    assert (True, "a1", []) == hold_of(folded(*HELD))


@pytest.mark.parametrize("events", [
    (registered(), started(hold=False), ended(result="failure")),
    (registered(), started(trigger="backfill"), ended(result="failure")),
    (registered(), started(), ended(result="skipped")),
    (registered(), started(), ended(result="success")),
    (registered(), started(), ended(result="partial")),
], ids=["continue", "backfill", "skipped", "success", "partial"])
def test_other_ends_do_not_hold(events: tuple[ev.Event, ...]) -> None:
    """continue, a backfill failure, a skip, a success or a partial never begin a hold
    (SPEC §9.5: "A `partial` result never holds")."""
    assert (False, None, []) == hold_of(folded(*events))


def test_a_resolved_failure_holds_and_survives_the_published_document() -> None:
    """An operator's failure holds too; a document's accumulator keeps the open on_failure."""
    state = folded(registered(), started())
    again = fold_from_document(routine_document(state, 0))
    assert (True, "a1", []) == hold_of(folded(resolved(result="failure"), state=again))


def test_held_occurrences_move_the_cursor_and_a_release_clears_them() -> None:
    """Each held occurrence is counted and moves last_scheduled_for; release ends the hold."""
    state = folded(*HELD, held(T1), held(T2, since=T1))
    doc = entry(state)
    assert ((True, "a1", [T1, T2]), T2, T2, "2026-08-07T08:00:03Z") == (
        hold_of(state), doc["last_scheduled_for"], doc["last_accounted_for"], doc["last_run"])
    assert (False, None, []) == hold_of(folded(released("all"), state=state))


def test_a_second_failure_keeps_the_attempt_that_began_the_hold() -> None:
    """run --id on a held routine that fails again does not restart the hold's reason."""
    state = folded(*HELD, held(T1), started("a2", "T-07", trigger="id"), ended(aid="a2",
                                                                              result="failure"))
    assert (True, "a1", [T1]) == hold_of(state)


def test_a_success_does_not_release_but_clears_the_last_miss() -> None:
    """Success while held keeps the hold (SPEC §9.1); it ends 'a miss since the last success'."""
    state = folded(registered(), missed(T0))
    assert {"scheduled_for": T0, "reason": "started 1h 2m late (deadline 2m)"} == (
        entry(state)["last_missed"])
    state = folded(started(), ended(result="failure"), held(T1), started("a2", "T-07",
                   trigger="id"), ended(aid="a2"), state=state)
    assert (True, None) == (entry(state)["held"], entry(state)["last_missed"])


def test_an_interval_miss_anchors_without_a_cron_cursor() -> None:
    """Interval occurrences move last_accounted_for only (no last_scheduled_for)."""
    state = folded(registered(), missed(T1, schedule="interval"))
    assert (None, T1) == (entry(state).get("last_scheduled_for"),  # absent when none (SPEC §5)
                          entry(state)["last_accounted_for"])


@pytest.mark.parametrize("event", [held(T1), released()], ids=["held", "released"])
def test_held_and_released_need_a_hold(event: ev.Event) -> None:
    """occurrence_held / routine_released on a free routine are illegal."""
    with pytest.raises(InvalidTransition, match="not held"):
        folded(registered(), started(hold=False), ended(result="failure"), event)


def test_a_miss_while_held_is_illegal() -> None:
    """Hold before deadline: a held routine's occurrences are held, never missed."""
    with pytest.raises(InvalidTransition, match="held"):
        folded(*HELD, missed(T1))


def test_nothing_is_accounted_while_running() -> None:
    """An open attempt is never interleaved with held or missed occurrences."""
    with pytest.raises(InvalidTransition):
        folded(registered(), started(), missed(T1))


def test_backfill_and_release_attempts_leave_the_cursor() -> None:
    """Only due and explicit starts move last_accounted_for; backfill/release never do."""
    state = folded(registered(), started(scheduled_for=T1), ended())
    for aid, trigger in (("a2", "backfill"), ("a3", "release")):
        state = folded(started(aid, "T-06", trigger=trigger, scheduled_for=T0),
                       ended(aid=aid), state=state)
    assert (T1, T1) == (entry(state)["last_scheduled_for"], entry(state)["last_accounted_for"])


def test_the_hold_region_table_is_the_specs() -> None:
    """Hold begins on a failing end or resolution; held/released only while held."""
    assert {
        ("attempt_ended", "free", "held"), ("attempt_resolved", "free", "held"),
        ("occurrence_held", "held", "held"), ("routine_released", "held", "free"),
        ("occurrence_missed", "free", "free"),
    } == {(t.event, t.source, t.target) for t in HOLD_TRANSITIONS}


def test_history_shows_the_reasons() -> None:
    """history's detail column names the occurrence and its reason, and who released."""
    text = render.history([
        {"seq": 1, "at": T0, "routine_id": "rtn-a", "type": "occurrence_missed",
         "scheduled_for": T0, "reason": "started 1h 2m late (deadline 2m)"},
        {"seq": 2, "at": T1, "routine_id": "rtn-a", "type": "occurrence_held",
         "scheduled_for": T1, "passed_over_since": T0, "reason": "held after failure of a1"},
        {"seq": 3, "at": T2, "routine_id": "rtn-a", "type": "routine_released", "run": "all",
         "released_by": "ops", "note": "disk replaced"},
    ])
    assert f"{T0}: started 1h 2m late (deadline 2m)" in text
    assert f"{T1}, coalesced since {T0}: held after failure of a1" in text
    assert "--run all by ops: disk replaced" in text
