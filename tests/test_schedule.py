"""Due determination (SPEC §4): cron/interval syntax, policies, the 366-day window and DST."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from specdojo_routine.core import cron_syntax, errors, model, schedule
from specdojo_routine.core.schedule import Occurrence


def cron_routine(
    cron: str, tz: str = "UTC", policy: str = "latest", *, enabled: bool = True
) -> model.Routine:
    return model.Routine(
        id="rtn-test",
        path="routines/rtn-test.yaml",
        digest="0" * 64,
        enabled=enabled,
        trigger=model.CronTrigger(cron=cron, timezone=tz),
        policy=model.Policy(missed_run=model.MissedRun(policy)),
        actions=(model.SpecdojoAction(args=("status",)),),
    )


def interval_routine(text: str = "1d", *, enabled: bool = True) -> model.Routine:
    seconds = cron_syntax.parse_interval(text)
    assert seconds is not None
    return model.Routine(
        id="rtn-test",
        path="routines/rtn-test.yaml",
        digest="0" * 64,
        enabled=enabled,
        interval=model.Interval(text=text, seconds=seconds),
        actions=(model.SpecdojoAction(args=("status",)),),
    )


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def due_times(
    cron: str, tz: str, policy: str, last: str | None, now: str
) -> list[datetime]:
    found = schedule.due_occurrences(
        cron_routine(cron, tz, policy), last_run=None, last_scheduled_for=last, now=utc(now)
    )
    return [o.scheduled_for for o in found]


def all_between(cron: str, tz: str, last: str, now: str) -> list[str]:
    """Every occurrence in (last, now] as UTC ISO strings (policy `all`)."""
    return [t.strftime("%Y-%m-%dT%H:%MZ") for t in due_times(cron, tz, "all", last, now)]


# --- cron syntax ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr",
    [
        "0 17 * * 5",
        "*/15 * * * *",
        "0 9-17/2 * * mon-fri",
        "0 0 1 jan,JUL *",
        "0 0 * * 7",
        "10/20 * * * *",
        "0 0 29 2 *",
        "0 0 13 * 5",
        "5-5 0 * * *",
        " 0  0 * * * ",
    ],
)
def test_valid_cron_has_no_error(expr: str) -> None:
    """SPEC §4 syntax: numbers, *, lists, ranges, steps, names, weekday 7 are accepted."""
    assert None is cron_syntax.cron_syntax_error(expr)


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("* * * * * *", "expected 5 fields, got 6; seconds and year fields are not supported"),
        ("0 0 * *", "expected 5 fields, got 4"),
        ("", "expected 5 fields, got 0"),
        ("@daily", "@ macros are not supported"),
        ("0 0 L * *", 'day-of-month: "L" (L, W, #, ?, H and @ are not supported)'),
        ("0 0 15W * *", "L, W, #, ?, H and @ are not supported"),
        ("0 0 * * 5#2", "L, W, #, ?, H and @ are not supported"),
        ("0 0 ? * *", "L, W, #, ?, H and @ are not supported"),
        ("H * * * *", "L, W, #, ?, H and @ are not supported"),
        ("60 * * * *", 'minute: "60" (60 is out of range 0-59)'),
        ("0 24 * * *", 'hour: "24" (24 is out of range 0-23)'),
        ("0 0 0 * *", "0 is out of range 1-31"),
        ("0 0 * 13 *", "13 is out of range 1-12"),
        ("0 0 * * 8", "8 is out of range 0-7"),
        ("5-1 * * * *", 'range "5-1" starts after it ends'),
        ("*/0 * * * *", "a step must be at least 1"),
        ("0 0 * * abc", 'unknown name "abc"; use sun..sat'),
        ("0 jan * * *", "names are only allowed in the month and day-of-week fields"),
        ("0,,5 * * * *", "expected *, a number, a range a-b, a step /n, or a list of those"),
        ("0 0 31 2 *", "never occurs in the month(s) given"),
    ],
)
def test_invalid_cron_is_explained(expr: str, fragment: str) -> None:
    """Each SPEC §4 restriction is rejected with a message naming the problem."""
    message = cron_syntax.cron_syntax_error(expr)
    assert message is not None
    assert fragment in message


def test_cron_field_count_message_follows_upstream_wording() -> None:
    """The wording follows upstream's `Invalid cron expression: "x" (expected 5 fields)`."""
    assert 'Invalid cron expression: "x" (expected 5 fields, got 1)' == (
        cron_syntax.cron_syntax_error("x")
    )


