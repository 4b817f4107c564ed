"""Hypothesis: with retries, holds and misses interleaved, every occurrence that becomes due is
accounted for exactly once (SPEC §9, §13).

The scenarios of ``test_policy_properties`` (random cron expressions and zones around DST
transitions, ``missed_run``, ``on_failure``, starting deadlines, failure patterns, releases,
explicit runs at a past ``--now``) gain a random ``policy.retry``; the real run and release
handlers drive a temporary project. Then: each reference occurrence is accounted for once
(retries account for nothing new: they repeat an occurrence already started), every retry
repeats the occurrence of the attempt it names, comes no earlier than its backoff allows and
never past ``attempts``; a retryable failure is followed by its retry, by a
``retry_superseded``, or by nothing yet; and only a failure that is not retried holds.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from specdojo_routine.core import cron_syntax
from specdojo_routine.core.timefmt import parse_instant
from specdojo_routine.store.config import resolve_project
from tests.test_policy_properties import (
    CONFIG,
    JOB,
    _accounted,
    _drive,
    _first_has_occurrence,
    scenarios,
)

RETRIED = ("due", "release", "retry")


@st.composite
def retry_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    sc = draw(scenarios())
    sc["retry"] = {"attempts": draw(st.integers(2, 4)),
                   "delay": draw(st.sampled_from(["30s", "1m", "5m", "2h"])),
                   "backoff": draw(st.sampled_from([1, 1.5, 2])),
                   "max_delay": draw(st.sampled_from(["1m", "1h"]))}
    return sc


def _project(root: Path, sc: dict[str, Any]) -> None:
    (root / ".specdojo").mkdir(parents=True)
    (root / ".specdojo" / "specdojo.config.json").write_bytes(orjson.dumps(CONFIG))
    (root / "routines").mkdir()
    (root / "jobs").mkdir()
    (root / "jobs" / "job-work.yaml").write_text(JOB)
    deadline = f", starting_deadline: {sc['deadline']}" if sc["deadline"] else ""
    r = sc["retry"]
    retry = (f", retry: {{attempts: {r['attempts']}, delay: {r['delay']}, "
             f"backoff: {r['backoff']}, max_delay: {r['max_delay']}}}")
    (root / "routines" / "rtn-prop.yaml").write_text(
        f'id: rtn-prop\ntrigger: {{cron: "{sc["expr"]}", timezone: {sc["zone"]}}}\n'
        f"policy: {{missed_run: {sc['missed_run']}, on_failure: {sc['on_failure']}"
        f"{deadline}{retry}}}\naction: {{kind: job, job: job-work}}\n")


def _wait_s(sc: dict[str, Any], n: int) -> float:
    r = sc["retry"]
    delay, cap = cron_syntax.parse_duration(r["delay"]), cron_syntax.parse_duration(r["max_delay"])
    assert delay is not None and cap is not None
    return float(min(delay * r["backoff"] ** (n - 1), cap))


def _check_retries(lines: list[dict[str, Any]], sc: dict[str, Any]) -> None:
    """Retries repeat their occurrence, respect the backoff and the count; each retryable
    failure is retried or superseded at most once; only a failure not retried holds."""
    starts = {e["attempt_id"]: e for e in lines if e["type"] == "attempt_started"}
    ends = {e["attempt_id"]: e for e in lines if e["type"] == "attempt_ended"}
    followed: Counter[str] = Counter()
    previous: dict[str, Any] | None = None  # the last ended attempt
    held = False
    for e in lines:
        if e["type"] == "attempt_started":
            if e["trigger"] == "retry":
                assert previous is not None and previous["result"] == "failure"
                prior = starts[previous["attempt_id"]]
                first = prior.get("retry_of") or prior["attempt_id"]
                number = prior.get("retry_attempt") or 1
                assert prior["trigger"] in RETRIED
                assert (first, number + 1) == (e["retry_of"], e["retry_attempt"])
                assert e["retry_attempt"] <= sc["retry"]["attempts"]
                assert e["scheduled_for"] == starts[first]["scheduled_for"]
                waited = parse_instant(e["last_run"]) - parse_instant(previous["completed_at"])
                assert waited >= timedelta(seconds=_wait_s(sc, number))
                assert not held, "a held routine is not retried"
                followed[previous["attempt_id"]] += 1
            elif e["trigger"] == "due":
                assert not held, "a held routine starts nothing due"
        elif e["type"] == "retry_superseded":
            assert previous is not None and previous["attempt_id"] == e["attempt_id"]
            followed[e["attempt_id"]] += 1
        elif e["type"] == "attempt_ended":
            previous = e
            start = starts[e["attempt_id"]]
            number = start.get("retry_attempt") or 1
            retried = start["trigger"] in RETRIED and number < sc["retry"]["attempts"]
            if e["result"] == "failure" and sc["on_failure"] == "hold" and not retried \
                    and start["trigger"] != "backfill":
                held = True
            assert start.get("on_failure") == (
                "hold" if sc["on_failure"] == "hold" and not retried else None)
        elif e["type"] == "routine_released":
            held = False
    assert all(n == 1 for n in followed.values()), "a failure retried or dropped twice"
    kinds = {e["type"] for e in lines} | {e.get("trigger") for e in lines}
    event(f"retried: {'retry' in kinds}, superseded: {'retry_superseded' in kinds}")
    failed = sum(e["type"] == "attempt_ended" and e["result"] == "failure" for e in lines)
    event(f"failures: {min(failed, 3)}")
    assert set(followed) <= set(ends)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(sc=retry_scenarios())
def test_with_retries_every_occurrence_is_accounted_for_exactly_once(sc: dict[str, Any]) -> None:
    """Run, coalesced, held or missed: each reference occurrence once; retries on top."""
    assume(_first_has_occurrence(sc))
    with tempfile.TemporaryDirectory(prefix="prop-retry-") as tmp:
        root = Path(tmp) / "proj"
        _project(root, sc)
        now = _drive(root, sc)
        paths = resolve_project(root)
        lines = [orjson.loads(line) for line in paths.routine_ledger.read_bytes().splitlines()]
    found, ref = _accounted(lines, sc, now)
    assert [] == [u for u, n in Counter(found).items() if n > 1], "accounted for twice"
    assert sorted(ref) == sorted(found)
    _check_retries(lines, sc)
