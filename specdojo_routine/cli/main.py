"""Command line: ``python -m specdojo_routine <command>`` (SPEC §8).

:func:`main` parses a line (the grammar is :mod:`parser`'s), runs its command and turns every
error into a message and an exit code. The commands here are thin: each calls its handler in
:mod:`app` and renders the answer; the larger families live in their own ``*cli`` modules.
What ``--help`` says lives in :mod:`helptext`; this module's docstring is for developers and is
never shown to users.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TextIO

from specdojo_routine.app import project
from specdojo_routine.cli import conventions, parser, policycli, prunecli, render
from specdojo_routine.core import errors
from specdojo_routine.core.errors import (
    EXIT_BUSY,
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    RoutineError,
    missing_dependency,
)
from specdojo_routine.core.redact import secret_values
from specdojo_routine.core.validation import shown
from specdojo_routine.execute import stop
from specdojo_routine.store import fsfacts
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions.load import Definitions

if TYPE_CHECKING:
    from specdojo_routine.app import handlers

Command = Callable[[argparse.Namespace, TextIO, TextIO], int]


def _controlcli() -> Any:
    from specdojo_routine.cli import controlcli

    return controlcli


def _statuscli() -> Any:
    from specdojo_routine.cli import statuscli

    return statuscli


def _historycli() -> Any:
    from specdojo_routine.cli import historycli

    return historycli


def _logscli() -> Any:
    from specdojo_routine.cli import logscli

    return logscli


def _reportcli() -> Any:
    from specdojo_routine.cli import reportcli

    return reportcli


def _dispatch(args: argparse.Namespace) -> Command:
    if args.command == "job":
        return _JOB_COMMANDS[args.job_command]
    return _COMMANDS[args.command]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code. Never raises for user mistakes, nor for a
    stop, wherever it lands - also while an error is being reported (then its line follows
    that error's)."""
    try:
        return _main(argv)
    except stop.Stopped as exc:
        sys.stderr.write(f"\nerror: {shown(str(exc))}\n")
        return exc.exit_code


def _main(argv: Sequence[str] | None) -> int:
    out: TextIO = sys.stdout
    err: TextIO = sys.stderr
    args: argparse.Namespace | None = None
    try:
        secrets = secret_values(os.environ)  # never printed, whatever a line quotes (§7.5)
        out = conventions.guarded(conventions.without(sys.stdout, secrets), _silence)
        err = conventions.without(sys.stderr, secrets)
        words = list(sys.argv[1:] if argv is None else argv)
        args = parser.parse(parser.build_parser(words), words)
        command = _dispatch(args)
        if conventions.quiet_requested(args):
            code = conventions.run_quietly(lambda o, e: command(args, o, e), out, err)
        else:
            code = command(args, out, err)
        out.flush()  # a reader that went away is noticed here, not by the interpreter's exit
        return code
    except RoutineError as exc:
        if conventions.quiet_requested(args) and exc.exit_code == EXIT_BUSY:
            return exc.exit_code  # busy is not a failure: the run holding the lock reports
        err.write(f"error: {shown(str(exc))}\n")
        return exc.exit_code
    except BrokenPipeError:  # the reader went away (`history | head`): stop quietly
        _silence(out)
        return EXIT_FAILURE
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except (KeyboardInterrupt, Exception) as exc:
        return _failed(exc, err)


