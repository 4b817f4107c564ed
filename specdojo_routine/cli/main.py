"""Command line: ``python -m specdojo_routine <command>`` (SPEC §8).

Parsing and rendering only; every command is a thin handler in :mod:`handlers`. What ``--help``
says (descriptions, environment, examples, exit codes) lives in :mod:`helptext`; this module's
docstring is for developers and is never shown to users.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from specdojo_routine.app import project
from specdojo_routine.cli import conventions, helptext, policycli, prunecli, render
from specdojo_routine.core import errors
from specdojo_routine.core.errors import (
    EXIT_BUSY,
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    RoutineError,
    environment_error,
    missing_dependency,
)
from specdojo_routine.core.timefmt import parse_instant
from specdojo_routine.core.validation import shown
from specdojo_routine.execute import stop
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions.load import Definitions

Command = Callable[[argparse.Namespace, TextIO, TextIO], int]


def _instant(text: str) -> object:
    try:
        return parse_instant(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid time {text!r}: use ISO 8601, e.g. 2026-08-07T08:02:00Z"
        ) from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


class _Parser(helptext.Parser):
    """argparse that raises instead of exiting, so ``main`` stays in control, and takes no
    abbreviation of an option (``--js`` is not ``--json``: a script that relied on one would
    break the day a second option shares the prefix)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise errors.UsageError(f"{self.prog}: {message} (see `{self.prog} --help`)")


if TYPE_CHECKING:
    from specdojo_routine.app import handlers

    Subparsers = argparse._SubParsersAction[_Parser]


