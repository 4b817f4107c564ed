"""The pure fold (SPEC §5, §6.5, §7.6): the transition table, the views it computes."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdojo_routine.core import event_parts, holdfold
from specdojo_routine.core import events as ev
from specdojo_routine.core import job_events as jev
from specdojo_routine.core import routine_events as rev
from specdojo_routine.core.adopt import run_record_verdict
from specdojo_routine.core.errors import CorruptLedgerError, InvalidTransition
from specdojo_routine.core.fold import (
    STATES,
    TRANSITIONS,
    RoutineEntryDoc,
    RoutineFold,
    RoutineView,
    apply_all,
    fold_from_document,
    never_entry,
    render_state_diagram,
    routine_document,
)
from specdojo_routine.core.jobfold import (
    JobCheckpointDoc,
    RunFold,
    apply_run,
    earlier_shapes,
    merge_checkpoints,
    run_document,
)
from specdojo_routine.core.timefmt import format_ms, parse_instant
from specdojo_routine.store.ledger import codec

REPO = Path(__file__).resolve().parent.parent
OWNER = event_parts.Owner(pid=7, host="h")
AT = "2026-08-07T08:00:00.000Z"


def raw(event: ev.Event, seq: int = 1, at: str = AT) -> dict[str, Any]:
    """The parsed ledger line of ``event``."""
    return {"version": 1, "seq": seq, "type": ev.tag_of(event), "at": at} | codec.payload(event)


def started(rid: str = "rtn-a", aid: str = "a1", transition: str = "T-02", *,
            trigger: str = "due", schedule: str = "cron",
            scheduled_for: str = "2026-08-07T08:00:00.000Z") -> rev.AttemptStarted:
    return rev.AttemptStarted(
        routine_id=rid, attempt_id=aid, transition=transition,  # type: ignore[arg-type]
        trigger=trigger, scheduled_for=scheduled_for,  # type: ignore[arg-type]
        last_run="2026-08-07T08:00:03Z", passed_over_since=None, owner=OWNER,
        schedule=schedule)  # type: ignore[arg-type]


def ended(rid: str = "rtn-a", aid: str = "a1", result: str = "success", *,
          reason: str | None = None,
          action_results: list[rev.ActionResult] | None = None) -> rev.AttemptEnded:
    return rev.AttemptEnded(
        routine_id=rid, attempt_id=aid, transition=rev.RESULT_TRANSITIONS[result],  # type: ignore[arg-type]
        result=result, reason=reason, action_results=action_results,  # type: ignore[arg-type]
        scheduled_for="2026-08-07T08:00:00.000Z", started_at="2026-08-07T08:00:03Z",
        completed_at="2026-08-07T08:00:09Z", job_run_ids=[])


def resolved(rid: str = "rtn-a", aid: str = "a1", result: str = "failure", *,
             overrides: bool | None = None) -> rev.AttemptResolved:
    return rev.AttemptResolved(routine_id=rid, attempt_id=aid,
                              transition=rev.RESULT_TRANSITIONS[result],  # type: ignore[arg-type]
                              result=result, note="checked by hand",  # type: ignore[arg-type]
                              resolved_by="ops", overrides=overrides)


def registered(rid: str = "rtn-a", digest: str = "d1") -> rev.RoutineRegistered:
    return rev.RoutineRegistered(routine_id=rid, digest=digest, path=f"routines/{rid}.yaml")


def action(kind: type[Any], aid: str = "a1", index: int = 1, **more: Any) -> Any:
    return kind(routine_id="rtn-a", attempt_id=aid, index=index, kind="job", **more)


def folded(*events: ev.Event, state: RoutineFold | None = None) -> RoutineFold:
    state = state or RoutineFold()
    raws = [raw(e, state.seq + i) for i, e in enumerate(events, 1)]
    apply_all(state, raws, where="L", upgrade=codec.upgrade)
    return state


def entry(state: RoutineFold, rid: str = "rtn-a") -> RoutineEntryDoc:
    return routine_document(state, 0)["routines"][rid]


SETUP: dict[str, list[ev.Event]] = {
    "never": [registered()],
    "running": [registered(), started()],
    "success": [registered(), started(), ended(result="success")],
    "failure": [registered(), started(), ended(result="failure")],
    "skipped": [registered(), started(), ended(result="skipped")],
    "partial": [registered(), started(), ended(result="partial")],
}


def probes(status: str) -> dict[str, ev.Event]:
    """One event of every kind, as it would be written for a routine in ``status``."""
    start_label = {str(t.source): t.label for t in TRANSITIONS if t.event == "attempt_started"}
    return {
        "routine_registered": registered(digest="d2"),
        "attempt_started": started(aid="a2", transition=start_label.get(status) or "T-02"),
        "action_started": action(rev.ActionStarted),
        "action_ended": action(rev.ActionEnded, result="success"),
        **{f"attempt_ended/{r}": ended(result=r) for r in rev.RESULTS},
        **{f"attempt_resolved/{r}": resolved(result=r) for r in rev.RESULTS},
        # SPEC §13: an operator changes an ended attempt's outcome
        **{f"attempt_resolved+overrides/{r}": resolved(result=r, overrides=True)
           for r in rev.RESULTS},
        "evidence_pruned": rev.RoutineEvidencePruned(
            routine_id="rtn-a", attempt_id="a0", paths=["e/exec/evidence/routines/a0"], bytes=1),
        "notification_sent": rev.NotificationSent(
            routine_id="rtn-a", event="failure", exit_code=3, duration_s=0.25, attempt_id="a1"),
        "retry_superseded": rev.RetrySuperseded(
            routine_id="rtn-a", attempt_id="a1", retry_of="a1",
            scheduled_for="2026-08-07T08:00:00.000Z", superseded_by="2026-08-07T09:00:00.000Z",
            reason="superseded"),
    }


def table_target(probe: str, status: str) -> str | None:
    event, _, result = probe.partition("/")
    event, _, flag = event.partition("+")  # +overrides: the rows of an ended attempt
    for t in TRANSITIONS:
        if (t.event == event and t.source == status and (not result or t.target == result)
                and ("overrides" in t.note) == (flag == "overrides")):
            return t.target
    return None


CASES = [(status, probe) for status in STATES for probe in probes(status)]


# --- the table, enumerated -------------------------------------------------------------------


@pytest.mark.parametrize(("status", "probe"), CASES, ids=[f"{s}-{p}" for s, p in CASES])
def test_every_event_in_every_state_follows_the_table(status: str, probe: str) -> None:
    """An event the table allows leads to its target; any other raises InvalidTransition."""
    state = folded(*SETUP[status])
    target = table_target(probe, status)
    event = probes(status)[probe]
    if target is None:
        with pytest.raises(InvalidTransition) as info:
            folded(event, state=state)
        assert (status, "rtn-a") == (info.value.state, info.value.routine_id)
        assert info.value.event.startswith(probe.partition("/")[0].partition("+")[0])
    else:
        assert target == entry(folded(event, state=state))["status"]


def test_the_table_is_seed_000s() -> None:
    """The table is exactly seed 000's T-01..T-08 plus resolution, actions, re-registration."""
    rows = {(t.event, t.source, t.target, t.label) for t in TRANSITIONS}
    assert {
        ("routine_registered", None, "never", "T-01"),
        *(("routine_registered", s, s, None) for s in STATES),
        ("attempt_started", "never", "running", "T-02"),
        ("attempt_started", "success", "running", "T-06"),
        ("attempt_started", "failure", "running", "T-07"),
        ("attempt_started", "skipped", "running", "T-08"),
        ("attempt_started", "partial", "running", "T-06"),  # SPEC §11.4
        *((e, "running", "partial", "T-03") for e in ("attempt_ended", "attempt_resolved")),
        *((e, "running", "success", "T-03") for e in ("attempt_ended", "attempt_resolved")),
        *((e, "running", "failure", "T-04") for e in ("attempt_ended", "attempt_resolved")),
        *((e, "running", "skipped", "T-05") for e in ("attempt_ended", "attempt_resolved")),
        ("action_started", "running", "running", None),
        ("action_ended", "running", "running", None),
        *(("occurrence_held", s, s, None) for s in ("success", "failure", "skipped", "partial")),
        *(("occurrence_missed", s, s, None)
          for s in ("never", "success", "failure", "skipped", "partial")),
        *(("routine_released", s, s, None) for s in ("success", "failure", "skipped", "partial")),
        # SPEC §10: imported facts (another tool's state entry or run record line)
        *((e, s, r, None) for e in ("routine_state_imported", "upstream_run_recorded")
          for s in ("never", "success", "failure", "skipped", "partial")
          for r in ("success", "failure", "skipped")),
        ("routine_state_imported", "never", "never", None),
        *((e, "running", "running", None)
          for e in ("routine_state_imported", "upstream_run_recorded")),
        # SPEC §15: retention removed an ended attempt's action evidence
        *(("evidence_pruned", s, s, None)
          for s in ("running", "success", "failure", "skipped", "partial")),
        # SPEC §13: an ended attempt's outcome changed; pause, resume, paused occurrences
        *(("attempt_resolved", s, r, t) for s in ("success", "failure", "skipped", "partial")
          for r, t in (("success", "T-03"), ("failure", "T-04"), ("skipped", "T-05"),
                       ("partial", "T-03"))),
        *((e, s, s, None) for e in ("routine_paused", "routine_resumed") for s in STATES),
        *(("occurrence_paused", s, s, None)
          for s in ("never", "success", "failure", "skipped", "partial")),
        # SPEC §13: a notification hook ran; the state stands
        *(("notification_sent", s, s, None) for s in STATES),
        ("retry_superseded", "failure", "failure", None),
    } == rows
    assert len(rows) == len(TRANSITIONS)


