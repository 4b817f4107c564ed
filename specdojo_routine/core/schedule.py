"""Due determination (SPEC §4): DST rules and due occurrences (pure).

Cron expressions are checked (5 fields, SpecDojo's restrictions) and rewritten into a
canonical form by :mod:`.cron_syntax`, which croniter iterates as *naive local wall-clock
slots*; both are loaded where a schedule is first built. Each slot is then mapped to UTC
instants by the DST rules of docs/dst.md:

- hour field other than a literal ``*``: a slot in a spring-forward gap fires once, at the
  first instant after the gap; a slot in a fall-back overlap fires once, at its first instant;
- hour field ``*``: real time - a slot in a gap does not fire, a slot in an overlap fires at
  both of its instants.

Slots landing on the same instant fire once. Nothing here reads the clock or the disk.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal
from zoneinfo import ZoneInfo

import attrs

if TYPE_CHECKING:  # imported where a schedule is iterated: checking one needs no croniter
    from croniter import croniter

from specdojo_routine.core import errors, model, timefmt

# --- occurrences -------------------------------------------------------------------------------

MAX_MISSED = 1000  # `missed_run: all` fails the routine above this many occurrences
WINDOW = timedelta(days=366)  # candidates are at most this old (exactly this old is inside)
_MINUTE = timedelta(minutes=1)
_TICK = timedelta(microseconds=1)


@attrs.frozen(kw_only=True)
class Occurrence:
    """One selected run of a routine."""

    routine_id: str
    scheduled_for: datetime  # aware UTC; whole minutes for cron
    trigger: Literal["due", "id", "release", "backfill", "retry"]
    passed_over_since: datetime | None = None  # `latest`: earliest occurrence coalesced
    #: interval routines: when the interval elapsed (anchor + interval), None if never run
    due_at: datetime | None = None


# compared and hashed by identity: _compile makes one per schedule
@attrs.frozen(eq=False, repr=False)
class _Cron:
    proto: croniter[datetime]  # iterates naive local wall-clock slots; copied before use
    tz: ZoneInfo
    real_time: bool  # the hour field is a literal "*"


@functools.lru_cache(maxsize=4096)
def _compile(expr: str, timezone: str) -> _Cron:
    from specdojo_routine.core.cron_syntax import _canonical  # where a schedule is first built

    return _Cron(_proto(_canonical(expr)), ZoneInfo(timezone), expr.split()[1] == "*")


@functools.lru_cache(maxsize=4096)
def _proto(canonical: str) -> croniter[datetime]:
    """One croniter per canonical expression, whatever the zone (it iterates naive slots, and
    every use copies it): croniter's parse is most of what a new schedule costs."""
    return _croniter()(canonical, datetime(2000, 1, 1), ret_type=datetime, day_or=False)


def _croniter() -> type[croniter[datetime]]:
    """croniter's class, imported where a schedule is first iterated: checking an expression
    needs none, and a run whose next occurrences are remembered (the definitions cache)
    iterates nothing. croniter asks ``platform.architecture()`` at import, which runs
    ``file`` on the interpreter; that cost is accepted rather than patched from here."""
    from croniter import croniter

    return croniter


def _offset(tz: ZoneInfo, wall: datetime) -> timedelta:
    offset = tz.utcoffset(wall)
    assert offset is not None
    return offset


def _local(cron: _Cron, instant: datetime) -> datetime:
    """The naive local wall-clock time of a UTC instant."""
    return instant.astimezone(cron.tz).replace(tzinfo=None, fold=0)


def _overlap(cron: _Cron, wall: datetime) -> timedelta:
    """How long ``wall`` is repeated by a fall-back overlap (zero when it is not)."""
    first, second = _offset(cron.tz, wall.replace(fold=0)), _offset(cron.tz, wall.replace(fold=1))
    return max(timedelta(0), first - second)


