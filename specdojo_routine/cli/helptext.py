"""What ``--help`` tells a user: the program's name and version, each command's description,
the environment variables it reads, short examples and the exit codes.

Kept apart from the parser so the words can be read (and reviewed) in one place; ``document``
attaches them to the parser that ``parser.build_parser`` builds.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

DISTRIBUTION = "specdojo_routine"


def prog(argv0: str | None = None) -> str:
    """How the user started us: the console script, or ``python -m specdojo_routine``."""
    name = os.path.basename(sys.argv[0] if argv0 is None else argv0)
    return "specdojo-routine" if name == "specdojo-routine" else "python -m specdojo_routine"


def version() -> str:
    """``specdojo_routine <version>``, from the installed package's metadata."""
    from importlib import metadata  # only for --version: it costs more than `validate` itself

    try:
        number = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # imported from a source tree that was never installed
        number = "unknown (not installed; run `pip install .`)"
    return f"{DISTRIBUTION} {number}"


class VersionAction(argparse._VersionAction):
    """``--version``, reading the package metadata only when it is asked for."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        self.version = version()
        super().__call__(parser, namespace, values, option_string)


# (name, what it is used for): every variable the program reads, and those it sets for the
# processes it starts. tests/test_cli_help.py checks that every SPECDOJO_* name in the source
# appears here.
ENVIRONMENT_READ: tuple[tuple[str, str], ...] = (
    ("SPECDOJO_CLI", "the SpecDojo CLI that delegated calls run, split like a shell would "
                     '(e.g. "npx specdojo"); default: specdojo'),
    ("SPECDOJO_PROJECT", "the project to use when --project is not given"),
    ("SPECDOJO_EXEC_RUN_LOCK_TOKEN", "set by a SpecDojo process that holds the project exec "
                                     "lock; a `job run` started by it shares that lock"),
    ("SPECDOJO_JOB_REVIEW_WORKTREE_CHILD", "1 inside a review worktree: a `job run` there "
                                           "does not start a second review"),
    ("SPECDOJO_ROUTINE_LOCK_URL", "redis://host:port/db: also take the routine lock in Redis, "
                                  "so several hosts can share one project"),
    ("SPECDOJO_ROUTINE_QUIET", "1: run, list and status print nothing unless something failed "
                               "(as --quiet; for cron, so MAILTO mails only failures)"),
    ("SPECDOJO_ROUTINE_PURE_YAML", "1: read every definition with the located (slow) YAML "
                                   "parser instead of the libyaml fast path"),
    ("SPECDOJO_NOTIFY_TIMEOUT_S", "seconds a notification hook may run before it is killed "
                                  "(default 60)"),
    ("USER", "the default of `resolve --by`, `release --by`, `pause --by`, `resume --by` "
             "and `stop --by`"),
)
ENVIRONMENT_SET: tuple[str, ...] = (
    "SPECDOJO_PROJECT", "SPECDOJO_ROUTINE_EXEC=1", "SPECDOJO_JOB_RUN_ID",
    "SPECDOJO_EXEC_RUN_LOCK_TOKEN", "SPECDOJO_JOB_REVIEW_WORKTREE_CHILD=1",
    "SPECDOJO_ROUTINE_COMMAND (a value of its own for each command: what the command "
    "starts inherits it, and ends with the command)",
    "and for agents SPECDOJO_AGENT_ROLE, SPECDOJO_PLAN_PATH, SPECDOJO_RESULT_PATH",
    "and for notification hooks SPECDOJO_NOTIFY_EVENT, SPECDOJO_ROUTINE_ID, "
    "SPECDOJO_ATTEMPT_ID, SPECDOJO_SCHEDULED_FOR, SPECDOJO_RESULT, SPECDOJO_REASON, "
    "SPECDOJO_NOTIFY_JSON",
)
NO_COLOR_NOTE = ("Output never contains colour codes, on a terminal or not, so NO_COLOR is "
                 "always honoured.")

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (0, "ok: ran, nothing due, skipped, dry run, duplicate complete"),
    (1, "a failure: an attempt failed, a routine is interrupted, a definition is invalid, "
        "a view drifted (fold --check), a damaged ledger"),
    (2, "usage or configuration error (bad option, no project found, unknown id)"),
    (75, "busy: another process holds the routine lock (or the exec lock)"),
    (129, "stopped by SIGHUP (the terminal went away; not under nohup), recorded as for "
          "SIGINT below"),
    (130, "stopped by Ctrl-C (SIGINT): the running action was ended and its attempt "
          "recorded as a failure, reason \"stopped by SIGINT\"; nothing is left open"),
    (143, "stopped by SIGTERM (e.g. a scheduler's timeout), recorded the same way"),
)
_STOPPED = ((129, "stopped by SIGHUP (not under nohup); recorded as for SIGINT"),
            (130, "stopped by SIGINT; the running attempt is recorded as failed"),
            (143, "stopped by SIGTERM; the running attempt is recorded as failed"))


class CommandHelp(NamedTuple):
    description: str
    examples: tuple[str, ...]
    exit_codes: tuple[tuple[int, str], ...]


_USAGE = (2, "usage or configuration error")
_BUSY = (75, "another process holds the routine lock; nothing was recorded")
_DAMAGED = (1, "a damaged ledger")

COMMANDS: dict[str, CommandHelp] = {
    "init": CommandHelp(
        "Start a new project in the current directory (or --root): the config, an example "
        "routine (due at once, then hourly) running an example Job (a shell echo), and a "
        ".gitignore for locks and caches. Writes only new files: if one of them exists, "
        "nothing is written.",
        ("{prog} init", "{prog} init --root ~/src/reports --project reports"),
        ((0, "created"), (2, "a file of the skeleton already exists, or an unusable id"))),
    "where": CommandHelp(
        "Print the resolved project root, project id and the paths it uses.",
        ("{prog} where", "{prog} where --root ~/src/my-project --project web"),
        ((0, "printed"), _USAGE)),
    "validate": CommandHelp(
        "Check every routine (rtn-*.yaml) and Job Definition (job-*.yaml). Each problem is "
        "printed on stderr as path:line:col: message, then a summary line on stdout.",
        ("{prog} validate", "{prog} validate --root fixtures/demo"),
        ((0, "no errors (warnings alone are fine)"), (1, "at least one error"), _USAGE)),
    "list": CommandHelp(
        "Show every routine: schedule, status, last result, whether it is due now and its next "
        "occurrence, and who holds the routine lock. A health check with the rule of "
        "status.",
        ("{prog} list", "{prog} list --json", "{prog} list --now 2026-08-07T08:00:00Z"),
        ((0, "every enabled routine is healthy"),
         (1, "an enabled routine's last result is a failure, or it is interrupted, held or "
             "missed an occurrence since its last success; or a definition is invalid"),
         _DAMAGED, _USAGE)),
    "run": CommandHelp(
        "Run the due occurrences of every enabled routine (--due), or one routine now (--id), "
        "or backfill one cron routine over a past range (--id with --from and --to). Each "
        "attempt is recorded before its actions run; every action runs, in order. Ctrl-C, "
        "SIGTERM or SIGHUP stops the run: the running action is ended, no other starts, and "
        "the attempt is recorded as a failure (stopped by SIGINT / SIGTERM / SIGHUP).",
        ("{prog} run --due", "{prog} run --due --dry-run",
         "{prog} run --id rtn-nightly", "{prog} run --due --json > report.json",
         "{prog} run --id rtn-nightly --from 2026-08-01T00:00:00Z --to 2026-08-07T00:00:00Z"),
        ((0, "ran, nothing due, skipped, held, missed, or dry run"),
         (1, "an attempt failed, a routine is interrupted, a definition is invalid, or a "
             "routine has too many missed occurrences"),
         _USAGE, _BUSY, *_STOPPED)),
    "release": CommandHelp(
        "End the hold of a routine held after a failure (policy.on_failure: hold), and run "
        "none, the newest, or all of the occurrences it held.",
        ('{prog} release rtn-nightly --note "disk replaced"',
         "{prog} release rtn-nightly --run latest --by alice"),
        ((0, "released (and what ran succeeded)"),
         (1, "the routine is not held, or a released attempt failed"), _USAGE, _BUSY,
         *_STOPPED)),
    "next": CommandHelp(
        "Preview the next occurrences of a routine, or of a cron expression in a time zone, "
        "in local time and UTC, with DST notes. Writes nothing.",
        ("{prog} next rtn-weekly-report", "{prog} next rtn-weekly-report -n 10 --json",
         '{prog} next --cron "30 2 * * *" --timezone Europe/Berlin'),
        ((0, "printed"), (1, "a damaged ledger, or the routine ID is invalid (see validate)"),
         (2, "a bad cron expression or time zone, or usage error"))),
    "resolve": CommandHelp(
        "Record the outcome of a routine's interrupted attempt (one whose runner died), so "
        "the routine runs again; with --attempt, change an ended attempt's outcome.",
        ('{prog} resolve rtn-nightly --result failure --note "host rebooted mid-run"',
         '{prog} resolve rtn-nightly --result success --note "checked the output" --by alice',
         "{prog} resolve rtn-nightly --attempt att-20260807T080000Z-0a1b2c3d --result success "
         '--note "re-sent by hand"'),
        ((0, "recorded"), (1, "the routine has no interrupted attempt (or, with --attempt, "
                             "the attempt is unknown or still open)"), _USAGE, _BUSY)),
    "pause": CommandHelp(
        "Pause a routine (or --all): run --due starts nothing for it and accounts for each "
        "occurrence that becomes due as paused, with who and why; run --id still runs it.",
        ('{prog} pause rtn-nightly --note "database migration"',
         '{prog} pause --all --note "maintenance window" --by alice'),
        ((0, "paused"), (1, "already paused"), _USAGE, _BUSY)),
    "resume": CommandHelp(
        "Resume a paused routine (or --all). Nothing runs by itself: occurrences scheduled "
        "while it was paused are recorded as paused, never run; only later ones run.",
        ('{prog} resume rtn-nightly --note "migration done"', "{prog} resume --all"),
        ((0, "resumed"), (1, "the routine is not paused"), _USAGE, _BUSY)),
    "stop": CommandHelp(
        "Stop a routine's running attempt: SIGTERM to the verified runner, which ends the "
        "running action's process group and records the attempt as failed (\"stopped by "
        "SIGTERM\"). Waits up to 30 s for that record.",
        ('{prog} stop rtn-nightly --note "runaway export"',),
        ((0, "stopped and recorded"),
         (1, "no running attempt, its runner is dead (use resolve), or no record in 30 s"),
         _USAGE)),
    "fold": CommandHelp(
        "Rebuild every view (routine state, Job Run views, job state) from the ledgers. Views "
        "are caches: delete one and fold rewrites it byte for byte.",
        ("{prog} fold", "{prog} fold --check", "{prog} fold --repair"),
        ((0, "views rebuilt, or (--check) they match"),
         (1, "--check found a view that differs, or a ledger is torn (use --repair) or damaged"),
         (1, "a file another tool wrote contradicts the ledger (a conflict; see import)"),
         _USAGE, (75, "a run holds the routine lock or the exec lock"))),
    "import": CommandHelp(
        "Import what the upstream SpecDojo CLI wrote (routine-state.json, its run records, "
        "Job Run records and checkpoints) into the ledgers, verbatim with the sha256 of each "
        "file, so nothing it ran runs again. Recording commands do this by themselves first.",
        ("{prog} import --dry-run", "{prog} import", "{prog} import --json"),
        ((0, "imported (or nothing to import)"),
         (1, "a foreign record contradicts the ledger (a conflict): nothing was overwritten"),
         _USAGE, (75, "a run holds the routine lock or the exec lock"))),
    "prune": CommandHelp(
        "Remove the files around old Job Runs and routine attempts: evidence, plan and "
        "result documents, kept review worktrees. Never those of the newest runs of each "
        "Job, of a run that is open, interrupted or waiting, of a run an interrupted "
        "routine attempt started, or of the run a checkpoint names. Each removal is "
        "recorded in the ledger before the files go; the ledgers and the Job Run views "
        "stay, and the views say what was pruned.",
        ("{prog} prune --dry-run", "{prog} prune", "{prog} prune --keep-days 30 --keep-runs 10",
         "{prog} prune --json --now 2026-12-31T00:00:00Z"),
        ((0, "pruned (or nothing to prune, or dry run)"), _DAMAGED,
         (1, "an owner's files could not be removed (an error: line each; the others were "
             "pruned)"), _USAGE,
         (75, "a run holds the routine lock or the exec lock; nothing was removed"))),
    "history": CommandHelp(
        "Show the routine ledger's events, oldest first, for every routine or one; or, with "
        "--attempts, one line per attempt. --limit and --since read from the end of the "
        "ledger, so they cost what they show.",
        ("{prog} history", "{prog} history rtn-nightly --limit 20",
         "{prog} history rtn-nightly --attempts --since 2026-08-01T00:00:00Z",
         "{prog} history --attempts --result failure --limit 10",
         "{prog} history --json | jq .type"),
        ((0, "printed (also when there are no events)"), _DAMAGED,
         (2, "an unknown routine id, or usage error"))),
    "status": CommandHelp(
        "Is everything healthy? One line per routine, worst first; with ids, one block per "
        "routine: schedule in words and in its time zone, policy, state, the next 3 "
        "occurrences, the last 5 attempts and, for a failure, the stderr tail and the "
        "evidence path. Writes nothing.",
        ("{prog} status", "{prog} status rtn-nightly", "{prog} status --json",
         "{prog} status rtn-nightly --now 2026-08-07T08:00:00Z"),
        ((0, "every enabled routine is healthy (a paused one counts as healthy)"),
         (1, "an enabled routine's last result is a failure, or it is interrupted, held or "
             "missed an occurrence since its last success; or a definition is invalid"),
         _DAMAGED, (2, "an unknown routine id, or usage error"))),
    "logs": CommandHelp(
        "Print the output (stdout and stderr, redacted) that a routine's last attempt, or a "
        "given one, kept as evidence: a SpecDojo call's own, or its Job Run's.",
        ("{prog} logs rtn-nightly", "{prog} logs rtn-nightly --action 2",
         "{prog} logs rtn-nightly --attempt att-20260807T020000Z-1a2b3c4d --json"),
        ((0, "printed"), (1, "the routine has no attempt yet"), _DAMAGED,
         (2, "an unknown routine, attempt or action, or usage error"))),
    "report": CommandHelp(
        "Write one self-contained HTML page (no network, no external assets): per routine a "
        "row of cells, one per occurrence of the last N days, coloured by outcome, with the "
        "times, reason, attempt and Job Run ids on hover; the next runs; the Job Runs and "
        "delegated calls with their evidence paths. Reads what list and history read; writes "
        "only FILE, atomically.",
        ("{prog} report --html report.html", "{prog} report --html /var/www/routines.html "
         "--days 30", "{prog} report --html week.html --now 2026-08-10T00:00:00Z"),
        ((0, "written"), _DAMAGED,
         (2, "FILE's directory does not exist or FILE is a directory, --days out of range, "
             "or usage error"))),
    "job": CommandHelp(
        "Job Definitions (job-*.yaml) and their Job Runs.",
        ("{prog} job list", "{prog} job run --job job-weekly-report --input period=2026-W31"),
        ((0, "ok"), (1, "a failure"), _USAGE,
         (75, "job run --trigger routine: skipped (the project is busy)"))),
    "job validate": CommandHelp(
        "Check every Job Definition (job-*.yaml) and report each problem as path:line:col.",
        ("{prog} job validate",),
        ((0, "no errors"), (1, "at least one error"), _USAGE)),
    "job list": CommandHelp(
        "Show every valid Job Definition with its checkpoint, and every Job Run.",
        ("{prog} job list", "{prog} job list --json"),
        ((0, "printed"), _DAMAGED, _USAGE)),
    "job show": CommandHelp(
        "Show one Job Run: its inputs, checkpoints, task and every attempt.",
        ("{prog} job show JBR-weekly-report-0123456789ab",
         "{prog} job show JBR-weekly-report-0123456789ab --json"),
        ((0, "printed"), _DAMAGED, (2, "no such Job Run, or an invalid id"))),
    "job logs": CommandHelp(
        "Print the output (stdout and stderr, redacted, and an agent's logs) that a Job "
        "Run's last attempt, or a given one, kept as evidence.",
        ("{prog} job logs JBR-weekly-report-0123456789ab",
         "{prog} job logs JBR-weekly-report-0123456789ab --attempt 1"),
        ((0, "printed"), (1, "the run has no attempt yet"), _DAMAGED,
         (2, "no such Job Run or attempt, an invalid id, or usage error"))),
    "job resolve": CommandHelp(
        "Record the outcome of a Job Run's interrupted attempt (one whose runner died), so it "
        "is never re-sent silently; succeeded and noop advance the checkpoint.",
        ('{prog} job resolve JBR-weekly-report-0123456789ab --status succeeded '
         '--note "the report was sent"',
         '{prog} job resolve JBR-weekly-report-0123456789ab --status failed --note "not sent" '
         "--by alice"),
        ((0, "recorded"), (1, "the run is not interrupted"), _USAGE,
         (75, "another process holds the project exec lock, or the dead runner's command "
              "still runs (its process group is named); nothing was recorded"))),
    "job run": CommandHelp(
        "Create (or retry) the Job Run of a Job Definition for the given inputs and run it. "
        "The same inputs give the same run id: a complete run is not run twice.",
        ("{prog} job run --job job-weekly-report --input period=2026-W31",
         "{prog} job run --job job-weekly-report --input period=2026-W31 --dry-run"),
        ((0, "succeeded, noop, duplicate complete, or skipped (trigger manual or ci)"),
         (1, "failed or partial; waiting (a reviewed commit not merged); refused: the run is "
             "interrupted (see job resolve) or the Job Definition is invalid"), _USAGE,
         (75, "--trigger routine and skipped: the project is busy or the precondition "
              "skipped the run"), *_STOPPED)),
}


WIDTH = 79


def _wrap(text: str, initial_indent: str = "", subsequent_indent: str = "") -> list[str]:
    """``text`` wrapped to :data:`WIDTH`; textwrap (whose patterns are compiled when it is
    imported) is loaded only when a help is written."""
    import textwrap

    return textwrap.wrap(text, WIDTH, initial_indent=initial_indent,
                         subsequent_indent=subsequent_indent)


def _rows(rows: Sequence[tuple[object, str]]) -> list[str]:
    """A two-column table, the second column wrapped with a hanging indent."""
    keys = [str(key) for key, _ in rows]
    width = max(map(len, keys))
    lines: list[str] = []
    for key, (_, text) in zip(keys, rows, strict=True):
        lines += _wrap(text, initial_indent=f"  {key:<{width}}  ",
                       subsequent_indent=" " * (width + 4))
    return lines


def _prose(text: str) -> list[str]:
    return _wrap(text, initial_indent="  ", subsequent_indent="  ")


def _examples(examples: Sequence[str], name: str) -> list[str]:
    return [f"  {example.format(prog=name)}" for example in examples]


def main_epilog(name: str) -> str:
    lines = ["environment variables:", *_rows(ENVIRONMENT_READ),
             *_prose(f"Set for the processes it starts: {', '.join(ENVIRONMENT_SET)}."),
             *_prose(NO_COLOR_NOTE), "", "examples:"]
    lines += _examples(("{prog} validate", "{prog} run --due", "{prog} list --json",
                        "{prog} history rtn-nightly --limit 20",
                        "{prog} job run --job job-weekly-report --input period=2026-W31"), name)
    lines += ["", "exit codes:", *_rows(EXIT_CODES), ""]
    lines += _wrap(f"Run `{name} COMMAND --help` for a command's options; "
                   "docs/reference.md in the source tree describes every format and command.")
    return "\n".join(lines)


DESCRIPTION = ("Run SpecDojo routines (rtn-*.yaml: an interval, or a cron schedule with a time "
               "zone) that launch Job Runs (job-*.yaml) and SpecDojo CLI calls, and keep an "
               "append-only ledger of every attempt.")


def document(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Attach the description, epilog and formatter to ``parser`` and every subcommand (an
    epilog is written when the help is: see :class:`Parser`)."""
    name = parser.prog
    _describe(parser, DESCRIPTION, functools.partial(main_epilog, name))
    for path, sub in subcommands(parser):
        text = COMMANDS.get(path)
        if text is not None:
            _describe(sub, text.description, functools.partial(_command_epilog, text, name))
    return parser


