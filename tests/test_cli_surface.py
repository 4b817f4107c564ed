"""The command line as an operator meets it (SPEC §8, §14): what a mistyped or empty option
does, and that each command's `--help` names the exit codes the command really returns."""

from __future__ import annotations

import pytest

from tests.clirun import run_cli
from tests.conftest import Project

DAILY = """\
    trigger: {cron: "0 2 * * *", timezone: UTC}
    action: {kind: specdojo, args: [index, build]}
    """


def _second_project(project: Project) -> None:
    """A config with two projects, the current one (`demo`) and `other`."""
    config = project.root / ".specdojo" / "specdojo.config.json"
    config.write_text(config.read_text().replace(
        '"projects":{', '"projects":{"other":{"routines_path":"r2","jobs_path":"j2",'
        '"execution_path":"e2"},'))


@pytest.mark.parametrize("argv", [
    ["run", "--due", "--now", "2026-08-07T08:00:00Z", "--project", ""], ["list", "--project="],
    ["job", "list", "--project", ""],
])
def test_an_empty_project_is_refused_not_read_as_the_default(
    project: Project, argv: list[str]
) -> None:
    """`--project "$P"` with P unset in a crontab: exit 2 and one line, nothing run or
    written - not the config's current project in its place."""
    project.routine("rtn-a", DAILY)
    _second_project(project)
    before = project.files()
    done = project.cli(*argv)
    assert (2, "", 1, True, before, []) == (
        done.returncode, done.stdout, len(done.stderr.splitlines()),
        "argument --project: an empty value: name a project" in done.stderr,
        project.files(), project.calls()), done.stderr


def test_an_empty_root_is_refused_not_read_as_the_working_directory(project: Project) -> None:
    """`--root ""` is a usage error, even where the working directory is a project."""
    project.routine("rtn-a", DAILY)
    done = run_cli(["list", "--root", ""], cwd=project.root, env=project.env())
    assert (2, "", True) == (done.returncode, done.stdout,
                             done.stderr.startswith("error: python -m specdojo_routine list: "
                                                    "argument --root: an empty value")
                             ), done.stderr


def test_a_project_named_by_the_option_still_wins(project: Project) -> None:
    """The check refuses only the empty value: `--project other` selects that project."""
    _second_project(project)
    done = project.cli("where", "--project", "other")
    assert (0, "project         other") == (done.returncode, done.stdout.splitlines()[1])


@pytest.mark.parametrize("command", [["list"], ["run", "--due"], ["where", "--json"], ["init"]])
@pytest.mark.parametrize("under", ["", "/sub"])
def test_a_root_that_is_a_file_is_a_usage_error_that_says_so(
    project: Project, command: list[str], under: str
) -> None:
    """`--root` naming a file (or a path through one), `init` too: exit 2, one line that
    names the file and asks for the project's directory, nothing on stdout, nothing made."""
    afile = project.root / "notes.txt"
    afile.write_text("not a project\n")
    done = run_cli([*command, "--root", f"{afile}{under}"], cwd=project.root,
                   env=project.env())
    said = ("is a file, not a directory" if not under else
            f"goes through {afile}, which is a file, not a directory")
    assert (2, "", 1, True, "not a project\n") == (
        done.returncode, done.stdout, len(done.stderr.splitlines()),
        done.stderr.startswith(f"error: --root {afile}{under} {said}; "),
        afile.read_text()), done.stderr


def _exit_codes(project: Project, *words: str) -> str:
    """The `exit codes:` section of a command's `--help`, its lines joined."""
    text = project.cli(*words, "--help").stdout
    return " ".join(text.split("exit codes:\n", 1)[1].split())


def test_next_exits_1_on_a_damaged_ledger_and_its_help_says_so(project: Project) -> None:
    """`next` reads the ledger (the cursor, a retry): a changed line is exit 1, which its
    help lists beside 0 and 2."""
    project.routine("rtn-a", DAILY)
    assert 0 == project.cli("run", "--id", "rtn-a").returncode
    lines = project.ledger.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"at":"', b'"at":"1', 1)
    project.ledger.write_bytes(b"".join(lines))
    done = project.cli("next", "rtn-a")
    assert (1, "", True) == (done.returncode, done.stdout, done.stderr.startswith("error: "))
    assert "1 a damaged ledger, or the routine ID is invalid" in _exit_codes(project, "next")


def test_job_run_of_an_invalid_job_exits_1_and_its_help_says_so(project: Project) -> None:
    """An invalid Job Definition is a refusal with exit 1 (a validation error), which the
    help's line for 1 names beside failed and partial."""
    project.job("job-bad", "name: Bad\n")
    done = project.cli("job", "run", "--job", "job-bad")
    assert (1, "error: invalid Job Definition: job-bad (run `job validate` and fix it)\n") == (
        done.returncode, done.stderr)
    assert "or the Job Definition is invalid" in _exit_codes(project, "job", "run")


def test_job_resolve_help_names_the_lock_it_waits_for(project: Project) -> None:
    """`job resolve` takes the project exec lock, not the routine lock: its 75 says so."""
    said = _exit_codes(project, "job", "resolve")
    assert (True, False) == ("75 another process holds the project exec lock" in said,
                             "routine lock" in said)