def test_dom_dow_warning_explains_and_rule() -> None:
    """Both day fields restricted → a warning that SpecDojo ANDs them (Friday the 13th)."""
    warning = cron_syntax.dom_dow_warning("0 0 13 * 5")
    assert warning is not None
    assert "AND" in warning and "Vixie" in warning and "Friday the 13th" in warning


@pytest.mark.parametrize("expr", ["0 0 13 * *", "0 0 * * 5", "0 0 * * *", "not a cron"])
def test_no_dom_dow_warning_when_one_day_field_is_star(expr: str) -> None:
    """No warning when either day field is `*` (or the expression is invalid)."""
    assert None is cron_syntax.dom_dow_warning(expr)


# --- interval syntax -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"), [("30m", 1800), ("6h", 21600), ("1d", 86400), ("2w", 1209600)]
)
def test_parse_interval(text: str, seconds: int) -> None:
    """`<positive int><m|h|d|w>` is converted to seconds."""
    assert seconds == cron_syntax.parse_interval(text)


@pytest.mark.parametrize("text", ["06h", "0h", "5s", "", "1.5h", "h", "-1h", "6 h", "6H"])
def test_parse_interval_rejects(text: str) -> None:
    """Leading zeros, zero, other units and malformed text are invalid."""
    assert None is cron_syntax.parse_interval(text)


def test_interval_syntax_error_uses_upstream_wording() -> None:
    """The message is upstream's `Invalid interval: "x". Use <positive integer><unit> …`."""
    assert (
        'Invalid interval: "06h". Use <positive integer><unit> with unit m|h|d|w '
        "(e.g. 30m, 6h, 1d, 1w)"
    ) == cron_syntax.interval_syntax_error("06h")


def test_interval_syntax_error_none_for_valid_and_message_for_non_string() -> None:
    """A valid interval has no error; a non-string value has one."""
    assert (None, True) == (
        cron_syntax.interval_syntax_error("6h"),
        cron_syntax.interval_syntax_error(6) is not None,
    )


# --- interval due --------------------------------------------------------------------------


def test_interval_due_at_exactly_the_interval() -> None:
    """`1d` is due when exactly 24 h have passed (inclusive), with scheduled_for = now."""
    now = utc("2026-08-07T08:00:00Z")
    found = schedule.due_occurrences(
        interval_routine("1d"), last_run="2026-08-06T08:00:00Z", last_scheduled_for=None, now=now
    )
    assert [Occurrence(routine_id="rtn-test", scheduled_for=now, trigger="due",
                       due_at=now)] == found


def test_interval_not_due_one_second_early() -> None:
    """`1d` is not due at 24 h − 1 s."""
    found = schedule.due_occurrences(
        interval_routine("1d"),
        last_run="2026-08-06T08:00:00Z",
        last_scheduled_for=None,
        now=utc("2026-08-07T07:59:59Z"),
    )
    assert [] == found


@pytest.mark.parametrize("last_run", [None, "", "yesterday", "2026-13-45T00:00:00Z"])
def test_interval_due_without_parsable_last_run(last_run: str | None) -> None:
    """No last_run, or an unparsable one, means due."""
    now = utc("2026-08-07T08:00:00Z")
    found = schedule.due_occurrences(
        interval_routine("1w"), last_run=last_run, last_scheduled_for=None, now=now
    )
    assert [now] == [o.scheduled_for for o in found]


def test_next_interval_due_is_last_run_plus_interval() -> None:
    """next_interval_due = last_run + interval."""
    assert utc("2026-08-07T14:02:00Z") == schedule.next_interval_due(
        interval_routine("6h"), last_run="2026-08-07T08:02:00Z", now=utc("2026-08-07T09:00:00Z")
    )


