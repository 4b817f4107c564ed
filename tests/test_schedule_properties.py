"""Hypothesis: the due engine agrees with a brute-force reference (minute scan in local time).

The reference is deliberately simple and shares no code with the engine: a hand-written field
matcher, a scan over every naive local minute, then the DST rules of docs/dst.md applied with
zoneinfo round trips (a gap's end is found by stepping forward minute by minute).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from croniter import CroniterBadDateError, croniter
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from specdojo_routine.core import cron_syntax, errors, model, schedule

TIMEZONES = ("America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Tokyo", "UTC")
MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
MINUTE = timedelta(minutes=1)
SPAN = timedelta(hours=26)  # longest last → now span the DST properties use

# --- the reference -------------------------------------------------------------------------


def ref_values(text: str, low: int, high: int, names: list[str], base: int) -> set[int]:
    """The values a cron field selects, per SPEC §4 (weekday 7 is folded to 0 by the caller)."""

    def value(token: str) -> int:
        return names.index(token) + base if token in names else int(token)

    out: set[int] = set()
    for item in text.lower().split(","):
        head, _, step_text = item.partition("/")
        step = int(step_text) if step_text else 1
        if head == "*":
            first, last = low, high
        elif "-" in head:
            first, last = (value(part) for part in head.split("-"))
        else:
            first = value(head)
            last = high if step_text else first
        out.update(range(first, last + 1, step))
    return out


def ref_matcher(expr: str) -> Callable[[datetime], bool]:
    minute, hour, dom, month, dow = expr.split()
    minutes = ref_values(minute, 0, 59, [], 0)
    hours = ref_values(hour, 0, 23, [], 0)
    days = ref_values(dom, 1, 31, [], 0)
    months = ref_values(month, 1, 12, MONTHS, 1)
    weekdays = {v % 7 for v in ref_values(dow, 0, 7, DAYS, 0)}

    def matches(wall: datetime) -> bool:
        return (
            wall.minute in minutes
            and wall.hour in hours
            and wall.day in days
            and wall.month in months
            and wall.isoweekday() % 7 in weekdays
        )

    return matches


def ref_instants(wall: datetime, tz: ZoneInfo, real_time: bool) -> list[datetime]:
    """The DST rules, by round trips: gap → first instant after it (or nothing), overlap."""
    first = wall.replace(tzinfo=tz).astimezone(UTC)
    second = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)

    def local(u: datetime) -> datetime:
        return u.astimezone(tz).replace(tzinfo=None)

    if local(first) != wall and local(second) != wall:  # spring-forward gap
        if real_time:
            return []
        u = min(first, second).replace(second=0)
        while local(u) < wall:
            u += MINUTE
        return [u]
    if first != second and real_time:  # fall-back overlap, hour `*`: both instants
        return [first, second]
    return [first]


def reference(expr: str, tzname: str, low: datetime, high: datetime) -> list[datetime]:
    """Every occurrence in (low, high], scanning every local minute (with 3 h to spare)."""
    tz, matches = ZoneInfo(tzname), ref_matcher(expr)
    real_time = expr.split()[1] == "*"
    wall = low.astimezone(tz).replace(tzinfo=None, second=0, microsecond=0) - timedelta(hours=3)
    stop = high.astimezone(tz).replace(tzinfo=None) + timedelta(hours=3)
    found: set[datetime] = set()
    while wall <= stop:
        if matches(wall):
            found.update(ref_instants(wall, tz, real_time))
        wall += MINUTE
    return sorted(u for u in found if low < u <= high)


# --- strategies ----------------------------------------------------------------------------


def transitions(tzname: str) -> list[datetime]:
    """UTC instants where the zone's offset changes in 2025-2026 (30-minute scan)."""
    tz, found = ZoneInfo(tzname), []
    u = datetime(2025, 1, 1, tzinfo=UTC)
    before = u.astimezone(tz).utcoffset()
    while u.year < 2027:
        u += timedelta(minutes=30)
        offset = u.astimezone(tz).utcoffset()
        if offset != before:
            found.append(u)
        before = offset
    return found


TRANSITIONS = {name: transitions(name) for name in TIMEZONES}


def field(low: int, high: int, names: list[str] = [], base: int = 0) -> st.SearchStrategy[str]:  # noqa: B006
    def show(v: int) -> st.SearchStrategy[str]:
        named = [names[v - base]] if names and 0 <= v - base < len(names) else []
        return st.sampled_from([str(v), *named])

    number = st.integers(low, high)
    value = number.flatmap(show)
    pair = st.tuples(number, number).map(sorted)
    step = st.integers(1, 12)
    item = st.one_of(
        value,
        pair.map(lambda p: f"{p[0]}-{p[1]}"),
        st.tuples(pair, step).map(lambda t: f"{t[0][0]}-{t[0][1]}/{t[1]}"),
        st.tuples(number, step).map(lambda t: f"{t[0]}/{t[1]}"),
        step.map(lambda n: f"*/{n}"),
    )
    return st.one_of(item, st.lists(item, min_size=2, max_size=3).map(",".join))


