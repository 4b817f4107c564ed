"""CLI of ``report --html FILE [--days N]`` (SPEC §14): a page to look at, one line said."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from specdojo_routine.app import report as report_app
from specdojo_routine.cli import render
from specdojo_routine.store.config import ProjectPaths


def _days(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if not 1 <= value <= report_app.MAX_DAYS:
        raise argparse.ArgumentTypeError(
            f"expected a number of days from 1 to {report_app.MAX_DAYS}, got {text!r}")
    return value


def add_report(sub: Any, common: argparse.ArgumentParser,
               instant: Callable[[str], object]) -> None:
    """``report`` (``sub`` is the main parser's subparsers)."""
    p = sub.add_parser("report", parents=[common],
                       help="write an HTML page: the last days of every routine at a glance")
    p.add_argument("--html", required=True, type=Path, metavar="FILE",
                   help="the file to write (replaced atomically; its directory must exist)")
    p.add_argument("--days", type=_days, default=report_app.DEFAULT_DAYS, metavar="N",
                   help=f"show the last N days, today included (default: "
                        f"{report_app.DEFAULT_DAYS})")
    p.add_argument("--now", type=instant, metavar="T",
                   help="report as of time T (ISO 8601, e.g. 2026-08-07T08:02:00Z), not the "
                        "clock")


def cmd_report(args: argparse.Namespace, paths: Callable[[], ProjectPaths], out: TextIO,
               err: TextIO) -> int:
    report_app.check_target(args.html)  # a wrong FILE is said before the project is looked for
    project = paths()
    shown = report_app.report(project, args.html, days=args.days, now=args.now)
    cells = sum(len(row.cells) for row in shown.rows)
    out.write(f"wrote {args.html}: {len(shown.rows)} routine(s), {cells} occurrence(s) in "
              f"{len(shown.days)} day(s)\n")
    render.torn_warnings(project, err)
    return 0
