"""A secret written into a definition, or into a file a definition points at, is passed to the
command that needs it and shown nowhere else (SPEC §7.5): not by a dry run, the console, the
evidence, the ledger, the views, the definitions cache or an error message."""

from __future__ import annotations

import orjson
import pytest
from conftest import Project

SECRET = "hunter2-s3cr3t-value"
NOW = "2026-08-07T08:02:00Z"


def _routine(project: Project, args: str) -> None:
    project.routine("rtn-db", f"""\
        trigger: {{cron: "0 * * * *", timezone: UTC}}
        action: {{kind: specdojo, args: {args}}}
        """)


def _echoing_cli(project: Project) -> dict[str, str]:
    """The environment of a SpecDojo CLI that prints its arguments (so the console echo and
    the evidence see the secret) and logs them as the fake does."""
    cli = project.root / "echo-cli"
    cli.write_text('#!/bin/sh\nprintf \'%s\\n\' "$*" >> "$FAKE_SPECDOJO_LOG"\necho "called: $*"\n')
    cli.chmod(0o755)
    return project.env(SPECDOJO_CLI=str(cli))


def _written_by_us(project: Project) -> dict[str, bytes]:
    """Every file the commands wrote: all but the definition itself and the fake CLI's log
    (the command that needs the secret gets it)."""
    return {name: data for name, data in project.files().items()
            if name not in ("routines/rtn-db.yaml", "fake-cli.log", "echo-cli")}


@pytest.mark.parametrize("args", [f'[index, "--password={SECRET}"]',
                                  f'[index, --db-password, "{SECRET}"]',
                                  f'[index, "--api-token={SECRET}", --json]'])
def test_a_password_option_in_a_routine_reaches_only_its_command(project: Project,
                                                                  args: str) -> None:
    _routine(project, args)
    dry = project.cli("run", "--due", "--dry-run", "--now", NOW)
    assert 0 == dry.returncode, dry.stderr
    assert "[REDACTED]" in dry.stdout and SECRET not in dry.stdout + dry.stderr
    dry_json = project.cli("run", "--due", "--dry-run", "--json", "--now", NOW)
    command = orjson.loads(dry_json.stdout)["selected"][0]["actions"][0]["command"]
    assert "index" in command and SECRET not in "".join(command)
    ran = project.cli("run", "--due", "--now", NOW, env=_echoing_cli(project))
    assert 0 == ran.returncode, ran.stderr
    assert SECRET in project.calls()[0]  # the command itself got the secret
    assert SECRET not in ran.stdout + ran.stderr
    assert "called: index" in ran.stdout and "[REDACTED]" in ran.stdout  # the live echo
    written = _written_by_us(project)
    assert any(name.startswith("execution/") for name in written)  # evidence was written
    assert any(name.endswith("definitions.json") for name in written)
    assert [] == [name for name, data in written.items() if SECRET.encode() in data]
    for command_args in (["history"], ["status", "rtn-db"], ["logs", "rtn-db"]):
        shown = project.cli(*command_args)
        assert SECRET not in shown.stdout + shown.stderr, command_args


def test_a_definition_that_links_to_a_key_file_is_refused_without_quoting_it(
        project: Project) -> None:
    """A routine file that is a symlink to a private key: validation refuses it (not a
    mapping) and its message does not show the key's text."""
    key = project.root / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n"
                   "-----END OPENSSH PRIVATE KEY-----\n")
    (project.root / "routines" / "rtn-key.yaml").symlink_to(key)
    done = project.cli("validate")
    assert 1 == done.returncode
    assert "routines/rtn-key.yaml:1:1: routine file must be a YAML mapping" in done.stderr
    assert "b3BlbnNzaC1rZXkt" not in done.stdout + done.stderr
    assert "[REDACTED]" in done.stderr


