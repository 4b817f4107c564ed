"""`pip install .` into a clean virtual environment builds a wheel a PyPI user can rely on,
with every dependency installed from a wheel (``--only-binary :all:``).

The venv is created without access to anything installed on this machine (no
``--system-site-packages``), so pip must fetch the build backend through build isolation and
the dependencies from the package index, as on a newcomer's machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO, copy_source

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
BACKEND = PYPROJECT["build-system"]["build-backend"].split(".")[0]  # hatchling


def _run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(export of the source files, clean venv with `pip install .` of that export done)."""
    tmp = tmp_path_factory.mktemp("packaging")
    export = tmp / "export"
    copy_source(REPO, export)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    before = _run(py, "-c", f"import {BACKEND}", cwd=tmp)
    assert 0 != before.returncode, f"a clean venv must not have {BACKEND}: {before.stdout}"
    # every dependency from a wheel: nothing is compiled on a user's machine
    install = _run(py, "-m", "pip", "install", "-q", "--only-binary", ":all:", ".", cwd=export)
    assert 0 == install.returncode, install.stdout + install.stderr
    return export, venv


def _env(export: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPECDOJO_PROJECT")}
    env["SPECDOJO_CLI"] = str(export / "fixtures" / "demo" / "bin" / "fake-specdojo")
    return env


def test_the_build_backend_came_from_build_isolation(installed: tuple[Path, Path]) -> None:
    """The venv had no build backend (checked in the fixture) and still has none: pip fetched
    it into an isolated build environment, so the install works where nobody put it by hand."""
    _, venv = installed
    probe = _run(venv / "bin" / "python", "-c", f"import {BACKEND}", cwd=venv)
    assert (True, f"No module named '{BACKEND}'") == (
        0 != probe.returncode, probe.stderr.strip().splitlines()[-1].split(": ", 1)[1])


def test_the_console_script_runs_the_demo_twice(installed: tuple[Path, Path]) -> None:
    """The wheel's `specdojo-routine` script: --version, --help under its own name, and the
    README demo twice (the second time nothing is due), from the installed copy, not the tree."""
    export, venv = installed
    script = venv / "bin" / "specdojo-routine"
    env = _env(export)
    where = _run(venv / "bin" / "python", "-c",
                 "import specdojo_routine; print(specdojo_routine.__file__)", cwd=venv, env=env)
    version = _run(script, "--version", cwd=export, env=env)
    usage = _run(script, "--help", cwd=export, env=env)
    first = _run(script, "run", "--due", "--root", "fixtures/demo", cwd=export, env=env)
    second = _run(script, "run", "--due", "--root", "fixtures/demo", cwd=export, env=env)
    assert (True, f"specdojo_routine {PYPROJECT['project']['version']}\n", True) == (
        where.stdout.startswith(str(venv)), version.stdout,
        usage.stdout.startswith("usage: specdojo-routine "))
    assert (0, True, 0, "no due routines\n") == (
        first.returncode, "Ran " in first.stdout, second.returncode, second.stdout), \
        first.stdout + first.stderr + second.stderr


def _dist_info(venv: Path) -> dict[str, str]:
    """The installed distribution's METADATA, file list and licence text, read by the venv."""
    code = ("import json; from importlib import metadata as m; d = m.distribution("
            "'specdojo_routine'); print(json.dumps({'metadata': d.read_text('METADATA'), "
            "'files': '\\n'.join(str(f) for f in d.files), "
            "'license': d.read_text('licenses/LICENSE')}))")
    done = _run(venv / "bin" / "python", "-c", code, cwd=venv)
    assert 0 == done.returncode, done.stderr
    result: dict[str, str] = json.loads(done.stdout)
    return result


def test_the_wheel_has_the_metadata_a_pypi_user_expects(installed: tuple[Path, Path]) -> None:
    """Licence (MIT expression and the LICENSE file), classifiers for 3.11-3.13, project URLs,
    the typed marker and the console script entry point."""
    meta = _dist_info(installed[1])
    headers = meta["metadata"].splitlines()
    classifiers = {h.split(": ", 1)[1] for h in headers if h.startswith("Classifier: ")}
    wanted = {f"Programming Language :: Python :: 3.{minor}" for minor in (11, 12, 13)}
    assert (True, True, True, True, True, True) == (
        "License-Expression: MIT" in headers,
        meta["license"].startswith("MIT License"),
        wanted | {"Typing :: Typed"} <= classifiers,
        any(h.startswith("Project-URL: Homepage, https://") for h in headers),
        "specdojo_routine/py.typed" in meta["files"].splitlines(),
        any(f.endswith("entry_points.txt") for f in meta["files"].splitlines()),
    )
