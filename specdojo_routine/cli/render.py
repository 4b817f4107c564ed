"""What commands print: aligned tables for people, one JSON document for machines."""

from __future__ import annotations

import functools
import itertools
import shlex
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import orjson

from specdojo_routine.core.errors import EXIT_FAILURE, EXIT_OK
from specdojo_routine.core.redact import redact, redact_words
from specdojo_routine.core.timefmt import format_ms, format_s
from specdojo_routine.core.timefmt import relative as relative  # re-exported: render.relative
from specdojo_routine.core.validation import one_line
from specdojo_routine.store.config import ProjectPaths

if TYPE_CHECKING:
    from datetime import datetime

    from specdojo_routine.app.listing import Listing, RoutineRow
    from specdojo_routine.app.run_report import AttemptReport, RunReport
    from specdojo_routine.store.definitions.load import Definitions


def dumps(data: Any) -> str:
    """One pretty JSON document with a trailing newline."""
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"


def torn_warnings(paths: ProjectPaths, err: TextIO, *, routine: bool = True,
                  run_ids: Sequence[str] = ()) -> None:
    """After a read-only answer: one ``warning:`` line for each torn ledger it read and left
    the fragment of out (:mod:`..app.torn`), on stderr, so a ``--json`` document stays whole."""
    from specdojo_routine.app import torn

    for line in torn.warnings(paths, routine=routine, run_ids=run_ids):
        err.write(f"{line}\n")


def state_warnings(problems: Sequence[str], err: TextIO) -> None:
    """What is wrong with the routine state (a conflict that makes `run` refuse, a cron
    cursor in the future), one ``warning:`` line each on stderr, where an answer that does
    not fail on them (``next``) still says them."""
    err.writelines(one_line(f"warning: {problem}") + "\n" for problem in problems)