def test_a_problem_quoting_a_password_shows_it_redacted(project: Project) -> None:
    """A validation problem quotes the bad value; a credential in it is redacted."""
    project.routine("rtn-bad", f"""\
        trigger: {{cron: "0 * * * *", timezone: "password={SECRET}"}}
        action: {{kind: specdojo, args: [index]}}
        """)
    done = project.cli("validate")
    assert 1 == done.returncode
    assert "rtn-bad.yaml:2:" in done.stderr and "timezone" in done.stderr
    assert SECRET not in done.stdout + done.stderr


@pytest.mark.parametrize("command", ["validate", "validate --json", "list", "status",
                                     "run --due"])
def test_a_value_the_environment_keeps_as_a_secret_is_not_quoted_back(
        project: Project, command: str) -> None:
    """A definition that holds, as plain text, the value of a `*_PASSWORD` variable: the
    problem quoting it (on stderr, or in `--json` on stdout) shows it redacted, though nothing
    in the line itself says it is a credential."""
    project.routine("rtn-bad", """\
        trigger: {cron: "0 * * * *", timezone: "Hunter2Hunter2xyz"}
        action: {kind: specdojo, args: [index]}
        """)
    done = project.cli(*command.split(), env=project.env(DB_PASSWORD="Hunter2Hunter2xyz"))
    assert 1 == done.returncode and "rtn-bad.yaml" in done.stdout + done.stderr, done.stderr
    assert "Hunter2Hunter2xyz" not in done.stdout + done.stderr
    plain = project.cli(*command.split())  # without the variable the value is no secret
    assert "Hunter2Hunter2xyz" in plain.stdout + plain.stderr


def test_a_secret_value_with_a_quote_is_not_shown_shell_quoted_by_a_dry_run(
        project: Project) -> None:
    """A dry run shows each command line shell-quoted: a secret value holding a `'` is
    written there as `'it'"'"'s …'`, which is the value too, and is redacted."""
    project.routine("rtn-q", """\
        interval: 1d
        action: {kind: specdojo, args: [index, --label, "it's hunter 2"]}
        """)
    done = project.cli("run", "--id", "rtn-q", "--dry-run",
                       env=project.env(DB_PASSWORD="it's hunter 2"))
    assert 0 == done.returncode, done.stderr
    assert "--label '[REDACTED]'" in done.stdout and "hunter" not in done.stdout, done.stdout


def test_a_secret_value_that_is_part_of_a_longer_word_is_left_as_shown(
        project: Project) -> None:
    """The console keeps the environment's secret values out of what it prints where they
    stand alone, not inside a longer word: with `DEPLOY_TOKEN=success`, `status` shows the
    routine `rtn-successful` by its id and its state `success` as `[REDACTED]`."""
    project.routine("rtn-successful", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    assert 0 == project.cli("run", "--due").returncode
    shown = project.cli("status", env=project.env(DEPLOY_TOKEN="success"))
    assert "rtn-successful  [REDACTED]" in shown.stdout, shown.stdout


@pytest.mark.parametrize("argv", [["run", "--due", "--db-password", SECRET],
                                  ["status", f"--api-token={SECRET}"]])
def test_a_secret_in_a_mistyped_command_line_is_not_echoed(project: Project,
                                                           argv: list[str]) -> None:
    """An option the command does not take is named in the error line (SPEC §7.5 holds for
    error messages): the value given to a credential option is redacted there."""
    done = project.cli(*argv)
    assert (2, "") == (done.returncode, done.stdout)
    assert "unrecognized arguments" in done.stderr and "[REDACTED]" in done.stderr
    assert SECRET not in done.stderr


def test_a_secret_given_as_by_never_reaches_the_ledger(project: Project) -> None:
    """`--by` is text an operator types, as `--note` is: a token in it is redacted in the
    ledger and the view like a token in the note."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    token = "ghp_" + "a" * 36
    done = project.cli("pause", "rtn-a", "--by", token, "--note", token, timeout=60)
    assert 0 == done.returncode, done.stderr
    [paused] = [e for e in project.events() if e["type"] == "routine_paused"]
    assert ("[REDACTED]", "[REDACTED]") == (paused["paused_by"], paused["note"])
    assert token not in project.ledger.read_text() + project.state_path.read_text()
