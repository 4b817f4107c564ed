"""CLI of the operator controls (SPEC §13): ``pause``, ``resume``, ``stop`` and
``resolve --attempt``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TextIO

from specdojo_routine.app import controls
from specdojo_routine.cli import render
from specdojo_routine.core.errors import EXIT_OK, UsageError
from specdojo_routine.store.config import ProjectPaths

Instant = Callable[[str], object]


def add_pause(sub: Any, common: argparse.ArgumentParser, instant: Instant, *,
              paused: bool) -> None:
    """``pause`` or ``resume`` (``sub`` is the main parser's subparsers)."""
    name = "pause" if paused else "resume"
    p = sub.add_parser(name, parents=[common],
                       help="pause a routine: run --due starts nothing for it" if paused else
                       "resume a paused routine (runs nothing by itself)")
    p.add_argument("routine_id", nargs="?", metavar="ID", help=f"the routine to {name}")
    p.add_argument("--all", action="store_true",
                   help=f"{name} every routine (one event each)")
    p.add_argument("--note", metavar="TEXT", help="why (kept in the ledger)")
    p.add_argument("--by", dest="by", metavar="NAME", help="who (default: $USER)")
    p.add_argument("--now", type=instant, metavar="T",
                   help=f"the {name} time (ISO 8601; default: the clock)")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def cmd_pause(args: argparse.Namespace, paths: Callable[[], ProjectPaths], out: TextIO,
              err: TextIO, *, paused: bool) -> int:
    name = "pause" if paused else "resume"
    if args.all == (args.routine_id is not None):
        raise UsageError(f"{name} takes either ID or --all")
    done = controls.set_paused(paths(), None if args.all else args.routine_id, paused=paused,
                               note=args.note, by=args.by, now=args.now,
                               warn=render.warner(err))
    if args.json:
        out.write(render.dumps({"paused" if paused else "resumed": list(done)}))
        return EXIT_OK
    word = "paused" if paused else "resumed (nothing runs until its next occurrence)"
    for routine_id in done:
        out.write(f"{routine_id}: {word}\n")
    return EXIT_OK


def add_stop(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("stop", parents=[common], help="stop a routine's running attempt")
    p.add_argument("routine_id", metavar="ID", help="the routine whose attempt is running")
    p.add_argument("--note", metavar="TEXT", help="why (recorded with the stop's reason)")
    p.add_argument("--by", dest="by", metavar="NAME", help="who (default: $USER)")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def cmd_stop(args: argparse.Namespace, paths: ProjectPaths, out: TextIO, err: TextIO) -> int:
    attempt_id = controls.stop(paths, args.routine_id, note=args.note, by=args.by)
    if args.json:
        out.write(render.dumps({"routine_id": args.routine_id, "attempt_id": attempt_id,
                                "stopped": True}))
        return EXIT_OK
    out.write(f"{args.routine_id}: attempt {attempt_id} stopped and recorded\n")
    return EXIT_OK


def cmd_override(args: argparse.Namespace, paths: ProjectPaths, out: TextIO,
                 err: TextIO) -> int:
    """``resolve ID --attempt ATTEMPT_ID``: change an ended attempt's outcome."""
    attempt_id = controls.override(paths, args.routine_id, args.attempt, result=args.result,
                                   note=args.note, by=args.resolved_by,
                                   warn=render.warner(err))
    if args.json:
        out.write(render.dumps({"routine_id": args.routine_id, "attempt_id": attempt_id,
                                "result": args.result, "overrides": True}))
        return EXIT_OK
    out.write(f"{args.routine_id}: attempt {attempt_id} overridden as {args.result}\n")
    return EXIT_OK
