"""The layers of STYLE.md are folders, and the import graph obeys them.

``core/`` is pure (no I/O imports, no clock reads); arrows only point down:
cli → app → execute → store → core. The public surface (``__init__``, ``api``, ``testing``,
``__main__``) sits on top. ``store/`` holds three wings beside ``config`` and ``codeprint``
(the code's fingerprint, which the wings' private caches record): ``definitions/`` (reading
rtn-/job- files), ``ledger/`` (the ledgers, their proofs and views) and ``locks/``; a wing
imports ``config``, ``codeprint``, ``core`` and itself, never another wing, and those two
shared modules import no wing, and no module of the
package imports itself back through others (no circle). Every import of every module is
walked, function-local ones included. The size budget of STYLE.md holds too: a module is at
most 460 lines and a function at most 45 (the budget is ≲ 400 and ≲ 40; these are the
ceilings past which a module or function holds two concerns), the median function 12.
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


WINGS = ("definitions", "ledger", "locks")
#: (wing, wing) arrows allowed, each with the reason; none today.
WING_ARROWS: dict[tuple[str, str], str] = {}


def _wing(dotted: str) -> str | None:
    parts = dotted.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "store" and parts[2] in WINGS else None


def _across_wings(path: Path) -> set[str]:
    mine = _wing(_dotted(path))
    if mine is None:
        return set()
    return {name for name in _imports(path)
            if (other := _wing(name)) is not None and other != mine
            and (mine, other) not in WING_ARROWS}


STORE = [p for p in MODULES if _layer(_dotted(p)) == LAYERS["store"]]


#: The modules of store/ beside the wings, which every wing may import.
SHARED = ("config", "codeprint", "fsfacts")


def test_store_is_three_wings_and_shared_modules() -> None:
    """store/ holds config.py, codeprint.py and the three wing folders; every other module
    is in a wing."""
    store = PACKAGE / "store"
    assert {"__init__.py", *(f"{name}.py" for name in SHARED)} == {
        p.name for p in store.glob("*.py")}
    assert set(WINGS) == {p.name for p in store.iterdir() if (p / "__init__.py").exists()}
    assert all(_wing(_dotted(p)) is not None for p in STORE
               if p.parent != store)


@pytest.mark.parametrize("path", STORE, ids=lambda p: _dotted(p))
def test_no_import_crosses_the_wings(path: Path) -> None:
    """A store wing imports only config, codeprint, core and itself."""
    assert set() == _across_wings(path)


def _into_wings(path: Path) -> set[str]:
    """What a shared module of store/ imports from a wing (through it, a wing would reach
    another one)."""
    if _dotted(path) not in {f"specdojo_routine.store.{name}" for name in SHARED}:
        return set()
    return {name for name in _imports(path) if _wing(name) is not None}


@pytest.mark.parametrize("name", SHARED)
def test_the_shared_store_modules_import_no_wing(name: str) -> None:
    """config and codeprint, which every wing imports, import no wing themselves."""
    path = PACKAGE / "store" / f"{name}.py"
    assert (True, set()) == (path.is_file(), _into_wings(path))


def _graph(modules: list[Path] = MODULES) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (a name imported from a module that is
    not itself a module counts as an import of that module)."""
    known = {_dotted(p) for p in modules}
    graph: dict[str, set[str]] = {}
    for path in modules:
        here = _dotted(path)
        targets = set()
        for name in _imports(path):
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != here and path.name != "__init__.py":
                targets.add(name)
        graph[here] = {t for t in targets if not here.startswith(t + ".")}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One circle of imports, or []."""
    state: dict[str, int] = {}
    trail: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        trail.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*trail[trail.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        trail.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_no_module_imports_itself_back() -> None:
    """The package's import graph has no circle (the public surface's lazy names aside)."""
    assert [] == _cycle(_graph())


def test_guard_catches_an_arrow_between_wings_and_a_circle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wing walker sees a ledger module importing the locks wing, and a shared module
    importing the ledger wing; the circle finder sees a circle through the first probe. The
    probes live in a scratch package, as above."""
    graph = _graph()
    monkeypatch.setitem(globals(), "PACKAGE", tmp_path / "specdojo_routine")
    wing = PACKAGE / "store" / "ledger"
    wing.mkdir(parents=True)
    probe = wing / "_probe_for_test.py"
    probe.write_text("from specdojo_routine.store.locks import routine\n"
                     "def f():\n    from ..definitions import load\n", encoding="utf-8")
    assert {"specdojo_routine.store.locks", "specdojo_routine.store.locks.routine",
            "specdojo_routine.store.definitions",
            "specdojo_routine.store.definitions.load"} == _across_wings(probe)
    shared = PACKAGE / "store" / "codeprint.py"
    shared.write_text("from specdojo_routine.store.ledger import proven\n", encoding="utf-8")
    assert {"specdojo_routine.store.ledger",
            "specdojo_routine.store.ledger.proven"} == _into_wings(shared)
    name = "specdojo_routine.store.ledger._probe_for_test"
    graph[name] = {"specdojo_routine.store.locks.routine"}
    assert [] == _cycle(graph)  # an arrow between wings, not yet a circle
    graph["specdojo_routine.store.locks.routine"].add(name)
    assert name in _cycle(graph)


# --- the size budget (STYLE.md "Hygiene": modules ≲ 400 lines, functions ≲ 40) -------------
#: The hard ceilings that "≲" allows: a module or function a little over the budget is a
#: judgement call, one this far over is two concerns in one place.
MODULE_LINES, FUNCTION_LINES, MEDIAN_FUNCTION_LINES = 460, 45, 12


def _function_sizes(path: Path) -> dict[str, int]:
    """Each function's (and method's) whole length in lines, its def and docstring included."""
    return {f"{node.name} (line {node.lineno})": node.end_lineno - node.lineno + 1
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno is not None}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _dotted(p))
def test_module_and_its_functions_keep_the_size_budget(path: Path) -> None:
    """A module is at most 460 lines and each of its functions at most 45."""
    lines = len(path.read_text(encoding="utf-8").splitlines())
    too_long = {name: n for name, n in _function_sizes(path).items() if n > FUNCTION_LINES}
    assert (lines <= MODULE_LINES, {}) == (True, too_long), lines


def test_the_median_function_is_short() -> None:
    """Most functions do one small thing: the median length is at most 12 lines."""
    sizes = sorted(n for path in MODULES for n in _function_sizes(path).values())
    assert sizes[len(sizes) // 2] <= MEDIAN_FUNCTION_LINES, sizes[len(sizes) // 2]


def test_the_size_guard_sees_a_long_function(tmp_path: Path) -> None:
    """The probe: a 46-line function (its def and docstring included) is over the budget."""
    probe = tmp_path / "probe.py"
    body = "".join(f"    x{i} = {i}\n" for i in range(44))
    probe.write_text(f'def long() -> None:\n    """Doc."""\n{body}\ndef short() -> None:\n'
                     "    pass\n", encoding="utf-8")
    sizes = _function_sizes(probe)
    assert {"long (line 1)": 46, "short (line 48)": 2} == sizes
    assert ["long (line 1)"] == [name for name, n in sizes.items() if n > FUNCTION_LINES]
