"""Events and their line codec (SPEC §5): valid by construction, exact round-trips, upcasting."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdojo_routine.core import event_parts
from specdojo_routine.core import events as ev
from specdojo_routine.core import job_events as jev
from specdojo_routine.core import routine_events as rev
from specdojo_routine.core.errors import CorruptLedgerError
from specdojo_routine.core.event_checks import RUN_STATUSES
from specdojo_routine.core.model import ACTION_KINDS
from specdojo_routine.core.timefmt import format_ms, format_s
from specdojo_routine.store.ledger import codec

AT = datetime(2026, 8, 7, 8, 0, 1, 234567, tzinfo=UTC)

# --- strategies ------------------------------------------------------------------------------

routine_ids = st.from_regex(r"rtn-[a-z0-9][a-z0-9-]{0,15}", fullmatch=True)
run_ids = st.from_regex(r"JBR-[A-Za-z0-9-]{1,20}", fullmatch=True)
job_ids = st.from_regex(r"job-[a-z0-9][a-z0-9-]{0,15}", fullmatch=True)
texts = st.text(min_size=1, max_size=30)
instants = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31),
                        timezones=st.just(UTC))
ms_stamps = instants.map(format_ms)
s_stamps = instants.map(format_s)
results = st.sampled_from(rev.RESULTS)
kinds = st.sampled_from(ACTION_KINDS)
owners = st.builds(event_parts.Owner, pid=st.integers(0, 2**22), host=texts)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | texts
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(texts, json_values, max_size=4)
sha256s = st.from_regex(r"[0-9a-f]{64}", fullmatch=True)
action_results = st.lists(st.builds(rev.ActionResult, index=st.integers(1, 9), kind=kinds,
                                    result=results), max_size=3)


@st.composite
def attempt_ended(draw: st.DrawFn) -> rev.AttemptEnded:
    result = draw(results)
    return rev.AttemptEnded(
        routine_id=draw(routine_ids), attempt_id=draw(texts),
        transition=rev.RESULT_TRANSITIONS[result], result=result,  # type: ignore[arg-type]
        reason=draw(st.none() | texts), action_results=draw(st.none() | action_results),
        scheduled_for=draw(ms_stamps), started_at=draw(s_stamps), completed_at=draw(s_stamps),
        job_run_ids=draw(st.lists(run_ids, max_size=3)),
    )


@st.composite
def attempt_resolved(draw: st.DrawFn) -> rev.AttemptResolved:
    result = draw(results)
    return rev.AttemptResolved(
        routine_id=draw(routine_ids), attempt_id=draw(texts),
        transition=rev.RESULT_TRANSITIONS[result], result=result,  # type: ignore[arg-type]
        note=draw(texts), resolved_by=draw(texts), overrides=draw(st.sampled_from([None, True])),
    )


@st.composite
def occurrence_missed(draw: st.DrawFn) -> rev.OccurrenceMissed:
    deadline = draw(st.integers(1, 10**7))
    return rev.OccurrenceMissed(
        routine_id=draw(routine_ids), scheduled_for=draw(ms_stamps), deadline_s=deadline,
        late_by_s=draw(st.integers(deadline, 10**9)), reason=draw(texts),
        passed_over_since=draw(st.none() | ms_stamps),
        schedule=draw(st.sampled_from(["cron", "interval"])))


STRATEGIES: dict[type[Any], st.SearchStrategy[Any]] = {
    rev.RoutineRegistered: st.builds(rev.RoutineRegistered, routine_id=routine_ids, digest=texts,
                                    path=texts),
    rev.AttemptStarted: st.builds(
        rev.AttemptStarted, routine_id=routine_ids, attempt_id=texts,
        transition=st.sampled_from(["T-02", "T-06", "T-07", "T-08"]),
        trigger=st.sampled_from(rev.TRIGGERS), scheduled_for=ms_stamps, last_run=s_stamps,
        passed_over_since=st.none() | ms_stamps, owner=owners,
        schedule=st.sampled_from(["cron", "interval"]), on_failure=st.sampled_from([None, "hold"]),
        inputs_override=st.none() | json_objects),
    rev.OccurrenceHeld: st.builds(
        rev.OccurrenceHeld, routine_id=routine_ids, scheduled_for=ms_stamps, reason=texts,
        passed_over_since=st.none() | ms_stamps, schedule=st.sampled_from(["cron", "interval"])),
    rev.OccurrenceMissed: occurrence_missed(),
    rev.OccurrencePaused: st.builds(  # SPEC §13
        rev.OccurrencePaused, routine_id=routine_ids, scheduled_for=ms_stamps, reason=texts,
        passed_over_since=st.none() | ms_stamps, schedule=st.sampled_from(["cron", "interval"])),
    rev.RoutinePaused: st.builds(rev.RoutinePaused, routine_id=routine_ids, note=st.none() | texts,
                                paused_by=texts, paused_at=ms_stamps),
    rev.RoutineResumed: st.builds(rev.RoutineResumed, routine_id=routine_ids,
                                 note=st.none() | texts, resumed_by=texts, resumed_at=ms_stamps),
    rev.RoutineReleased: st.builds(
        rev.RoutineReleased, routine_id=routine_ids, run=st.sampled_from(rev.RELEASE_RUNS),
        note=st.none() | texts, released_by=texts),
    rev.ActionStarted: st.builds(rev.ActionStarted, routine_id=routine_ids, attempt_id=texts,
                                index=st.integers(1, 99), kind=kinds),
    rev.ActionEnded: st.builds(
        rev.ActionEnded, routine_id=routine_ids, attempt_id=texts, index=st.integers(1, 99),
        kind=kinds, result=results, reason=st.none() | texts, job_run_id=st.none() | run_ids,
        exit_code=st.none() | st.integers(-255, 255)),
    rev.AttemptEnded: attempt_ended(),
    rev.AttemptResolved: attempt_resolved(),
    jev.RunCreated: st.builds(
        jev.RunCreated, run_id=run_ids, job_id=job_ids, idempotency_key=texts, project_id=texts,
        trigger=st.sampled_from(["manual", "routine", "ci"]), scheduled_at=ms_stamps,
        inputs=json_objects, task=json_objects, checkpoint_before=st.none() | json_objects),
    jev.RunAttemptStarted: st.builds(jev.RunAttemptStarted, run_id=run_ids,
                                    attempt=st.integers(1, 99), owner=owners),
    jev.RunAttemptEnded: st.builds(
        jev.RunAttemptEnded, run_id=run_ids, attempt=st.integers(1, 99),
        status=st.sampled_from(RUN_STATUSES), exit_code=st.none() | st.integers(-255, 255),
        evidence_ref=st.none() | texts, reason=st.none() | texts),
    jev.RunAttemptResolved: st.builds(  # SPEC §7.3
        jev.RunAttemptResolved, run_id=run_ids, attempt=st.integers(1, 99),
        status=st.sampled_from(["succeeded", "failed", "noop"]), note=texts, resolved_by=texts,
        reason=st.none() | texts),
    jev.CheckpointAdvanced: st.builds(jev.CheckpointAdvanced, run_id=run_ids, job_id=job_ids,
                                     values=json_objects),
    jev.ReviewEnded: st.builds(
        jev.ReviewEnded, run_id=run_ids, attempt=st.integers(1, 99),
        verdict=st.none() | st.sampled_from(jev.REVIEW_VERDICTS), merged=st.booleans(),
        commit=st.none() | texts, reason=st.none() | texts, merge_commit=st.none() | texts),
    rev.RoutineStateImported: st.builds(rev.RoutineStateImported, routine_id=routine_ids,
                                       record=json_objects, source=texts, source_sha256=sha256s),
    rev.UpstreamRunRecorded: st.builds(rev.UpstreamRunRecorded, routine_id=routine_ids,
                                      record=json_objects),
    jev.RunImported: st.builds(jev.RunImported, run_id=run_ids, record=json_objects,
                              source_sha256=sha256s),
    jev.CheckpointImported: st.builds(jev.CheckpointImported, job_id=job_ids,
                                     checkpoint=json_objects, last_run_id=run_ids,
                                     updated_at=texts, source_sha256=sha256s),
    jev.EvidencePruned: st.builds(jev.EvidencePruned, run_id=run_ids,
                                 paths=st.lists(texts, min_size=1, max_size=4),
                                 bytes=st.integers(0, 2**40)),
    rev.RoutineEvidencePruned: st.builds(rev.RoutineEvidencePruned, routine_id=routine_ids,
                                        attempt_id=texts,
                                        paths=st.lists(texts, min_size=1, max_size=4),
                                        bytes=st.integers(0, 2**40)),
    rev.NotificationSent: st.builds(
        rev.NotificationSent, routine_id=routine_ids, event=st.sampled_from(rev.NOTIFY_EVENTS),
        exit_code=st.none() | st.integers(0, 255),
        duration_s=st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
        attempt_id=st.none() | texts, scheduled_for=st.none() | ms_stamps,
        reason=st.none() | texts),
    rev.RetrySuperseded: st.builds(
        rev.RetrySuperseded, routine_id=routine_ids, attempt_id=texts, retry_of=texts,
        scheduled_for=ms_stamps, superseded_by=ms_stamps, reason=texts),
}
ALL_CLASSES = sorted(ev.TAGS, key=lambda cls: cls.__name__)


def _attempt_started(**changes: Any) -> rev.AttemptStarted:
    fields: dict[str, Any] = dict(
        routine_id="rtn-a", attempt_id="a1", transition="T-02", trigger="due",
        scheduled_for="2026-08-07T08:00:00.000Z", last_run="2026-08-07T08:00:03Z",
        passed_over_since=None, owner=event_parts.Owner(pid=7, host="h"), schedule="cron")
    return rev.AttemptStarted(**(fields | changes))


# --- the tag maps ----------------------------------------------------------------------------


def test_routine_tag_set_is_frozen() -> None:
    """The routine ledger's wire tags are exactly SPEC §5's table."""
    assert {
        "routine_registered": rev.RoutineRegistered, "attempt_started": rev.AttemptStarted,
        "action_started": rev.ActionStarted, "action_ended": rev.ActionEnded,
        "attempt_ended": rev.AttemptEnded, "attempt_resolved": rev.AttemptResolved,
        "occurrence_held": rev.OccurrenceHeld, "occurrence_missed": rev.OccurrenceMissed,
        "routine_released": rev.RoutineReleased,
        "routine_paused": rev.RoutinePaused, "routine_resumed": rev.RoutineResumed,  # SPEC §13
        "occurrence_paused": rev.OccurrencePaused,
        "routine_state_imported": rev.RoutineStateImported,  # SPEC §10
        "upstream_run_recorded": rev.UpstreamRunRecorded,
        "evidence_pruned": rev.RoutineEvidencePruned,  # SPEC §15
        "notification_sent": rev.NotificationSent,  # SPEC §13
        "retry_superseded": rev.RetrySuperseded,  # SPEC §13
    } == rev.ROUTINE_EVENT_TYPES


def test_job_tag_set_is_frozen() -> None:
    """The Job Run ledger's wire tags are exactly SPEC §5's table."""
    assert {
        "run_created": jev.RunCreated, "attempt_started": jev.RunAttemptStarted,
        "attempt_ended": jev.RunAttemptEnded, "checkpoint_advanced": jev.CheckpointAdvanced,
        "attempt_resolved": jev.RunAttemptResolved,  # SPEC §7.3
        "review_ended": jev.ReviewEnded,  # SPEC §11.3
        "run_imported": jev.RunImported, "checkpoint_imported": jev.CheckpointImported,  # §10
        "evidence_pruned": jev.EvidencePruned,  # SPEC §15
    } == jev.JOB_EVENT_TYPES


def test_every_event_class_has_a_strategy() -> None:
    """The round-trip property below covers every event class of both tag maps."""
    assert set(ev.TAGS) == set(STRATEGIES)
    assert {"routine": rev.ROUTINE_EVENT_TYPES, "job": jev.JOB_EVENT_TYPES} == ev.EVENT_TYPES


# --- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
@settings(deadline=None)  # a loaded CI machine must not fail a property
@given(data=st.data(), seq=st.integers(1, 2**40), at=instants)
def test_encode_decode_round_trip(cls: type[Any], data: st.DataObject, seq: int,
                                  at: datetime) -> None:
    """decode(encode(event)) is the event, with its seq and millisecond wall-clock stamp."""
    event = data.draw(STRATEGIES[cls])
    kind = ev.ledger_kind_of(event)
    recorded = codec.decode_record(codec.encode(event, seq, at), ledger=kind)
    assert (event, seq, format_ms(at)) == (recorded.event, recorded.seq, recorded.at)


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
@settings(deadline=None, max_examples=30)
@given(data=st.data(), before=texts, after=texts)
def test_redacted_clears_the_free_text_and_nothing_else(
    cls: type[Any], data: st.DataObject, before: str, after: str,
) -> None:
    """events.redacted, which every event passes before it is appended, redacts the reasons
    and notes of any event class (a token, the value of a secret variable) and leaves every
    other field as it was."""
    event = data.draw(STRATEGIES[cls])
    names = [f.name for f in attrs.fields(cls) if f.name in ev.FREE_TEXT_FIELDS]
    text = f"{before} ghp_abcdefghijklmnop /opt/s3cr3t-VALUE/bin {after}"
    event = attrs.evolve(event, **dict.fromkeys(names, text))
    clean = ev.redacted(event, ["s3cr3t-VALUE"])
    for name in names:
        assert "ghp_abcdefghijklmnop" not in getattr(clean, name)
        assert "s3cr3t-VALUE" not in getattr(clean, name)
    assert attrs.evolve(clean, **{n: getattr(event, n) for n in names}) == event


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
@settings(deadline=None)
@given(data=st.data())
def test_line_is_one_compact_object_with_the_envelope_first(cls: type[Any],
                                                              data: st.DataObject) -> None:
    """A line is compact JSON + newline: version, seq, type, at, then the payload in order."""
    event = data.draw(STRATEGIES[cls])
    line = codec.encode(event, 3, AT)
    raw = orjson.loads(line)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert orjson.dumps(raw) + b"\n" == line
    assert ["version", "seq", "type", "at"] == list(raw)[:4]
    assert (1, 3, ev.tag_of(event)) == (raw["version"], raw["seq"], raw["type"])


def test_optional_fields_are_left_out_when_none() -> None:
    """`reason`, `job_run_id` and `exit_code` of an action_ended appear only when set."""
    event = rev.ActionEnded(routine_id="rtn-a", attempt_id="a1", index=1, kind="job",
                           result="success")
    raw = orjson.loads(codec.encode(event, 1, AT))
    assert {"reason", "job_run_id", "exit_code"}.isdisjoint(raw)


def test_required_null_fields_stay() -> None:
    """`passed_over_since` is written as null, not left out."""
    raw = orjson.loads(codec.encode(_attempt_started(), 1, AT))
    assert raw["passed_over_since"] is None and "passed_over_since" in raw


def test_at_is_utc_with_milliseconds() -> None:
    """`at` is the wall clock in UTC ISO with milliseconds."""
    assert "2026-08-07T08:00:01.234Z" == orjson.loads(codec.encode(_attempt_started(), 1, AT))["at"]


# --- invalid events cannot exist -------------------------------------------------------------


@pytest.mark.parametrize("changes", [
    {"routine_id": "weekly"}, {"transition": "T-03"}, {"trigger": "cron"},
    {"scheduled_for": "2026-08-07T08:00:00Z"}, {"last_run": "2026-08-07T08:00:03.000Z"},
    {"scheduled_for": "2026-02-30T08:00:00.000Z"}, {"passed_over_since": "yesterday"},
    {"schedule": "daily"}, {"attempt_id": ""}, {"owner": {"pid": 1, "host": "h"}},
], ids=repr)
def test_attempt_started_rejects_invalid_fields(changes: dict[str, Any]) -> None:
    """A malformed attempt_started cannot be constructed."""
    with pytest.raises((ValueError, TypeError)):
        _attempt_started(**changes)


def test_attempt_ended_transition_must_match_its_result() -> None:
    """result success with T-04 is not an event."""
    with pytest.raises(ValueError, match="needs transition T-03"):
        rev.AttemptEnded(routine_id="rtn-a", attempt_id="a", transition="T-04", result="success",
                        action_results=None, scheduled_for="2026-08-07T08:00:00.000Z",
                        started_at="2026-08-07T08:00:00Z", completed_at="2026-08-07T08:00:09Z",
                        job_run_ids=[])


@pytest.mark.parametrize(("cls", "fields"), [
    (rev.ActionStarted, {"routine_id": "rtn-a", "attempt_id": "a", "index": 0, "kind": "job"}),
    (rev.ActionStarted, {"routine_id": "rtn-a", "attempt_id": "a", "index": True, "kind": "job"}),
    (rev.ActionStarted, {"routine_id": "rtn-a", "attempt_id": "a", "index": 1, "kind": "shell"}),
    (jev.RunAttemptEnded, {"run_id": "JBR-x", "attempt": 1, "status": "done"}),
    (jev.RunCreated, {"run_id": "run-1", "job_id": "job-x", "idempotency_key": "k",
                     "project_id": "p", "trigger": "manual",
                     "scheduled_at": "2026-08-07T08:00:00.000Z", "inputs": {}, "task": {},
                     "checkpoint_before": None}),
    (jev.CheckpointAdvanced, {"run_id": "JBR-x", "job_id": "job-x", "values": {"a": object()}}),
    (jev.CheckpointAdvanced, {"run_id": "JBR-x", "job_id": "job-x",
                             "values": {"a": [float("nan")]}}),
    (jev.CheckpointAdvanced, {"run_id": "JBR-x", "job_id": "job-x", "values": {"a": 2**70}}),
], ids=lambda v: v.__name__ if isinstance(v, type) else "")
def test_invalid_fields_are_rejected(cls: type[Any], fields: dict[str, Any]) -> None:
    """Each event class validates its fields in the constructor."""
    with pytest.raises((ValueError, TypeError)):
        cls(**fields)


# --- decoding errors -------------------------------------------------------------------------


def _line(**raw: Any) -> bytes:
    return orjson.dumps({"version": 1, "seq": 1, "type": "attempt_started",
                         "at": "2026-08-07T08:00:00.000Z"} | raw)


def test_unknown_type_names_file_and_line() -> None:
    """An unknown event type is a CorruptLedgerError naming the file and line."""
    with pytest.raises(CorruptLedgerError, match=r"^ledger\.jsonl:7: unknown routine event type "
                                                 r"'routine_renamed'"):
        codec.decode(_line(type="routine_renamed"), path="ledger.jsonl", line_no=7)


def test_tags_are_per_ledger_kind() -> None:
    """run_created is no routine event, and a Job attempt_started has a Job payload."""
    line = codec.encode(jev.RunAttemptStarted(run_id="JBR-x", attempt=1,
                                             owner=event_parts.Owner(pid=1, host="h")), 1, AT)
    assert isinstance(codec.decode(line, ledger="job"), jev.RunAttemptStarted)
    with pytest.raises(CorruptLedgerError, match="routine_id"):
        codec.decode(line, ledger="routine")


@pytest.mark.parametrize(("raw", "reason"), [
    ({"index": "1"}, r"expected int, got str @ \$\.index"),
    ({"surprise": 1}, r"unknown field\(s\) surprise"),
    ({"kind": None}, r"@ \$\.kind"),
], ids=["string-for-int", "extra-field", "null-kind"])
def test_decode_is_strict(raw: dict[str, Any], reason: str) -> None:
    """No coercion: wrong types and unknown fields are errors naming the field."""
    body = {"routine_id": "rtn-a", "attempt_id": "a1", "index": 1, "kind": "job"} | raw
    with pytest.raises(CorruptLedgerError, match=reason):
        codec.decode(_line(type="action_started", **body), path="l", line_no=1)


def test_envelope_must_be_valid() -> None:
    """A line without a usable seq is corrupt."""
    with pytest.raises(CorruptLedgerError, match="integer seq"):
        codec.decode(_line(seq="1", type="action_started", routine_id="rtn-a", attempt_id="a",
                           index=1, kind="job"))


# --- upcasting -------------------------------------------------------------------------------

V0_STARTED = {"seq": 3, "type": "attempt_started", "at": "2026-08-07T08:00:04.500Z",
              "routine_id": "rtn-a", "attempt_id": "a1", "transition": "T-02", "trigger": "due",
              "scheduled_for": "2026-08-07T08:00:00.000Z", "last_run": "2026-08-07T08:00:01Z",
              "cron": True}


def test_version_0_attempt_started_is_upgraded() -> None:
    """A pre-version attempt_started gets schedule, a null passed_over_since and an unknown
    owner."""
    expected = _attempt_started(last_run="2026-08-07T08:00:01Z",
                                owner=event_parts.Owner(pid=0, host="unknown"))
    assert expected == codec.decode(orjson.dumps(V0_STARTED))


def test_version_0_interval_attempt() -> None:
    """`cron: false` upgrades to schedule interval."""
    assert "interval" == codec.upgrade(V0_STARTED | {"cron": False})["schedule"]


def test_upgrade_leaves_its_input_alone() -> None:
    """Upgrading returns a new dict; the stored form is untouched (history prints it)."""
    original = dict(V0_STARTED)
    codec.upgrade(original)
    assert V0_STARTED == original


def test_current_version_passes_through() -> None:
    """A version-1 line is returned as is."""
    raw = orjson.loads(codec.encode(_attempt_started(), 1, AT))
    assert raw is codec.upgrade(raw)


def test_newer_version_is_refused() -> None:
    """A line from a newer program is an error that says to upgrade."""
    with pytest.raises(CorruptLedgerError, match=r"unsupported event version 2.*upgrade"):
        codec.decode(_line(version=2), path="l", line_no=4)


# --- SPEC §9 events --------------------------------------------------------------------------


def test_held_and_missed_lines_carry_passed_over_since_and_release_a_null_note() -> None:
    """The §9 payloads: passed_over_since and a release note are written even when null."""
    held = rev.OccurrenceHeld(routine_id="rtn-a", scheduled_for="2026-08-07T08:00:00.000Z",
                             reason="held after failure of a1", passed_over_since=None,
                             schedule="cron")
    released = rev.RoutineReleased(routine_id="rtn-a", run="none", note=None, released_by="ops")
    assert {"passed_over_since": None} == {k: v for k, v in codec.payload(held).items()
                                           if k == "passed_over_since"}
    assert {"routine_id": "rtn-a", "run": "none", "note": None, "released_by": "ops"} == (
        codec.payload(released))


def test_on_failure_is_left_out_unless_hold() -> None:
    """attempt_started gains on_failure only under hold, so older lines stay byte-identical."""
    assert "on_failure" not in codec.payload(_attempt_started())
    assert "hold" == codec.payload(_attempt_started(on_failure="hold"))["on_failure"]


@pytest.mark.parametrize("changes", [
    {"late_by_s": 119, "deadline_s": 120}, {"late_by_s": 0, "deadline_s": 1},
    {"deadline_s": 0, "late_by_s": 5}, {"reason": ""}, {"schedule": "weekly"},
])
def test_an_impossible_miss_cannot_exist(changes: dict[str, Any]) -> None:
    """A miss is later than its deadline, with a reason and a known schedule kind."""
    fields: dict[str, Any] = dict(
        routine_id="rtn-a", scheduled_for="2026-08-07T08:00:00.000Z", deadline_s=120,
        late_by_s=121, reason="started 2m 1s late (deadline 2m)", passed_over_since=None,
        schedule="cron")
    with pytest.raises(ValueError):
        rev.OccurrenceMissed(**(fields | changes))


@pytest.mark.parametrize("changes", [{"run": "some"}, {"released_by": ""}, {"note": ""}])
def test_an_invalid_release_cannot_exist(changes: dict[str, Any]) -> None:
    """release run is none|latest|all; who released it is named; a note is text or null."""
    fields: dict[str, Any] = dict(routine_id="rtn-a", run="all", note="n", released_by="ops")
    with pytest.raises(ValueError):
        rev.RoutineReleased(**(fields | changes))
