"""CLI of the operational policies (SPEC §9): ``release``, ``next`` and backfill on ``run``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from specdojo_routine.cli import render
from specdojo_routine.core.errors import EXIT_OK, UsageError
from specdojo_routine.store.config import ProjectPaths

if TYPE_CHECKING:  # each command imports what it runs: `run` only asks about backfill options
    from specdojo_routine.app import handlers
    from specdojo_routine.core.preview import Upcoming

Instant = Callable[[str], object]


def add_release(sub: Any, common: argparse.ArgumentParser, instant: Instant) -> None:
    """``release`` (``sub`` is the main parser's subparsers)."""
    p = sub.add_parser("release", parents=[common], help="end a routine's hold")
    p.add_argument("routine_id", metavar="ID", help="the held routine")
    p.add_argument("--run", choices=["none", "latest", "all"], default="none",
                   help="which held occurrences run now (default none)")
    p.add_argument("--note", metavar="TEXT", help="why it is released (kept in the ledger)")
    p.add_argument("--by", dest="released_by", metavar="NAME",
                   help="who released it (default: $USER)")
    p.add_argument("--now", type=instant, metavar="T",
                   help="the release time (ISO 8601; default: the clock)")
    p.add_argument("--json", action="store_true", help="print one JSON document")


#: The most occurrences ``next -n`` lists: every one is computed and held before the first
#: is printed, so a mistyped N (an extra zero or six) would fill the memory, printing nothing.
MAX_PREVIEW = 1000


def _occurrences(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if not 1 <= value <= MAX_PREVIEW:
        raise argparse.ArgumentTypeError(
            f"expected a number of occurrences from 1 to {MAX_PREVIEW}, got {text!r}")
    return value


def add_next(sub: Any, common: argparse.ArgumentParser, instant: Instant) -> None:
    """``next`` (``sub`` is the main parser's subparsers)."""
    p = sub.add_parser("next", parents=[common], help="upcoming occurrences")
    p.add_argument("routine_id", nargs="?", metavar="ID",
                   help="the routine to preview (default: the agenda of every routine)")
    p.add_argument("-n", dest="count", type=_occurrences, metavar="N",
                   help=f"how many occurrences, 1 to {MAX_PREVIEW} (default 5; in the agenda "
                   "1 per routine)")
    p.add_argument("--cron", metavar="EXPR", help="preview this 5-field cron expression")
    p.add_argument("--timezone", metavar="TZ", help="the IANA time zone of --cron")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--now", type=instant, metavar="T",
                   help="preview from time T (ISO 8601), not the clock")


def add_backfill_options(run: argparse.ArgumentParser, instant: Instant) -> None:
    run.add_argument("--from", dest="backfill_from", type=instant, metavar="T1",
                     help="backfill: first scheduled time (with --id and --to)")
    run.add_argument("--to", dest="backfill_to", type=instant, metavar="T2",
                     help="backfill: last scheduled time (inclusive)")


def backfill_requested(args: argparse.Namespace) -> bool:
    """Whether ``run`` was asked to backfill; refuses half or misplaced ranges (exit 2)."""
    start, end = getattr(args, "backfill_from", None), getattr(args, "backfill_to", None)
    if start is None and end is None:
        return False
    if args.routine_id is None:
        raise UsageError("--from/--to backfill one routine: use them with --id ID")
    if start is None or end is None:
        raise UsageError("backfill needs both --from and --to")
    return True


def run_backfill(args: argparse.Namespace, paths: ProjectPaths, out: TextIO, err: TextIO,
                 job_runner: handlers.JobActionRunner) -> int:
    from specdojo_routine.app import release

    report = release.backfill(paths, args.routine_id, start=args.backfill_from,
                              end=args.backfill_to, dry_run=args.dry_run, now=args.now,
                              echo=err if args.json else out, job_runner=job_runner)
    render.run_report(report, out, err, as_json=args.json)
    return report.exit_code


def cmd_release(args: argparse.Namespace, paths: ProjectPaths, out: TextIO, err: TextIO,
                job_runner: handlers.JobActionRunner) -> int:
    from specdojo_routine.app import release

    held, report = release.release(paths, args.routine_id, run=args.run, note=args.note,
                                   by=args.released_by, now=args.now,
                                   echo=err if args.json else out, job_runner=job_runner)
    if args.json:
        out.write(render.dumps({"routine_id": args.routine_id, "run": args.run,
                                "held_occurrences": held,
                                "results": [r.to_json() for r in report.results]}))
    else:
        out.write(f"{args.routine_id}: released ({len(held)} held occurrence(s); "
                  f"--run {args.run})\n")
    if report.results and not args.json:
        render.run_report(report, out, err, as_json=False)
    else:  # the release is recorded; a view it could not write is said all the same
        for warning in report.warnings:
            err.write(f"{warning}\n")
    return report.exit_code


def cmd_next(args: argparse.Namespace, paths: Callable[[], ProjectPaths], out: TextIO,
             err: TextIO) -> int:
    from datetime import UTC, datetime

    from specdojo_routine.app import preview

    if args.cron is not None or args.timezone is not None:
        if args.routine_id is not None or args.cron is None or args.timezone is None:
            raise UsageError("next takes either ID, or --cron EXPR with --timezone TZ")
        items = preview.preview_cron(args.cron, args.timezone, count=args.count or 5,
                                     now=args.now)
        end = preview.calendar_end(items, args.count or 5, args.now or datetime.now(UTC))
        if end is not None and not args.json:
            out.write(f"note: {end}\n")
        _print_next(args, None, args.timezone, items, out)
        return EXIT_OK
    if args.routine_id is None:  # the agenda of every routine (SPEC §14)
        from specdojo_routine.cli import statuscli

        return statuscli.cmd_agenda(args, paths(), out, err)
    project = paths()
    found = preview.preview_with_notes(project, args.routine_id, count=args.count or 5,
                                       now=args.now)
    if not args.json:
        out.writelines(f"note: {note}\n" for note in found.notes)
    if found.items or not found.notes or args.json:
        retry = found.retry.to_json() if found.retry is not None else None
        _print_next(args, args.routine_id, found.zone, found.items, out, retry=retry,
                    standing=found.standing)
    render.state_warnings(found.problems, err)
    render.torn_warnings(project, err)  # "after last run" read the routine ledger's fold
    return EXIT_OK


def _print_next(args: argparse.Namespace, routine_id: str | None, zone: str,
                items: list[Upcoming], out: TextIO, *, retry: dict[str, Any] | None = None,
                standing: str | None = None) -> None:
    """The occurrences as a table, or ``--json`` with the routine's ``standing`` (paused,
    held or null, as the agenda's) and the pending ``retry`` (null: none)."""
    if args.json:
        out.write(render.dumps({"routine_id": routine_id, "timezone": zone,
                                "standing": standing,
                                "occurrences": [i.to_json() for i in items], "retry": retry}))
    else:
        out.write(_preview_text(zone, items))


def _preview_text(zone: str, items: list[Upcoming]) -> str:
    if not items:
        return "no upcoming occurrences\n"
    rows = [[i.local, i.utc, i.latest_start or "-", i.note or ""] for i in items]
    return render.table([f"LOCAL ({zone})", "UTC", "LATEST START", "NOTE"], rows)