def test_next_interval_due_is_now_when_never_run() -> None:
    """Without a last_run the routine is due now."""
    now = utc("2026-08-07T09:00:00Z")
    assert now == schedule.next_interval_due(interval_routine("6h"), last_run=None, now=now)


# --- selection: disabled / explicit --------------------------------------------------------


def test_disabled_routine_is_never_due() -> None:
    """A disabled routine is not selected by --due."""
    found = schedule.due_occurrences(
        cron_routine("* * * * *", enabled=False),
        last_run=None,
        last_scheduled_for=None,
        now=utc("2026-08-07T08:00:00Z"),
    )
    assert [] == found


def test_explicit_run_selects_disabled_routine_now() -> None:
    """`run --id` selects even a disabled routine, scheduled_for = now, trigger `id`."""
    now = utc("2026-08-07T08:02:31.250Z")
    found = schedule.due_occurrences(
        cron_routine("0 0 1 1 *", enabled=False),
        last_run=None,
        last_scheduled_for="2026-08-07T08:00:00.000Z",
        now=now,
        explicit=True,
    )
    assert [Occurrence(routine_id="rtn-test", scheduled_for=now, trigger="id")] == found


def test_explicit_run_of_cron_routine_names_what_it_passes_over() -> None:
    """SPEC §4: `run --id` moves last_scheduled_for to now, consuming the occurrences after
    the previous one; passed_over_since names the earliest (none when nothing is consumed)."""
    now = utc("2026-08-07T08:02:31.250Z")
    hourly = cron_routine("0 * * * *")
    found = schedule.due_occurrences(hourly, last_run=None, now=now, explicit=True,
                                     last_scheduled_for="2026-08-07T05:00:00.000Z")
    assert [(now, utc("2026-08-07T06:00:00Z"))] == [
        (o.scheduled_for, o.passed_over_since) for o in found]
    found = schedule.due_occurrences(hourly, last_run=None, now=now, explicit=True,
                                     last_scheduled_for="2026-08-07T08:00:00.000Z")
    assert [None] == [o.passed_over_since for o in found]


def test_explicit_run_of_interval_routine_not_due() -> None:
    """An interval routine that is not due is still selected explicitly."""
    now = utc("2026-08-07T08:00:00Z")
    found = schedule.due_occurrences(
        interval_routine("1w"), last_run="2026-08-07T07:00:00Z", last_scheduled_for=None,
        now=now, explicit=True,
    )
    assert [("id", now)] == [(o.trigger, o.scheduled_for) for o in found]


# --- cron semantics ------------------------------------------------------------------------


def test_worked_example_tokyo_friday_17() -> None:
    """SPEC §4: `0 17 * * 5` Asia/Tokyo, last Thu 08:00Z, now Fri 08:02Z → Fri 08:00Z only."""
    found = schedule.due_occurrences(
        cron_routine("0 17 * * 5", "Asia/Tokyo"),
        last_run="2026-08-06T08:02:00Z",
        last_scheduled_for="2026-08-06T08:00:00.000Z",
        now=utc("2026-08-07T08:02:00Z"),
    )
    expected = Occurrence(
        routine_id="rtn-test", scheduled_for=utc("2026-08-07T08:00:00Z"), trigger="due"
    )
    assert [expected] == found


def test_dom_and_dow_are_anded() -> None:
    """`0 0 13 * 5` fires only on Fridays the 13th (2026: Feb, Mar, Nov)."""
    assert ["2026-02-13T00:00Z", "2026-03-13T00:00Z", "2026-11-13T00:00Z"] == all_between(
        "0 0 13 * 5", "UTC", "2026-01-01T00:00:00Z", "2026-12-31T00:00:00Z"
    )