def _command_epilog(text: CommandHelp, name: str) -> str:
    return "\n".join(["examples:", *_examples(text.examples, name), "",
                      "exit codes:", *_rows(text.exit_codes)])


class Parser(argparse.ArgumentParser):
    """A parser whose epilog is written only when its help is: the epilogs are tables that
    textwrap lays out, work that every other use of the parser (every command) would pay for
    at start-up."""

    epilog_source: Callable[[], str] | None = None

    def format_help(self) -> str:
        if self.epilog_source is not None:
            self.epilog, self.epilog_source = self.epilog_source(), None
        return super().format_help()


class Formatter(argparse.HelpFormatter):
    """Wraps one-paragraph texts (descriptions, option help) but keeps the layout of texts that
    have line breaks (the epilogs' tables)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _format_action(self, action: argparse.Action) -> str:
        text = super()._format_action(action)
        if isinstance(action, argparse._SubParsersAction):  # drop the bare "COMMAND" row
            text = text.split("\n", 1)[1]
        return text


def _describe(
    parser: argparse.ArgumentParser, description: str, epilog: Callable[[], str]
) -> None:
    parser.description = description
    parser.formatter_class = Formatter
    if isinstance(parser, Parser):
        parser.epilog_source = epilog
    else:
        parser.epilog = epilog()


def subcommands(
    parser: argparse.ArgumentParser, prefix: str = "",
) -> list[tuple[str, argparse.ArgumentParser]]:
    """Every subcommand parser under ``parser`` as ``("job run", parser)``, depth first."""
    found: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                path = f"{prefix}{sub_name}"
                found.append((path, sub))
                found += subcommands(sub, path + " ")
    return found
