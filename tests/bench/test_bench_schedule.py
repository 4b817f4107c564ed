"""Benchmarks of the due engine against baselines measured in the same run.

Run: ``python -m pytest tests/bench/test_bench_schedule.py -o addopts= -s -q``

1. first run of ``0 0 29 2 *`` (the sparsest schedule): engine vs a minute-by-minute scan of the
   366-day window (the upstream algorithm) - target: engine >= 1000x faster;
2. ``latest`` over a 300-day gap of ``* * * * *``: engine vs the minute scan - ratio reported;
3. 10,000 routines (cron and interval, five time zones, all policies): due_occurrences for every
   one - target < 1 s; ratio vs a loop that only parses each routine's timestamps.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

from specdojo_routine.core import cron_syntax, errors, model, schedule, timefmt

TIMEZONES = ("UTC", "Asia/Tokyo", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe")
RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))


def matcher(expr: str, tzname: str) -> Callable[[datetime], bool]:
    """Does a UTC instant's local wall time match ``expr``? (field sets from croniter.expand)"""
    expanded, _ = croniter.expand(expr)
    sets = [
        set(range(low, high + 1)) if values == ["*"] else {int(v) for v in values}
        for values, (low, high) in zip(expanded, RANGES, strict=True)
    ]
    minutes, hours, days, months, weekdays = sets
    tz = ZoneInfo(tzname)

    def matches(instant: datetime) -> bool:
        wall = instant.astimezone(tz)
        return (
            wall.minute in minutes
            and wall.hour in hours
            and wall.day in days
            and wall.month in months
            and wall.isoweekday() % 7 in weekdays
        )

    return matches


def scan_back(expr: str, tzname: str, current: datetime) -> datetime | None:
    """Baseline for a first run: step back a minute at a time through the 366-day window."""
    matches = matcher(expr, tzname)
    for minutes in range(366 * 24 * 60 + 1):
        instant = current - timedelta(minutes=minutes)
        if matches(instant):
            return instant
    return None


def scan_forward(expr: str, tzname: str, last: datetime, current: datetime) -> list[datetime]:
    """Baseline for missed runs: every minute from last to the current minute."""
    matches = matcher(expr, tzname)
    found, instant = [], last + timedelta(minutes=1)
    while instant <= current:
        if matches(instant):
            found.append(instant)
        instant += timedelta(minutes=1)
    return found


def cron_routine(rid: str, expr: str, tzname: str, policy: model.MissedRun) -> model.Routine:
    return model.Routine(
        id=rid,
        path=f"routines/{rid}.yaml",
        digest="0" * 64,
        trigger=model.CronTrigger(cron=expr, timezone=tzname),
        policy=model.Policy(missed_run=policy),
        actions=(model.SpecdojoAction(args=("status",)),),
    )


def per_call(fn: Callable[[], object], repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - started) / repeat


def test_bench_first_run_of_the_sparsest_schedule() -> None:
    """First run of `0 0 29 2 *`: the engine is >= 1000x faster than the minute scan."""
    now = datetime(2025, 2, 27, 12, 0, tzinfo=UTC)  # the last Feb 29 is 364 days back
    routine = cron_routine("rtn-leap", "0 0 29 2 *", "UTC", model.MissedRun.LATEST)

    def engine() -> list[schedule.Occurrence]:
        return schedule.due_occurrences(routine, last_run=None, last_scheduled_for=None, now=now)

    started = time.perf_counter()
    expected = scan_back("0 0 29 2 *", "UTC", now)
    baseline = time.perf_counter() - started
    ours = per_call(engine, 200)
    ratio = baseline / ours
    print(f"\nfirst run 0 0 29 2 *: minute scan {baseline * 1e3:.1f} ms, "
          f"engine {ours * 1e6:.1f} us, engine is {ratio:,.0f}x faster")
    assert [expected] == [o.scheduled_for for o in engine()]
    assert ratio >= 1000


