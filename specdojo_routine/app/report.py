"""``report --html FILE``: one self-contained page to look at (SPEC §14).

Per routine a row of cells, one per occurrence of the last N days (UTC days, today last),
coloured by how it ended, with the times, reason, attempt id and Job Run ids on hover (the
``title`` attribute: no script); then the next occurrence of every enabled routine and the Job
Runs and delegated calls of the window with their evidence paths.

:func:`collect` reads what ``list`` and ``history`` read (the definitions, the routine view,
the lock status and the routine ledger from its end back to the window's start, plus the Job
Run ledgers the window names) and takes no lock a run waits for; :func:`page` turns that into
the HTML text (no I/O); :func:`write` puts it in place atomically. Everything shown that came
from a file - routine names, reasons, notes - is escaped; the ledger holds secrets redacted
already.

An occurrence's outcome is the name the ledger gives it: an attempt's result (or ``running`` /
``interrupted`` while open), else the event that accounted for it (``occurrence_held`` is
``held``, ``occurrence_missed`` ``missed``, any other ``occurrence_<word>`` ``<word>``), and
``coalesced`` for the occurrences an attempt or a miss ran in one (``passed_over_since``). An
outcome this module has no colour for is drawn in a neutral grey and named in the legend, so a
new kind of event shows without a change here.
"""

from __future__ import annotations

import html
import stat
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import attrs

from specdojo_routine.app import agenda, listing, recent
from specdojo_routine.core import schedule
from specdojo_routine.core.attempts import Attempt, Gatherer
from specdojo_routine.core.errors import TooManyMissedOccurrences, UsageError
from specdojo_routine.core.model import Routine
from specdojo_routine.core.timefmt import format_ms, relative, try_parse_instant
from specdojo_routine.store.config import ProjectPaths, file_kind
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger import stamps, views

DEFAULT_DAYS = 14
MAX_DAYS = 366
#: Cells drawn per routine and day; past it, the others are counted in one "+N" cell (the
#: ones that did not succeed are drawn first, so a failure is never among the hidden).
MAX_PER_DAY = 24
#: Coalesced occurrences drawn for one attempt; past it, one cell stands for them all.
MAX_COALESCED = 48
#: A start this late (seconds after the scheduled time) is marked on its cell.
LATE_S = 60
#: Job Runs and delegated calls listed, newest first.
MAX_EVIDENCE_ROWS = 60
#: Upcoming occurrences listed per routine.
NEXT_COUNT = 1

#: (outcome, colour, what it means): the legend, in its order.
OUTCOMES: tuple[tuple[str, str, str], ...] = (
    ("success", "#2e7d32", "the attempt succeeded"),
    ("partial", "#9ccc65", "a Job Run merged part of its work"),
    ("failure", "#c62828", "the attempt failed"),
    ("skipped", "#90a4ae", "the attempt was skipped (precondition, busy)"),
    ("missed", "#ef6c00", "not started: past its starting deadline"),
    ("held", "#6a1b9a", "not run: the routine was held after a failure"),
    ("paused", "#1565c0", "not run: the routine was paused"),
    ("interrupted", "#ad1457", "the runner died mid-attempt (see `resolve`)"),
    ("running", "#fbc02d", "the attempt is running"),
    ("retrying", "#ffb74d", "a retry is pending"),
    ("coalesced", "#bcaaa4", "ran once together with a later occurrence"),
)
COLOURS = {name: colour for name, colour, _ in OUTCOMES}
NEUTRAL = "#757575"
#: The states of a routine (``status``) that have no outcome colour of their own.
STATE_COLOURS = {**COLOURS, "never": "#e0e0e0", "disabled": "#e0e0e0"}

_ATTEMPT_EVENTS = frozenset({"attempt_started", "action_started", "action_ended",
                             "attempt_ended", "attempt_resolved", "upstream_run_recorded"})


