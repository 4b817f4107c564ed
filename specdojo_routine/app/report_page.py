"""The page ``report --html`` writes (SPEC §14): what it shows and the HTML that shows it.

:class:`Report` is what :mod:`.report` collects from the project's files; :func:`page` turns it
into one self-contained HTML document (inline CSS, no script, no external asset, no I/O): per
routine a row of cells, one per occurrence and coloured by its outcome, with the details on
hover (the ``title`` attribute); then the next runs and the Job Runs and evidence of the window.
Everything shown that came from a file is escaped here, and redacted: a secret value of the
environment (SPEC §7.5) never reaches the page, while the page's own markup (its class
names, its CSS, the outcome words it draws by) is never touched, whatever word a secret is.
An outcome with no colour of its own
is drawn in a neutral grey and named in the legend, so a new kind of event shows without a
change here.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from contextvars import ContextVar
from datetime import date, datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import attrs

from specdojo_routine.core.redact import redact_values
from specdojo_routine.core.timefmt import relative, try_parse_instant

if TYPE_CHECKING:
    from specdojo_routine.app import agenda

#: Cells drawn per routine and day; past it, one fewer are drawn and the others are counted,
#: by outcome, in the title of one "+N" cell. The ones that did not succeed are drawn first
#: (newest first), so a failure is hidden only on a day with more non-successes than that.
MAX_PER_DAY = 24
#: A start this late (seconds after the scheduled time) is marked on its cell.
LATE_S = 60

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
    problems: tuple[str, ...]  # invalid definitions, then the routine state's (as `list`)


# --- the page -------------------------------------------------------------------------------------


#: The secret values :func:`page` keeps out of what it is drawing (``()``: none).
_SECRETS: ContextVar[tuple[str, ...]] = ContextVar("report_secrets", default=())


def _e(value: object) -> str:
    """``value``, which came from the project's files, as HTML text or an attribute value:
    escaped, with the secret values being kept out replaced by ``[REDACTED]``."""
    secrets = _SECRETS.get()
    text = redact_values(str(value), secrets, whole=True) if secrets else str(value)
    return html.escape(text, quote=True)


def _word(value: str) -> str:
    """One of the page's own words (an outcome, a state), escaped and never redacted: the
    markup and the CSS draw by it."""
    return html.escape(value, quote=True)


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
.name{color:#616161;font-size:12px;font-weight:400;overflow-wrap:anywhere;
word-break:break-word}
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


def page(report: Report, secrets: Sequence[str] = ()) -> str:
    """The whole HTML document for ``report``: inline CSS, no script, no external asset, and
    none of the ``secrets`` (the environment's secret values, SPEC §7.5) in what it shows."""
    token = _SECRETS.set(tuple(secrets))
    try:
        return _document(report)
    finally:
        _SECRETS.reset(token)


def _document(report: Report) -> str:
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
    return f"<span class=\"state{light}\" style=\"background:{colour}\">{_word(state)}</span>"


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
            f"data-outcome=\"{_word(cell.outcome)}\" title=\"{_e(title)}\"></span>")


def _legend(unknown: list[str]) -> str:
    items = [(f"o-{name}", name, meaning) for name, _, meaning in OUTCOMES]
    items += [("o-other", name, "recorded by a newer event") for name in unknown]
    lis = "".join(f"<li title=\"{_word(meaning)}\"><span class=\"cell {cls}\"></span>"
                  f"{_word(name)}</li>"
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
        note = "; ".join(n for n in (up.note, entry.standing_note) if n)
        rows.append(
            f"<tr><td class=\"id\">{_e(entry.routine_id)}</td>"
            f"<td>{_e(relative(up.utc, report.now))}</td>"
            f"<td class=\"mono\">{_e(f'{when:%Y-%m-%d %H:%M}' if when else up.utc)}</td>"
            f"<td class=\"mono\">{_e(local_text)}</td><td>{_e(note)}</td></tr>\n")
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


def _short(stamp: str | None) -> str:
    """``2026-08-07 08:00`` for a stored UTC stamp."""
    when = try_parse_instant(stamp)
    return f"{when:%Y-%m-%d %H:%M}" if when else (stamp or "")
