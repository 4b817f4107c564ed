"""Hypothesis: every occurrence that becomes due is accounted for exactly once (SPEC §4, §9).

Random cron expressions and zones (``--now`` sequences around DST transitions, with long gaps),
random policies (``missed_run`` latest|all, ``on_failure`` continue|hold, a starting deadline or
none), random failure patterns, pauses and resumes (SPEC §13), releases and explicit runs at
a ``--now`` in the past (a clock gone back: the cursor never moves back) drive the real run,
pause and release handlers on a temporary project. Then the ledger must account for every
occurrence between the first call's occurrence and the last call — as run, coalesced (inside a
``passed_over_since`` span), held, missed, paused or consumed by an explicit run — exactly
once, compared with the independent minute-scan reference of
``test_schedule_properties``. Paused occurrences count as accounted
for, and no due attempt starts while paused or for an occurrence scheduled by a resume.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from specdojo_routine.app import controls, handlers, release
from specdojo_routine.core import cron_syntax
from specdojo_routine.core.model import Result
from specdojo_routine.core.timefmt import parse_instant
from specdojo_routine.store.config import resolve_project
from tests.test_schedule_properties import DAYS, STAR, TIMEZONES, TRANSITIONS, field, reference

MINUTE = timedelta(minutes=1)
CONFIG = {"version": 1, "current_project": "p", "projects": {"p": {
    "routines_path": "routines", "jobs_path": "jobs", "execution_path": "execution"}}}
JOB = ('id: job-work\nname: work\ntask: {mode: command, command: "true"}\n'
       'run: {idempotency_key: "{{job_id}}"}\n')

# Day-of-month and month stay `*`, so every expression fires within a week (the first call's
# occurrence is found by the reference's scan); the hours aim at the DST transitions.
EXPRESSIONS = st.tuples(
    st.one_of(STAR, field(0, 59)), st.one_of(STAR, field(0, 4), field(0, 23)),
    st.just("*"), st.just("*"), st.one_of(STAR, STAR, field(0, 7, DAYS)),
).map(" ".join).filter(lambda e: cron_syntax.cron_syntax_error(e) is None)
DEADLINES = st.one_of(st.none(), st.sampled_from(["30s", "1m", "5m", "90m", "1h", "1d"]))


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    missed_run = draw(st.sampled_from(["latest", "all"]))
    zone = draw(st.sampled_from(TIMEZONES))
    anchors = TRANSITIONS[zone] or [datetime(2026, 3, 29, tzinfo=UTC)]
    start = draw(st.sampled_from(anchors)) + timedelta(
        minutes=draw(st.integers(-36 * 60, 12 * 60)), seconds=draw(st.sampled_from([0, 5, 59])))
    # `all` fails a routine over 1000 occurrences, so its gaps stay under 12 hours.
    longest = 12 * 60 if missed_run == "all" else 10 * 24 * 60
    gaps = st.one_of(st.integers(0, 180), st.integers(0, longest))
    steps = draw(st.lists(st.one_of(
        st.tuples(st.just("run"), gaps, st.sampled_from([0, 1, 30, 59])),
        st.tuples(st.just("release"), st.sampled_from(["none", "latest", "all"]), st.just(0)),
        # `run --id` at a --now up to a day and a half before the last one (a clock gone back)
        st.tuples(st.just("explicit"), st.integers(0, 36 * 60), st.sampled_from([0, 30])),
        # SPEC §13: pause or resume (whichever applies) at the last --now
        st.tuples(st.just("pause"), st.just(0), st.just(0)),
    ), min_size=1, max_size=8))
    return {"expr": draw(EXPRESSIONS), "zone": zone, "missed_run": missed_run,
            "on_failure": draw(st.sampled_from(["continue", "hold"])),
            "deadline": draw(DEADLINES), "start": start, "steps": steps,
            # SPEC §13: a retry policy or none (a retry is the same occurrence, never a new one)
            "retry": draw(st.one_of(st.none(), st.tuples(st.integers(2, 3),
                                                         st.sampled_from(["1m", "30m", "2h"])))),
            "failures": draw(st.lists(st.booleans(), min_size=1, max_size=8))}


class _Outcomes:
    """The job action's results: the failure pattern, cycled."""

    def __init__(self, pattern: list[bool]) -> None:
        self.pattern, self.n = pattern, 0

    def __call__(self, *_args: Any, **_kwargs: Any) -> handlers.JobActionOutcome:
        failed = self.pattern[self.n % len(self.pattern)]
        self.n += 1
        return handlers.JobActionOutcome(result=Result.FAILURE if failed else Result.SUCCESS,
                                         reason="boom" if failed else None)


