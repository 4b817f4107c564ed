"""The fold in two parts (core/fold_parts.py): a speculative fold of the second part, joined
to the first only when proven. Held to the fold in one piece on generated ledgers, at every
cut: a join is exactly the fold in one piece; it is refused exactly when a routine is held
where the second part anchors it, or when from the anchor on a line reads the cron cursor,
which the second part cannot know (it never moves back, so moving it reads it); a refused join
leaves the first part's state untouched; and it never takes a ledger that the fold in one
piece refuses."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdojo_routine.core import events as ev
from specdojo_routine.core.errors import CorruptLedgerError, InvalidTransition
from specdojo_routine.core.fold import RoutineFold, apply_all
from specdojo_routine.core.fold_parts import Hole, Part, Unknown, join, speculate
from specdojo_routine.store import codec
from tests.test_fold import OWNER, raw

ROUTINES = ("rtn-a", "rtn-b", "rtn-c")
TIMES = tuple(f"2026-08-07T{h:02d}:00:00.000Z" for h in range(8, 14))
START = {"never": "T-02", "success": "T-06", "failure": "T-07", "skipped": "T-08",
         "partial": "T-06"}
KINDS = ("registered", "started", "action_started", "action_ended", "ended", "resolved",
         "held", "missed", "released", "state_imported", "upstream")
# what mostly comes next: an attempt runs its course; a held routine is mostly held or released
RUNNING = ("action_started", "action_ended", "action_ended", "ended", "ended", "ended",
           "resolved", "registered", "state_imported", "upstream")
FREE = ("started", "started", "started", "started", "missed", "registered", "state_imported",
        "upstream")
HELD = ("started", "started", "held", "held", "released", "registered")


def _propose(draw: st.DrawFn, rid: str, entry: dict[str, Any] | None, n: int) -> dict[str, Any]:
    """A line for ``rid``, mostly one the fold takes in the routine's state (the caller keeps
    only those it takes): without ``seq``, numbered later."""
    status = entry["status"] if entry else "never"
    opened = entry["open"]["attempt_id"] if entry and entry["open"] else f"a{n}"
    if draw(st.integers(0, 9)) == 0:
        kind = draw(st.sampled_from(KINDS))
    elif status == "running":
        kind = draw(st.sampled_from(RUNNING))
    else:
        kind = draw(st.sampled_from(HELD if entry and entry["held"] else FREE))
    when = draw(st.sampled_from(TIMES))
    result = draw(st.sampled_from([*ev.RESULTS, "failure", "failure"]))
    schedule = draw(st.sampled_from(["cron", "interval"]))
    event: Any
    if kind == "registered":
        event = ev.RoutineRegistered(routine_id=rid, digest=f"d{n}", path=f"routines/{rid}.yaml")
    elif kind == "started":
        label = START.get(status, "T-02") if draw(st.booleans()) else draw(
            st.sampled_from(["T-02", "T-06", "T-07", "T-08"]))
        event = ev.AttemptStarted(
            routine_id=rid, attempt_id=f"a{n}", transition=label, trigger=draw(
                st.sampled_from(["due", "id", "backfill"])), scheduled_for=when,
            last_run=when[:19] + "Z", passed_over_since=None, owner=OWNER, schedule=schedule,
            on_failure=draw(st.sampled_from([None, "hold", "hold"])))
    elif kind in ("action_started", "action_ended"):
        more = {"result": result, "job_run_id": f"JBR-{n}"} if kind == "action_ended" else {}
        kind_of = ev.ActionEnded if kind == "action_ended" else ev.ActionStarted
        event = kind_of(routine_id=rid, attempt_id=opened, index=draw(st.integers(1, 3)),
                        kind="job", **more)
    elif kind == "ended":
        event = ev.AttemptEnded(
            routine_id=rid, attempt_id=opened, transition=ev.RESULT_TRANSITIONS[result],
            result=result, reason=draw(st.sampled_from([None, "why"])), action_results=draw(
                st.sampled_from([None, [ev.ActionResult(index=1, kind="job", result=result)]])),
            scheduled_for=when, started_at=when[:19] + "Z", completed_at=when[:19] + "Z",
            job_run_ids=[])
    elif kind == "resolved":
        event = ev.AttemptResolved(routine_id=rid, attempt_id=opened,
                                   transition=ev.RESULT_TRANSITIONS[result], result=result,
                                   note="checked", resolved_by="ops")
    elif kind == "held":
        event = ev.OccurrenceHeld(routine_id=rid, scheduled_for=when, reason="held",
                                  passed_over_since=None, schedule=schedule)
    elif kind == "missed":
        event = ev.OccurrenceMissed(routine_id=rid, scheduled_for=when, deadline_s=60,
                                    late_by_s=120, reason="late", passed_over_since=None,
                                    schedule=schedule)
    elif kind == "released":
        event = ev.RoutineReleased(routine_id=rid, run="none", note=None, released_by="ops")
    elif kind == "state_imported":
        event = ev.RoutineStateImported(
            routine_id=rid, record={"last_run": when[:19] + "Z", "last_result": draw(
                st.sampled_from(["success", "failure", "skipped"])),
                "last_scheduled_for": when}, source="routine-state.json",
            source_sha256="0" * 64)
    else:  # a line the upstream CLI wrote: no type, no seq
        return {"routine_id": rid, "started_at": when[:19] + "Z", "completed_at":
                when[:19] + "Z", "result": draw(st.sampled_from(["success", "failure"])),
                "scheduled_for": when}
    line = raw(event)
    del line["seq"]
    return line


def _numbered(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines as a ledger holds them: ``seq`` n on line n (upstream lines have none)."""
    return [line if "type" not in line else {**line, "seq": n}
            for n, line in enumerate(lines, 1)]


