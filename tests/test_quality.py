"""The code base stays type-checked (mypy --strict) and lint-clean (ruff), in CI too.

The tools are test dependencies (``.[test]``, README command 2), so every run of the suite, CI's
included, type-checks and lints; where one is missing its test skips with the reason shown.
``nox -s typing`` and ``nox -s lint`` run them on their own."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy not installed (pip install -e '.[test]', or nox -s typing)")
def test_package_passes_mypy_strict() -> None:
    """mypy --strict reports nothing on the package."""
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "specdojo_routine"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert 0 == proc.returncode, proc.stdout + proc.stderr


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None,
                    reason="ruff not installed (pip install -e '.[test]', or nox -s lint)")
def test_code_passes_ruff() -> None:
    """ruff reports nothing on the package, the tests, the noxfile and the CI helper."""
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "specdojo_routine", "tests",
                           "noxfile.py", ".ci"], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert 0 == proc.returncode, proc.stdout + proc.stderr