@pytest.mark.parametrize("dow", ["7", "0", "sun", "SUN", "6-7", "sat-sun", "6-0"])
def test_weekday_seven_is_sunday(dow: str) -> None:
    """Weekday 7 (like 0 and `sun`) is Sunday; 2026-08-09 is a Sunday."""
    routine = cron_routine(f"0 12 * * {dow}")
    first = schedule.next_occurrence(routine, now=utc("2026-08-07T00:00:00Z"))
    expected = ("2026-08-08T12:00:00+00:00" if dow in ("6-7", "sat-sun", "6-0")
                else "2026-08-09T12:00:00+00:00")
    assert utc(expected) == first


def test_month_and_weekday_names_equal_numbers() -> None:
    """`0 6 * feb,mar mon` means the same as `0 6 * 2,3 1`."""
    last, now = "2026-01-01T00:00:00Z", "2026-12-31T00:00:00Z"
    named = all_between("0 6 * feb,mar mon", "UTC", last, now)
    assert all_between("0 6 * 2,3 1", "UTC", last, now) == named
    assert 9 == len(named)


def test_start_step_runs_from_start_to_max() -> None:
    """`a/n` = from a to the field's maximum by n: `10/20` is minutes 10, 30, 50."""
    assert ["2026-08-07T08:10Z", "2026-08-07T08:30Z", "2026-08-07T08:50Z"] == all_between(
        "10/20 * * * *", "UTC", "2026-08-07T08:00:00Z", "2026-08-07T08:59:00Z"
    )


def test_start_step_in_month_field() -> None:
    """`2/5` in the month field is Feb, Jul, Dec."""
    assert ["2026-02-01T00:00Z", "2026-07-01T00:00Z", "2026-12-01T00:00Z"] == all_between(
        "0 0 1 2/5 *", "UTC", "2026-01-01T00:00:00Z", "2026-12-31T00:00:00Z"
    )


def test_range_step() -> None:
    """`a-b/n`: `0 9-17/4 * * *` fires at 09, 13, 17."""
    assert ["2026-08-07T09:00Z", "2026-08-07T13:00Z", "2026-08-07T17:00Z"] == all_between(
        "0 9-17/4 * * *", "UTC", "2026-08-07T00:00:00Z", "2026-08-07T23:59:00Z"
    )


def test_equal_range_is_a_single_value() -> None:
    """`5-5` is minute 5 only (croniter alone would read it as every minute)."""
    assert ["2026-08-07T08:05Z"] == all_between(
        "5-5 8 * * *", "UTC", "2026-08-07T00:00:00Z", "2026-08-07T23:59:00Z"
    )


def test_first_run_takes_only_the_most_recent() -> None:
    """Without last_scheduled_for only the most recent occurrence is due (no coalescing)."""
    found = schedule.due_occurrences(
        cron_routine("0 * * * *", policy="all"),
        last_run=None,
        last_scheduled_for=None,
        now=utc("2026-08-07T08:59:59Z"),
    )
    assert [(utc("2026-08-07T08:00:00Z"), None)] == [
        (o.scheduled_for, o.passed_over_since) for o in found
    ]


@pytest.mark.parametrize("bad", ["", "garbage", "2026-02-30T00:00:00Z"])
def test_unparsable_last_scheduled_for_is_a_first_run(bad: str) -> None:
    """An unparsable last_scheduled_for is treated like none (most recent only)."""
    found = schedule.due_occurrences(
        cron_routine("0 * * * *"), last_run=None, last_scheduled_for=bad,
        now=utc("2026-08-07T08:30:00Z"),
    )
    assert [(utc("2026-08-07T08:00:00Z"), None)] == [
        (o.scheduled_for, o.passed_over_since) for o in found
    ]


def test_latest_records_earliest_passed_over() -> None:
    """`latest` runs the most recent and records the earliest coalesced occurrence."""
    found = schedule.due_occurrences(
        cron_routine("0 * * * *"),
        last_run=None,
        last_scheduled_for="2026-08-07T03:00:00.000Z",
        now=utc("2026-08-07T08:30:00Z"),
    )
    assert [(utc("2026-08-07T08:00:00Z"), utc("2026-08-07T04:00:00Z"))] == [
        (o.scheduled_for, o.passed_over_since) for o in found
    ]