def _failed(exc: BaseException, err: TextIO) -> int:
    """Say on ``err`` what stopped a command that was not the package's own error (a stop,
    Ctrl-C, a time out of range, the environment, a missing dependency, a bug); its exit
    code."""
    if isinstance(exc, stop.Stopped):  # a stop signal, where the process entry made it one
        err.write(f"error: {shown(str(exc))}\n")  # it quotes the operator's note
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):  # Ctrl-C where main runs without the stop handlers
        err.write("error: interrupted; an attempt that was running stays open and is reported "
                  "as interrupted by the next run\n")
        return 130
    if isinstance(exc, OverflowError):  # date arithmetic at the edges of years 1-9999
        err.write(f"error: a time is out of range ({exc}); use an instant between the years "
                  "1000 and 9998\n")
        return EXIT_USAGE
    if isinstance(exc, OSError):  # the environment, not a bug: say where, what and what to do
        err.write(f"error: {shown(fsfacts.describe(exc))}\n")
        return EXIT_FAILURE
    if isinstance(exc, ImportError):  # a dependency missing or broken: the environment again
        err.write(f"error: {shown(missing_dependency(exc))}\n")
        return EXIT_FAILURE
    err.write(f"error: internal error ({shown(f'{type(exc).__name__}: {exc}')}); "
              "please report it\n")
    return EXIT_FAILURE


