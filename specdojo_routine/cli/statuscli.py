"""CLI of ``status`` (SPEC §14): the overview, worst first, and one block per routine.

Text fits 80 columns; ``--json`` is one pretty document with times in their stored forms.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime
from typing import Any, TextIO
from zoneinfo import ZoneInfo

from specdojo_routine.app import status as status_app
from specdojo_routine.app.listing import RoutineRow
from specdojo_routine.cli import render
from specdojo_routine.core import cronwords
from specdojo_routine.core.attempts import Attempt
from specdojo_routine.core.model import Routine
from specdojo_routine.core.policy import span_text
from specdojo_routine.core.redact import redact_words
from specdojo_routine.core.timefmt import format_s, try_parse_instant
from specdojo_routine.core.validation import one_line
from specdojo_routine.store.config import ProjectPaths

WIDTH = 80


def add_status(sub: Any, common: argparse.ArgumentParser, instant: Callable[[str], object]) -> None:
    """``status`` (``sub`` is the main parser's subparsers)."""
    p = sub.add_parser("status", parents=[common], help="health overview, or one routine in depth")
    p.add_argument("routine_ids", nargs="*", metavar="ID",
                   help="show these routines in depth (default: one line per routine)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--now", type=instant, metavar="T",
                   help="judge at time T (ISO 8601, e.g. 2026-08-07T08:02:00Z), not the clock")
    p.add_argument("--quiet", action="store_true",
                   help="print nothing unless unhealthy (for cron; also SPECDOJO_ROUTINE_QUIET=1)")


def cmd_status(args: argparse.Namespace, paths: ProjectPaths, out: TextIO, err: TextIO) -> int:
    shown = status_app.status(paths, args.routine_ids, now=args.now)
    for problem in shown.listing.problems:
        err.write(f"{problem}\n")
    if args.json:
        out.write(render.dumps(_json(shown)))
    elif shown.details:
        out.write("\n".join(_block(d, shown.listing.now) for d in shown.details))
        out.writelines(one_line(f"unhealthy: {p.message}") + "\n" for p in shown.state_problems)
    else:
        out.write(_overview(shown))
    render.torn_warnings(paths, err)
    return shown.exit_code


# --- text --------------------------------------------------------------------------------------


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def _why(row: RoutineRow) -> str:
    if row.interrupted:
        return f"runner died mid-attempt: `resolve {row.id}`"
    if row.held:
        return row.hold_reason or "held"
    if row.paused is not None:  # SPEC §13: who, when and why; a pause hides no failure
        note = row.paused.get("note")
        failed = (f"failure: {row.last_reason or 'failed'}; "  # first: the line may be cut
                  if row.last_result == "failure" else "")
        return failed + f"paused by {row.paused.get('by')} at {row.paused.get('at')}" + (
            f": {note}" if note else "")
    if row.retrying:
        return f"{row.retrying}: {row.last_reason or 'failed'}"
    if row.state == "running":  # the reason on record is the attempt before's: not shown,
        return ", ".join(row.problems)  # as `list`; what keeps it unhealthy, as `status ID`
    if row.last_result not in (None, "success"):
        return row.last_reason or ""
    if row.last_missed is not None:
        return f"missed {row.last_missed['scheduled_for']}"
    return ""


def _overview(shown: status_app.Status) -> str:
    now = shown.listing.now
    rows = [[r.id, r.state, render.relative(r.last_run, now),
             render.relative(r.next_occurrence, now) if r.enabled else "-", _why(r)]
            for r in shown.rows]
    lines = render.table(["ID", "STATE", "LAST RUN", "NEXT", "WHY"], rows).splitlines()
    text = "".join(_cut(line, WIDTH) + "\n" for line in lines)
    bad = shown.unhealthy
    if bad:
        text += (f"unhealthy: {len(bad)} of {len(shown.rows)} routine(s): "
                 f"{', '.join(r.id for r in bad)}\n")
    if shown.listing.problems:  # with unhealthy routines too: each is a reason for exit 1
        text += f"{render.INVALID}\n"
    text += "".join(one_line(f"unhealthy: {p.message}") + "\n" for p in shown.state_problems)
    if not bad and not shown.listing.problems and not shown.state_problems:  # a disabled
        # routine is not checked: say so
        off = sum(1 for r in shown.rows if not r.enabled)
        text += (f"healthy: {len(shown.rows) - off} routine(s)"
                 + (f" ({off} disabled, not checked)" if off else "") + "\n")
    return text


def _stamp(value: str | None, zone: str = "UTC") -> str:
    when = try_parse_instant(value)
    if when is None:
        return "-"
    local = when.astimezone(ZoneInfo(zone))
    return local.strftime("%Y-%m-%d %H:%M ") + (local.tzname() or zone)


def _policy(routine: Routine) -> str:
    p = routine.policy
    parts = [f"missed_run {p.missed_run.value}", f"on_failure {p.on_failure.value}",
             f"on_interrupted {p.on_interrupted.value}"]
    if p.starting_deadline is not None:
        parts.append(f"starting_deadline {span_text(p.starting_deadline.seconds)}")
    return ", ".join(parts)


def _actions(routine: Routine) -> list[str]:
    found = []
    for index, action in enumerate(routine.actions, 1):
        target = getattr(action, "job", None) or " ".join(
            redact_words(getattr(action, "args", ()) or ()))  # as any command line is shown
        found.append(f"{index}. {action.kind}" + (f" {target}" if target else ""))
    return found


def _state_line(detail: status_app.Detail) -> str:
    row = detail.row
    text = row.state
    if row.state == "retrying" and row.retrying:  # `retrying (2/3) at <time>` (SPEC §13)
        text = row.retrying
    if row.state == "running" and detail.owner:
        text += f" (pid {detail.owner.get('pid')} on {detail.owner.get('host')})"
    standing = _standing(row)
    if standing:
        text += f" ({standing})"
    if row.problems:
        text += " - unhealthy: " + ", ".join(row.problems)
    return text


def _standing(row: RoutineRow) -> str:
    """What the state word alone does not say and no attempt row shows: who paused the
    routine, why it is held, which occurrence it missed and why, when it is retried."""
    found = []
    if row.paused is not None and row.state == "paused":
        found.append(_why(row))
    if row.held:
        found.append(f"{row.hold_reason or 'held'}; {row.held_occurrences} held "
                     f"occurrence(s), `release {row.id}`")
    if row.last_missed is not None:
        found.append(f"missed {row.last_missed.get('scheduled_for')}: "
                     f"{row.last_missed.get('reason')}")
    if row.retrying and row.state != "retrying":
        found.append(row.retrying)
    return "; ".join(found)


def _open_word(row: RoutineRow) -> str:
    """What an attempt still open is: interrupted once its runner is gone (SPEC §6.5)."""
    return "interrupted" if row.interrupted else "running"


def _attempt_rows(attempts: list[Attempt]) -> list[str]:
    if not attempts:
        return ["    no attempts yet"]
    rows = []
    for a in attempts:
        took = span_text(a.duration_s) if a.duration_s is not None else "-"
        late = span_text(a.late_by_s) if a.late_by_s is not None else "-"
        scheduled, started = _stamp(a.scheduled_for)[:16], _stamp(a.started_at)[:16]
        if started[:10] == scheduled[:10]:
            started = started[11:]  # the same day: the time says it
        rows.append([scheduled, started, took, late, a.state, a.why])
    lines = render.table(["SCHEDULED (UTC)", "STARTED", "TOOK", "LATE", "RESULT", "REASON"],
                         rows).splitlines()
    out = [_cut("    " + line, WIDTH) for line in lines[:1]]
    for line, a in zip(lines[1:], attempts, strict=True):
        out.append(_cut("    " + line, WIDTH))
        if a.job_run_ids and a.result != "success":
            out.append(_cut("      job runs: " + ", ".join(a.job_run_ids), WIDTH))
    return out


def _block(detail: status_app.Detail, now: datetime) -> str:
    r, row = detail.routine, detail.row
    zone = r.timezone or "UTC"
    title = f"{r.id} - {r.name}" if r.name else r.id
    spelled = f"; cron {r.trigger.cron}" if r.trigger is not None else ""
    lines = [title, f"  schedule  {cronwords.describe(r)}{spelled}",
             f"  policy    {_policy(r)}"]
    lines += [f"  {'actions' if i == 0 else '':8}  {a}" for i, a in enumerate(_actions(r))]
    lines.append(f"  state     {_state_line(detail)}")
    if row.last_run:
        reason = f": {row.last_reason}" if row.last_reason and row.last_result != "success" \
            else ""
        lines.append(_cut(f"  last      {row.last_result or _open_word(row)} "
                          f"{render.relative(row.last_run, now)}{reason}", WIDTH))
    for i, up in enumerate(detail.upcoming):
        note = f" ({up.note})" if up.note else ""
        utc = f"{_stamp(up.utc)}  " if zone != "UTC" else ""
        lines.append(_cut(f"  {'next' if i == 0 else '':8}  {_stamp(up.utc, zone)}  {utc}"
                          f"{render.relative(up.utc, now)}{note}", WIDTH))
    if not detail.upcoming:
        lines.append("  next      - (disabled)" if not r.enabled else "  next      -")
    lines.append(f"  attempts  last {len(detail.attempts)}, oldest first:")
    lines += _attempt_rows(detail.attempts)
    if detail.failed_action is not None:
        failed = detail.failed_action
        label = "failed" if failed.result == "failure" else str(failed.result)
        lines.append(f"  {label:8}  action {failed.index} ({failed.kind}): "
                     f"{failed.reason or failed.result}")
        lines += [_cut(f"    | {line}", WIDTH) for line in detail.stderr_tail]
        if failed.evidence_ref and detail.evidence_pruned is not None:
            lines.append(f"  evidence  {failed.evidence_ref} (pruned at "
                         f"{detail.evidence_pruned})")
        elif failed.evidence_ref:
            lines.append(f"  evidence  {failed.evidence_ref}")
            lines.append(f"            (all of it: `logs {r.id}`)")
    return "".join(one_line(line) + "\n" for line in lines)  # reasons, notes, stderr: one line


# --- JSON --------------------------------------------------------------------------------------


def _row_json(row: RoutineRow) -> dict[str, Any]:
    return {"id": row.id, "state": row.state, "healthy": not row.problems,
            "problems": row.problems, "enabled": row.enabled, "status": row.status,
            "interrupted": row.interrupted, "held": row.held, "paused": row.paused,
            "last_run": row.last_run,
            "last_result": row.last_result, "last_reason": row.last_reason,
            "last_missed": row.last_missed, "next_occurrence": row.next_occurrence,
            "retrying": row.retrying}


def _detail_json(detail: status_app.Detail) -> dict[str, Any]:
    r, failed = detail.routine, detail.failed_action
    return {**_row_json(detail.row), "name": r.name, "schedule": r.schedule_text,
            "schedule_words": cronwords.describe(r), "timezone": r.timezone or "UTC",
            "policy": {"missed_run": r.policy.missed_run.value,
                       "on_failure": r.policy.on_failure.value,
                       "on_interrupted": r.policy.on_interrupted.value,
                       "starting_deadline": r.policy.starting_deadline.text
                       if r.policy.starting_deadline else None},
            "actions": _actions(r), "owner": detail.owner,
            "next": [u.to_json() for u in detail.upcoming],
            "attempts": [a.to_json() for a in detail.attempts],
            "failed_action": failed.to_json() if failed else None,
            "stderr_tail": detail.stderr_tail,
            "evidence_ref": failed.evidence_ref if failed else None,
            "evidence_pruned": detail.evidence_pruned}


def _json(shown: status_app.Status) -> dict[str, Any]:
    lock = shown.listing.lock
    routines = ([_detail_json(d) for d in shown.details] if shown.details
                else [_row_json(r) for r in shown.rows])
    return {"now": format_s(shown.listing.now), "healthy": shown.exit_code == 0,
            "unhealthy": [r.id for r in shown.unhealthy],
            "problems": shown.listing.problem_texts([d.row.id for d in shown.details]),
            "routines": routines,
            "lock": {"held": lock.held, "pid": lock.pid, "host": lock.host,
                     "acquired_at": lock.acquired_at, "suspicious": lock.suspicious}}


# --- next without an id: the agenda --------------------------------------------------------------


def cmd_agenda(args: argparse.Namespace, paths: ProjectPaths, out: TextIO, err: TextIO) -> int:
    """``next`` without an id: every enabled routine's next occurrence(s) and pending retry,
    soonest first."""
    from specdojo_routine.app import agenda

    found = agenda.agenda(paths, count=args.count or 1, now=args.now, retries=True)
    now, entries = found.now, found.entries
    if args.json:
        out.write(render.dumps({"now": format_s(now), "occurrences": [
            {"routine_id": e.routine_id, "timezone": e.timezone, **e.upcoming.to_json(),
             "standing": e.standing, "retry": _retry_json(e.retry),
             "supersedes": _retry_json(e.supersedes)} for e in entries]}))
    elif not entries:
        out.write("no upcoming occurrences (no enabled routine)\n")
    else:
        out.write(_agenda_text(now, entries))
    render.state_warnings(found.problems, err)
    render.torn_warnings(paths, err)
    return 0


def _retry_json(retry: Any) -> dict[str, Any] | None:
    return None if retry is None else dict(retry.to_json())


def _agenda_text(now: datetime, entries: list[Any]) -> str:
    rows = [[render.relative(e.upcoming.utc, now), _stamp(e.upcoming.utc)[:16],
             _stamp(e.upcoming.utc, e.timezone) if e.timezone != "UTC" else "-", e.routine_id]
            for e in entries]
    lines = render.table(["IN", "UTC", "LOCAL", "ROUTINE"], rows).splitlines(keepends=True)
    text = [lines[0]]
    for line, e in zip(lines[1:], entries, strict=True):
        text.append(line)
        text.extend(f"  note: {note}\n" for note in _agenda_notes(e))
    return "".join(text)


def _agenda_notes(e: Any) -> list[str]:
    """The ``note:`` lines under an agenda row: what the entry is when it is a retry, the DST
    effect, the retry an occurrence drops, and why the entry will not run."""
    notes: list[str] = []
    if e.retry is not None:
        notes.append(f"retry {e.retry.number}/{e.retry.of} of the occurrence of "
                     f"{e.retry.scheduled_for}, due {format_s(e.retry.due_at)}")
    if e.upcoming.note:
        notes.append(e.upcoming.note)
    if e.supersedes is not None:
        notes.append(f"retry {e.supersedes.number}/{e.supersedes.of} of the occurrence of "
                     f"{e.supersedes.scheduled_for} (due {format_s(e.supersedes.due_at)}) "
                     "gives way to this occurrence: recorded as retry_superseded, not run")
    if e.standing is not None and e.retry is not None:
        notes.append(f"{e.standing}: the retry waits for `resume {e.routine_id}`")
    elif e.standing_note is not None:
        notes.append(e.standing_note)
    return notes