def test_latest_with_nothing_coalesced_has_no_passed_over() -> None:
    """When only one occurrence is due, passed_over_since is None."""
    found = schedule.due_occurrences(
        cron_routine("0 * * * *"),
        last_run=None,
        last_scheduled_for="2026-08-07T07:00:00.000Z",
        now=utc("2026-08-07T08:30:00Z"),
    )
    assert [None] == [o.passed_over_since for o in found]


def test_nothing_due_after_last_scheduled_for() -> None:
    """An occurrence already scheduled is not due again."""
    assert [] == due_times(
        "0 * * * *", "UTC", "latest", "2026-08-07T08:00:00.000Z", "2026-08-07T08:59:00Z"
    )


def test_all_is_oldest_first() -> None:
    """`all` returns every missed occurrence, oldest first."""
    assert ["2026-08-07T06:00Z", "2026-08-07T07:00Z", "2026-08-07T08:00Z"] == all_between(
        "0 * * * *", "UTC", "2026-08-07T05:00:00Z", "2026-08-07T08:10:00Z"
    )


def test_all_accepts_exactly_1000() -> None:
    """`all` with exactly 1000 missed occurrences returns them all."""
    now = utc("2026-08-07T08:00:00Z")
    last = (now - timedelta(minutes=1000)).isoformat()
    assert 1000 == len(due_times("* * * * *", "UTC", "all", last, now.isoformat()))


def test_all_over_1000_raises() -> None:
    """`all` with 1001 missed occurrences fails the routine with the upstream message."""
    now = utc("2026-08-07T08:00:00Z")
    last = (now - timedelta(minutes=1001)).isoformat()
    with pytest.raises(errors.TooManyMissedOccurrences) as caught:
        due_times("* * * * *", "UTC", "all", last, now.isoformat())
    assert "Too many missed cron occurrences for rtn-test" == str(caught.value)


def test_latest_has_no_cap() -> None:
    """`latest` over 1001 missed occurrences does not raise."""
    now = utc("2026-08-07T08:00:00Z")
    last = (now - timedelta(minutes=1001)).isoformat()
    assert [now] == due_times("* * * * *", "UTC", "latest", last, now.isoformat())


def test_latest_over_300_days_is_direct_and_fast() -> None:
    """`latest` over a 300-day gap of `* * * * *` is computed directly (well under 50 ms)."""
    now = utc("2026-08-07T08:00:00Z")
    started = time.perf_counter()
    found = schedule.due_occurrences(
        cron_routine("* * * * *"), last_run=None,
        last_scheduled_for=(now - timedelta(days=300)).isoformat(), now=now,
    )
    elapsed = time.perf_counter() - started
    since = now - timedelta(days=300) + timedelta(minutes=1)
    assert [(now, since)] == [(o.scheduled_for, o.passed_over_since) for o in found]
    assert elapsed < 0.05


def test_skip_runs_when_current_minute_matches() -> None:
    """`skip`: due when the current minute itself matches (even mid-minute)."""
    assert [utc("2026-08-07T08:00:00Z")] == due_times(
        "0 * * * *", "UTC", "skip", "2026-08-07T05:00:00Z", "2026-08-07T08:00:42Z"
    )


def test_skip_drops_missed_occurrences() -> None:
    """`skip`: nothing is due when the current minute does not match."""
    assert [] == due_times(
        "0 * * * *", "UTC", "skip", "2026-08-07T05:00:00Z", "2026-08-07T08:01:00Z"
    )


def test_skip_not_twice_in_the_same_minute() -> None:
    """`skip`: the current minute is not due again once it is last_scheduled_for."""
    assert [] == due_times(
        "0 * * * *", "UTC", "skip", "2026-08-07T08:00:00.000Z", "2026-08-07T08:00:30Z"
    )


def test_skip_first_run_only_on_a_matching_minute() -> None:
    """`skip` on a first run also needs the current minute to match."""
    assert [] == due_times("0 * * * *", "UTC", "skip", None, "2026-08-07T08:30:00Z")