@pytest.mark.parametrize(("status", "label"), [
    (s, label) for s in ("never", "success", "failure", "skipped")
    for label in ("T-02", "T-06", "T-07", "T-08")
    if label != {"never": "T-02", "success": "T-06", "failure": "T-07", "skipped": "T-08"}[s]
])
def test_declared_start_transition_must_match_the_table(status: str, label: str) -> None:
    """attempt_started must declare the transition its source state has in the table."""
    with pytest.raises(InvalidTransition, match=rf"attempt_started \({label}\)"):
        folded(*SETUP[status], started(aid="a2", transition=label))


def test_action_events_must_name_the_open_attempt() -> None:
    """An action event for another attempt is illegal, naming both attempts."""
    with pytest.raises(InvalidTransition, match="attempt zz; the open attempt is a1"):
        folded(*SETUP["running"], action(rev.ActionStarted, aid="zz"))


def test_attempt_ended_must_name_the_open_attempt() -> None:
    """Closing an attempt that is not the open one is illegal."""
    with pytest.raises(InvalidTransition, match="the open attempt is a1"):
        folded(*SETUP["running"], ended(aid="a0"))


def test_invalid_transition_names_routine_state_event_and_line() -> None:
    """The message carries ledger:line, the event, the routine and its state."""
    with pytest.raises(InvalidTransition) as info:
        folded(registered(), ended(result="success"))
    assert ("L:2: event 'attempt_ended (T-03, success)' is not allowed for routine rtn-a in "
            "state 'never'") == str(info.value)


