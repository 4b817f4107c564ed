"""The CLI explains itself: --version, a help text for every command and option, the
environment it reads, examples that parse, the exit codes, no developer references and no
colour codes.
"""

from __future__ import annotations

import argparse
import ast
import os
import pty
import re
import select
import shlex
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from specdojo_routine.cli import helptext, main
from specdojo_routine.cli.parser import build_parser
from tests.conftest import REPO, copy_source

PARSER = build_parser()
COMMANDS = helptext.subcommands(PARSER)
PATHS = [path for path, _ in COMMANDS]
# What a user must never see: references into the specification, Sphinx roles, RST literals.
INTERNAL = re.compile(r"\bSPEC\b|§|:mod:|:func:|:class:|``|\bseed\b|handlers")


def _help(*words: str, capsys: pytest.CaptureFixture[str]) -> str:
    code = main([*words, "--help"])
    out, err = capsys.readouterr()
    assert (0, "") == (code, err)
    return out


def test_version_prints_the_installed_package_version() -> None:
    """`--version` prints the version from the package metadata, which is pyproject's."""
    done = subprocess.run([sys.executable, "-m", "specdojo_routine", "--version"],
                          capture_output=True, text=True, timeout=60)
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert (0, f"specdojo_routine {declared}\n", declared) == (
        done.returncode, done.stdout, metadata.version("specdojo_routine"))


def test_every_command_is_described() -> None:
    """Every subcommand has a help entry in helptext (and every entry names a real command)."""
    assert (sorted(PATHS), True) == (sorted(helptext.COMMANDS), len(PATHS) >= 12)


@pytest.mark.parametrize("path", ["", *PATHS])
def test_every_option_has_a_one_line_help(path: str) -> None:
    """Walk the parser: every option and argument of every command has a non-empty help text
    that is one sentence (no line breaks), and the command has a description and an epilog
    with examples and exit codes."""
    parser = dict(COMMANDS).get(path, PARSER)
    actions = [a for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]
    undocumented = [a.dest for a in actions
                    if not a.help or a.help == argparse.SUPPRESS or "\n" in a.help]
    help_text = parser.format_help()  # writes the epilog (only --help needs it)
    epilog = parser.epilog or ""
    assert epilog.splitlines()[-1] in help_text
    assert ([], True, True, True) == (
        undocumented, bool(parser.description), "examples:" in epilog, "exit codes:" in epilog)


@pytest.mark.parametrize("path", ["", *PATHS])
def test_help_output_lists_every_option_and_no_internal_reference(
    path: str, capsys: pytest.CaptureFixture[str],
) -> None:
    """`<command> --help` exits 0 and its text names every option; no SPEC §, :mod: or ``."""
    out = _help(*path.split(), capsys=capsys)
    parser = dict(COMMANDS).get(path, PARSER)
    missing = [s for a in parser._actions for s in a.option_strings if s not in out]
    assert ([], [], True) == (missing, INTERNAL.findall(out), out.startswith("usage: "))


def test_top_level_help_lists_environment_examples_and_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _help(capsys=capsys)
    sections = [s for s in ("environment variables:", "examples:", "exit codes:") if s in out]
    codes = re.findall(r"^  (\d+) ", out, re.M)
    assert (3, ["0", "1", "2", "75", "129", "130", "143"], True) == (len(sections), codes,
                                                             "NO_COLOR" in out)


def _environment_names() -> set[str]:
    """Every SPECDOJO_* / NO_COLOR string constant in the package source."""
    names: set[str] = set()
    for path in (REPO / "specdojo_routine").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and re.fullmatch(r"SPECDOJO_[A-Z_]+|NO_COLOR", node.value):
                names.add(node.value)
    return names


def test_every_environment_variable_in_the_source_is_documented(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A SPECDOJO_* variable added to the code without a line in `--help` fails this test."""
    out = _help(capsys=capsys)
    names = _environment_names()
    assert ([], True) == (sorted(n for n in names if n not in out),
                          {"SPECDOJO_CLI", "SPECDOJO_PROJECT"} <= names)


EXAMPLES = [(path, example.format(prog="specdojo-routine"))
            for path, text in helptext.COMMANDS.items() for example in text.examples]


@pytest.mark.parametrize(("path", "example"), EXAMPLES, ids=[e for _, e in EXAMPLES])
def test_examples_parse(path: str, example: str) -> None:
    """Each example in the help is a valid command line for the command it is listed under
    (shell pipes and redirections cut off), so a renamed option cannot leave a stale example."""
    words = shlex.split(re.split(r"\s[|>]", example)[0])
    args = build_parser().parse_args(words[1:])
    assert path.split() == [w for w in (args.command, getattr(args, "job_command", None)) if w][
        :len(path.split())]


def test_a_usage_error_points_to_help(capsys: pytest.CaptureFixture[str]) -> None:
    """A bad command line: one `error:` line naming the command and its --help; exit 2."""
    code = main(["run", "--root", "."])
    _, err = capsys.readouterr()
    assert (2, 1, True) == (code, len(err.splitlines()),
                            err.startswith("error: ") and "run --help`)" in err)


def _on_a_tty(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, bytes]:
    """Run with stdout and stderr on a pseudo-terminal; (exit code, everything it wrote)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=follower,
                            stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        try:
            chunk = os.read(leader, 65536) if ready else b""
        except OSError:  # the child closed the terminal
            chunk = b""
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.wait(timeout=60), b"".join(chunks)


@pytest.mark.parametrize("words", [["--help"], ["list"], ["run", "--due"], ["history"]])
def test_no_colour_codes_on_a_terminal_with_no_color_or_in_a_pipe(
    words: list[str], tmp_path: Path,
) -> None:
    """NO_COLOR=1 on a real terminal, and output to a pipe: not one escape sequence."""
    root = tmp_path / "demo"
    copy_source(REPO / "fixtures" / "demo", root)
    env = {k: v for k, v in os.environ.items() if k not in ("SPECDOJO_PROJECT", "NO_COLOR")}
    env.update(SPECDOJO_CLI=str(root / "bin" / "fake-specdojo"), TERM="xterm-256color")
    args = [sys.executable, "-m", "specdojo_routine", *words]
    args += ["--root", str(root)] if words != ["--help"] else []
    tty_code, tty_out = _on_a_tty(args, root, {**env, "NO_COLOR": "1"})
    piped = subprocess.run(args, cwd=root, env=env, capture_output=True, timeout=60)
    assert (0, 0, False, False, True) == (
        tty_code, piped.returncode, b"\x1b" in tty_out, b"\x1b" in piped.stdout + piped.stderr,
        len(tty_out) > 0)