def _silence(stream: TextIO) -> None:
    """Point a broken stdout at /dev/null, so the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (tests capture it)
        pass


# --- commands ---------------------------------------------------------------------------------


def _paths(args: argparse.Namespace) -> ProjectPaths:
    return project.project(args.root, args.project)


def cmd_where(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.json:
        from specdojo_routine.cli import jsonviews

        out.write(render.dumps(jsonviews.where(_paths(args))))
        return 0
    out.write(render.where(_paths(args)))
    return 0


def cmd_validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    report = project.validate(_paths(args))
    if args.json:
        from specdojo_routine.cli import jsonviews

        out.write(render.dumps(jsonviews.validation(report)))
        return EXIT_FAILURE if report.errors else EXIT_OK
    return render.validation(report, out, err)


def cmd_job_validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    report = project.validate(_paths(args), jobs_only=True)
    return render.validation(report, out, err, jobs_only=True)


def cmd_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from specdojo_routine.app import listing  # each command imports what it runs

    paths = _paths(args)
    shown = listing.list_routines(paths, now=args.now)
    render.listing(shown, out, err, as_json=args.json)
    render.torn_warnings(paths, err)
    return shown.exit_code  # the health check that `status` shares (SPEC §14)


def cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if policycli.backfill_requested(args):
        if args.input:
            raise errors.UsageError("--input is for one attempt of run --id, not a backfill")
        return policycli.run_backfill(args, _paths(args), out, err, _run_job_action)
    from specdojo_routine.app import handlers

    report = handlers.run(
        _paths(args), routine_id=args.routine_id, dry_run=args.dry_run, now=args.now,
        echo=err if args.json else out, job_runner=_run_job_action, inputs=args.input,
    )
    render.run_report(report, out, err, as_json=args.json)
    prunecli.run_footer(report, err if args.json else out, err)
    return report.exit_code


def _run_job_action(
    paths: ProjectPaths, defs: Definitions, *, job_id: str, inputs: Mapping[str, str],
    scheduled_at: datetime, echo: TextIO | None, worktree: bool = False,
    timeout_s: float | None = None,
) -> handlers.JobActionOutcome:
    from specdojo_routine.app.jobs import routine_job_runner

    return routine_job_runner(paths, defs, job_id=job_id, inputs=inputs,
                              scheduled_at=scheduled_at, echo=echo, worktree=worktree,
                              timeout_s=timeout_s)


def cmd_resolve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.attempt is not None:  # SPEC §13: an ended attempt's outcome
        return int(_controlcli().cmd_override(args, _paths(args), out, err))
    from specdojo_routine.app import handlers

    attempt_id = handlers.resolve(_paths(args), args.routine_id, result=args.result,
                                  note=args.note, by=args.resolved_by,
                                  warn=render.warner(err))
    if args.json:
        out.write(render.dumps({"routine_id": args.routine_id, "attempt_id": attempt_id,
                                "result": args.result, "overrides": False}))
        return EXIT_OK
    out.write(f"{args.routine_id}: attempt {attempt_id} resolved as {args.result}\n")
    return EXIT_OK


def cmd_fold(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from specdojo_routine.app import adoption

    paths = _paths(args)
    if args.json:
        from specdojo_routine.cli import jsonviews

        try:
            report = adoption.fold(paths, check=args.check, repair=args.repair)
        except (errors.TornLedgerError, errors.CorruptLedgerError) as exc:  # a finding, as data
            out.write(render.dumps(jsonviews.fold_damaged(paths, exc, check=args.check)))
            return exc.exit_code
        out.write(render.dumps(jsonviews.fold(report, check=args.check)))
        failed = report.conflicts or (args.check and report.drifted)
        return EXIT_FAILURE if failed else EXIT_OK
    report = adoption.fold(paths, check=args.check, repair=args.repair)
    drifted, moved = report.drifted, report.moved
    for line in (*report.warnings, *report.conflicts):
        err.write(line + "\n")
    if report.conflicts and not args.check:
        out.write(f"folded: {len(drifted)} view(s) rewritten; {len(report.conflicts)} "
                  "conflict(s) kept as they are\n")
        return EXIT_FAILURE
    for fragment in moved:
        out.write(f"repaired: moved a torn last line aside to {fragment}\n")
    if args.check:
        for path in drifted:
            err.write(f"drift: {path} differs from the fold of its ledger\n")
        if report.conflicts:
            out.write(f"{len(report.conflicts)} conflict(s) with files another tool wrote; "
                      "see `import`\n")
        out.write("views match the ledgers\n" if not drifted else
                  f"{len(drifted)} view(s) differ; run `fold` to rebuild them\n")
        return EXIT_FAILURE if drifted or report.conflicts else EXIT_OK
    out.write(f"folded: {len(drifted)} view(s) rewritten\n")
    return EXIT_OK


def cmd_import(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from specdojo_routine.app import adoption

    report = adoption.import_project(_paths(args), dry_run=args.dry_run)
    if args.json:
        out.write(render.dumps(report.to_json()))
    else:
        for line in (*report.warnings, *report.conflicts):
            err.write(line + "\n")
        out.write(report.summary() + "\n")
    return report.exit_code


def cmd_init(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from specdojo_routine.cli import initcli

    return initcli.cmd_init(args, out, err)


_COMMANDS: dict[str, Command] = {
    "init": cmd_init,
    "where": cmd_where,
    "validate": cmd_validate,
    "list": cmd_list,
    "run": cmd_run,
    "resolve": cmd_resolve,
    "fold": cmd_fold,
    "history": lambda a, o, e: int(_historycli().cmd_history(a, _paths(a), o, e)),
    "release": lambda a, o, e: policycli.cmd_release(a, _paths(a), o, e, _run_job_action),
    "next": lambda a, o, e: policycli.cmd_next(a, lambda: _paths(a), o, e),
    "import": cmd_import,
    "pause": lambda a, o, e: int(_controlcli().cmd_pause(a, lambda: _paths(a), o, e,
                                                         paused=True)),
    "resume": lambda a, o, e: int(_controlcli().cmd_pause(a, lambda: _paths(a), o, e,
                                                          paused=False)),
    "stop": lambda a, o, e: int(_controlcli().cmd_stop(a, _paths(a), o, e)),
    "status": lambda a, o, e: int(_statuscli().cmd_status(a, _paths(a), o, e)),
    "logs": lambda a, o, e: int(_logscli().cmd_logs(a, _paths(a), o, e)),
    "prune": lambda a, o, e: prunecli.cmd_prune(a, _paths(a), o, e),
    "report": lambda a, o, e: int(_reportcli().cmd_report(a, lambda: _paths(a), o, e)),
}
def _job_command(name: str) -> Command:
    def command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        from specdojo_routine.cli import jobcli

        result: int = getattr(jobcli, name)(args, out, err)
        return result

    return command


_JOB_COMMANDS: dict[str, Command] = {
    "validate": cmd_job_validate,
    "run": _job_command("cmd_job_run"),
    "list": _job_command("cmd_job_list"),
    "show": _job_command("cmd_job_show"),
    "resolve": _job_command("cmd_job_resolve"),
    "logs": lambda a, o, e: int(_logscli().cmd_job_logs(a, _paths(a), o, e)),
}