# --- what the fold records -------------------------------------------------------------------


def test_unregistered_routine_is_implicitly_registered() -> None:
    """Attempt events for a routine never registered start from never (implicit T-01)."""
    state = folded(started(rid="rtn-z"))
    assert ("running", None) == (entry(state, "rtn-z")["status"], entry(state, "rtn-z")["digest"])


def test_reregistration_keeps_the_state_and_updates_the_digest() -> None:
    """routine_registered for a known routine only records the new digest."""
    state = folded(*SETUP["failure"], registered(digest="d9"))
    assert ("failure", "d9") == (entry(state)["status"], entry(state)["digest"])


def test_attempt_started_moves_last_run_and_cron_last_scheduled_for() -> None:
    """A due cron attempt records last_run and last_scheduled_for before any delegation."""
    doc = entry(folded(registered(), started(scheduled_for="2026-08-07T08:00:00.000Z")))
    assert ("2026-08-07T08:00:03Z", "2026-08-07T08:00:00.000Z", None) == (
        doc["last_run"], doc["last_scheduled_for"], doc["last_result"])


def test_explicit_run_moves_last_scheduled_for_to_now() -> None:
    """SPEC §4 (seed 000 T-02, upstream): an explicit run of a cron routine records
    last_scheduled_for = its scheduled_for (now), like a due run."""
    state = folded(*SETUP["success"], started(aid="a2", transition="T-06", trigger="id",
                                              scheduled_for="2026-08-07T09:31:07.250Z"))
    assert "2026-08-07T09:31:07.250Z" == entry(state)["last_scheduled_for"]


def test_an_explicit_run_before_the_cursor_leaves_it_where_it_was() -> None:
    """SPEC §4: the cron cursor never moves back. An explicit run whose now is earlier than
    the cursor (a clock that went back, --now in the past) records last_run but not the
    cursor, whatever form the cursor was stored in; a later one moves it."""
    base = folded(*SETUP["success"])  # cursor 08:00
    back = started(aid="a2", transition="T-06", trigger="id",
                   scheduled_for="2026-08-07T07:12:00.500Z")
    state = folded(back, state=base)
    assert ("2026-08-07T08:00:00.000Z", "2026-08-07T08:00:03Z") == (
        entry(state)["last_scheduled_for"], entry(state)["last_run"])
    later = started(aid="a3", transition="T-06", trigger="id",
                    scheduled_for="2026-08-07T08:00:00.001Z")
    state = folded(later, state=folded(*SETUP["success"]))
    assert "2026-08-07T08:00:00.001Z" == entry(state)["last_scheduled_for"]


