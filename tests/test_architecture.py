"""The layers of STYLE.md are folders, and the import graph obeys them.

``core/`` is pure (no I/O imports, no clock reads); arrows only point down:
cli → app → execute → store → core. The public surface (``__init__``, ``api``, ``testing``,
``__main__``) sits on top. Every import of every module is walked, function-local ones included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "specdojo_routine"
LAYERS = {"core": 0, "store": 1, "execute": 2, "app": 3, "cli": 4}
TOP = 5  # __init__, __main__, api, testing
IO_MODULES = {"os", "pathlib", "subprocess", "io", "shutil", "tempfile", "portalocker", "orjson",
              "ruamel", "fcntl", "signal", "socket", "threading", "time", "glob", "sys",
              "selectors", "uuid", "random", "secrets", "getpass", "contextvars", "asyncio",
              "multiprocessing", "cattrs", "pickle", "sqlite3", "logging", "urllib", "http",
              "redis"}
CLOCK_CALLS = {("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"),
               ("date", "today"), ("time", "time"), ("time", "monotonic")}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _dotted(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(dotted: str) -> int:
    parts = dotted.split(".")
    return LAYERS.get(parts[1], TOP) if len(parts) > 1 else TOP


def _imports(path: Path) -> set[str]:
    """Absolute names of everything ``path`` imports (relative imports resolved)."""
    here = _dotted(path).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            names.add(module)
            names.update(f"{module}.{a.name}" for a in node.names)
    return names


def _clock_reads(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr) in CLOCK_CALLS):
            found.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
    return found


def _upward(path: Path) -> set[str]:
    mine = _layer(_dotted(path))
    return {name for name in _imports(path)
            if name.startswith("specdojo_routine.") and _layer(name) > mine
            and mine != TOP}


def _io(path: Path) -> set[str]:
    return {name for name in _imports(path) if name.split(".")[0] in IO_MODULES}


MODULES = _modules()
CORE = [p for p in MODULES if _layer(_dotted(p)) == LAYERS["core"]]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _dotted(p))
def test_no_import_runs_up_the_layers(path: Path) -> None:
    """A module imports only from its own layer or the layers below it."""
    assert set() == _upward(path)


@pytest.mark.parametrize("path", CORE, ids=lambda p: _dotted(p))
def test_core_imports_no_io(path: Path) -> None:
    """A core module imports no I/O library."""
    assert set() == _io(path)


@pytest.mark.parametrize("path", CORE, ids=lambda p: _dotted(p))
def test_core_reads_no_clock(path: Path) -> None:
    """A core module takes time as a parameter: it never reads the clock."""
    assert [] == _clock_reads(path)


def test_every_module_lives_in_a_layer() -> None:
    """Only the public surface stays at the top; everything else is in a layer folder."""
    top = {p.name for p in PACKAGE.glob("*.py")}
    assert {"__init__.py", "__main__.py", "api.py", "testing.py"} == top
    assert set(LAYERS) == {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}


def test_core_is_really_there() -> None:
    """The guard cannot pass vacuously: the core holds the rules STYLE.md names."""
    names = {p.stem for p in CORE}
    assert {"model", "events", "schedule", "fold", "decide", "templates", "timefmt", "inputs",
            "redact", "jobplan", "jobfold", "validation"} <= names


def test_guard_catches_upward_io_and_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walkers see an upward arrow, a relative I/O import and a clock read. The probe
    module lives in a scratch package, never in the source tree that other tests (and other
    workers of `pytest -n`) read meanwhile: ruff, mypy, the definition cache's fingerprint."""
    monkeypatch.setitem(globals(), "PACKAGE", tmp_path / "specdojo_routine")
    core = PACKAGE / "core"
    core.mkdir(parents=True)
    probe = core / "_probe_for_test.py"
    probe.write_text("from ..store import ledger\nimport os.path\nfrom datetime import datetime\n"
                     "def f():\n    from specdojo_routine.cli import main\n"
                     "    return datetime.now()\n", encoding="utf-8")
    assert {"specdojo_routine.store", "specdojo_routine.store.ledger",
            "specdojo_routine.cli", "specdojo_routine.cli.main"} == _upward(probe)
    assert {"os.path"} == _io(probe)
    assert ["datetime.now (line 6)"] == _clock_reads(probe)