@attrs.frozen(kw_only=True, repr=False)
class Cell:
    """One occurrence of one routine."""

    scheduled_for: datetime
    outcome: str
    late: bool = False
    details: tuple[tuple[str, str], ...] = ()  # (label, value), shown on hover
    from_attempt: bool = False  # an attempt's, not an event's that accounted for it


@attrs.frozen(kw_only=True, repr=False)
class Row:
    """One routine: its current state and its occurrences in the window, oldest first."""

    routine_id: str
    name: str | None
    schedule: str
    state: str
    unhealthy: bool
    timezone: str
    cells: tuple[Cell, ...]


@attrs.frozen(kw_only=True, repr=False)
class EvidenceLine:
    """One action of the window that left a Job Run or evidence of its own."""

    routine_id: str
    scheduled_for: str | None
    attempt_id: str | None
    action: str  # "1 (job)"
    result: str | None
    job_run_id: str | None
    job_state: str | None
    evidence_ref: str | None


@attrs.frozen(kw_only=True, repr=False)
class Report:
    project_id: str
    now: datetime
    days: tuple[date, ...]
    rows: tuple[Row, ...]
    upcoming: tuple[agenda.Entry, ...]
    evidence: tuple[EvidenceLine, ...]
    problems: tuple[str, ...]  # invalid definitions


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
    lines = recent.recent_events(paths, since=since)
    attempts, extra = _read(reversed([event for _, event in lines]))
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
    _, entries = agenda.agenda(paths, count=NEXT_COUNT, now=the_now)
    return Report(project_id=paths.project_id, now=the_now, days=columns,
                  rows=tuple(r for r in rows if r.cells or r.routine_id in defs),
                  upcoming=tuple(entries), evidence=tuple(_evidence(paths, attempts)),
                  problems=tuple(shown.problems))


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


def _short(stamp: str | None) -> str:
    """``2026-08-07 08:00`` for a stored UTC stamp."""
    when = try_parse_instant(stamp)
    return f"{when:%Y-%m-%d %H:%M}" if when else (stamp or "")


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


def _evidence(paths: ProjectPaths, attempts: list[Attempt]) -> list[EvidenceLine]:
    found: list[EvidenceLine] = []
    states: dict[str, str | None] = {}
    for attempt in reversed(attempts):
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
                result=action.result, job_run_id=run_id,
                job_state=states.get(run_id) if run_id else None,
                evidence_ref=action.evidence_ref))
            if len(found) >= MAX_EVIDENCE_ROWS:
                return found
    return found


# --- the page ---------------------------------------------------------------------------------


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _css_class(outcome: str) -> str:
    return f"o-{outcome}" if outcome in COLOURS else "o-other"