def _fold(lines: list[dict[str, Any]], state: RoutineFold | None = None) -> RoutineFold:
    state = RoutineFold() if state is None else state
    apply_all(state, copy.deepcopy(lines), where="L", upgrade=codec.upgrade)
    return state


@st.composite
def ledgers(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A legal routine ledger: every line one the fold in one piece takes where it stands."""
    state, lines = RoutineFold(), []
    for n in range(draw(st.integers(0, 60))):
        rid = draw(st.sampled_from(ROUTINES))
        line = _propose(draw, rid, state.routines.get(rid), n)
        if "type" in line:
            line["seq"] = len(lines) + 1
        trial = copy.deepcopy(state)
        try:
            apply_all(trial, [copy.deepcopy(line)], where="L", upgrade=codec.upgrade)
        except (InvalidTransition, CorruptLedgerError):
            continue
        state = trial
        lines.append(line)
    return lines


def _split(lines: list[dict[str, Any]], cut: int) -> tuple[RoutineFold, bool]:
    """The first ``cut`` lines folded in one piece, the rest speculated and joined to them;
    whether the join was made."""
    state = _fold(lines[:cut])
    rest = copy.deepcopy(lines[cut:])
    part = Part(first_seq=cut + 1, first_prev=None, seq=cut)
    try:
        speculate(part, rest, upgrade=codec.upgrade)
    except (Unknown, InvalidTransition, KeyError, TypeError, AttributeError, ValueError):
        return state, False
    part = pickle.loads(pickle.dumps(part))  # as the helper sends it
    return state, join(state, part, head="h")


def _held_at_an_anchor(lines: list[dict[str, Any]], cut: int) -> bool:
    """Whether a join must be refused on a legal ledger: a routine is held just before its
    first ``attempt_started`` after ``cut`` (its anchor), or from its anchor on a line reads
    the cron cursor (a cron run, hold or miss: the cursor never moves back, SPEC §4) before
    an imported record has set it."""
    state, anchored, known = _fold(lines[:cut]), set(), set()
    for n in range(cut, len(lines)):
        line = lines[n]
        rid = line["routine_id"]
        if line.get("type") == "attempt_started" and rid not in anchored:
            anchored.add(rid)
            entry = state.routines.get(rid)
            if entry is not None and entry["held"]:
                return True
        if rid in anchored and rid not in known:
            if line.get("schedule") == "cron" and (
                    line["type"] in ("occurrence_held", "occurrence_missed")
                    or (line["type"] == "attempt_started" and line["trigger"] in ("due", "id"))):
                return True
            if line.get("type") in (None, "routine_state_imported"):
                known.add(rid)
        _fold([line], state)
    return False


@settings(max_examples=300, deadline=None)
@given(lines=ledgers(), data=st.data())
def test_a_join_is_the_fold_in_one_piece_and_refused_only_for_a_hold_or_a_cursor(
    lines: list[dict[str, Any]], data: st.DataObject
) -> None:
    """At any cut of a legal ledger the join is made unless a routine is held at its anchor
    (or the cron cursor is read after it), and a join gives exactly the fold in one piece:
    every entry, their order, the seq. A refused join leaves the first part's state as it
    was."""
    cut = data.draw(st.integers(0, len(lines)))
    whole = _fold(lines)
    state, joined = _split(lines, cut)
    assert joined == (not _held_at_an_anchor(lines, cut))
    if joined:
        assert list(whole.routines.items()) == list(state.routines.items())
        assert whole.seq == state.seq
    else:
        assert _fold(lines[:cut]).routines == state.routines
        assert whole.routines == _fold(lines[cut:], state).routines


@st.composite
def damaged(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A legal ledger with lines added (any line, legal or not), removed, repeated or
    renumbered."""
    lines = draw(ledgers())
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(lines)))
        how = draw(st.sampled_from(["add", "remove", "repeat", "renumber"]))
        if how == "add":
            rid = draw(st.sampled_from(ROUTINES))
            lines.insert(at, _propose(draw, rid, None, 100 + at) | {"seq": 0})
        elif lines and at < len(lines) and how == "remove":
            del lines[at]
        elif lines and at < len(lines) and how == "repeat":
            lines.insert(at, copy.deepcopy(lines[at]))
        elif lines and at < len(lines) and "type" in lines[at]:
            lines[at] = {**lines[at], "seq": draw(st.integers(0, 60))}
        if how != "renumber" and draw(st.booleans()):
            lines = _numbered(lines)
    return lines


