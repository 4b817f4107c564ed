"""CLI of retention (SPEC §15): ``prune`` and the line ``run --due`` prints when it pruned."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from specdojo_routine.cli import render
from specdojo_routine.core.errors import EXIT_FAILURE, EXIT_OK
from specdojo_routine.store.config import ProjectPaths

if TYPE_CHECKING:
    from specdojo_routine.app.run_report import RunReport

Instant = Callable[[str], object]


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def add_prune(sub: Any, common: argparse.ArgumentParser, instant: Instant) -> None:
    """``prune`` (``sub`` is the main parser's subparsers)."""
    p = sub.add_parser("prune", parents=[common],
                       help="remove old evidence, plans and results (the ledgers stay)")
    p.add_argument("--keep-days", type=_count, metavar="D",
                   help="keep what ended within D days (default: the config's "
                        "retention.keep_days, else 90)")
    p.add_argument("--keep-runs", type=_count, metavar="N",
                   help="always keep the newest N runs of each Job and attempts of each "
                        "routine (default: retention.keep_runs, else 50)")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would be removed; remove and record nothing, take no lock")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--now", type=instant, metavar="T",
                   help="the time the window is measured from (ISO 8601; default: the clock)")


def cmd_prune(args: argparse.Namespace, paths: ProjectPaths, out: TextIO, err: TextIO) -> int:
    from specdojo_routine.app import prune

    report = prune.prune(paths, keep_days=args.keep_days, keep_runs=args.keep_runs,
                         dry_run=args.dry_run, now=args.now)
    for reason in report.skipped:
        err.write(f"warning: kept for now: {reason}\n")
    failed = _failures(report.failed, err)
    if args.json:
        out.write(render.dumps(report.to_json()))
        return failed
    if args.dry_run:
        for removal in report.removed:
            done = " (finishing an earlier prune)" if removal.finishing else ""
            out.write(f"would remove {removal.owner} ({removal.group}){done}: "
                      f"{', '.join(removal.paths)}\n")
    out.write(report.summary() + "\n")
    return failed


def _failures(failed: list[str], err: TextIO) -> int:
    """One ``error:`` line per owner whose files failed (the others were pruned); exit 1
    when there is one."""
    for line in failed:
        err.write(f"error: {line}\n")
    return EXIT_FAILURE if failed else EXIT_OK


def run_footer(report: RunReport, out: TextIO, err: TextIO) -> None:
    """What ``retention.auto`` did during ``run --due`` (nothing when nothing went)."""
    if report.prune_error is not None:
        err.write(f"warning: prune: {report.prune_error}\n")
    pruned = report.pruned
    for line in pruned.failed if pruned is not None else ():
        err.write(f"warning: prune: kept for now: {line}\n")
    if pruned is not None and (pruned.removed or not pruned.complete):
        out.write(pruned.summary() + "\n")