@pytest.mark.parametrize("schedule", ["cron", "interval"])
def test_an_explicit_run_before_the_anchor_leaves_last_accounted_for(schedule: str) -> None:
    """SPEC §9.5: ``last_accounted_for`` (the interval anchor) is the newest occurrence
    accounted for: an explicit run for an earlier one leaves it, a later one moves it."""
    base = folded(registered(), started(schedule=schedule), ended())  # 08:00
    back = started(aid="a2", transition="T-06", trigger="id", schedule=schedule,
                   scheduled_for="2026-08-07T07:12:00.500Z")
    assert "2026-08-07T08:00:00.000Z" == entry(folded(back, state=base))["last_accounted_for"]
    later = started(aid="a3", transition="T-06", trigger="id", schedule=schedule,
                    scheduled_for="2026-08-07T08:00:00.001Z")
    state = folded(later, state=folded(registered(), started(schedule=schedule), ended()))
    assert "2026-08-07T08:00:00.001Z" == entry(state)["last_accounted_for"]


@pytest.mark.parametrize("event", ["occurrence_held", "occurrence_missed"])
def test_a_hold_or_a_miss_before_the_cursor_leaves_it_where_it_was(event: str) -> None:
    """Whatever records the cursor - a run, a hold, a miss - takes the later of the two."""
    kind: Any = rev.OccurrenceHeld if event == "occurrence_held" else rev.OccurrenceMissed
    more = {"deadline_s": 60, "late_by_s": 120} if event == "occurrence_missed" else {}
    early = kind(routine_id="rtn-a", scheduled_for="2026-08-07T07:00:00.000Z", reason="r",
                 passed_over_since=None, schedule="cron", **more)
    setup = [registered(), attrs.evolve(started(), on_failure="hold"), ended(result="failure")]
    state = folded(*(setup if event == "occurrence_held" else SETUP["success"]))
    assert "2026-08-07T08:00:00.000Z" == entry(folded(early, state=state))["last_scheduled_for"]


@settings(max_examples=80, deadline=None)
@given(stamps=st.lists(st.datetimes(min_value=datetime(2000, 1, 1),
                                    max_value=datetime(2100, 1, 1)), min_size=1, max_size=8),
       triggers=st.lists(st.sampled_from(["due", "id"]), min_size=8, max_size=8))
def test_the_cursor_is_the_latest_run_whatever_the_order(
    stamps: list[datetime], triggers: list[str],
) -> None:
    """Attempts of a cron routine started in any order of scheduled_for (a clock that goes
    back and forth): the cursor is the latest of them."""
    events: list[ev.Event] = [registered()]
    status = "never"
    for n, (at, trigger) in enumerate(zip(stamps, triggers, strict=False), 1):
        label = {"never": "T-02", "success": "T-06"}[status]
        events += [started(aid=f"a{n}", transition=label, trigger=trigger,
                           scheduled_for=format_ms(at)), ended(aid=f"a{n}")]
        status = "success"
    assert format_ms(max(stamps)) == entry(folded(*events))["last_scheduled_for"]


def test_interval_routines_have_no_last_scheduled_for() -> None:
    """last_scheduled_for is kept for cron routines only: absent, never null (SPEC §5)."""
    assert "last_scheduled_for" not in entry(folded(started(schedule="interval")))


def test_attempt_ended_records_result_reason_and_list_results() -> None:
    """The aggregate, its reason and the per-action results become the routine's last ones."""
    results = [rev.ActionResult(index=1, kind="job", result="failure")]
    doc = entry(folded(*SETUP["running"], ended(result="failure", reason="boom",
                                                 action_results=results)))
    assert ("failure", "failure", "boom", [{"index": 1, "kind": "job", "result": "failure"}],
            None) == (doc["status"], doc["last_result"], doc["last_reason"],
                      doc["last_action_results"], doc["open_attempt"])


def test_open_attempt_holds_what_closing_it_needs() -> None:
    """While running, the view has the attempt, its owner and every recorded action."""
    state = folded(*SETUP["running"], action(rev.ActionStarted),
                   action(rev.ActionEnded, result="failure", reason="x",
                          job_run_id="JBR-j-1", exit_code=1),
                   action(rev.ActionStarted, index=2))
    assert {
        "attempt_id": "a1", "trigger": "due", "scheduled_for": "2026-08-07T08:00:00.000Z",
        "started_at": "2026-08-07T08:00:03Z", "owner": {"pid": 7, "host": "h"},
        "actions": [{"index": 1, "kind": "job", "result": "failure", "reason": "x",
                     "job_run_id": "JBR-j-1"}, {"index": 2, "kind": "job"}],
        "on_failure": None,
    } == entry(state)["open_attempt"]


def test_resolution_uses_the_note_as_reason() -> None:
    """attempt_resolved closes the attempt with the operator's result and note."""
    doc = entry(folded(*SETUP["running"], resolved(result="skipped")))
    assert ("skipped", "skipped", "checked by hand", None) == (
        doc["status"], doc["last_result"], doc["last_reason"], doc["open_attempt"])


