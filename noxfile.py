"""Sessions: tests, lint, typing, bench, docs. ``session.posargs`` are passed through."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typing"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "specdojo_routine", "tests", "noxfile.py", *session.posargs)


@nox.session
def typing(session: nox.Session) -> None:
    session.install("-e", ".[dev]")
    session.run("mypy", "--strict", "specdojo_routine", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: ratios against baselines measured in the same run (not in the default run)."""
    session.install("-e", ".[test]")
    session.run("pytest", "tests/bench", "-p", "no:cacheprovider", "-s", "-q",
                "-o", "addopts=", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """Executes every code block of README.md and docs/ (also part of the default test run)."""
    session.install("-e", ".[test]")
    session.run("pytest", "tests/test_docs.py", *session.posargs)