@settings(max_examples=300, deadline=None)
@given(lines=damaged(), data=st.data())
def test_a_join_never_takes_what_the_fold_in_one_piece_refuses(
    lines: list[dict[str, Any]], data: st.DataObject
) -> None:
    """Whatever the lines: if the first part folds and the join is made, the fold in one piece
    takes the whole ledger too, and ends in the same state."""
    cut = data.draw(st.integers(0, len(lines)))
    try:
        _fold(lines[:cut])
    except (InvalidTransition, CorruptLedgerError):
        return  # the first part's own fold refuses: no join is ever tried
    state, joined = _split(lines, cut)
    if joined:
        whole = _fold(lines)  # raises if the fold in one piece refuses
        assert list(whole.routines.items()) == list(state.routines.items())
        assert whole.seq == state.seq


def _part_after(lines: list[dict[str, Any]], cut: int, **more: Any) -> Part:
    part = Part(**{"first_seq": cut + 1, "first_prev": None, "seq": cut} | more)
    speculate(part, copy.deepcopy(lines[cut:]), upgrade=codec.upgrade)
    return part


CYCLE = [raw(e, n) for n, e in enumerate([
    ev.RoutineRegistered(routine_id="rtn-a", digest="d1", path="routines/rtn-a.yaml"),
    ev.AttemptStarted(routine_id="rtn-a", attempt_id="a1", transition="T-02", trigger="due",
                      scheduled_for=TIMES[0], last_run="2026-08-07T08:00:00Z",
                      passed_over_since=None, owner=OWNER, schedule="cron"),
    ev.ActionEnded(routine_id="rtn-a", attempt_id="a1", index=1, kind="job", result="success"),
    ev.AttemptEnded(routine_id="rtn-a", attempt_id="a1", transition="T-03", result="success",
                    reason=None, action_results=None, scheduled_for=TIMES[0],
                    started_at="2026-08-07T08:00:00Z", completed_at="2026-08-07T08:00:00Z",
                    job_run_ids=[]),
    ev.AttemptStarted(routine_id="rtn-a", attempt_id="a2", transition="T-06", trigger="due",
                      scheduled_for=TIMES[1], last_run="2026-08-07T09:00:00Z",
                      passed_over_since=None, owner=OWNER, schedule="interval"),
], 1)]