def test_running_keeps_the_previous_result() -> None:
    """A new attempt does not erase the previous attempt's result until it ends."""
    doc = entry(folded(*SETUP["failure"], started(aid="a2", transition="T-07")))
    assert ("running", "failure") == (doc["status"], doc["last_result"])


def test_document_is_sorted_with_fixed_keys() -> None:
    """Routines are sorted by id and every entry has the same keys in the same order."""
    doc = routine_document(folded(started(rid="rtn-b"), registered("rtn-a")), 99)
    assert ["rtn-a", "rtn-b"] == list(doc["routines"])
    upstream_absent = ("last_scheduled_for", "last_action_results")  # absent when none
    for e in doc["routines"].values():
        assert [k for k in never_entry() if k in e] == list(e)
        assert set(never_entry()) - set(e) <= set(upstream_absent)
    assert "last_scheduled_for" not in doc["routines"]["rtn-a"]
    assert {"seq": 2, "offset": 99} == doc["ledger"]


def test_routine_view_get_defaults_to_never() -> None:
    """A routine the ledger never mentioned reads as never."""
    view = RoutineView(document=routine_document(RoutineFold(), 0))
    assert ("never", 0, 0, {}) == (view.get("rtn-x")["status"], view.seq, view.offset,
                                  view.routines)


# --- malformed lines -------------------------------------------------------------------------


@pytest.mark.parametrize(("line", "reason"), [
    ({"type": "routine_renamed"}, "unknown routine event type 'routine_renamed'"),
    ({"seq": 5}, "seq 5 where 2 was expected"),
    ({"version": 9}, "unsupported event version 9"),
    ({"routine_id": None}, "routine_id must be a string"),
    ({"owner": "me"}, "owner must be an object"),
    ({"owner": {"pid": 1}}, "owner must be an object with pid and host"),
], ids=["unknown-type", "seq-gap", "future-version", "no-routine-id", "bad-owner",
        "owner-without-host"])
def test_malformed_lines_are_corrupt_with_line(line: dict[str, Any], reason: str) -> None:
    """A line the fold cannot use is a CorruptLedgerError naming where:line and why."""
    lines = [raw(registered(), 1), raw(started(rid="rtn-b"), 2) | line]
    with pytest.raises(CorruptLedgerError, match=rf"^L:2: (.* \()?{reason}"):
        apply_all(RoutineFold(), lines, where="L", upgrade=codec.upgrade)


def test_missing_field_is_named() -> None:
    """A missing payload field is named in the error."""
    line = raw(started(), 1)
    del line["trigger"]
    with pytest.raises(CorruptLedgerError, match="attempt_started event lacks field 'trigger'"):
        apply_all(RoutineFold(), [line], where="L", upgrade=codec.upgrade)


@pytest.mark.parametrize("results", [[1], [{"index": 1, "kind": "job"}], {"index": 1}],
                         ids=["not-objects", "no-result", "not-a-list"])
def test_malformed_action_results_are_corrupt(results: Any) -> None:
    """action_results must be null or a list of {index, kind, result}."""
    lines = [raw(started(), 1), raw(ended(), 2) | {"action_results": results}]
    with pytest.raises(CorruptLedgerError, match=r"^L:2: .*action_results must be null"):
        apply_all(RoutineFold(), lines, where="L", upgrade=codec.upgrade)


def test_non_object_line_is_corrupt() -> None:
    """A JSON value that is not an object is not an event."""
    with pytest.raises(CorruptLedgerError, match="line is not a JSON object"):
        apply_all(RoutineFold(), [[1, 2]], where="L", upgrade=codec.upgrade)


def test_old_versions_are_upgraded_on_the_way_in() -> None:
    """A version-0 line folds like its upgraded form."""
    line = raw(started(), 1)
    v0 = {k: v for k, v in line.items()
          if k not in ("version", "owner", "passed_over_since", "schedule")} | {"cron": True}
    doc = entry(_folded_raws([v0]))
    assert {"pid": 0, "host": "unknown"} == doc["open_attempt"]["owner"]  # type: ignore[index]


def _folded_raws(raws: list[dict[str, Any]]) -> RoutineFold:
    state = RoutineFold()
    apply_all(state, raws, where="L", upgrade=codec.upgrade)
    return state


# --- incremental == full ---------------------------------------------------------------------


