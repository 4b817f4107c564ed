"""The §9 decisions over a 300-day gap of ``* * * * *`` cost what today's ``latest`` costs.

Run: ``python -m pytest tests/bench/test_bench_policy.py -o addopts= -s -q``

Baseline, measured in the same run: ``schedule.due_occurrences`` under ``latest`` (computed
directly, ~0.1 ms). Measured: the same selection plus :func:`policy.classify` with a starting
deadline (the newest occurrence is missed, ``passed_over_since`` the earliest) and on hold (one
``occurrence_held``). Target: within 3x of the baseline, i.e. no minute is enumerated (a minute
scan of the gap takes ~0.5 s). Also reports one real ``run --due`` of the held routine
(lock, fold, append with fsync, publish) on a temporary project.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import orjson

from specdojo_routine.app import handlers
from specdojo_routine.core import model, policy, schedule, timefmt
from specdojo_routine.store.config import resolve_project
from tests.bench.test_bench_schedule import cron_routine, per_call

NOW = datetime(2026, 8, 7, 8, 0, 30, tzinfo=UTC)
LAST = NOW.replace(second=0) - timedelta(days=300)
ROUTINE = cron_routine("rtn-minutely", "* * * * *", "Europe/Berlin", model.MissedRun.LATEST)
STATE = {"status": "failure", "last_run": timefmt.format_s(LAST),
         "last_scheduled_for": timefmt.format_ms(LAST)}


def _due(routine: model.Routine) -> list[schedule.Occurrence]:
    return schedule.due_occurrences(routine, last_run=STATE["last_run"],
                                    last_scheduled_for=STATE["last_scheduled_for"], now=NOW)


def _decide(routine: model.Routine, state: dict[str, object]) -> list[policy.Decision]:
    return [policy.classify(routine, state, occ, NOW) for occ in _due(routine)]


def test_bench_deadline_and_hold_over_300_days_of_every_minute() -> None:
    """Deadline and hold decisions over 300 days of minutes: within 3x of today's latest."""
    deadline = attrs.evolve(ROUTINE, policy=model.Policy(
        starting_deadline=model.Duration(text="10s", seconds=10)))
    held_state = {**STATE, "held": True, "hold_attempt_id": "att-1"}
    baseline = per_call(lambda: _due(ROUTINE), 300)
    missed = per_call(lambda: _decide(deadline, STATE), 300)
    held = per_call(lambda: _decide(ROUTINE, held_state), 300)
    print(f"\n300 days of * * * * *: latest {baseline * 1e6:.0f} us; with a deadline "
          f"{missed * 1e6:.0f} us ({missed / baseline:.2f}x); on hold {held * 1e6:.0f} us "
          f"({held / baseline:.2f}x)")
    [miss] = _decide(deadline, STATE)
    assert ("miss", LAST + timedelta(minutes=1), 30) == (
        miss.verdict, miss.occurrence.passed_over_since, miss.late_by_s)
    assert ["hold"] == [d.verdict for d in _decide(ROUTINE, held_state)]
    assert missed < 3 * baseline and held < 3 * baseline


def test_bench_one_held_run_over_a_300_day_gap(tmp_path: Path) -> None:
    """A real `run --due` of a held routine after 300 days appends one occurrence_held."""
    root = tmp_path / "p"
    (root / ".specdojo").mkdir(parents=True)
    (root / ".specdojo" / "specdojo.config.json").write_bytes(orjson.dumps({
        "version": 1, "projects": {"demo": {"routines_path": "r", "jobs_path": "j",
                                            "execution_path": "e"}}}))
    (root / "r").mkdir()
    (root / "j").mkdir()
    (root / "r" / "rtn-m.yaml").write_text(
        'id: rtn-m\ntrigger: {cron: "* * * * *", timezone: Europe/Berlin}\n'
        "policy: {on_failure: hold}\naction: {kind: specdojo, args: [x]}\n")
    paths = resolve_project(root)
    env = {"SPECDOJO_CLI": "false", "PATH": "/usr/bin:/bin"}
    handlers.run(paths, now=LAST, env=env)  # fails: the routine is held
    started = time.perf_counter()
    report = handlers.run(paths, now=NOW, env=env)
    elapsed = time.perf_counter() - started
    print(f"\nrun --due of a held routine after 300 days: {elapsed * 1e3:.1f} ms "
          f"({len(report.held)} occurrence_held)")
    assert (1, [], LAST + timedelta(minutes=1)) == (
        len(report.held), report.results, report.held[0].occurrence.passed_over_since)
