"""CLI of ``logs`` and ``job logs`` (SPEC §14): the kept output of an attempt, stream by stream."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from specdojo_routine.app import logs as logs_app
from specdojo_routine.cli import render
from specdojo_routine.store.config import ProjectPaths


def _positive(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def add_logs(sub: Any, common: argparse.ArgumentParser) -> None:
    """``logs`` (``sub`` is the main parser's subparsers)."""
    p = sub.add_parser("logs", parents=[common], help="the output a routine's attempt kept")
    p.add_argument("routine_id", metavar="ID", help="the routine")
    p.add_argument("--attempt", dest="attempt_id", metavar="A",
                   help="this attempt (its id, see `history ID --attempts`; default: the last)")
    p.add_argument("--action", type=_positive, metavar="N",
                   help="only the N-th action (1-based; default: every action)")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def add_job_logs(jsub: Any, common: argparse.ArgumentParser) -> None:
    """``job logs`` (``jsub`` is the ``job`` parser's subparsers)."""
    p = jsub.add_parser("logs", parents=[common], help="the output a Job Run's attempt kept")
    p.add_argument("run_id", metavar="RUN_ID", help="the Job Run id (JBR-…, see `job list`)")
    p.add_argument("--attempt", type=_positive, metavar="N",
                   help="this attempt number (default: the last)")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def cmd_logs(args: argparse.Namespace, paths: ProjectPaths, out: TextIO, err: TextIO) -> int:
    shown = logs_app.routine_logs(paths, args.routine_id, attempt_id=args.attempt_id,
                                  action=args.action)
    code = _print(shown, out, as_json=args.json)
    render.torn_warnings(paths, err)
    return code


def cmd_job_logs(args: argparse.Namespace, paths: ProjectPaths, out: TextIO,
                 err: TextIO) -> int:
    shown = logs_app.job_logs(paths, args.run_id, attempt=args.attempt)
    code = _print(shown, out, as_json=args.json)
    render.torn_warnings(paths, err, routine=False, run_ids=[args.run_id])
    return code


def _print(shown: logs_app.Logs, out: TextIO, *, as_json: bool) -> int:
    if as_json:
        out.write(render.dumps({**shown.subject,
                                "outputs": [o.to_json() for o in shown.outputs]}))
        return 0
    parts = [f"{shown.heading}\n"]
    for output in shown.outputs:
        where = f" [{output.evidence_ref}]" if output.evidence_ref else ""
        parts.append(f"== {output.title}{where}\n")
        if output.reason:
            parts.append(f"   reason: {output.reason}\n")
        if output.missing:
            parts.append(f"   (no output: {output.missing})\n")
        for name, text in output.streams.items():
            cut = " (cut: the evidence keeps the first 64 KiB)" if name in output.cut else ""
            parts.append(f"-- {name}{cut}\n")
            if text:
                parts.append(text if text.endswith("\n") else text + "\n")
    out.write("".join(parts))
    return 0