@st.composite
def valid_histories(draw: st.DrawFn) -> list[rev.RoutineEvent]:
    """A legal routine ledger over a few routines, driven by the table's own rules."""
    status: dict[str, str] = {}
    open_ids: dict[str, str] = {}
    next_action: dict[str, int] = {}
    out: list[rev.RoutineEvent] = []
    for n in range(draw(st.integers(0, 40))):
        rid = draw(st.sampled_from(["rtn-a", "rtn-b", "rtn-c"]))
        now = status.get(rid, "never")
        if now == "running":
            choice = draw(st.sampled_from(["action", "end", "resolve", "register"]))
            aid = open_ids[rid]
            if choice == "action":
                next_action[rid] += 1
                out.append(rev.ActionEnded(routine_id=rid, attempt_id=aid, index=next_action[rid],
                                          kind="job", result=draw(st.sampled_from(rev.RESULTS))))
                continue
            if choice == "register":
                out.append(registered(rid, f"d{n}"))
                continue
            result = draw(st.sampled_from(rev.RESULTS))
            out.append(ended(rid, aid, result) if choice == "end" else resolved(rid, aid, result))
            status[rid] = result
        elif draw(st.booleans()):
            label = {"never": "T-02", "success": "T-06", "failure": "T-07", "skipped": "T-08",
                     "partial": "T-06"}
            trigger = draw(st.sampled_from(["due", "id"]))
            schedule = draw(st.sampled_from(["cron", "interval"]))
            out.append(started(rid, f"a{n}", label[now], trigger=trigger, schedule=schedule))
            status[rid], open_ids[rid], next_action[rid] = "running", f"a{n}", 0
        else:
            out.append(registered(rid, f"d{n}"))
            status.setdefault(rid, "never")
    return out


@settings(max_examples=150, deadline=None)
@given(history=valid_histories(), data=st.data())
def test_incremental_fold_equals_full_fold(history: list[rev.RoutineEvent],
                                           data: st.DataObject) -> None:
    """Folding a prefix, publishing, resuming from the document and folding the rest gives
    exactly the full fold."""
    raws = [raw(e, i) for i, e in enumerate(history, 1)]
    sizes = list(itertools.accumulate((len(orjson.dumps(r)) + 1 for r in raws), initial=0))
    cut = data.draw(st.integers(0, len(raws)))
    full = RoutineFold()
    apply_all(full, raws, where="L", upgrade=codec.upgrade)
    head = RoutineFold()
    apply_all(head, raws[:cut], where="L", upgrade=codec.upgrade)
    published = orjson.loads(orjson.dumps(routine_document(head, sizes[cut])))
    resumed = fold_from_document(published)
    apply_all(resumed, raws[cut:], where="L", upgrade=codec.upgrade)
    assert routine_document(full, sizes[-1]) == routine_document(resumed, sizes[-1])


@pytest.mark.parametrize("document", [
    None, [], {"version": 1}, {"routines": {}, "ledger": {"seq": 0, "offset": 0}},
    {"version": 1, "ledger": {"seq": 1, "offset": 5},
     "routines": {"rtn-a": dict(never_entry(), status="running")}},
    {"version": 1, "ledger": {"seq": 1, "offset": 5},
     "routines": {"rtn-a": dict(never_entry(), extra=1)}},
    {"version": 1, "ledger": {"seq": 1, "offset": "5"}, "routines": {}},
], ids=["null", "list", "no-ledger", "no-version", "running-without-attempt", "extra-key",
        "text-offset"])
def test_only_documents_this_fold_wrote_can_be_resumed(document: Any) -> None:
    """A document that is not exactly a fold's output is refused (the caller refolds)."""
    with pytest.raises(ValueError, match=r"routine view document|canonical|disagree"):
        fold_from_document(document)


# --- Job Runs --------------------------------------------------------------------------------

RUN = "JBR-x-1"


def run_created(**changes: Any) -> jev.RunCreated:
    fields: dict[str, Any] = dict(run_id=RUN, job_id="job-x", idempotency_key="k",
                                  project_id="demo", trigger="manual", scheduled_at=AT,
                                  inputs={"a": 1}, task={"mode": "command", "command": "true"},
                                  checkpoint_before=None)
    return jev.RunCreated(**(fields | changes))


def run_started(n: int) -> jev.RunAttemptStarted:
    return jev.RunAttemptStarted(run_id=RUN, attempt=n, owner=OWNER)


def run_ended(n: int, status: str = "failed", **more: Any) -> jev.RunAttemptEnded:
    return jev.RunAttemptEnded(run_id=RUN, attempt=n, status=status, **more)  # type: ignore[arg-type]


def advanced(values: dict[str, Any], job_id: str = "job-x") -> jev.CheckpointAdvanced:
    return jev.CheckpointAdvanced(run_id=RUN, job_id=job_id, values=values)


def run_fold(*events: jev.JobEvent) -> RunFold:
    state = RunFold()
    for i, event in enumerate(events, 1):
        apply_run(state, raw(event, i, f"2026-08-07T08:00:0{i}.000Z"), where="R", line=i)
    return state