def test_window_includes_occurrence_exactly_366_days_old() -> None:
    """An occurrence exactly 366 days before the current minute is a candidate."""
    assert [utc("2024-02-29T00:00:00Z")] == due_times(
        "0 0 29 2 *", "UTC", "latest", None, "2025-03-01T00:00:59Z"
    )


def test_window_excludes_occurrence_366_days_and_a_minute_old() -> None:
    """An occurrence 366 days and one minute old is outside the window."""
    assert [] == due_times("0 0 29 2 *", "UTC", "latest", None, "2025-03-01T00:01:00Z")


def test_window_bounds_all_after_an_old_last_scheduled_for() -> None:
    """`all` only reaches back 366 days even when last_scheduled_for is older."""
    found = due_times("0 0 1 * *", "UTC", "all", "2020-01-01T00:00:00Z", "2026-08-07T00:00:00Z")
    assert (utc("2025-09-01T00:00:00Z"), 12) == (found[0], len(found))


def test_cron_scheduled_for_is_a_whole_utc_minute() -> None:
    """A cron occurrence is aware UTC with zero seconds, whatever `now` carries."""
    (found,) = due_times("* * * * *", "Asia/Tokyo", "latest", None, "2026-08-07T08:02:59.999Z")
    assert (UTC, 0, 0, "2026-08-07T08:02") == (
        found.tzinfo, found.second, found.microsecond, found.strftime("%Y-%m-%dT%H:%M"),
    )


def test_next_occurrence_is_strictly_after_now() -> None:
    """next_occurrence skips an occurrence at exactly `now`."""
    assert utc("2026-08-07T09:00:00Z") == schedule.next_occurrence(
        cron_routine("0 * * * *"), now=utc("2026-08-07T08:00:00Z")
    )


def test_next_occurrence_none_for_interval() -> None:
    """Interval routines have no cron occurrence."""
    assert None is schedule.next_occurrence(interval_routine(), now=utc("2026-08-07T08:00:00Z"))


# --- DST (the worked examples of docs/dst.md) ----------------------------------------------