def _instants(cron: _Cron, slot: datetime) -> tuple[datetime, ...]:
    """The UTC instants at which a naive local slot fires, by the DST rules."""
    first = _offset(cron.tz, slot)  # offset before a transition
    second = _offset(cron.tz, slot.replace(fold=1))  # offset after it
    if first == second:
        return ((slot - first).replace(tzinfo=UTC),)
    if first > second:  # fall-back overlap: the wall time happens twice
        once = (slot - first).replace(tzinfo=UTC)
        return (once, (slot - second).replace(tzinfo=UTC)) if cron.real_time else (once,)
    if cron.real_time:  # spring-forward gap: the wall time does not exist
        return ()
    return (_gap_end(cron.tz, slot - second, slot - first),)


def _gap_end(tz: ZoneInfo, before: datetime, after: datetime) -> datetime:
    """The transition instant (first instant after the gap), between naive-UTC bounds."""
    low, high = before.replace(tzinfo=UTC), after.replace(tzinfo=UTC)
    old = low.astimezone(tz).utcoffset()  # invariant: offset(low) == old != offset(high)
    while high - low > timedelta(seconds=1):
        mid = (low + (high - low) // 2).replace(microsecond=0)
        low, high = (mid, high) if mid.astimezone(tz).utcoffset() == old else (low, mid)
    return high


def _slots(cron: _Cron, start: datetime, *, backwards: bool) -> Iterator[datetime]:
    """Naive slots strictly before (or after) the minute of ``start``, nearest first."""
    from croniter import CroniterBadDateError  # loaded by _compile already

    it = copy.copy(cron.proto)
    it.set_current(start, force=True)
    step = it.get_prev if backwards else it.get_next
    try:
        while True:
            yield step(datetime)
    except CroniterBadDateError:  # nothing within croniter's search horizon (50 years)
        return
    except (ValueError, OverflowError):  # past year 9999 (dateutil, datetime): it ends there
        return


def _start_after(cron: _Cron, low: datetime) -> datetime:
    """Where to start walking forward so every slot with an instant after ``low`` is seen."""
    wall = _local(cron, low)
    overlap = _overlap(cron, wall)
    # Without an overlap, the slot at wall's own minute fires at or before `low`: skip it.
    return wall - overlap - _MINUTE if overlap else wall


def _latest(cron: _Cron, low: datetime, high: datetime) -> datetime | None:
    """The last occurrence in ``(low, high]``, found directly (walking back from ``high``)."""
    best = _last_until(cron, high)  # the walk back never depends on `low`: only the filter does
    return best if best is not None and best > low else None


@functools.lru_cache(maxsize=8192)  # routines share schedules; `high` is this run's minute
def _last_until(cron: _Cron, high: datetime) -> datetime | None:
    """The last occurrence at or before ``high`` (within croniter's search horizon)."""
    wall = _local(cron, high)
    best: datetime | None = None
    for slot in _slots(cron, wall + _overlap(cron, wall) + _MINUTE, backwards=True):
        instants = _instants(cron, slot)
        for u in instants:
            if u <= high and (best is None or u > best):
                best = u
        # The latest instant of a slot never decreases with the slot, so once a slot lies
        # wholly at or before `high`, no earlier slot can beat what we have.
        if instants and max(instants) <= high:
            return best
    return best


def _earliest(cron: _Cron, low: datetime, high: datetime | None) -> datetime | None:
    """The first occurrence in ``(low, high]`` (no upper bound when ``high`` is None)."""
    best: datetime | None = None
    for slot in _slots(cron, _start_after(cron, low), backwards=False):
        instants = _instants(cron, slot)
        for u in instants:
            if low < u and (high is None or u <= high) and (best is None or u < best):
                best = u
        if instants and min(instants) > low:
            return best
    return best


def _between(cron: _Cron, low: datetime, high: datetime, cap: int) -> list[datetime]:
    """Every occurrence in ``(low, high]``, oldest first; stops once more than ``cap``."""
    stop = _local(cron, high)
    stop += _overlap(cron, stop)
    found: set[datetime] = set()
    for slot in _slots(cron, _start_after(cron, low), backwards=False):
        if slot > stop or len(found) > cap:
            break
        found.update(u for u in _instants(cron, slot) if low < u <= high)
    return sorted(found)


def due_occurrences(
    routine: model.Routine,
    *,
    last_run: str | None,
    last_scheduled_for: str | None,
    now: datetime,
    explicit: bool = False,
    last_accounted_for: str | None = None,
) -> list[Occurrence]:
    """The occurrences of ``routine`` to run at ``now`` (SPEC §4), oldest first.

    An interval routine's anchor is the later of ``last_run`` and ``last_accounted_for`` (a
    held or missed occurrence anchors the next interval, SPEC §9.5); a cron routine's
    candidates come after :func:`cron_cursor`, and one without ``last_scheduled_for`` has
    its first run (only the most recent occurrence) among those after ``last_accounted_for``.

    Raises :class:`errors.TooManyMissedOccurrences` for ``missed_run: all`` with more than
    :data:`MAX_MISSED` candidates.
    """
    now = timefmt.to_utc(now)
    if explicit:
        since = _explicit_passed_over(routine, cron_cursor(last_scheduled_for,
                                                           last_accounted_for), now)
        return [Occurrence(routine_id=routine.id, scheduled_for=now, trigger="id",
                           passed_over_since=since)]
    if not routine.enabled:
        return []
    if routine.interval is not None:
        last = interval_anchor(last_run, last_accounted_for)
        span = timedelta(seconds=routine.interval.seconds)
        if last is None or now - last >= span:
            due_at = _plus(last, span) if last is not None else None
            return [Occurrence(routine_id=routine.id, scheduled_for=now, trigger="due",
                               due_at=due_at)]
        return []
    try:
        if timefmt.try_parse_instant(last_scheduled_for) is None:  # the first run (SPEC §4)
            floor = timefmt.try_parse_instant(last_accounted_for)
            return _cron_due(routine, None, now, floor=floor)
        return _cron_due(routine, cron_cursor(last_scheduled_for, last_accounted_for), now)
    except OverflowError:  # `now` within a day of year 1 or 9999: outside what we can compute
        return []


def paused_span_due(
    routine: model.Routine, *, last_scheduled_for: str | None, last_accounted_for: str | None,
    now: datetime, since: datetime, until: datetime,
) -> list[Occurrence]:
    """``missed_run: all`` when a pause covers more occurrences than :data:`MAX_MISSED` allows
    (SPEC §13): those inside the paused span - from ``since`` (when the pause began) up to
    ``until`` (its end, or now while paused) - become one occurrence, the newest, coalescing
    the rest (``passed_over_since``), so they are accounted for as paused without being
    enumerated. Those before the pause began are a backlog like any other (SPEC §4), and so
    are those after ``until``: each its own occurrence, and only they count towards the cap
    (raises :class:`errors.TooManyMissedOccurrences` above it), so a pause and a resume never
    make a backlog from before the pause disappear."""
    assert routine.trigger is not None
    cron = _compile(routine.trigger.cron, routine.trigger.timezone)
    current, low = _window(timefmt.to_utc(now))
    cursor = cron_cursor(last_scheduled_for, last_accounted_for)
    low = max(low, cursor) if cursor is not None else low
    begin = max(low, min(timefmt.to_utc(since) - _TICK, current))  # `since` itself is inside
    end = max(begin, min(timefmt.to_utc(until), current))
    before = _between(cron, low, begin, MAX_MISSED)
    span = []
    newest = _latest(cron, begin, end)
    if newest is not None:
        earliest = _earliest(cron, begin, newest)
        span.append(Occurrence(routine_id=routine.id, scheduled_for=newest, trigger="due",
                               passed_over_since=earliest if earliest != newest else None))
    rest = _between(cron, end, current, MAX_MISSED - len(before))
    if len(before) + len(rest) > MAX_MISSED:
        raise errors.TooManyMissedOccurrences(routine.id)
    return ([Occurrence(routine_id=routine.id, scheduled_for=at, trigger="due") for at in before]
            + span + [Occurrence(routine_id=routine.id, scheduled_for=at, trigger="due")
                      for at in rest])


def _explicit_passed_over(
    routine: model.Routine, last: datetime | None, now: datetime
) -> datetime | None:
    """SPEC §4: an explicit run of a cron routine moves ``last_scheduled_for`` to now, which
    consumes the occurrences after the previous one (within the window): the earliest."""
    if routine.trigger is None or last is None:
        return None
    cron = _compile(routine.trigger.cron, routine.trigger.timezone)
    low = max(now.replace(second=0, microsecond=0) - WINDOW - _TICK, last)
    try:
        return _earliest(cron, low, now)
    except OverflowError:
        return None


@functools.lru_cache(maxsize=64)  # one `now` per run, asked for every cron routine
def _window(now: datetime) -> tuple[datetime, datetime]:
    """(the minute of ``now``, the exclusive low end of the candidates' 366-day window)."""
    current = now.replace(second=0, microsecond=0)
    return current, current - WINDOW - _TICK  # an occurrence exactly 366 days old is inside


def _cron_due(
    routine: model.Routine, last: datetime | None, now: datetime,
    floor: datetime | None = None,
) -> list[Occurrence]:
    """The due occurrences after the cursor ``last``; without one, the first run's rule
    (only the most recent occurrence), among the occurrences after ``floor``: an occurrence
    already accounted for (an upstream run line names it; the last run of a routine that was
    an interval routine) is not run again, and what came before it is no backlog."""
    assert routine.trigger is not None
    cron = _compile(routine.trigger.cron, routine.trigger.timezone)
    current, low = _window(now)
    for bound in (last, floor):
        low = max(low, bound) if bound is not None else low
    policy = routine.policy.missed_run
    rid = routine.id
    if policy is model.MissedRun.ALL and last is not None:
        found = _between(cron, low, current, MAX_MISSED)
        if len(found) > MAX_MISSED:
            raise errors.TooManyMissedOccurrences(rid)
        return [Occurrence(routine_id=rid, scheduled_for=at, trigger="due") for at in found]
    latest = _latest(cron, low, current)
    if latest is None or (policy is model.MissedRun.SKIP and latest != current):
        return []
    since = None
    if policy is model.MissedRun.LATEST and last is not None:
        earliest = _earliest(cron, low, latest)
        since = earliest if earliest != latest else None
    return [Occurrence(routine_id=rid, scheduled_for=latest, trigger="due",
                       passed_over_since=since)]


def next_after(expr: str, timezone: str, after: datetime) -> datetime | None:
    """The first occurrence of the cron schedule strictly after ``after`` (UTC), by the same
    DST rules as :func:`due_occurrences`; None when there is none within croniter's search
    horizon (or beyond what a datetime holds)."""
    try:
        return _earliest(_compile(expr, timezone), timefmt.to_utc(after), None)
    except OverflowError:
        return None


def none_due(next_at: datetime | None, now: datetime) -> bool:
    """Whether a cron routine whose cursor is followed by ``next_at`` (:func:`next_after` of
    its ``last_scheduled_for``) has nothing due at ``now``: every occurrence
    :func:`due_occurrences` could select lies after the cursor and at or before ``now``'s
    minute, whatever the policy, so none exists when the next one comes later. This lets a
    remembered ``next_at`` answer a run with nothing due without iterating the schedule. It
    holds for :func:`cron_cursor` too, which is never earlier than ``last_scheduled_for``."""
    return next_at is None or next_at > timefmt.to_utc(now).replace(second=0, microsecond=0)


def interval_anchor(last_run: str | None, last_accounted_for: str | None) -> datetime | None:
    """The later of ``last_run`` and ``last_accounted_for`` (unparsable ones ignored)."""
    return _later_of(last_run, last_accounted_for)


def cron_cursor(last_scheduled_for: str | None, last_accounted_for: str | None) -> datetime | None:
    """The instant a cron routine's occurrences start after (due, explicit, ``next``): the
    later of ``last_scheduled_for`` and ``last_accounted_for`` (unparsable ones ignored; None:
    the first run). Both name the same occurrence for a routine that was always cron; the
    second alone is known when the view has no cursor for a routine that has run - it was an
    interval routine before, its only attempt was a backfill - and another tool's run line
    then names the occurrence it ran (SPEC §10 rule 2), which must not run again."""
    return _later_of(last_scheduled_for, last_accounted_for)


def _later_of(*stamps: str | None) -> datetime | None:
    found = [t for t in map(timefmt.try_parse_instant, stamps) if t]
    return max(found) if found else None


def _plus(instant: datetime, span: timedelta) -> datetime:
    try:
        return instant + span
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


def occurrences_in(
    routine: model.Routine, low: datetime, high: datetime, *, cap: int = MAX_MISSED
) -> list[datetime]:
    """Every cron occurrence in ``[low, high]`` (both inclusive), oldest first, for backfill.

    Raises :class:`errors.TooManyMissedOccurrences` above ``cap`` (checked before anything
    runs; the enumeration stops at ``cap + 1``)."""
    assert routine.trigger is not None
    cron = _compile(routine.trigger.cron, routine.trigger.timezone)
    found = _between(cron, timefmt.to_utc(low) - _TICK, timefmt.to_utc(high), cap)
    if len(found) > cap:
        raise errors.TooManyMissedOccurrences(routine.id)
    return found


SlotEffect = Literal["gap", "overlap", "overlap-real-time"] | None


def slots_after(
    expr: str, timezone: str, after: datetime
) -> Iterator[tuple[datetime, tuple[datetime, ...], SlotEffect]]:
    """Naive local slots whose instants may lie after ``after``, oldest first, each with its
    UTC instants (by the DST rules) and the DST effect on it, for previews (SPEC §9.4)."""
    cron = _compile(expr, timezone)
    for slot in _slots(cron, _start_after(cron, timefmt.to_utc(after)), backwards=False):
        first, second = _offset(cron.tz, slot), _offset(cron.tz, slot.replace(fold=1))
        effect: SlotEffect = None
        if first > second:
            effect = "overlap-real-time" if cron.real_time else "overlap"
        elif first < second and not cron.real_time:
            effect = "gap"
        yield slot, _instants(cron, slot), effect


def next_occurrence(routine: model.Routine, *, now: datetime) -> datetime | None:
    """The first cron occurrence strictly after ``now`` (UTC); None for interval routines."""
    if routine.trigger is None:
        return None
    cron = _compile(routine.trigger.cron, routine.trigger.timezone)
    try:
        return _earliest(cron, timefmt.to_utc(now), None)
    except OverflowError:  # beyond year 9999
        return None


def next_interval_due(routine: model.Routine, *, last_run: str | None, now: datetime) -> datetime:
    """When an interval routine is next due: ``last_run + interval``, or ``now`` if never run.

    The result may lie before ``now`` (the routine is overdue).
    """
    if routine.interval is None:
        raise ValueError(f"{routine.id} is not an interval routine")
    last = timefmt.try_parse_instant(last_run)
    if last is None:
        return timefmt.to_utc(now)
    try:
        return last + timedelta(seconds=routine.interval.seconds)
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


def split_at(routine: model.Routine, occurrence: Occurrence, until: datetime) -> list[Occurrence]:
    """A coalesced cron occurrence cut at ``until`` (SPEC §13: the end of a pause): when its
    ``passed_over_since`` span starts at or before ``until`` and it is scheduled after, the
    occurrences up to ``until`` become one occurrence (the newest of them, coalescing the
    rest) and the ones after stay with ``occurrence``; otherwise ``[occurrence]``."""
    since = occurrence.passed_over_since
    at = occurrence.scheduled_for
    if routine.trigger is None or since is None or not since <= until < at:
        return [occurrence]
    cron = _compile(routine.trigger.cron, routine.trigger.timezone)
    before = _latest(cron, since - _TICK, until)
    after = _earliest(cron, until, at)
    if before is None:  # cannot happen: `since` is an occurrence at or before `until`
        return [occurrence]
    first = attrs.evolve(occurrence, scheduled_for=before,
                         passed_over_since=since if since != before else None)
    rest = attrs.evolve(occurrence, passed_over_since=after if after not in (None, at) else None)
    return [first, rest]