STAR = st.just("*")
HOURS_NEAR_TRANSITIONS = st.one_of(STAR, field(0, 4), field(0, 23))
ANY_EXPRESSION = st.tuples(
    st.one_of(STAR, field(0, 59)),
    HOURS_NEAR_TRANSITIONS,
    st.one_of(STAR, STAR, field(1, 31)),
    st.one_of(STAR, STAR, field(1, 12, MONTHS, 1)),
    st.one_of(STAR, STAR, field(0, 7, DAYS)),
).map(" ".join)
# Some day-of-month/month pairs never occur ("0 0 30 2 *"); validation rejects those.
EXPRESSIONS = ANY_EXPRESSION.filter(lambda expr: cron_syntax.cron_syntax_error(expr) is None)
LONGEST_MONTH = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30}


@st.composite
def moments(draw: st.DrawFn) -> tuple[str, datetime]:
    """A time zone and an instant within two days of one of its DST transitions."""
    tzname = draw(st.sampled_from(TIMEZONES))
    anchors = TRANSITIONS[tzname] or [datetime(2026, m, 1, tzinfo=UTC) for m in (3, 4, 10, 11)]
    anchor = draw(st.sampled_from(anchors))
    shift = draw(st.integers(-2 * 24 * 60, 2 * 24 * 60))
    seconds = draw(st.sampled_from([0, 0, 30, 59]))
    return tzname, anchor + timedelta(minutes=shift, seconds=seconds)


def routine(expr: str, tzname: str, policy: str) -> model.Routine:
    return model.Routine(
        id="rtn-prop",
        path="routines/rtn-prop.yaml",
        digest="0" * 64,
        trigger=model.CronTrigger(cron=expr, timezone=tzname),
        policy=model.Policy(missed_run=model.MissedRun(policy)),
        actions=(model.SpecdojoAction(args=("status",)),),
    )


def due(expr: str, tzname: str, policy: str, last: datetime, now: datetime) -> list[
    tuple[datetime, datetime | None]
]:
    found = schedule.due_occurrences(
        routine(expr, tzname, policy), last_run=None,
        last_scheduled_for=last.isoformat(), now=now,
    )
    return [(o.scheduled_for, o.passed_over_since) for o in found]


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SPANS = st.integers(0, int(SPAN / MINUTE))

# --- properties ----------------------------------------------------------------------------


@SETTINGS
@given(expr=ANY_EXPRESSION)
def test_only_never_firing_expressions_are_rejected(expr: str) -> None:
    """A generated expression is rejected exactly when no month has one of its days."""
    _, _, dom, month, _ = expr.split()
    days = ref_values(dom, 1, 31, [], 0)
    months = ref_values(month, 1, 12, MONTHS, 1)
    possible = any(day <= LONGEST_MONTH.get(m, 31) for m in months for day in days)
    assert possible == (cron_syntax.cron_syntax_error(expr) is None)


# A "*" inside a list ("*,30"), which croniter's strict check counts for nothing, although
# croniter fires it as the whole field.
STARRED = st.one_of(STAR, field(1, 31), st.tuples(STAR, field(1, 31)).map(",".join))


@SETTINGS
@given(expr=st.tuples(st.just("0 0"), STARRED, st.one_of(
    STAR, field(1, 12), st.tuples(field(1, 12), STAR).map(",".join)), STAR).map(" ".join))
@example("0 0 31 2,4 *")
@example("0 0 30 2 *")
@example("0 0 *,30 2 *")
@example("0 0 30 2,* *")
@example("0 0 31 *,9 *")
@example("0 0 29 2 *")
@example("0 0 31 1-12/2 *")
@example("0 0 31 */2 *")
def test_an_expression_is_rejected_as_never_firing_exactly_when_croniter_never_fires_it(
    expr: str,
) -> None:
    """Checking a cron expression imports no croniter, and its "never occurs"
    verdict is what croniter does with the expression: no next occurrence at all. (croniter's
    ``expand(strict=True)``, which this check once copied, also refused "0 0 *,30 2 *", which
    croniter fires every day of February.)"""
    canon = " ".join(cron_syntax._canonical_field(text, spec)
                     for text, spec in zip(expr.split(), cron_syntax._FIELDS, strict=True))
    try:
        croniter(canon, datetime(2026, 1, 1), day_or=False).get_next(datetime)
        fires = True
    except CroniterBadDateError:
        fires = False
    assert (not fires) == cron_syntax._never_occurs(canon) == (
        "never occurs" in (cron_syntax.cron_syntax_error(expr) or ""))


@SETTINGS
@given(expr=EXPRESSIONS, moment=moments(), span=SPANS)
def test_all_matches_reference(expr: str, moment: tuple[str, datetime], span: int) -> None:
    """`all` returns exactly the reference's occurrences in (last, current minute]."""
    tzname, now = moment
    current = now.replace(second=0)
    last = current - span * MINUTE
    expected = reference(expr, tzname, last, current)
    if len(expected) > schedule.MAX_MISSED:
        with pytest.raises(errors.TooManyMissedOccurrences):
            due(expr, tzname, "all", last, now)
    else:
        assert [(u, None) for u in expected] == due(expr, tzname, "all", last, now)