def _project(root: Path, sc: dict[str, Any]) -> None:
    (root / ".specdojo").mkdir(parents=True)
    (root / ".specdojo" / "specdojo.config.json").write_bytes(orjson.dumps(CONFIG))
    (root / "routines").mkdir()
    (root / "jobs").mkdir()
    (root / "jobs" / "job-work.yaml").write_text(JOB)
    deadline = f", starting_deadline: {sc['deadline']}" if sc["deadline"] else ""
    if sc["retry"] is not None:
        deadline += f", retry: {{attempts: {sc['retry'][0]}, delay: {sc['retry'][1]}}}"
    (root / "routines" / "rtn-prop.yaml").write_text(
        f'id: rtn-prop\ntrigger: {{cron: "{sc["expr"]}", timezone: {sc["zone"]}}}\n'
        f"policy: {{missed_run: {sc['missed_run']}, on_failure: {sc['on_failure']}{deadline}}}\n"
        "action: {kind: job, job: job-work}\n")


def _drive(root: Path, sc: dict[str, Any]) -> datetime:
    """Run the steps; returns the last ``--now``."""
    paths, outcomes, now = resolve_project(root), _Outcomes(sc["failures"]), sc["start"]
    handlers.run(paths, now=now, job_runner=outcomes)
    for kind, amount, seconds in sc["steps"]:
        if kind == "run":
            now = now.replace(second=0) + amount * MINUTE + timedelta(seconds=seconds)
            handlers.run(paths, now=now, job_runner=outcomes)
        elif kind == "explicit":
            handlers.run(paths, routine_id="rtn-prop", job_runner=outcomes,
                         now=now - amount * MINUTE - timedelta(seconds=seconds))
        elif kind == "pause":
            entry = orjson.loads(paths.routine_state.read_bytes())["routines"]["rtn-prop"]
            paused = bool(entry["pause"]) and entry["pause"]["resumed_at"] is None
            controls.set_paused(paths, "rtn-prop", paused=not paused, by="prop", now=now)
        elif orjson.loads(paths.routine_state.read_bytes())["routines"]["rtn-prop"]["held"]:
            release.release(paths, "rtn-prop", run=amount, by="prop", now=now,
                            job_runner=outcomes)
    return now


def _accounted(lines: list[dict[str, Any]], sc: dict[str, Any],
               now: datetime) -> tuple[list[datetime], list[datetime]]:
    """(every occurrence the ledger accounts for, with coalesced spans expanded; the
    reference's occurrences from the first call's to the last call)."""
    kinds = {"occurrence_held", "occurrence_missed", "occurrence_paused"}
    marks = [e for e in lines if e["type"] in kinds or (
        e["type"] == "attempt_started" and e["trigger"] == "due")]
    assert marks, "the first call runs (or accounts for) the most recent occurrence"
    first = parse_instant(marks[0].get("passed_over_since") or marks[0]["scheduled_for"])
    ref = reference(sc["expr"], sc["zone"], first - MINUTE, now.replace(second=0))
    found: list[datetime] = []
    for e in marks:
        at = parse_instant(e["scheduled_for"])
        found.append(at)
        if e.get("passed_over_since"):
            since = parse_instant(e["passed_over_since"])
            assert since in ref, "a coalesced span starts at a real occurrence"
            found.extend(u for u in ref if since <= u < at)
    for e in lines:  # an explicit run consumes the occurrences since the cursor (SPEC §4)
        if e["type"] == "attempt_started" and e["trigger"] == "id" and e["passed_over_since"]:
            since, at = parse_instant(e["passed_over_since"]), parse_instant(e["scheduled_for"])
            assert since in ref, "an explicit run's span starts at a real occurrence"
            found.extend(u for u in ref if since <= u <= at)
    return found, ref