@pytest.mark.parametrize(
    ("cron", "tz", "last", "now", "expected"),
    [
        # New York spring forward 2026-03-08: 02:00 EST → 03:00 EDT (07:00Z).
        ("30 2 * * *", "America/New_York", "2026-03-08T05:00Z", "2026-03-08T09:00Z",
         ["2026-03-08T07:00Z"]),
        ("0,30 2 * * *", "America/New_York", "2026-03-08T05:00Z", "2026-03-08T09:00Z",
         ["2026-03-08T07:00Z"]),
        ("0 2,3 * * *", "America/New_York", "2026-03-08T05:00Z", "2026-03-08T09:00Z",
         ["2026-03-08T07:00Z"]),
        ("30 * * * *", "America/New_York", "2026-03-08T05:00Z", "2026-03-08T09:00Z",
         ["2026-03-08T05:30Z", "2026-03-08T06:30Z", "2026-03-08T07:30Z", "2026-03-08T08:30Z"]),
        # New York fall back 2026-11-01: 02:00 EDT → 01:00 EST (06:00Z); 01:xx happens twice.
        ("30 1 * * *", "America/New_York", "2026-11-01T04:00Z", "2026-11-01T08:00Z",
         ["2026-11-01T05:30Z"]),
        ("30 * * * *", "America/New_York", "2026-11-01T04:00Z", "2026-11-01T08:00Z",
         ["2026-11-01T04:30Z", "2026-11-01T05:30Z", "2026-11-01T06:30Z", "2026-11-01T07:30Z"]),
        # Berlin spring forward 2026-03-29: 02:00 CET → 03:00 CEST (01:00Z).
        ("30 2 * * *", "Europe/Berlin", "2026-03-28T23:00Z", "2026-03-29T03:00Z",
         ["2026-03-29T01:00Z"]),
        ("30 * * * *", "Europe/Berlin", "2026-03-28T23:00Z", "2026-03-29T03:00Z",
         ["2026-03-28T23:30Z", "2026-03-29T00:30Z", "2026-03-29T01:30Z", "2026-03-29T02:30Z"]),
        # Berlin fall back 2026-10-25: 03:00 CEST → 02:00 CET (01:00Z); 02:xx happens twice.
        ("30 2 * * *", "Europe/Berlin", "2026-10-24T23:00Z", "2026-10-25T03:00Z",
         ["2026-10-25T00:30Z"]),
        ("30 * * * *", "Europe/Berlin", "2026-10-24T23:00Z", "2026-10-25T03:00Z",
         ["2026-10-24T23:30Z", "2026-10-25T00:30Z", "2026-10-25T01:30Z", "2026-10-25T02:30Z"]),
        # Lord Howe spring forward 2026-10-04: 02:00 +10:30 → 02:30 +11 (15:30Z), 30 minutes.
        ("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T14:00Z", "2026-10-03T17:00Z",
         ["2026-10-03T15:30Z"]),
        ("15 * * * *", "Australia/Lord_Howe", "2026-10-03T14:00Z", "2026-10-03T17:00Z",
         ["2026-10-03T14:45Z", "2026-10-03T16:15Z"]),
        # Lord Howe fall back 2026-04-05: 02:00 +11 → 01:30 +10:30 (15:00Z); 01:30-01:59 twice.
        ("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T13:00Z", "2026-04-04T17:00Z",
         ["2026-04-04T14:45Z"]),
        ("45 * * * *", "Australia/Lord_Howe", "2026-04-04T13:00Z", "2026-04-04T17:00Z",
         ["2026-04-04T13:45Z", "2026-04-04T14:45Z", "2026-04-04T15:15Z", "2026-04-04T16:15Z"]),
    ],
)
def test_dst_worked_examples(
    cron: str, tz: str, last: str, now: str, expected: list[str]
) -> None:
    """The DST rules of docs/dst.md: gap → once after it, overlap → once (fixed hour) or both."""
    assert expected == all_between(cron, tz, last, now)


def test_all_across_the_fall_back_instant_with_hour_star() -> None:
    """Every minute across 06:00Z (01:00 EST): 01:59 EDT and 01:00 EST both fire."""
    assert ["2025-11-02T05:59Z", "2025-11-02T06:00Z"] == all_between(
        "* * * * *", "America/New_York", "2025-11-02T05:58:00Z", "2025-11-02T06:00:00Z"
    )


def test_gap_slot_is_latest_at_the_first_instant_after_the_gap() -> None:
    """`latest` picks the gap slot (02:30 → 03:00 EDT) when asked at 03:05 EDT."""
    assert [utc("2026-03-08T07:00:00Z")] == due_times(
        "30 2 * * *", "America/New_York", "latest", "2026-03-07T07:30:00Z", "2026-03-08T07:05:00Z"
    )


def test_latest_in_second_pass_of_overlap_with_hour_star() -> None:
    """Hour `*`: at 01:40 EST (second pass) the latest is 01:30 EST, not 01:59 EDT."""
    assert [utc("2026-11-01T06:30:00Z")] == due_times(
        "30,59 * * * *", "America/New_York", "latest", "2026-11-01T05:00:00Z",
        "2026-11-01T06:40:00Z",
    )


def test_next_occurrence_across_spring_forward_gap() -> None:
    """next_occurrence of `30 2 * * *` on the gap day is 03:00 EDT."""
    assert utc("2026-03-08T07:00:00Z") == schedule.next_occurrence(
        cron_routine("30 2 * * *", "America/New_York"), now=utc("2026-03-08T06:59:00Z")
    )


def test_next_occurrence_hour_star_skips_the_gap() -> None:
    """next_occurrence of `30 * * * *` from 01:45 EST is 03:30 EDT (02:30 does not exist)."""
    assert utc("2026-03-08T07:30:00Z") == schedule.next_occurrence(
        cron_routine("30 * * * *", "America/New_York"), now=utc("2026-03-08T06:45:00Z")
    )