@SETTINGS
@given(expr=EXPRESSIONS, moment=moments(), span=SPANS)
def test_latest_matches_reference(expr: str, moment: tuple[str, datetime], span: int) -> None:
    """`latest` is the reference's last occurrence, passed_over_since its first (if another)."""
    tzname, now = moment
    current = now.replace(second=0)
    last = current - span * MINUTE
    ref = reference(expr, tzname, last, current)
    expected = [(ref[-1], ref[0] if len(ref) > 1 else None)] if ref else []
    assert expected == due(expr, tzname, "latest", last, now)


@SETTINGS
@given(expr=EXPRESSIONS, moment=moments(), span=SPANS)
def test_skip_matches_reference(expr: str, moment: tuple[str, datetime], span: int) -> None:
    """`skip` is due exactly when the current minute is a reference occurrence."""
    tzname, now = moment
    current = now.replace(second=0)
    last = current - span * MINUTE
    ref = reference(expr, tzname, last, current)
    expected = [(current, None)] if ref and ref[-1] == current else []
    assert expected == due(expr, tzname, "skip", last, now)


@SETTINGS
@given(expr=EXPRESSIONS, moment=moments())
def test_next_occurrence_matches_reference(expr: str, moment: tuple[str, datetime]) -> None:
    """next_occurrence is the reference's first occurrence strictly after now."""
    tzname, now = moment
    horizon = now + SPAN
    ref = reference(expr, tzname, now, horizon)
    found = schedule.next_occurrence(routine(expr, tzname, "latest"), now=now)
    if ref:
        assert ref[0] == found
    else:
        assert found is None or found > horizon


DAY_FIELDS = st.tuples(
    st.one_of(STAR, field(1, 31)),
    st.one_of(STAR, field(1, 12, MONTHS, 1)),
    st.one_of(STAR, field(0, 7, DAYS)),
)


@settings(max_examples=150, deadline=None)
@given(days=DAY_FIELDS)
def test_day_fields_match_reference_over_a_leap_year(days: tuple[str, str, str]) -> None:
    """Day-of-month, month and weekday (ANDed) match the reference on every day of a year."""
    dom, month, dow = days
    expr = f"0 0 {dom} {month} {dow}"
    if cron_syntax.cron_syntax_error(expr) is not None:  # e.g. "0 0 31 2 *" never fires
        return
    last, now = datetime(2027, 3, 1, tzinfo=UTC), datetime(2028, 3, 1, tzinfo=UTC)
    matches = ref_matcher(expr)
    day, expected = last, []
    while day < now:
        day += timedelta(days=1)
        if matches(day.replace(tzinfo=None)):
            expected.append((day, None))
    assert expected == due(expr, "UTC", "all", last, now)


@settings(max_examples=60, deadline=None)
@given(start=st.integers(1, 6), end=st.sampled_from(["sun", "0"]), named=st.booleans(),
       step=st.one_of(st.none(), st.integers(1, 3)))
def test_a_weekday_range_ending_in_sunday_is_monday_to_sunday(
    start: int, end: str, named: bool, step: int | None,
) -> None:
    """In day-of-week, `sun` (or 0) at the end of a range is 7, as `1-7` is: `mon-sun` is
    accepted and fires on the same days as `1-7` (Monday..Sunday), steps included."""
    first = DAYS[start] if named else str(start)
    tail = f"/{step}" if step else ""
    expr, same = f"0 0 * * {first}-{end}{tail}", f"0 0 * * {start}-7{tail}"
    assert None is cron_syntax.cron_syntax_error(expr)
    last, now = datetime(2027, 3, 1, tzinfo=UTC), datetime(2027, 3, 29, tzinfo=UTC)
    assert due(same, "UTC", "all", last, now) == due(expr, "UTC", "all", last, now)


@SETTINGS
@given(expr=EXPRESSIONS, moment=moments(), span=SPANS,
       policy=st.sampled_from(["all", "latest", "skip"]))
def test_a_remembered_next_occurrence_answers_nothing_due_exactly(
    expr: str, moment: tuple[str, datetime], span: int, policy: str,
) -> None:
    """The definitions cache keeps next_after(cursor); a run trusts none_due on it instead of
    iterating the schedule. It says "nothing due" exactly when the engine selects nothing
    under every policy because no occurrence lies in (cursor, current minute] - never when
    something is due."""
    tzname, now = moment
    last = now.replace(second=0) - span * MINUTE
    idle = schedule.none_due(schedule.next_after(expr, tzname, last), now)
    occurs = bool(reference(expr, tzname, last, now.replace(second=0)))
    assert idle == (not occurs)
    if idle:
        assert [] == due(expr, tzname, policy, last, now)
