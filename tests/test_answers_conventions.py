"""Conventions (SPEC §14): quiet for cron, child output prefixed with its routine, options
never abbreviated, a closed pipe ends quietly with the status the command would have had,
pretty JSON everywhere but `history --json`, and `--json` for validate, where and fold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import Project
from tests.ledgergen import write_ledger
from tests.weekhistory import AFTER, Week, write_project

QUIET_LATER = "2026-08-10T00:40:00Z"  # nothing is due: a cron call that has nothing to say


def test_quiet_prints_nothing_when_nothing_failed(week_copy: Week) -> None:
    """`run --due --quiet` with nothing due, and a success under SPECDOJO_ROUTINE_QUIET=1:
    nothing on stdout or stderr, exit 0 (cron's MAILTO sends nothing)."""
    idle = week_copy.cli("run", "--due", "--quiet", "--now", QUIET_LATER)
    ran = week_copy.cli("run", "--id", "rtn-sync", "--now", QUIET_LATER,
                        env=week_copy.env(SPECDOJO_ROUTINE_QUIET="1"))
    assert [(0, "", ""), (0, "", "")] == [(p.returncode, p.stdout, p.stderr)
                                          for p in (idle, ran)]
    assert "attempt_ended" == week_copy.events()[-1]["type"]  # it did run


def test_quiet_prints_everything_when_something_failed(week_copy: Week) -> None:
    """A failure under --quiet: the whole output, child lines included, exit 1."""
    done = week_copy.cli("run", "--id", "rtn-nightly-export", "--quiet", "--now", QUIET_LATER)
    assert (1, True, True) == (
        done.returncode, "[rtn-nightly-export] ERROR: disk /var/export full" in done.stdout,
        "Ran 1 attempt(s): 0 success, 1 failure, 0 skipped" in done.stdout)


def test_quiet_health_checks_speak_only_when_unhealthy(week: Week) -> None:
    """`status --quiet` on healthy routines is silent; `list --quiet` on the week is not."""
    healthy = week.cli("status", "rtn-sync", "--quiet", "--now", AFTER)
    unhealthy = week.cli("list", "--quiet", "--now", AFTER)
    assert ((0, ""), 1, True) == ((healthy.returncode, healthy.stdout), unhealthy.returncode,
                                  "unhealthy: rtn-cleanup, rtn-nightly-export" in
                                  unhealthy.stdout)


def test_child_output_is_prefixed_with_its_routine(week_copy: Week) -> None:
    """Echoed child lines start with `[<routine id>] `, on stdout and (with --json) stderr."""
    text = week_copy.cli("run", "--id", "rtn-sync", "--now", QUIET_LATER)
    as_json = week_copy.cli("run", "--id", "rtn-nightly-export", "--json", "--now", AFTER)
    assert ("[rtn-sync] synced: sync index --project demo", [
        "[rtn-nightly-export] exporting 2026-08-10T00:30:00.000Z",
        "[rtn-nightly-export] ERROR: disk /var/export full"]) == (
        text.stdout.splitlines()[0], as_json.stderr.splitlines())


@pytest.mark.parametrize("argv", [["list", "--js"], ["history", "--lim", "1"],
                                  ["job", "list", "--js"], ["run", "--due", "--dry-ru"],
                                  ["status", "--qui"]])
def test_options_are_never_abbreviated(week: Week, argv: list[str]) -> None:
    """A prefix of an option is an error (exit 2), not the option."""
    done = week.cli(*argv)
    assert (2, "", True) == (done.returncode, done.stdout,
                             "unrecognized arguments" in done.stderr)


@pytest.mark.parametrize(("argv", "hint"), [
    (["pause", "rtn-sync", "--reason", "x"],
     "pause: unrecognized arguments: --reason x (it takes --all, --note, --by, --now, --json, "
     "--root, --project; see `python -m specdojo_routine pause --help`)"),
    (["list", "--jsno"], "list: unrecognized arguments: --jsno (did you mean --json? see "
                         "`python -m specdojo_routine list --help`)"),
    (["where", "extra"], "where: unrecognized arguments: extra (it takes --json, --root, "
                         "--project; see `python -m specdojo_routine where --help`)"),
    (["list", "--js"], "list: unrecognized arguments: --js (did you mean --json? see "
                       "`python -m specdojo_routine list --help`)"),
    (["job", "list", "--js"], "job list: unrecognized arguments: --js (did you mean --json? "
                              "see `python -m specdojo_routine job list --help`)"),
])
def test_an_option_the_command_does_not_take_names_what_it_takes(
    week: Week, argv: list[str], hint: str,
) -> None:
    """An unknown option is the command's error, not the program's: it names the closest
    option of that command, or every option it takes, and that command's help."""
    done = week.cli(*argv)
    assert (2, f"error: python -m specdojo_routine {hint}\n") == (done.returncode, done.stderr)


def _closed_after_one_line(week: Week, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen([sys.executable, "-m", "specdojo_routine", *args, "--root",
                             str(week.root)], cwd=week.root, env=week.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader goes away, as `| head -1` does
    err = proc.stderr.read()
    return subprocess.CompletedProcess(args, proc.wait(timeout=120), first, err)


def test_a_closed_pipe_ends_a_read_only_command_quietly(week: Week, tmp_path: Path) -> None:
    """`history --json | head -1` on a ledger larger than a pipe holds (so the pipe really
    breaks) exits 0 with no error line; `list | head -1` keeps its health code 1."""
    big = write_project(tmp_path / "big")
    write_ledger(big.ledger, 5_000, ["rtn-sync"])
    history = _closed_after_one_line(big, "history", "--json")
    listed = _closed_after_one_line(week, "list", "--now", AFTER)
    assert [(0, ""), (1, "")] == [(history.returncode, history.stderr),
                                  (listed.returncode, listed.stderr)]
    assert (1, True) == (orjson.loads(history.stdout)["seq"],
                         big.ledger.stat().st_size > 1 << 20)


@pytest.mark.parametrize("argv", [
    ["list", "--json"], ["status", "--json"], ["next", "--json"], ["run", "--due", "--dry-run",
                                                                  "--json"],
    ["import", "--dry-run", "--json"], ["validate", "--json"], ["where", "--json"],
    ["fold", "--check", "--json"], ["job", "list", "--json"], ["logs", "rtn-sync", "--json"],
])
def test_every_json_is_one_pretty_document(week: Week, argv: list[str]) -> None:
    """Every `--json` but history's is one document indented by 2 spaces."""
    done = week.cli(*argv, "--now", AFTER) if argv[0] in ("list", "status", "next", "run") \
        else week.cli(*argv)
    assert (True, True) == (done.stdout.startswith("{\n  \""),
                            isinstance(orjson.loads(done.stdout), dict)), done.stderr


def test_validate_where_and_fold_take_json(week: Week) -> None:
    """validate: counts and problems; where: the paths; fold --check: what differs."""
    valid = week.json("validate", "--json")
    where = week.json("where", "--json")
    fold = week.json("fold", "--check", "--json")
    assert ({"valid": True, "routines": 4, "jobs": 2, "errors": [], "warnings": []},
            (str(week.root), "demo"),
            {"check": True, "drifted": [], "repaired": [], "conflicts": [],
             "warnings": []}) == (
        valid, (where["root"], where["project"]), fold)


def test_validate_json_locates_each_problem(week_copy: Week) -> None:
    """An invalid file: exit 1, each problem with path, line, column and message."""
    (week_copy.root / "routines" / "rtn-bad.yaml").write_text(
        "id: rtn-bad\ninterval: 1x\naction: {kind: exec-cycle}\n")
    done = week_copy.cli("validate", "--json")
    doc = orjson.loads(done.stdout)
    problem = doc["errors"][0]
    assert (1, False, "", ["path", "line", "col", "message"], 2) == (
        done.returncode, doc["valid"], done.stderr, list(problem), problem["line"])


def test_quiet_still_prints_a_failing_hooks_warning_when_the_run_succeeds(
    project: Project,
) -> None:
    """`run --due --quiet` (for cron) whose routine succeeds after a failure: the `recovered`
    hook fails, so its `warning:` line reaches stderr (cron's mail) while the run's progress
    and summary stay quiet; exit 0."""
    project.routine("rtn-h", "interval: 1h\naction: {kind: specdojo, args: [go]}\n"
                    "policy: {notify: {on: [failure, recovered], command: 'exit 7'}}\n")
    project.exit_codes({"go": 1})
    project.cli("run", "--due", "--quiet", "--now", "2026-01-01T00:00:10Z")
    project.exit_codes({})
    done = project.cli("run", "--due", "--quiet", "--now", "2026-01-01T01:00:10Z")
    assert (0, "") == (done.returncode, done.stdout), done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("warning: rtn-h: the recovered notification hook exited with code 7")
