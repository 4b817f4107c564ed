"""Sessions: tests (one per supported Python), lint, typing, bench, docs.
``session.posargs`` are passed through: ``nox -s tests-3.12 -- -x --basetemp=/tmp/pt``."""

from __future__ import annotations

import os
import shutil
import subprocess

import nox

PYTHONS = ["3.11", "3.12", "3.13"]

nox.options.sessions = ["tests", "lint", "typing"]
nox.options.reuse_existing_virtualenvs = True


def _pyenv_versions() -> None:
    """Let pyenv's shims find every installed 3.11-3.13 (``python3.12`` fails through a shim
    unless that version is selected), unless the caller chose PYENV_VERSION already."""
    if "PYENV_VERSION" in os.environ or shutil.which("pyenv") is None:
        return
    listed = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True,
                            check=False).stdout.split()
    wanted = [v for v in listed if any(v.startswith(p + ".") for p in PYTHONS)]
    if wanted:
        os.environ["PYENV_VERSION"] = ":".join(wanted)


_pyenv_versions()


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The whole suite (mypy and ruff included: they run as tests)."""
    session.install("-e", ".[dev]")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "specdojo_routine", "tests", "noxfile.py", ".ci",
                *session.posargs)


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