def test_the_second_part_anchors_at_an_attempt_start_and_keeps_what_comes_before() -> None:
    """Lines of a routine before its first attempt start in the part come back unfolded; the
    start anchors it, with the fields it does not set left as holes."""
    part = _part_after(CYCLE, 2)
    assert [3, 4] == [line["seq"] for line in part.before]
    entry = part.routines["rtn-a"]
    assert ("running", False, "a2") == (entry["status"], entry["held"], entry["attempt_id"])
    assert Hole("digest").field == entry["digest"].field
    assert frozenset({"success", "partial"}) == part.statuses["rtn-a"]


def test_a_join_checks_where_the_part_starts() -> None:
    """A part whose first seq is not the next one, or whose first line chains to another hash
    than the first part's last line, is refused."""
    for more, head in [({"first_seq": 4}, "h"), ({"first_prev": "x" * 64}, "y" * 64)]:
        state = _fold(CYCLE[:2])
        assert not join(state, _part_after(CYCLE, 2, **more), head=head)
        assert _fold(CYCLE[:2]).routines == state.routines
    state = _fold(CYCLE[:2])
    assert join(state, _part_after(CYCLE, 2, first_prev="z" * 64), head="z" * 64)
    assert _fold(CYCLE).routines == state.routines


def test_a_refused_join_leaves_an_open_attempt_as_it_was() -> None:
    """The part's lines before an anchor (here: an action of the attempt open at the cut) are
    folded onto copies; when another routine's hold refuses the join, the first part's open
    attempt has not gained that action."""
    hold = [raw(e) for e in [
        ev.AttemptStarted(routine_id="rtn-b", attempt_id="b1", transition="T-02",
                          trigger="due", scheduled_for=TIMES[0],
                          last_run="2026-08-07T08:00:00Z", passed_over_since=None,
                          owner=OWNER, schedule="cron", on_failure="hold"),
        ev.AttemptEnded(routine_id="rtn-b", attempt_id="b1", transition="T-04",
                        result="failure", reason=None, action_results=None,
                        scheduled_for=TIMES[0], started_at="2026-08-07T08:00:00Z",
                        completed_at="2026-08-07T08:00:00Z", job_run_ids=[]),
        ev.AttemptStarted(routine_id="rtn-b", attempt_id="b2", transition="T-07",
                          trigger="backfill", scheduled_for=TIMES[1],
                          last_run="2026-08-07T09:00:00Z", passed_over_since=None,
                          owner=OWNER, schedule="cron")]]
    lines = _numbered([*CYCLE[:2], *hold[:2], CYCLE[2], hold[2]])
    state, joined = _split(lines, 4)
    assert not joined
    assert {} == state.routines["rtn-a"]["actions"]
    assert _fold(lines).routines == _fold(lines[4:], state).routines


def test_a_look_at_a_hole_raises() -> None:
    """Truth, comparison, hashing, iteration, indexing and methods of a hole raise Unknown;
    it survives pickling (the helper's answer)."""
    hole = Hole("held_occurrences")
    looks = [bool, len, iter, hash, lambda h: h == 1, lambda h: h != 1, lambda h: h < 1,
             lambda h: h[0], lambda h: 1 in h, lambda h: h.get("x"), lambda h: [*h, 1],
             lambda h: h + 1, lambda h: 1 + h, lambda h: {**h}, str, int]
    for look in looks:
        with pytest.raises(Unknown, match="held_occurrences"):
            look(hole)
    assert "held_occurrences" == pickle.loads(pickle.dumps(hole)).field
