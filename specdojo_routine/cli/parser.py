"""The command line's grammar: every command's options, and parsing a line (SPEC §8).

:func:`build_parser` builds the parser, given the line only the subparser of the command it
names (a command pays for no other's options); :func:`parse` turns a line into the namespace
a command reads, naming the option that was meant when a word is mistyped. What ``--help``
says lives in :mod:`helptext`; running the chosen command is :mod:`main`'s.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specdojo_routine.cli import helptext, policycli, prunecli
from specdojo_routine.core import errors
from specdojo_routine.core.timefmt import parse_instant


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


def _named(what: str, default: str) -> Callable[[str], str]:
    """The type of an option that names something: an empty value (``--project "$P"`` with
    ``P`` unset) is refused rather than read as the option left out, which would quietly
    work on the default instead (another project, another directory)."""

    def check(text: str) -> str:
        if not text:
            raise argparse.ArgumentTypeError(
                f"an empty value: name {what}, or leave the option out to use {default}")
        return text

    return check


class _Parser(helptext.Parser):
    """argparse that raises instead of exiting, so :func:`main.main` stays in control, and takes no
    abbreviation of an option (``--js`` is not ``--json``: a script that relied on one would
    break the day a second option shares the prefix)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise errors.UsageError(f"{self.prog}: {message} (see `{self.prog} --help`)")


if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[_Parser]


_root_text = _named("the project's directory", "the nearest one upwards with the config")
_project_text = _named("a project", "$SPECDOJO_PROJECT, else the config's current_project")


def _root_path(text: str) -> Path:
    return Path(_root_text(text))


def _common() -> _Parser:
    common = _Parser(add_help=False)
    common.add_argument("--root", type=_root_path, metavar="DIR",
                        help="project root (default: the nearest directory upwards that has "
                             ".specdojo/specdojo.config.json)")
    common.add_argument("--project", type=_project_text, metavar="ID",
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


_QUIET_HELP = ("print nothing unless it failed, but warning: lines (for cron; also "
               "SPECDOJO_ROUTINE_QUIET=1)")


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
    _add_job_run(jsub, common)
    from specdojo_routine.cli import logscli

    logscli.add_job_logs(jsub, common)


# The commands whose options live beside their code, imported only when their parser is built.


def _add_job_run(jsub: Subparsers, common: _Parser) -> None:
    """``job run``: the Job, its inputs and occasion, and the agents and worktree of its run."""
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


def _add_history(sub: Subparsers, common: _Parser) -> None:
    from specdojo_routine.cli import historycli

    historycli.add_history(sub, common, _instant, _positive)


def _add_pause(sub: Subparsers, common: _Parser, *, paused: bool) -> None:
    from specdojo_routine.cli import controlcli

    controlcli.add_pause(sub, common, _instant, paused=paused)


def _add_stop(sub: Subparsers, common: _Parser) -> None:
    from specdojo_routine.cli import controlcli

    controlcli.add_stop(sub, common)


def _add_status(sub: Subparsers, common: _Parser) -> None:
    from specdojo_routine.cli import statuscli

    statuscli.add_status(sub, common, _instant)


def _add_logs(sub: Subparsers, common: _Parser) -> None:
    from specdojo_routine.cli import logscli

    logscli.add_logs(sub, common)


def _add_report(sub: Subparsers, common: _Parser) -> None:
    from specdojo_routine.cli import reportcli

    reportcli.add_report(sub, common, _instant)


# In the order `--help` lists them.
_SUBCOMMANDS: dict[str, Callable[[Subparsers, _Parser], None]] = {
    "init": _add_init,
    "where": _add_where,
    "validate": _add_validate,
    "list": _add_list,
    "run": _add_run,
    "resolve": _add_resolve,
    "fold": _add_fold,
    "history": _add_history,
    "release": lambda sub, common: policycli.add_release(sub, common, _instant),
    "next": lambda sub, common: policycli.add_next(sub, common, _instant),
    "import": _add_import,
    "pause": lambda sub, common: _add_pause(sub, common, paused=True),
    "resume": lambda sub, common: _add_pause(sub, common, paused=False),
    "stop": _add_stop,
    "status": _add_status,
    "logs": _add_logs,
    "prune": lambda sub, common: prunecli.add_prune(sub, common, _instant),
    "report": _add_report,
    "job": _add_job_commands,
}


def parse(parser: argparse.ArgumentParser, words: list[str]) -> argparse.Namespace:
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