def test_run_document_has_the_upstream_shape() -> None:
    """runs/<id>.json: upstream keys in order, timestamps from the events' `at`."""
    doc = run_document(run_fold(run_created(), run_started(1),
                                     run_ended(1, "succeeded", exit_code=0, evidence_ref="e/1"),
                                     advanced({"v": 2})))
    assert doc is not None
    assert ["version", "run_id", "job_id", "idempotency_key", "project_id", "trigger",
            "scheduled_at", "created_at", "updated_at", "state", "inputs", "task",
            "checkpoint_before", "checkpoint_after", "plan_ref", "result_ref",
            "attempts"] == list(doc)
    assert ("succeeded", "2026-08-07T08:00:01.000Z", "2026-08-07T08:00:04.000Z", {}, {"v": 2},
            "exec/plans/JBR-x-1-plan.md", "exec/results/JBR-x-1-result.md") == (
        doc["state"], doc["created_at"], doc["updated_at"], doc["checkpoint_before"],
        doc.get("checkpoint_after"), doc["plan_ref"], doc["result_ref"])
    assert [{"attempt": 1, "started_at": "2026-08-07T08:00:02.000Z",
             "completed_at": "2026-08-07T08:00:03.000Z", "status": "succeeded",
             "exit_code": 0, "evidence_ref": "e/1"}] == doc["attempts"]


def test_open_run_attempt_is_running() -> None:
    """An attempt without its end shows status running, and so does the run."""
    doc = run_document(run_fold(run_created(), run_started(1), run_ended(1),
                                     run_started(2)))
    assert doc is not None
    assert ("running", ["failed", "running"]) == (
        doc["state"], [a["status"] for a in doc["attempts"]])


def test_no_run_without_run_created() -> None:
    """An empty ledger has no run document."""
    assert run_document(RunFold()) is None


@pytest.mark.parametrize("events", [
    [run_started(1)],
    [run_created(), run_created()],
    [run_created(), run_started(2)],
    [run_created(), run_started(1), run_ended(2)],
    [run_created(), run_started(1), run_started(2)],
    [run_created(), run_started(1), run_ended(1, "succeeded"), run_started(2)],
    [run_created(), run_started(1), run_ended(1, "failed"), advanced({})],
    [run_created(), run_started(1), run_ended(1, "noop"), advanced({}, job_id="job-y")],
    [run_created(), jev.RunAttemptStarted(run_id="JBR-other", attempt=1, owner=OWNER)],
], ids=["attempt-before-created", "created-twice", "attempt-skipped", "wrong-end",
        "two-open", "after-success", "checkpoint-after-failure", "checkpoint-of-other-job",
        "other-run"])
def test_illegal_run_events(events: list[jev.JobEvent]) -> None:
    """Job Run events out of order are an InvalidTransition naming the run and line."""
    with pytest.raises(InvalidTransition, match=rf"^R:{len(events)}: event .* Job Run"):
        run_fold(*events)


def reviewed(n: int, **more: Any) -> jev.ReviewEnded:
    fields: dict[str, Any] = dict(run_id=RUN, attempt=n, verdict="complete", merged=False,
                                  commit="c" * 40, reason="not merged")
    return jev.ReviewEnded(**(fields | more))


def test_the_views_review_names_the_attempt_reviewed() -> None:
    """``review`` in the view says which attempt was reviewed, first: here the second, after
    a first attempt that failed (SPEC §7.6, §11.3)."""
    doc = run_document(run_fold(run_created(), run_started(1), run_ended(1),
                                run_started(2), run_ended(2, "succeeded"), reviewed(2)))
    assert doc is not None
    assert ("waiting", {"attempt": 2, "verdict": "complete", "merged": False,
                        "commit": "c" * 40, "reason": "not merged"}) == (
        doc["state"], doc.get("review"))
    assert ["attempt", "verdict", "merged", "commit", "reason"] == list(doc["review"])


def test_a_review_line_without_its_attempt_still_folds_with_null() -> None:
    """A ``review_ended`` line that does not carry ``attempt`` folds as the review of the last
    attempt, its ``attempt`` null in the view; one naming another attempt is refused."""
    state = run_fold(run_created(), run_started(1), run_ended(1, "succeeded"))
    line = {k: v for k, v in raw(reviewed(1), 4, AT).items() if k != "attempt"}
    apply_run(state, line, where="R", line=4)
    doc = run_document(state)
    assert doc is not None
    assert (None, "waiting") == (doc["review"]["attempt"], doc["state"])
    with pytest.raises(InvalidTransition, match=r"^R:4: event 'review_ended \(attempt 2\)'"):
        run_fold(run_created(), run_started(1), run_ended(1, "succeeded"), reviewed(2))