def _common() -> _Parser:
    common = _Parser(add_help=False)
    common.add_argument("--root", type=Path, metavar="DIR",
                        help="project root (default: the nearest directory upwards that has "
                             ".specdojo/specdojo.config.json)")
    common.add_argument("--project", metavar="ID",
                        help="project id (default: $SPECDOJO_PROJECT, else the config's "
                             "current_project)")
    return common


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given the command line, the subparser of its command only.

    Building one subparser instead of all of them spares every command the others. A line
    that names no command (``--help``, ``--version``, a typo, nothing) gets every subparser,
    so the program's help and a usage error still list them all; a command's own parser, and
    so its ``--help`` and its errors, is the same either way."""
    common = _common()
    parser = _Parser(prog=helptext.prog(), formatter_class=helptext.Formatter)
    parser.add_argument("--version", action=helptext.VersionAction,
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser,
                                metavar="COMMAND", title="commands")
    wanted = argv[0] if argv and argv[0] in _SUBCOMMANDS else None
    for name, add in _SUBCOMMANDS.items():
        if wanted in (None, name):
            add(sub, common)
    return helptext.document(parser)


def _add_init(sub: Subparsers, common: _Parser) -> None:
    from specdojo_routine.cli import initcli  # its own --root/--project: a project to create

    initcli.add_parser(sub)


def _add_where(sub: Subparsers, common: _Parser) -> None:
    p = sub.add_parser("where", parents=[common], help="resolved root, project and paths")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _add_validate(sub: Subparsers, common: _Parser) -> None:
    p = sub.add_parser("validate", parents=[common], help="validate routines and jobs")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document with every problem (nothing on stderr)")


_QUIET_HELP = "print nothing unless it failed (for cron; also SPECDOJO_ROUTINE_QUIET=1)"


def _add_list(sub: Subparsers, common: _Parser) -> None:
    p = sub.add_parser("list", parents=[common], help="routines, status and due")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--now", type=_instant, metavar="T", help=_NOW_HELP)
    p.add_argument("--quiet", action="store_true", help=_QUIET_HELP)


def _add_run(sub: Subparsers, common: _Parser) -> None:
    p = sub.add_parser("run", parents=[common], help="run due routines or one routine")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--due", action="store_true",
                       help="run every due occurrence of every enabled routine")
    group.add_argument("--id", dest="routine_id", metavar="ID",
                       help="run this routine once, now, even if disabled or not due")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would run; write nothing, take no lock, run nothing")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document (delegated output goes to stderr)")
    p.add_argument("--now", type=_instant, metavar="T", help=_NOW_HELP)
    p.add_argument("--quiet", action="store_true", help=_QUIET_HELP)
    p.add_argument("--input", action="append", default=[], metavar="K=V",
                   help="with --id: an input of its Job actions for this attempt (repeatable; "
                        "split at the first =)")
    policycli.add_backfill_options(p, _instant)


def _add_resolve(sub: Subparsers, common: _Parser) -> None:
    p = sub.add_parser("resolve", parents=[common], help="record an interrupted attempt's outcome")
    p.add_argument("routine_id", metavar="ID", help="the routine whose attempt was interrupted")
    p.add_argument("--result", required=True, choices=["success", "failure", "skipped"],
                   help="the outcome to record")
    p.add_argument("--note", required=True, metavar="TEXT",
                   help="why: what you checked (kept in the ledger)")
    p.add_argument("--by", dest="resolved_by", metavar="NAME",
                   help="who resolved it (default: $USER)")
    p.add_argument("--attempt", metavar="ATTEMPT_ID",
                   help="change this ended attempt's outcome instead (see history --attempts)")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _add_fold(sub: Subparsers, common: _Parser) -> None:
    p = sub.add_parser("fold", parents=[common], help="rebuild every view from the ledgers")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if a view differs from its ledger")
    p.add_argument("--repair", action="store_true",
                   help="first move a torn last ledger line aside to <ledger>.torn-<seq>")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _add_import(sub: Subparsers, common: _Parser) -> None:
    p = sub.add_parser("import", parents=[common],
                       help="import the state another SpecDojo tool wrote")
    p.add_argument("--dry-run", action="store_true",
                   help="report what would be imported and append nothing")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document")


_NOW_HELP = "evaluate schedules at time T (ISO 8601, e.g. 2026-08-07T08:02:00Z), not the clock"


def _add_job_commands(sub: Subparsers, common: _Parser) -> None:
    job = sub.add_parser("job", help="Job Definitions and Job Runs")
    jsub = job.add_subparsers(dest="job_command", required=True, parser_class=_Parser,
                              metavar="COMMAND", title="commands")
    jsub.add_parser("validate", parents=[common], help="validate Job Definitions")
    p = jsub.add_parser("list", parents=[common], help="Job Definitions and their runs")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p = jsub.add_parser("show", parents=[common], help="one Job Run")
    p.add_argument("run_id", metavar="RUN_ID", help="the Job Run id (JBR-…, see `job list`)")
    p.add_argument("--json", action="store_true",
                   help="print the run's view exactly as stored (runs/<RUN_ID>.json)")
    p = jsub.add_parser("resolve", parents=[common],
                        help="record the outcome of an interrupted Job Run attempt")
    p.add_argument("run_id", metavar="RUN_ID", help="the interrupted Job Run (see `job list`)")
    p.add_argument("--status", required=True, choices=["succeeded", "failed", "noop"],
                   help="what the interrupted attempt achieved, as checked by you")
    p.add_argument("--note", required=True, metavar="TEXT", help="what was checked")
    p.add_argument("--by", dest="resolved_by", metavar="NAME",
                   help="who decided (default: $USER)")
    p = jsub.add_parser("run", parents=[common], help="run a Job")
    p.add_argument("--job", required=True, metavar="ID", help="the Job Definition id")
    p.add_argument("--input", action="append", default=[], metavar="K=V",
                   help="an input value (repeatable; split at the first =)")
    p.add_argument("--scheduled-at", type=_instant, metavar="T",
                   help="the time the run is for (ISO 8601; default: now)")
    p.add_argument("--trigger", choices=["manual", "routine", "ci"], default="manual",
                   help="who started the run (default: manual); routine: exit 75 when skipped")
    p.add_argument("--dry-run", action="store_true",
                   help="print the run id, inputs and command; write nothing, run nothing")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--worktree", action="store_true",
                   help="run in a review worktree and merge only on a good verdict")
    p.add_argument("--review-by", metavar="NICK", help="the review executor (a roster member)")
    p.add_argument("--reporter-by", metavar="NICK",
                   help="the reporter of the task and of the review (a roster member)")
    p.add_argument("--executor-by", metavar="NICK",
                   help="the executor stage, ahead of the Job's nomination (a roster member)")
    p.add_argument("--by", metavar="NICK",
                   help="one agent for the whole run (no reporter stage), ahead of the Job's "
                        "nomination (a roster member)")
    _logscli().add_job_logs(jsub, common)


# In the order `--help` lists them.
_SUBCOMMANDS: dict[str, Callable[[Subparsers, _Parser], None]] = {
    "init": _add_init,
    "where": _add_where,
    "validate": _add_validate,
    "list": _add_list,
    "run": _add_run,
    "resolve": _add_resolve,
    "fold": _add_fold,
    "history": lambda sub, common: _historycli().add_history(sub, common, _instant, _positive),
    "release": lambda sub, common: policycli.add_release(sub, common, _instant),
    "next": lambda sub, common: policycli.add_next(sub, common, _instant),
    "import": _add_import,
    "pause": lambda sub, common: _controlcli().add_pause(sub, common, _instant, paused=True),
    "resume": lambda sub, common: _controlcli().add_pause(sub, common, _instant, paused=False),
    "stop": lambda sub, common: _controlcli().add_stop(sub, common),
    "status": lambda sub, common: _statuscli().add_status(sub, common, _instant),
    "logs": lambda sub, common: _logscli().add_logs(sub, common),
    "prune": lambda sub, common: prunecli.add_prune(sub, common, _instant),
    "report": lambda sub, common: _reportcli().add_report(sub, common, _instant),
    "job": _add_job_commands,
}


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


def _parse(parser: argparse.ArgumentParser, words: list[str]) -> argparse.Namespace:
    """The command line parsed; words no option of the command takes are an error of that
    command that names what it does take (``pause --reason`` -> ``--note``)."""
    args, extras = parser.parse_known_args(words)
    if extras:
        import difflib  # only a mistyped line pays for it

        command = _chosen(parser, args)
        options = [o for a in command._actions for o in a.option_strings
                   if o.startswith("--") and o not in ("--help", "--root", "--project")]
        given = extras[0].split("=", 1)[0].lstrip("-") if extras[0].startswith("-") else ""
        close = [o for o in options if given and o[2:].startswith(given)] or [  # a prefix,
            "--" + c for c in difflib.get_close_matches(given, [o[2:] for o in options], n=1,
                                                       cutoff=0.75)]  # else a near miss
        hint = (f"did you mean {close[0]}?" if close else
                f"it takes {', '.join([*options, '--root', '--project'])};")
        raise errors.UsageError(f"{command.prog}: unrecognized arguments: {' '.join(extras)} "
                                f"({hint} see `{command.prog} --help`)")
    return args


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command the line chose."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if chosen is not None:
                return _chosen(chosen, args)
    return parser


def _dispatch(args: argparse.Namespace) -> Command:
    if args.command == "job":
        return _JOB_COMMANDS[args.job_command]
    return _COMMANDS[args.command]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code. Never raises for user mistakes."""
    out, err = conventions.guarded(sys.stdout, _silence), sys.stderr
    args: argparse.Namespace | None = None
    try:
        words = list(sys.argv[1:] if argv is None else argv)
        args = _parse(build_parser(words), words)
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
    except stop.Stopped as exc:  # a stop signal, where the process entry made it one
        err.write(f"error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:  # Ctrl-C in a program that calls main without the stop handlers
        err.write("error: interrupted; an attempt that was running stays open and is reported "
                  "as interrupted by the next run\n")
        return 130
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except OverflowError as exc:  # date arithmetic at the edges of years 1-9999
        err.write(f"error: a time is out of range ({exc}); use an instant between the years "
                  "1000 and 9998\n")
        return EXIT_USAGE
    except OSError as exc:  # the environment, not a bug: say where, what and what to do
        err.write(f"error: {shown(environment_error(exc))}\n")
        return EXIT_FAILURE
    except ImportError as exc:  # a dependency missing or broken: the environment again
        err.write(f"error: {shown(missing_dependency(exc))}\n")
        return EXIT_FAILURE
    except Exception as exc:
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
        return int(_controlcli().cmd_override(args, _paths(args), out))
    from specdojo_routine.app import handlers

    attempt_id = handlers.resolve(_paths(args), args.routine_id, result=args.result,
                                  note=args.note, by=args.resolved_by)
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
    for conflict in report.conflicts:
        err.write(conflict + "\n")
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
        for conflict in report.conflicts:
            err.write(conflict + "\n")
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
