"""CLI of ``history`` (SPEC §8, §14): the routine ledger's events, or one line per attempt,
filtered by time and result, read from the end of the ledger."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from typing import Any, TextIO

import orjson

from specdojo_routine.app import recent
from specdojo_routine.cli import render
from specdojo_routine.core.attempts import Attempt
from specdojo_routine.core.errors import UsageError
from specdojo_routine.core.policy import span_text
from specdojo_routine.core.timefmt import format_s, try_parse_instant
from specdojo_routine.store.config import ProjectPaths

RESULTS = ("success", "failure", "skipped", "partial", "running", "interrupted")


def add_history(sub: Any, common: argparse.ArgumentParser, instant: Callable[[str], object],
                positive: Callable[[str], int]) -> None:
    """``history`` (``sub`` is the main parser's subparsers)."""
    p = sub.add_parser("history", parents=[common], help="routine ledger events or attempts")
    p.add_argument("routine_id", nargs="?", metavar="ID",
                   help="only this routine's events (default: every routine)")
    p.add_argument("--attempts", action="store_true",
                   help="one line per attempt (scheduled, started, ended, result, reason) "
                        "instead of one per event")
    p.add_argument("--json", action="store_true",
                   help="print the ledger lines as stored, one JSON object per line (with "
                        "--attempts: one attempt per line)")
    p.add_argument("--limit", type=positive, metavar="N",
                   help="only the last N events (or attempts); read from the end")
    p.add_argument("--since", type=instant, metavar="T",
                   help="only from time T on (ISO 8601): when an event was recorded, or the "
                        "time an attempt was scheduled for")
    p.add_argument("--until", type=instant, metavar="T",
                   help="only up to time T (ISO 8601), as --since")
    p.add_argument("--result", choices=RESULTS,
                   help="only events or attempts with this result (running: still open; "
                        "interrupted: still open, its runner gone)")


def cmd_history(args: argparse.Namespace, paths: ProjectPaths, out: TextIO, err: TextIO) -> int:
    if args.since is not None and args.until is not None and args.since > args.until:
        raise UsageError(f"--since {format_s(args.since)} is later than --until "
                         f"{format_s(args.until)}: no event is between them; swap the two")
    if args.routine_id is not None:
        recent.check_routine_id(paths, args.routine_id, see="list")
    filters = {"limit": args.limit, "since": args.since, "until": args.until,
               "result": args.result}
    if args.attempts:
        attempts = recent.recent_attempts(paths, args.routine_id, **filters)
        if args.json:
            out.write("".join(orjson.dumps(a.to_json()).decode() + "\n" for a in attempts))
        else:
            out.write(_attempts_text(attempts, every=args.routine_id is None))
    elif args.limit is None and args.since is None:
        _every_event(args, paths, out)
    else:
        lines = recent.recent_events(paths, args.routine_id, **filters)
        if args.json:
            out.write("".join(raw.decode("utf-8") + "\n" for raw, _event in lines))
        else:
            out.write(render.history([event for _raw, event in lines]))
    render.torn_warnings(paths, err)
    return 0


def _every_event(args: argparse.Namespace, paths: ProjectPaths, out: TextIO) -> None:
    """The whole ledger's matching events, written as they are read, oldest first: the text
    table reads the ledger twice (its widths, then its rows) rather than hold it."""
    def lines() -> Iterator[recent.Line]:
        return recent.every_event(paths, args.routine_id, until=args.until, result=args.result)

    if args.json:
        for raw, _event in lines():  # write, not writelines: the pipe guard watches write
            out.write(raw.decode("utf-8") + "\n")
    elif not render.stream_table(render.HISTORY_HEADERS,
                                 lambda: (render.history_row(e) for _raw, e in lines()), out):
        out.write("no events\n")


def _minute(stamp: str | None) -> str:
    when = try_parse_instant(stamp)
    return "-" if when is None else when.strftime("%Y-%m-%d %H:%M")


def _attempts_text(attempts: list[Attempt], *, every: bool) -> str:
    if not attempts:
        return "no attempts\n"
    rows = []
    for a in attempts:
        scheduled, started, ended = (_minute(a.scheduled_for), _minute(a.started_at),
                                     _minute(a.completed_at))
        row = [scheduled, started[11:] if started[:10] == scheduled[:10] else started,
               ended[11:] if ended[:10] == started[:10] else ended,
               span_text(a.duration_s) if a.duration_s is not None else "-",
               a.state, a.trigger or "upstream",
               a.why]
        rows.append([a.routine_id, *row] if every else row)
    headers = ["SCHEDULED (UTC)", "STARTED", "ENDED", "TOOK", "RESULT", "TRIGGER", "REASON"]
    return render.table(["ROUTINE", *headers] if every else headers, rows)