def _check_policies(lines: list[dict[str, Any]], sc: dict[str, Any]) -> None:
    """Nothing due (nor a retry) starts while held or paused, nor for an occurrence scheduled
    by the last resume; every started due occurrence was on time; a retry repeats a failed due
    or release attempt's occurrence, at most ``attempts - 1`` times, and only the last failure
    of an occurrence holds."""
    held, paused, resumed = False, False, ""
    deadline = cron_syntax.parse_duration(sc["deadline"]) if sc["deadline"] else None
    marker: dict[str, Any] = {}  # attempt id -> its recorded on_failure
    retried: Counter[str] = Counter()  # first attempt id -> retries started
    first_of: dict[str, dict[str, Any]] = {}  # attempt id -> its attempt_started
    for e in lines:
        if e["type"] == "attempt_started":
            marker[e["attempt_id"]] = e.get("on_failure")
            first_of[e["attempt_id"]] = e
        if e["type"] == "attempt_started" and e["trigger"] in ("due", "retry"):
            assert not held, "a held routine starts nothing due, no retry either"
            assert not paused, "a paused routine starts nothing due, no retry either"
        if e["type"] == "attempt_started" and e["trigger"] == "due":
            assert (e["passed_over_since"] or e["scheduled_for"]) > resumed, "no catch-up"
            late = parse_instant(e["last_run"]) - parse_instant(e["scheduled_for"])
            assert deadline is None or late <= timedelta(seconds=deadline)
        if e["type"] == "attempt_started" and e["trigger"] == "retry":
            assert sc["retry"] is not None, "no retry without policy.retry"
            first = first_of[e["retry_of"]]
            assert first["trigger"] in ("due", "release"), "never a run --id retried"
            assert first["scheduled_for"] == e["scheduled_for"], "a retry is the same occurrence"
            retried[e["retry_of"]] += 1
            assert retried[e["retry_of"]] <= sc["retry"][0] - 1, "at most attempts - 1 retries"
        if e["type"] == "attempt_ended" and e["result"] == "failure" and \
                marker.get(e["attempt_id"]) == "hold":
            held = True
        if e["type"] == "routine_released":
            held = False
        if e["type"] in ("routine_paused", "routine_resumed"):
            paused = e["type"] == "routine_paused"
            resumed = e.get("resumed_at") or resumed
        if e["type"] == "occurrence_missed":
            assert not held and deadline is not None and e["late_by_s"] > deadline - 1


def _first_has_occurrence(sc: dict[str, Any]) -> bool:
    return bool(reference(sc["expr"], sc["zone"], sc["start"] - timedelta(days=8), sc["start"]))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(sc=scenarios())
def test_every_occurrence_is_accounted_for_exactly_once(sc: dict[str, Any]) -> None:
    """Run, coalesced, held, paused, retried or missed: each reference occurrence once,
    nothing else."""
    assume(_first_has_occurrence(sc))
    with tempfile.TemporaryDirectory(prefix="prop15-") as tmp:
        root = Path(tmp) / "proj"
        _project(root, sc)
        now = _drive(root, sc)
        paths = resolve_project(root)
        lines = [orjson.loads(line) for line in paths.routine_ledger.read_bytes().splitlines()]
    event(f"a retry started: {any(e.get('trigger') == 'retry' for e in lines)}")
    event(f"paused: {any(e['type'] == 'occurrence_paused' for e in lines)}")
    found, ref = _accounted(lines, sc, now)
    assert [] == [u for u, n in Counter(found).items() if n > 1], "accounted for twice"
    assert sorted(ref) == sorted(found)
    _check_policies(lines, sc)
