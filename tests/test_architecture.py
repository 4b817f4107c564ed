"""The pure core imports no I/O (STYLE.md): a walk over each core module's imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "specdojo_routine"
CORE = ["model", "schedule", "fold", "decide", "templates", "timeutil", "inputs", "redact",
        "jobplan", "errors", "fold_jobs", "shellquote"]
FORBIDDEN = {"os", "pathlib", "subprocess", "portalocker", "orjson", "ruamel", "time", "shutil",
             "socket", "io", "tempfile", "fcntl", "signal", "threading", "glob", "sys"}
# core modules may import each other, never the edge
EDGE = {"config", "definitions", "validation", "validate_routines", "validate_jobs", "ledger",
        "locks", "runner", "handlers", "cli", "views", "codec", "evidence", "jobs", "jobcli",
        "render", "agent", "testing", "api", "listing", "jobfiles", "execlock"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x / from .x import y
                names.update(f".{base}" if base else f".{a.name}" for a in node.names)
            else:
                names.add(base)
    return names


@pytest.mark.parametrize("module", [m for m in CORE if (PACKAGE / f"{m}.py").exists()])
def test_core_module_imports_no_io(module: str) -> None:
    """A core module imports neither I/O libraries nor edge modules of the package."""
    bad = set()
    for name in _imports(PACKAGE / f"{module}.py"):
        top = name.lstrip(".").split(".")[0]
        if name.startswith("specdojo_routine."):
            top = name.split(".")[1]
            if top in EDGE:
                bad.add(name)
        elif name.startswith("."):
            if top in EDGE:
                bad.add(name)
        elif top in FORBIDDEN:
            bad.add(name)
    assert set() == bad


def test_core_modules_exist() -> None:
    """The core this test guards is really there (the guard cannot pass vacuously)."""
    present = [m for m in CORE if (PACKAGE / f"{m}.py").exists()]
    assert {"model", "schedule", "fold", "decide", "templates", "timeutil"} <= set(present)


def test_guard_catches_an_io_import(tmp_path: Path) -> None:
    """The import walker sees plain, dotted and relative imports."""
    probe = tmp_path / "probe.py"
    probe.write_text("import os.path\nfrom . import ledger\nfrom .runner import x\n")
    assert {"os.path", ".ledger", ".runner"} == _imports(probe)