def test_a_view_an_earlier_version_drew_is_ours_not_a_conflict() -> None:
    """The view an earlier version published, its ``review`` without ``attempt``, is among
    the shapes our fold drew (stale: republished), not another tool's record (SPEC §10)."""
    doc = run_document(run_fold(run_created(), run_started(1), run_ended(1, "succeeded"),
                                reviewed(1)))
    assert doc is not None
    old = {**doc, "review": {k: v for k, v in doc["review"].items() if k != "attempt"}}
    assert [old] == earlier_shapes(doc)
    assert "stale" == run_record_verdict(old, doc, [doc, *earlier_shapes(doc)])
    assert [] == earlier_shapes(old)


def test_checkpoint_merge_keeps_the_latest() -> None:
    """job-state keeps the latest checkpoint per job: by time, ties by run id."""
    jobs: dict[str, JobCheckpointDoc] = {}
    merge_checkpoints(jobs, [
        {"job_id": "job-x", "checkpoint": {"n": 2}, "last_run_id": "JBR-b",
         "updated_at": "2026-08-07T09:00:00.000Z"},
        {"job_id": "job-x", "checkpoint": {"n": 1}, "last_run_id": "JBR-a",
         "updated_at": "2026-08-07T08:00:00.000Z"},
        {"job_id": "job-y", "checkpoint": {"n": 3}, "last_run_id": "JBR-c",
         "updated_at": "2026-08-07T08:00:00.000Z"},
        {"job_id": "job-y", "checkpoint": {"n": 4}, "last_run_id": "JBR-d",
         "updated_at": "2026-08-07T08:00:00.000Z"},
    ])
    assert {"job-x": {"n": 2}, "job-y": {"n": 4}} == {k: v["checkpoint"] for k, v in jobs.items()}


# --- the generated diagram -------------------------------------------------------------------


def test_state_diagram_doc_is_generated_from_the_table() -> None:
    """docs/state-diagram.md is exactly render_state_diagram() (regenerate it if this fails)."""
    committed = (REPO / "docs" / "state-diagram.md").read_text(encoding="utf-8")
    assert render_state_diagram() == committed


def test_state_diagram_draws_every_row() -> None:
    """Every transition of the table appears in the mermaid block."""
    text = render_state_diagram()
    for t in TRANSITIONS:
        assert f"{t.source or '[*]'} --> {t.target}: " in text
        assert t.event in text


_FORMS = [lambda d: format_ms(d), lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"),
          lambda d: d.astimezone(timezone(timedelta(hours=9))).isoformat(timespec="milliseconds")]


@settings(max_examples=200, deadline=None)
@given(base=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
       seen=st.lists(st.tuples(st.integers(-86_400, 86_400), st.integers(0, len(_FORMS) - 1)),
                     min_size=1, max_size=8))
def test_the_cursor_never_moves_back_whatever_the_forms_of_its_instants(
    base: datetime, seen: list[tuple[int, int]],
) -> None:
    """SPEC §4: moving the cron cursor keeps the later instant, whether both are UTC (read by
    ``datetime.fromisoformat``) or either is another ISO 8601 form a ledger may hold (an
    offset): parsed by parse_instant then. Instants within a day of each
    other, so that the forms would sort wrongly as strings."""
    start = base.replace(microsecond=0, tzinfo=UTC)
    entry: dict[str, Any] = {}
    for seconds, form in seen:
        holdfold.advance_cursor(entry, _FORMS[form](start + timedelta(seconds=seconds)))
    latest = start + timedelta(seconds=max(seconds for seconds, _ in seen))
    assert latest == parse_instant(entry["last_scheduled_for"])


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)).map(
        lambda d: d.isoformat(timespec="milliseconds")),
    st.text(alphabet="0123456789-:T.,W +Z", max_size=30)).map(lambda t: t + "Z"))
def test_a_utc_instant_read_by_the_fold_reads_as_parse_instant_reads_it(text: str) -> None:
    """The fold reads two ``...Z`` instants with ``datetime.fromisoformat`` alone: whatever
    it accepts, parse_instant accepts as the same instant (what it refuses goes to
    parse_instant, which decides)."""
    try:
        quick = datetime.fromisoformat(text)
    except ValueError:
        return
    assert quick == parse_instant(text)


def test_an_unreadable_cursor_of_the_stored_shape_is_replaced() -> None:
    """A cursor that is no instant is replaced (SPEC §4), even one with the stored form's
    shape (month 13): only an instant keeps a later cursor in place."""
    entry: dict[str, Any] = {"last_scheduled_for": "2026-13-01T00:00:00.000Z"}
    holdfold.advance_cursor(entry, "2026-08-07T08:00:00.000Z")
    assert "2026-08-07T08:00:00.000Z" == entry["last_scheduled_for"]
    holdfold.advance_cursor(entry, "2026-08-07T07:00:00.000Z")
    assert "2026-08-07T08:00:00.000Z" == entry["last_scheduled_for"]
    with pytest.raises(TypeError):
        holdfold.advance_cursor(entry, 1754553600)  # type: ignore[arg-type]
