"""``report --html FILE``: one self-contained page to look at (SPEC §14), read and written.

Per routine a row of cells, one per occurrence of the last N days (UTC days, today last),
coloured by how it ended, with the times, reason, attempt id and Job Run ids on hover; then
the next occurrence of every enabled routine and the Job Runs and delegated calls of the
window with their evidence paths.

:func:`collect` reads what ``list`` and ``history`` read (the definitions, the routine view,
the lock status and the routine ledger from its end back to the window's start, plus the Job
Run ledgers the window names) and takes no lock a run waits for; :func:`.report_page.page`
turns that into the HTML text (no I/O, everything from a file escaped); :func:`write` puts it
in place atomically. The ledger holds secrets redacted already; a definition's text (a
routine's name, say) loses the environment's secret values on the page.

An occurrence's outcome is the name the ledger gives it: an attempt's result (or ``running`` /
``interrupted`` while open), else the event that accounted for it (``occurrence_held`` is
``held``, ``occurrence_missed`` ``missed``, any other ``occurrence_<word>`` ``<word>``), and
``coalesced`` for the occurrences an attempt or a miss ran in one (``passed_over_since``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import attrs

from specdojo_routine.app import agenda, listing, recent
from specdojo_routine.app.report_page import LATE_S, Cell, EvidenceLine, Report, Row, page
from specdojo_routine.core import schedule
from specdojo_routine.core.attempts import Attempt, Gatherer
from specdojo_routine.core.errors import TooManyMissedOccurrences, UsageError
from specdojo_routine.core.model import Routine
from specdojo_routine.core.redact import secret_values
from specdojo_routine.core.timefmt import format_ms, try_parse_instant
from specdojo_routine.store.config import ProjectPaths, file_kind
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger import stamps, views

DEFAULT_DAYS = 14
MAX_DAYS = 366
#: Coalesced occurrences drawn for one attempt; past it, one cell stands for them all.
MAX_COALESCED = 48
#: Job Runs and delegated calls listed, newest first.
MAX_EVIDENCE_ROWS = 60
#: Upcoming occurrences listed per routine.
NEXT_COUNT = 1

_ATTEMPT_EVENTS = frozenset({"attempt_started", "action_started", "action_ended",
                             "attempt_ended", "attempt_resolved", "upstream_run_recorded"})


# --- reading ----------------------------------------------------------------------------------


def collect(
    paths: ProjectPaths, *, days: int = DEFAULT_DAYS, now: datetime | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Report:
    """What the page shows, as of ``now``: the last ``days`` UTC days, today included."""
    if not 1 <= days <= MAX_DAYS:
        raise UsageError(f"--days must be between 1 and {MAX_DAYS}, got {days}")
    shown = listing.list_routines(paths, now=now, clock=clock)
    the_now = shown.now
    columns = tuple(the_now.date() - timedelta(days=n) for n in range(days - 1, -1, -1))
    since = datetime.combine(columns[0], datetime.min.time(), tzinfo=UTC)
    defs = {r.id: r for r in definitions.load_definitions(paths).routines}
    attempts, extra = _read(recent.events_since(paths, since))
    interrupted = {r.id for r in shown.rows if r.interrupted}
    cells: dict[str, list[Cell]] = {}
    for attempt in attempts:
        cells.setdefault(attempt.routine_id, []).append(
            _attempt_cell(attempt, attempt.routine_id in interrupted, defs.get(attempt.routine_id)))
    for event in extra:
        rid = str(event.get("routine_id"))
        cells.setdefault(rid, []).extend(_event_cells(event, defs.get(rid)))
    rows = [_row(r.id, defs.get(r.id), r.schedule, r.state, bool(r.problems),
                 cells.pop(r.id, []), since, the_now) for r in shown.rows]
    rows += [_row(rid, None, "no longer defined", "undefined", False, found, since, the_now)
             for rid, found in sorted(cells.items())]
    entries = agenda.agenda(paths, count=NEXT_COUNT, now=the_now).entries
    return Report(project_id=paths.project_id, now=the_now, days=columns,
                  rows=tuple(r for r in rows if r.cells or r.routine_id in defs),
                  upcoming=tuple(entries),
                  evidence=tuple(_evidence(paths, attempts, interrupted)),
                  problems=tuple(shown.problem_texts()))


def _read(newest_first: Iterable[dict[str, Any]]) -> tuple[list[Attempt], list[dict[str, Any]]]:
    """(the attempts, oldest first; the other events that account for an occurrence or name
    occurrences run together, oldest first)."""
    gather = Gatherer()
    attempts: list[Attempt] = []
    extra: list[dict[str, Any]] = []
    for event in newest_first:
        kind = event.get("type")
        attempt = gather.feed(event)
        if attempt is not None:
            attempts.append(attempt)
        if _accounts(kind, event):
            extra.append(event)
    attempts.reverse()
    extra.reverse()
    return attempts, extra


def _accounts(kind: object, event: Mapping[str, Any]) -> bool:
    """Whether ``event`` (not an attempt's) accounts for occurrences: ``occurrence_*``, or a
    start that ran several at once."""
    if kind == "attempt_started":
        return bool(event.get("passed_over_since"))
    return (kind not in _ATTEMPT_EVENTS and str(kind).startswith("occurrence_")
            and bool(event.get("scheduled_for")))


def _attempt_cell(attempt: Attempt, interrupted: bool, routine: Routine | None) -> Cell:
    when = try_parse_instant(attempt.scheduled_for or attempt.started_at)
    outcome = attempt.result or ("interrupted" if interrupted else "running")
    late = attempt.late_by_s
    details = [("scheduled", _both(attempt.scheduled_for, routine)), ("result", outcome),
               ("reason", attempt.why), ("attempt", attempt.attempt_id or "upstream run"),
               ("trigger", attempt.trigger or ""), ("started", attempt.started_at or ""),
               ("ended", attempt.completed_at or ""),
               ("took", _span(attempt.duration_s)), ("late by", _span(late)),
               ("job runs", ", ".join(attempt.job_run_ids))]
    return Cell(scheduled_for=when or datetime.min.replace(tzinfo=UTC), outcome=outcome,
                late=late is not None and late >= LATE_S,
                details=tuple((k, v) for k, v in details if v), from_attempt=True)


def _event_cells(event: Mapping[str, Any], routine: Routine | None) -> list[Cell]:
    kind = str(event.get("type"))
    at = try_parse_instant(event.get("scheduled_for"))
    found: list[Cell] = []
    if kind != "attempt_started" and at is not None:
        outcome = kind.removeprefix("occurrence_")
        found.append(Cell(scheduled_for=at, outcome=outcome, details=tuple(
            (k, v) for k, v in (("scheduled", _both(event.get("scheduled_for"), routine)),
                                ("result", outcome), ("reason", str(event.get("reason") or "")))
            if v)))
    first = try_parse_instant(event.get("passed_over_since"))
    if first is not None and at is not None and first < at:
        found += _coalesced(first, at, event, routine)
    return found


def _coalesced(first: datetime, last: datetime, event: Mapping[str, Any],
               routine: Routine | None) -> list[Cell]:
    """A cell for each occurrence in [first, last) that ran (or was accounted for) as one."""
    into = event.get("attempt_id") or f"the {event.get('type')} of {event.get('scheduled_for')}"
    try:
        instants = ([t for t in schedule.occurrences_in(routine, first, last, cap=MAX_COALESCED)
                     if t < last] if routine is not None and routine.trigger is not None
                    else [first])
    except TooManyMissedOccurrences:
        instants = [first]
        into = f"{into} (more than {MAX_COALESCED} occurrences from here on)"
    return [Cell(scheduled_for=t, outcome="coalesced", details=(
        ("scheduled", _both(format_ms(t), routine)), ("result", "coalesced"),
        ("reason", f"ran as one with {event.get('scheduled_for')}: {into}")))
        for t in instants]


def _both(stamp: Any, routine: Routine | None) -> str:
    """``2026-08-07 08:00 UTC (17:00 JST)``: UTC and, for a zoned routine, its local time."""
    when = try_parse_instant(stamp)
    if when is None:
        return str(stamp or "")
    text = f"{when:%Y-%m-%d %H:%M} UTC"
    zone = routine.timezone if routine is not None else None
    if zone and zone != "UTC":
        local = when.astimezone(ZoneInfo(zone))
        text += f" ({local:%Y-%m-%d %H:%M %Z})"
    return text


def _span(seconds: int | None) -> str:
    if seconds is None:
        return ""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return (f"{hours}h {minutes}m" if hours else f"{minutes}m {secs}s" if minutes
            else f"{secs}s")


def _row(routine_id: str, routine: Routine | None, schedule_text: str, state: str,
         unhealthy: bool, cells: list[Cell], since: datetime, now: datetime) -> Row:
    groups: dict[datetime, list[Cell]] = {}
    for cell in cells:
        if since <= cell.scheduled_for <= now:
            groups.setdefault(cell.scheduled_for, []).append(cell)
    inside = [_merge(groups[at]) for at in sorted(groups)]
    return Row(routine_id=routine_id, name=routine.name if routine else None,
               schedule=schedule_text, state=state, unhealthy=unhealthy,
               timezone=(routine.timezone if routine else None) or "UTC", cells=tuple(inside))


def _merge(group: list[Cell]) -> Cell:
    """One cell for one occurrence: its last attempt's (a retry, a release after a hold), else
    its last event's, naming what else it went through."""
    if len(group) == 1:
        return group[0]
    attempts = [c for c in group if c.from_attempt]
    main = attempts[-1] if attempts else group[-1]
    also = "; ".join(c.outcome + (f" ({dict(c.details)['attempt']})" if c.from_attempt else "")
                     for c in group if c is not main)
    return attrs.evolve(main, details=(*main.details, ("before", also)))


def _evidence(paths: ProjectPaths, attempts: list[Attempt],
              interrupted: set[str]) -> list[EvidenceLine]:
    """The actions of the window that left a Job Run or evidence, newest first, each with
    the word ``logs`` gives it (``interrupted``: the routines whose open attempt's runner
    died)."""
    found: list[EvidenceLine] = []
    states: dict[str, str | None] = {}
    for attempt in reversed(attempts):
        if attempt.result is None and attempt.routine_id in interrupted:
            attempt = attrs.evolve(attempt, interrupted=True)
        for action in attempt.actions:
            if action.job_run_id is None and action.evidence_ref is None:
                continue
            run_id = action.job_run_id
            if run_id is not None and run_id not in states:
                doc = views.load_job_run(paths, run_id)
                states[run_id] = doc["state"] if doc is not None else None
            found.append(EvidenceLine(
                routine_id=attempt.routine_id, scheduled_for=attempt.scheduled_for,
                attempt_id=attempt.attempt_id, action=f"{action.index} ({action.kind})",
                result=attempt.action_state(action), job_run_id=run_id,
                job_state=states.get(run_id) if run_id else None,
                evidence_ref=action.evidence_ref))
            if len(found) >= MAX_EVIDENCE_ROWS:
                return found
    return found


# --- writing ----------------------------------------------------------------------------------


def check_target(target: Path) -> None:
    """Refuse (exit 2) a file in a directory that does not exist, a directory, or a FIFO,
    socket or device: the report is moved into place, which would put a regular file where
    that node was (``/dev/null`` itself, when root names it)."""
    if not target.parent.is_dir():
        raise UsageError(f"{target}: the directory {target.parent} does not exist; create it "
                         "or write the report elsewhere")
    if target.is_dir() and not target.is_symlink():
        raise UsageError(f"{target} is a directory; name a file to write the report to")
    try:
        mode = target.lstat().st_mode
    except OSError:  # nothing there yet; a real problem is said by the write
        return
    kind = None if stat.S_ISLNK(mode) else file_kind(mode)
    if kind is not None:
        raise UsageError(f"{target} is not a regular file ({kind}); name a file to write the "
                         "report to")


def write(target: Path, text: str) -> None:
    """Make ``text`` the file ``target``, atomically (a temp file moved into place): a link
    there is replaced, never written through (:func:`check_target` first)."""
    check_target(target)
    stamps.replace(target, text.encode("utf-8"), follow=False)


def report(
    paths: ProjectPaths, target: Path, *, days: int = DEFAULT_DAYS, now: datetime | None = None,
    env: Mapping[str, str] | None = None,
) -> Report:
    """Collect the report, write it to ``target`` and return what it shows. No secret value
    of ``env`` (default: this process's environment) reaches the file, as none reaches the
    console (SPEC §7.5): a definition's text is shown as written."""
    check_target(target)  # before reading anything: one line, nothing read or written
    shown = collect(paths, days=days, now=now)
    write(target, page(shown, secret_values(os.environ if env is None else env)))
    return shown
