"""Sessions: tests (one per supported Python), lint, typing, bench, docs, wheels.
``session.posargs`` are passed through: ``nox -s tests-3.12 -- -x --basetemp=/tmp/pt``."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

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
                "-o", "addopts=", "-o", "faulthandler_timeout=0", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """Executes every code block of README.md and docs/ (also part of the default test run)."""
    session.install("-e", ".[test]")
    session.run("pytest", "tests/test_docs.py", *session.posargs)


def _manylinux(arch: str, glibc: int) -> list[str]:
    """The wheel platform tags pip accepts on a Linux with glibc 2.<glibc> (PEP 600, and the
    legacy names of 2.17, 2.12 and 2.5): ``pip download --platform`` does not expand them."""
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    oldest = 17 if arch == "aarch64" else 5
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(glibc, oldest - 1, -1)]
    return tags + [f"{legacy[m]}_{arch}" for m in legacy if m >= oldest and m <= glibc]


# Each target as pip download's --platform values: Linux with glibc 2.28 (Debian 10, RHEL 8,
# Ubuntu 20.04 have it or newer), macOS 11 (pip expands a macOS tag to the older versions).
WHEEL_TARGETS = {
    "linux-x86_64": _manylinux("x86_64", 28),
    "linux-aarch64": _manylinux("aarch64", 28),
    "macos-arm64": ["macosx_11_0_arm64"],
    "macos-x86_64": ["macosx_11_0_x86_64"],
}


@nox.session
def wheels(session: nox.Session) -> None:
    """Every dependency of the package and of its tests installs from a wheel on CPython
    3.11-3.13 on each of WHEEL_TARGETS: nothing is compiled on a newcomer's machine, a CI
    runner or a container build. Downloads only (``--only-binary :all:``), so it checks every
    target from any machine; the files go to the session's temp dir."""
    project = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    dest = session.create_tmp()
    for python in PYTHONS:
        for target, platforms in WHEEL_TARGETS.items():
            session.log(f"CPython {python} on {target}")
            session.run("python", "-m", "pip", "download", "--quiet", "--only-binary", ":all:",
                        "--dest", dest, "--implementation", "cp", "--python-version", python,
                        *(f"--platform={tag}" for tag in platforms), *wanted,
                        *session.posargs)