def test_bench_latest_over_300_days_of_every_minute() -> None:
    """`latest` over a 300-day gap of `* * * * *`: ratio against the minute scan."""
    now = datetime(2026, 8, 7, 8, 0, tzinfo=UTC)
    last = now - timedelta(days=300)
    routine = cron_routine("rtn-minutely", "* * * * *", "Europe/Berlin", model.MissedRun.LATEST)

    def engine() -> list[schedule.Occurrence]:
        return schedule.due_occurrences(
            routine, last_run=None, last_scheduled_for=timefmt.format_ms(last), now=now
        )

    started = time.perf_counter()
    scanned = scan_forward("* * * * *", "Europe/Berlin", last, now)
    baseline = time.perf_counter() - started
    ours = per_call(engine, 200)
    ratio = baseline / ours
    print(f"\nlatest over 300 days of * * * * *: minute scan {baseline * 1e3:.1f} ms "
          f"({len(scanned)} minutes), engine {ours * 1e6:.1f} us, {ratio:,.0f}x faster")
    assert [(scanned[-1], scanned[0])] == [(o.scheduled_for, o.passed_over_since) for o in engine()]
    assert ratio >= 1000


EXPRESSIONS = (
    "0 17 * * 5", "*/15 * * * *", "0 9-17 * * mon-fri", "30 2 * * *", "0 0 1 * *",
    "0 0 29 2 *", "* * * * *", "0 */6 * * *", "45 1 * * 0", "0 0 13 * 5",
)


def selection(count: int, now: datetime) -> list[tuple[model.Routine, str | None]]:
    """A deterministic mix: 30% interval, 70% cron (ten schedules, five zones, all policies).

    Routines last ran up to three days ago, except `all` ones: up to 30 minutes ago, as when
    `run --due` runs every few minutes (the cost of `all` grows with the occurrences it
    returns, about 20 us each); one in ten has never run.
    """
    rng = random.Random(20260807)
    policies = [model.MissedRun.LATEST] * 6 + [model.MissedRun.ALL] * 2 + [model.MissedRun.SKIP]
    out: list[tuple[model.Routine, str | None]] = []
    for i in range(count):
        rid = f"rtn-bench-{i}"
        if rng.random() < 0.3:
            text = rng.choice(["30m", "6h", "1d", "1w"])
            seconds = cron_syntax.parse_interval(text)
            assert seconds is not None
            routine = model.Routine(
                id=rid, path=f"routines/{rid}.yaml", digest="0" * 64,
                interval=model.Interval(text=text, seconds=seconds),
                actions=(model.SpecdojoAction(args=("status",)),),
            )
        else:
            policy = rng.choice(policies)
            routine = cron_routine(rid, rng.choice(EXPRESSIONS), rng.choice(TIMEZONES), policy)
        back = 30 if routine.policy.missed_run is model.MissedRun.ALL else 3 * 24 * 60
        last = now - timedelta(minutes=rng.randint(0, back))
        out.append((routine, None if rng.random() < 0.1 else timefmt.format_ms(last)))
    return out


def test_bench_ten_thousand_routines() -> None:
    """due_occurrences for 10,000 routines takes under a second."""
    now = datetime(2026, 8, 7, 8, 2, tzinfo=UTC)
    routines = selection(10_000, now)

    started = time.perf_counter()
    for _routine, last in routines:
        timefmt.try_parse_instant(last)
        timefmt.try_parse_instant(last)
    baseline = time.perf_counter() - started

    schedule._compile.cache_clear()  # measure cold: every (cron, zone) compiled in this run
    schedule._proto.cache_clear()  # and every cron expression parsed by croniter
    started = time.perf_counter()
    selected, failed = 0, 0
    for routine, last in routines:
        try:
            selected += len(
                schedule.due_occurrences(routine, last_run=last, last_scheduled_for=last, now=now)
            )
        except errors.TooManyMissedOccurrences:
            failed += 1
    ours = time.perf_counter() - started
    print(f"\n10,000 routines: {ours * 1e3:.0f} ms ({selected} occurrences, {failed} over cap); "
          f"parse-only baseline {baseline * 1e3:.1f} ms; ratio {ours / baseline:.0f}x")
    assert selected > 1000
    assert ours < 1.0