_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;
color:#212121;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.meta{color:#616161;margin:0 0 16px}
table{border-collapse:collapse}
th,td{padding:4px 6px;text-align:left;vertical-align:top}
thead th{font-weight:600;color:#424242;border-bottom:1px solid #bdbdbd;white-space:nowrap}
tbody tr{border-bottom:1px solid #eeeeee}
.grid td.day{min-width:34px;max-width:120px}
.grid th.day{font-size:11px;text-align:center}
.grid th.day.today{color:#000;text-decoration:underline}
.cell{display:inline-block;width:14px;height:14px;margin:1px;border-radius:3px;
position:relative;vertical-align:middle}
.cell.late::after{content:"";position:absolute;right:2px;top:2px;width:4px;height:4px;
border-radius:2px;background:#fff}
.more{display:inline-block;font-size:11px;color:#424242;margin:1px;vertical-align:middle}
.id{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;white-space:nowrap}
.name{color:#616161;font-size:12px;font-weight:400}
.sched{color:#616161;font-size:12px;font-weight:400;white-space:nowrap}
.state{display:inline-block;padding:0 6px;border-radius:8px;color:#fff;font-size:12px;
white-space:nowrap}
.state.light{color:#212121}
.legend{display:flex;flex-wrap:wrap;gap:6px 16px;margin:8px 0 0;padding:0;list-style:none}
.legend li{display:flex;align-items:center;gap:4px;font-size:12px}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
.problems{color:#c62828}
.evidence td{white-space:nowrap}
.evidence td.path{white-space:normal;word-break:break-all;min-width:200px}
"""


_COLOUR_RULES = "".join(f".o-{name}{{background:{colour}}}" for name, colour, _ in OUTCOMES) + (
    f".o-other{{background:{NEUTRAL}}}")


def page(report: Report) -> str:
    """The whole HTML document for ``report``: inline CSS, no script, no external asset."""
    seen = {c.outcome for r in report.rows for c in r.cells}
    unknown = sorted(seen - set(COLOURS))
    unhealthy = [r.routine_id for r in report.rows if r.unhealthy]
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n",
        f"<title>Routines of {_e(report.project_id)}</title>\n",
        f"<style>{_CSS}{_COLOUR_RULES}</style>\n</head>\n<body>\n",
        f"<h1>Routines of {_e(report.project_id)}</h1>\n",
        f"<p class=\"meta\">As of {report.now:%Y-%m-%d %H:%M} UTC; the last {len(report.days)}"
        f" day(s), one column per UTC day, one cell per occurrence. "
        + (f"Unhealthy: {_e(', '.join(unhealthy))}." if unhealthy else "Every routine is healthy.")
        + "</p>\n",
    ]
    if report.problems:
        parts.append("<ul class=\"problems\">" + "".join(
            f"<li>{_e(p)}</li>" for p in report.problems) + "</ul>\n")
    parts += [_grid(report), _legend(unknown), _agenda(report), _evidence_table(report),
              "</body>\n</html>\n"]
    return "".join(parts)


def _grid(report: Report) -> str:
    today = report.now.date()
    head = "".join(
        f"<th class=\"day{' today' if d == today else ''}\" title=\"{d:%A %Y-%m-%d}\">"
        f"{d:%m-%d}<br>{d:%a}</th>" for d in report.days)
    body = []
    for row in report.rows:
        by_day: dict[date, list[Cell]] = {}
        for cell in row.cells:
            by_day.setdefault(cell.scheduled_for.date(), []).append(cell)
        tds = "".join(f"<td class=\"day\">{_day_cells(by_day.get(d, []))}</td>"
                      for d in report.days)
        name = f"<div class=\"name\">{_e(row.name)}</div>" if row.name else ""
        body.append(
            f"<tr data-routine=\"{_e(row.routine_id)}\"><th scope=\"row\">"
            f"<span class=\"id\">{_e(row.routine_id)}</span>{name}"
            f"<div class=\"sched\">{_e(row.schedule)}</div></th>"
            f"<td>{_state(row.state)}</td>{tds}</tr>\n")
    return ("<h2>Occurrences</h2>\n<table class=\"grid\">\n<thead><tr><th>routine</th>"
            f"<th>state</th>{head}</tr></thead>\n<tbody>\n{''.join(body)}</tbody>\n</table>\n")


def _state(state: str) -> str:
    colour = STATE_COLOURS.get(state, NEUTRAL)
    light = " light" if colour in ("#e0e0e0", "#fbc02d", "#9ccc65", "#ffb74d", "#bcaaa4") else ""
    return f"<span class=\"state{light}\" style=\"background:{colour}\">{_e(state)}</span>"


def _day_cells(cells: list[Cell]) -> str:
    shown = cells
    hidden: list[Cell] = []
    if len(cells) > MAX_PER_DAY:
        order = sorted(range(len(cells)), key=lambda i: (cells[i].outcome == "success", -i))
        keep = set(order[:MAX_PER_DAY - 1])
        shown = [c for i, c in enumerate(cells) if i in keep]
        hidden = [c for i, c in enumerate(cells) if i not in keep]
    text = "".join(_cell(c) for c in shown)
    if hidden:
        counts: dict[str, int] = {}
        for cell in hidden:
            counts[cell.outcome] = counts.get(cell.outcome, 0) + 1
        title = f"{len(hidden)} more: " + ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
        text += f"<span class=\"more\" title=\"{_e(title)}\">+{len(hidden)}</span>"
    return text


def _cell(cell: Cell) -> str:
    title = "\n".join(f"{label}: {value}" for label, value in cell.details)
    if cell.late:
        title += "\nstarted late"
    late = " late" if cell.late else ""
    return (f"<span class=\"cell {_css_class(cell.outcome)}{late}\" "
            f"data-outcome=\"{_e(cell.outcome)}\" title=\"{_e(title)}\"></span>")


def _legend(unknown: list[str]) -> str:
    items = [(f"o-{name}", name, meaning) for name, _, meaning in OUTCOMES]
    items += [("o-other", name, "recorded by a newer event") for name in unknown]
    lis = "".join(f"<li title=\"{_e(meaning)}\"><span class=\"cell {cls}\"></span>{_e(name)}</li>"
                  for cls, name, meaning in items)
    lis += (f"<li title=\"started at least {LATE_S} s after its scheduled time\">"
            "<span class=\"cell o-success late\"></span>late start</li>")
    return f"<ul class=\"legend\">{lis}</ul>\n"


def _agenda(report: Report) -> str:
    rows = []
    for entry in report.upcoming:
        up = entry.upcoming
        when = try_parse_instant(up.utc)
        local = try_parse_instant(up.local)
        local_text = (f"{local.astimezone(ZoneInfo(entry.timezone)):%Y-%m-%d %H:%M %Z}"
                      if local and entry.timezone != "UTC" else "-")
        rows.append(
            f"<tr><td class=\"id\">{_e(entry.routine_id)}</td>"
            f"<td>{_e(relative(up.utc, report.now))}</td>"
            f"<td class=\"mono\">{_e(f'{when:%Y-%m-%d %H:%M}' if when else up.utc)}</td>"
            f"<td class=\"mono\">{_e(local_text)}</td><td>{_e(up.note or '')}</td></tr>\n")
    if not rows:
        return "<h2>Next runs</h2>\n<p>No enabled routine has a next occurrence.</p>\n"
    return ("<h2>Next runs</h2>\n<table class=\"next\">\n<thead><tr><th>routine</th><th>in</th>"
            "<th>UTC</th><th>local</th><th>note</th></tr></thead>\n<tbody>\n"
            f"{''.join(rows)}</tbody>\n</table>\n")


def _evidence_table(report: Report) -> str:
    if not report.evidence:
        return "<h2>Job Runs and evidence</h2>\n<p>None in this window.</p>\n"
    rows = [
        f"<tr><td class=\"id\">{_e(line.routine_id)}</td>"
        f"<td class=\"mono\">{_e(_short(line.scheduled_for))}</td><td>{_e(line.action)}</td>"
        f"<td>{_e(line.result or 'running')}</td>"
        f"<td class=\"mono\">{_e(line.job_run_id or '-')}</td><td>{_e(line.job_state or '')}</td>"
        f"<td class=\"mono path\">{_e(line.evidence_ref or '-')}</td></tr>\n"
        for line in report.evidence]
    return ("<h2>Job Runs and evidence</h2>\n<p class=\"meta\">Newest first; paths are relative"
            " to the project root (<code>logs ID</code> and <code>job logs RUN_ID</code> print"
            " them).</p>\n<table class=\"evidence\">\n<thead><tr><th>routine</th>"
            "<th>scheduled (UTC)</th><th>action</th><th>result</th><th>Job Run</th>"
            "<th>run state</th><th>evidence</th></tr></thead>\n<tbody>\n"
            f"{''.join(rows)}</tbody>\n</table>\n")


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
) -> Report:
    """Collect the report, write it to ``target`` and return what it shows."""
    check_target(target)  # before reading anything: one line, nothing read or written
    shown = collect(paths, days=days, now=now)
    write(target, page(shown))
    return shown