def warner(err: TextIO) -> Callable[[str], None]:
    """Where a command's warnings go: one ``warning:`` line each on ``err`` (stderr, so a
    ``--json`` document stays whole)."""
    def warn(text: str) -> None:
        err.write(f"warning: {text}\n")

    return warn


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns separated by two spaces. A cell is one line with its control
    characters escaped: notes and names are typed by people and reasons quote commands, and a
    newline would split a row, an escape sequence reach the terminal."""
    cells = [[one_line(str(c)) for c in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in cells]
    return "\n".join(lines) + "\n"


def where(paths: ProjectPaths) -> str:
    rows = [
        ("root", str(paths.root)), ("project", paths.project_id),
        ("routines", str(paths.routines_dir)), ("jobs", str(paths.jobs_dir)),
        ("execution", str(paths.execution_dir)), ("routine ledger", str(paths.routine_ledger)),
        ("routine state", str(paths.routine_state)), ("job runs", str(paths.runs_dir)),
        ("job state", str(paths.job_state)), ("evidence", str(paths.evidence_dir)),
    ]
    width = max(len(k) for k, _ in rows)
    return "".join(f"{k.ljust(width)}  {v}\n" for k, v in rows)


def validation(defs: Definitions, out: TextIO, err: TextIO, *, jobs_only: bool = False) -> int:
    for problem in defs.problems:
        err.write(f"{problem}\n")
    routines = "" if jobs_only else f"{len(defs.routines)} routine(s), "
    out.write(
        f"Validated: {routines}{len(defs.jobs)} job(s), "
        f"{len(defs.errors)} error(s), {len(defs.warnings)} warning(s)\n"
    )
    return EXIT_FAILURE if defs.errors else EXIT_OK


#: the line of ``list`` and ``status`` for an invalid definition, which makes them exit 1
INVALID = "unhealthy: invalid definitions (see stderr; run `validate`)"


def listing(listing: Listing, out: TextIO, err: TextIO, *, as_json: bool) -> None:
    for problem in listing.problems:
        err.write(f"{problem}\n")
    lock = listing.lock
    if as_json:
        out.write(dumps({
            "now": format_s(listing.now),
            "routines": [row.to_json() for row in listing.rows],
            "lock": {"held": lock.held, "pid": lock.pid, "host": lock.host,
                     "acquired_at": lock.acquired_at, "suspicious": lock.suspicious},
            # why it exits 1 besides an unhealthy routine: an invalid definition, a conflict
            # in the routine state, a cron cursor later than now (as in status --json, §14)
            "problems": listing.problem_texts(),
        }))
        return
    now = listing.now
    rows = [[r.id, r.state, relative(r.last_run, now), r.last_result or "-",
             "yes" if r.due else "no", relative(r.next_occurrence, now) if r.enabled else "-"]
            for r in listing.rows]
    out.write(table(["ID", "STATUS", "LAST RUN", "RESULT", "DUE", "NEXT"], rows))
    for r in listing.rows:
        if r.interrupted:
            out.write(f"! {r.id}: interrupted - its runner died mid-attempt; check what it did, "
                      f"then `resolve {r.id} --result ... --note ...`\n")
        elif r.last_result not in (None, "success") and r.status != "running":
            mark = "!" if r.problems else " "
            out.write(one_line(f"{mark} {r.id}: last {r.last_result}: "
                               f"{r.last_reason or 'no reason'}") + "\n")
        _policy_lines(r, out)
    if listing.unhealthy:
        names = ", ".join(r.id for r in listing.unhealthy)
        out.write(f"unhealthy: {names} (see `status ID`)\n")
    if listing.problems:  # exit 1 as well (the health rule): say why on stdout too
        out.write(f"{INVALID}\n")
    out.writelines(one_line(f"! {p.message}") + "\n" for p in listing.state_problems)
    if lock.held:
        flag = " - SUSPICIOUS: held for over 1 hour" if lock.suspicious else ""
        holder = (f"pid {lock.pid} on {lock.host}" if lock.pid is not None else
                  "another tool (the upstream lock directory routine-run.lock/)")
        out.write(f"lock: held by {holder} since {lock.acquired_at}{flag}\n")


def _policy_lines(r: RoutineRow, out: TextIO) -> None:
    """Held and missed routines in ``list`` (SPEC §9): what happened and what to do. Each is
    one line, control characters escaped (reasons and operators' notes are quoted)."""
    lines = []
    if r.retrying:
        lines.append(f"  {r.id}: {r.retrying}" + ("" if r.retry_gives_way else (
            " (policy.retry; the next `run --due` after it starts it)")))
    if r.held:
        lines.append(f"! {r.id}: on hold ({r.hold_reason}); {r.held_occurrences} held "
                     f"occurrence(s); fix the cause, then `release {r.id} --run none|latest|all`")
    if r.paused is not None:  # SPEC §13: an operator's decision, not a problem
        note = f": {r.paused['note']}" if r.paused.get("note") else ""
        lines.append(f"  {r.id}: paused by {r.paused['by']} at {r.paused['at']}{note}; "
                     f"`resume {r.id}` to let run --due start it again")
    if r.last_missed is not None:
        lines.append(f"! {r.id}: missed {r.last_missed['scheduled_for']}: "
                     f"{r.last_missed['reason']} (cleared by the next success)")
    out.writelines(one_line(line) + "\n" for line in lines)


def run_report(report: RunReport, out: TextIO, err: TextIO, *, as_json: bool) -> None:
    """What ``run`` did or would do: its problems on ``err``, the rest on ``out``."""
    _run_problems(report, err)
    if as_json:
        out.write(dumps(_run_json(report)))
        return
    if not (report.selected or report.held or report.missed or report.paused):
        out.write(_nothing_run(report))
        return
    if report.dry_run:
        out.write("dry run - nothing is recorded or executed\n")
        _accounted_text(report, out)
        _dry_run_text(report, out)
        return
    _accounted_text(report, out)
    if report.selected:
        _results_text(report, out)


def _nothing_run(report: RunReport) -> str:
    """What a run that started nothing says: why each routine it had to leave was not run
    (an interrupted attempt waits for ``resolve``), that an error stopped it, that a backfill's
    range holds no occurrence, else that nothing was due."""
    lines = [f"not run: {rid} has an interrupted attempt; check it, then `resolve {rid} "
             "--result success|failure|skipped --note TEXT`\n" for rid in report.interrupted]
    lines += [f"not run: {rid} has an interrupted attempt whose action still runs; run it "
              "again once that ends\n" for rid in report.still_running]
    if not lines and report.nothing is not None:
        lines.append(f"{report.nothing}\n")
    if not lines and report.errors:  # not "no due routines": something was, and failed
        lines.append("nothing was run: see the error(s) above\n")
    return "".join(lines) or "no due routines\n"


def _run_problems(report: RunReport, err: TextIO) -> None:
    """The run's errors and warnings, and each interrupted attempt with what to do about it."""
    for problem in report.errors:
        err.write(f"{problem}\n")
        if problem.startswith("Too many missed cron occurrences"):
            err.write("  (missed_run: all found over 1000 occurrences in the 366-day window; set "
                      "missed_run: latest for one run to coalesce them, then restore all)\n")
    for warning in report.warnings:
        err.write(f"{warning}\n")
    for rid in report.closed_interrupted:
        err.write(f"{rid}: closed its interrupted attempt as failure (on_interrupted: resume)\n")
    for rid in report.still_running:
        err.write(f"{rid}: its interrupted attempt's action is still running (its process group "
                  "outlived the runner); not closed or started again until it ends\n")
    for rid in report.interrupted:
        err.write(f"{rid}: interrupted attempt (its runner died); not started again - check it, "
                  f"then `resolve {rid} --result success|failure|skipped --note TEXT`\n")


def _run_json(report: RunReport) -> dict[str, Any]:
    """``run --json``: the selection, the attempts' results and what was not run."""
    return {
        "selected": [{
            "routine_id": s.routine.id, "scheduled_for": format_ms(s.occurrence.scheduled_for),
            "trigger": s.occurrence.trigger,
            "actions": [a.to_json(report.prefix) for a in s.actions],
        } for s in report.selected],
        "results": [r.to_json() for r in report.results],
        "interrupted": report.interrupted,
        "closed_interrupted": report.closed_interrupted,
        "still_running": report.still_running,
        "errors": report.errors,
        "warnings": report.warnings,
        "held": [d.to_json() for d in report.held],
        "missed": [d.to_json() for d in report.missed],
        "paused": [d.to_json() for d in report.paused],
    }


def _results_text(report: RunReport, out: TextIO) -> None:
    """Each attempt's result, the actions that did not succeed under it, and the tally."""
    for r in report.results:
        reason = f" - {r.reason}" if r.reason else ""
        out.write(one_line(f"{r.routine_id}  {r.scheduled_for}  {r.result}{reason}") + "\n")
        out.write(_action_lines(r))
    counts = {k: sum(1 for r in report.results if r.result == k)
              for k in ("success", "failure", "skipped", "partial")}
    partial = f", {counts['partial']} partial" if counts["partial"] else ""
    out.write(f"Ran {len(report.results)} attempt(s): {counts['success']} success, "
              f"{counts['failure']} failure, {counts['skipped']} skipped{partial}\n")


def _action_lines(report: AttemptReport) -> str:
    """Under an attempt that did not succeed: each failed or skipped action with its reason,
    the last lines of its stderr and where its evidence is (SPEC §14), each one line with its
    control characters escaped (a command's stderr may hold escape sequences)."""
    lines: list[str] = []
    for a in report.actions:
        if a.result.value in ("success", "partial"):
            continue
        run = f" ({a.job_run_id})" if a.job_run_id else ""
        lines.append(one_line(f"  action {a.index} ({a.kind}) {a.result.value}: "
                              f"{a.reason or a.result.value}{run}") + "\n")
        lines += [f"    | {one_line(line)}\n" for line in a.stderr_tail]
        if a.evidence_ref and a.result.value == "failure":
            lines.append(f"    evidence: {a.evidence_ref}\n")
    return "".join(lines)


def _accounted_text(report: RunReport, out: TextIO) -> None:
    """Paused, held and missed occurrences (SPEC §9, §13): recorded, not run; a dry run only
    shows them."""
    would = "would be " if report.dry_run else ""
    for verdict, decisions in (("paused", report.paused), ("held", report.held),
                               ("missed", report.missed)):
        for d in decisions:
            since = d.occurrence.passed_over_since
            extra = f" (coalesces occurrences since {format_ms(since)})" if since else ""
            out.write(one_line(f"{d.occurrence.routine_id}  "
                               f"{format_ms(d.occurrence.scheduled_for)}  "
                               f"{would}{verdict}{extra} - {d.reason}") + "\n")


@functools.lru_cache(maxsize=1024)  # routines share their calls: 10,000 may be one command
def _shell_words(prefix: tuple[str, ...], argv: tuple[str, ...]) -> str:
    """The command line a dry run shows, redacted (SPEC §7.5)."""
    return shlex.join(redact_words([*prefix, *argv]))


def _dry_run_text(report: RunReport, out: TextIO) -> None:
    lines: list[str] = []  # written at once: 10,000 routines are 20,000 lines
    prefix = tuple(report.prefix)
    stamps: dict[datetime, str] = {}  # routines share their occurrences: each written once
    for s in report.selected:
        extra = ""
        if s.occurrence.passed_over_since is not None:
            extra = f" (coalesces occurrences since {format_ms(s.occurrence.passed_over_since)})"
        at = s.occurrence.scheduled_for
        stamp = stamps.get(at) or stamps.setdefault(at, format_ms(at))
        lines.append(f"{s.routine.id}  {stamp}  [{s.occurrence.trigger}]{extra}\n")
        for a in s.actions:
            if a.argv is not None:
                lines.append(f"  {a.index}. {a.kind}: {_shell_words(prefix, tuple(a.argv))}\n")
            else:
                inputs = ", ".join(f"{k}={redact(v)}" for k, v in (a.inputs or {}).items())
                lines.append(one_line(f"  {a.index}. job {a.job}"
                                      + (f" ({inputs})" if inputs else "")) + "\n")
    out.write("".join(lines))


def _event_detail(event: dict[str, Any]) -> str:
    etype = event.get("type")
    if etype == "routine_registered":
        return f"digest {str(event.get('digest'))[:12]} {event.get('path')}"
    if etype == "attempt_started":
        since = event.get("passed_over_since")
        coalesced = f", coalesced since {since}" if since else ""
        retry = (f", retry {event['retry_attempt']} of {event.get('retry_of')}"
                 if event.get("retry_attempt") else "")  # SPEC §13
        return (f"{event.get('transition')} {event.get('trigger')} for "
                f"{event.get('scheduled_for')}{coalesced}{retry}")
    if etype in ("action_started", "action_ended"):
        tail = f" -> {event.get('result')}" if etype == "action_ended" else ""
        reason = f" ({event['reason']})" if event.get("reason") else ""
        run = f" {event['job_run_id']}" if event.get("job_run_id") else ""
        return f"#{event.get('index')} {event.get('kind')}{tail}{reason}{run}"
    if etype == "attempt_ended":
        reason = f" ({event['reason']})" if event.get("reason") else ""
        return f"{event.get('transition')} {event.get('result')}{reason}"
    if etype == "attempt_resolved":
        overrides = (f" (overrides the end of {event.get('attempt_id')})"
                     if event.get("overrides") else "")
        return (f"{event.get('transition')} {event.get('result')}{overrides} by "
                f"{event.get('resolved_by')}: {event.get('note')}")
    return _policy_detail(etype, event)


def _policy_detail(etype: Any, event: dict[str, Any]) -> str:
    """SPEC §9 events: what was held or missed and why, and who released what."""
    if etype in ("occurrence_held", "occurrence_missed", "occurrence_paused"):
        since = event.get("passed_over_since")
        coalesced = f", coalesced since {since}" if since else ""
        return f"{event.get('scheduled_for')}{coalesced}: {event.get('reason')}"
    if etype == "routine_released":
        note = f": {event['note']}" if event.get("note") else ""
        return f"--run {event.get('run')} by {event.get('released_by')}{note}"
    if etype in ("routine_paused", "routine_resumed"):  # SPEC §13
        who, when = ("paused_by", "paused_at") if etype == "routine_paused" else (
            "resumed_by", "resumed_at")
        note = f": {event['note']}" if event.get("note") else ""
        return f"by {event.get(who)} at {event.get(when)}{note}"
    if etype == "evidence_pruned":  # SPEC §15
        return (f"attempt {event.get('attempt_id')}: {len(event.get('paths') or [])} path(s), "
                f"{event.get('bytes')} bytes")
    if etype == "retry_superseded":  # SPEC §13
        return (f"retry of {event.get('attempt_id')} for {event.get('scheduled_for')} dropped: "
                f"{event.get('reason')}")
    if etype == "notification_sent":  # SPEC §13
        code = event.get("exit_code")
        outcome = event.get("reason") or ("ok" if code == 0 else f"exit {code}")
        about = f" attempt {event['attempt_id']}" if event.get("attempt_id") else ""
        return (f"{event.get('event')}{about}: hook {outcome} "
                f"({event.get('duration_s')}s)")
    return ""


HISTORY_HEADERS = ("SEQ", "AT", "ROUTINE", "EVENT", "DETAIL")


def history_row(event: dict[str, Any]) -> list[str]:
    """One event's row of the ``history`` table."""
    return [str(event.get("seq")), str(event.get("at")), str(event.get("routine_id", "")),
            str(event.get("type")), _event_detail(event)]


def history(events: Sequence[dict[str, Any]]) -> str:
    """The routine ledger as an aligned table, oldest first."""
    if not events:
        return "no events\n"
    return table(HISTORY_HEADERS, [history_row(e) for e in events])


def stream_table(headers: Sequence[str], rows: Callable[[], Iterator[Sequence[str]]],
                 out: TextIO) -> int:
    """:func:`table`'s text written row by row (the number of rows; nothing when none): one
    pass of ``rows()`` finds the widths and a second writes, so a table as long as the whole
    ledger holds one row at a time. The second pass stops at the first pass's count, as rows
    appended in between were not measured."""
    widths, count = [len(one_line(h)) for h in headers], 0
    for row in rows():
        widths = [max(w, len(one_line(c))) for w, c in zip(widths, row, strict=True)]
        count += 1
    if count:
        for row in itertools.chain([headers], itertools.islice(rows(), count)):
            out.write("  ".join(one_line(c).ljust(w)
                                for c, w in zip(row, widths, strict=True)).rstrip() + "\n")
    return count
