"""The project installs into a fresh virtual environment and the README's demo runs there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to export a clean tree")
def test_fresh_venv_install_runs_the_demo(tmp_path: Path) -> None:
    """`pip install` of a clean export into a new venv, then the README's demo command: exit 0.

    The venv sees the already-installed dependencies (no network in tests), but not this
    package: it must come from the wheel pip builds from the exported tree."""
    export = tmp_path / "export"
    export.mkdir()
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        src = REPO / name
        if src.is_file():
            (export / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, export / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    py = venv / "bin" / "python"
    install = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "."],
        cwd=export, capture_output=True, text=True)
    assert 0 == install.returncode, install.stderr
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["SPECDOJO_CLI"] = str(export / "fixtures" / "demo" / "bin" / "fake-specdojo")
    probe = "import specdojo_routine; print(specdojo_routine.__file__)"
    where = subprocess.run([str(py), "-c", probe], cwd=tmp_path, env=env, capture_output=True,
                           text=True)
    assert str(venv) in where.stdout, where.stdout + where.stderr
    demo = subprocess.run([str(py), "-m", "specdojo_routine", "run", "--due", "--root",
                           "fixtures/demo"], cwd=export, env=env, capture_output=True, text=True)
    assert 0 == demo.returncode, demo.stdout + demo.stderr
    assert "Ran " in demo.stdout
