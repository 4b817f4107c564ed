"""The docs and docstrings name modules, objects and files that exist.

A move of a module (``store/`` became three wings) leaves old names in prose that no test
imports: a reader then looks for ``specdojo_routine.views`` and finds nothing. Checked here:

- in README.md and docs/*.md, every dotted name in backticks that starts with the package or
  one of its layers (``specdojo_routine.core.events``, ``core.schedule.next_after``);
- in the docstrings and comments of the package and of the benchmarks, every ``:mod:`` /
  ``:func:`` / ``:class:`` / ``:meth:`` / ``:data:`` / ``:attr:`` / ``:exc:`` reference, looked
  up as Sphinx would: a relative one (``.x``, ``..x``) from the module that says it; an
  absolute one (ours or another module's: ``gc.freeze``) as it is; any other in the module's
  own namespace (its names and imports, its classes' members, the builtins), else as the tail
  of a name in the package (``stamps.only_grew``);
- in both, every path of a file of the package or of the tests (``store/ledger/proven.py``,
  ``tests/test_fold.py``) and every ``docs/<page>.md``.

The package's modules are imported to look names up (never ``__main__``, which sets the
collector of the process that imports it); nothing is run.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import re
import types
from functools import cache
from pathlib import Path

import attrs

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "specdojo_routine"
_LAYERS = ("core", "store", "app", "cli", "execute")
_IN_DOCS = re.compile(r"`((?:specdojo_routine|" + "|".join(_LAYERS) + r")(?:\.\w+)+)")
_ROLE = re.compile(r":(?:mod|func|class|meth|data|attr|exc):`~?(\.*[\w.]+)`")
_PATH = re.compile(r"(?<![\w/.-])((?:specdojo_routine/|tests/|docs/|(?:" + "|".join(_LAYERS)
                   + r")/)[\w/.-]*\w\.(?:py|md))\b")


def _module(name: str) -> types.ModuleType | None:
    """The package's module ``name``, imported; None when there is none."""
    if name.split(".")[-1] == "__main__":
        return None
    try:
        found = importlib.util.find_spec(name)
    except (ModuleNotFoundError, ValueError):
        return None
    return importlib.import_module(name) if found is not None else None


def _reached(value: object, parts: list[str], prefix: str) -> bool:
    """Whether ``parts`` are attributes reached from ``value`` (named ``prefix``); a module
    reached as an attribute counts only under its own name (an import alias is not one)."""
    for part in parts:
        if attrs.has(type(value)) or (isinstance(value, type) and attrs.has(value)):
            fields = attrs.fields_dict(value if isinstance(value, type) else type(value))
            if part in fields and not hasattr(value, part):
                return True  # a field of a slotted attrs class: no class attribute to walk
        if not hasattr(value, part):
            return False
        value, prefix = getattr(value, part), f"{prefix}.{part}"
        if isinstance(value, types.ModuleType) and value.__name__ != prefix:
            return False
    return True


def _exists(dotted: str) -> bool:
    """Whether ``dotted`` is a module of the package or an attribute reached from one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = _module(".".join(parts[:cut]))
        if module is not None:
            return _reached(module, parts[cut:], module.__name__)
    return False


@cache
def _package_modules() -> tuple[str, ...]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return tuple(name for name in found if not name.endswith("__main__"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _refers(reference: str, module: str, is_package: bool) -> bool:
    """Whether a reference made in ``module`` names something, looked up as Sphinx would."""
    if reference.startswith("."):
        dots = len(reference) - len(reference.lstrip("."))
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = package[:len(package) - (dots - 1)]
        return _exists(".".join([*base, reference[dots:]]))
    if reference.startswith("specdojo_routine.") or _exists(reference):
        return _exists(reference)  # the package's, or another module's (``gc.freeze``)
    head, *rest = reference.split(".")
    here = _module(module)
    if here is not None:
        if hasattr(here, head):
            value = getattr(here, head)
            name = value.__name__ if isinstance(value, types.ModuleType) else f"{module}.{head}"
            return _reached(value, rest, name)
        members = [v for v in vars(here).values() if isinstance(v, type)]
        if not rest and any(hasattr(cls, head) for cls in members):
            return True  # a method or attribute of a class the module defines or imports
    if not rest and hasattr(builtins, head):
        return True
    return any(_exists(f"{name}.{reference}") for name in _package_modules()
               if name.endswith("." + head) or _module_has(name, head))


def _module_has(name: str, attr: str) -> bool:
    module = _module(name)
    return module is not None and attr in vars(module)


def _path_exists(text: str) -> bool:
    if text.startswith(("specdojo_routine/", "tests/", "docs/")):
        return (REPO / text).exists()
    return (PACKAGE / text).exists()


def _prose() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_the_docs_name_modules_objects_and_files_that_exist() -> None:
    missing = []
    for doc in _prose():
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for dotted in _IN_DOCS.findall(line):
                name = dotted if dotted.startswith("specdojo_routine") else \
                    f"specdojo_routine.{dotted}"
                if not _exists(name):
                    missing.append(f"{doc.relative_to(REPO)}:{n}: {dotted}")
            missing += [f"{doc.relative_to(REPO)}:{n}: {path}" for path in _PATH.findall(line)
                        if not _path_exists(path)]
    assert not missing, "\n".join(missing)


def test_the_docstrings_refer_to_modules_objects_and_files_that_exist() -> None:
    missing = []
    bench = sorted((REPO / "tests" / "bench").glob("*.py"))
    for path in [*sorted(PACKAGE.rglob("*.py")), *bench]:
        module = _module_name(path)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{path.relative_to(REPO)}:{n}"
            for reference in _ROLE.findall(line):
                if not _refers(reference.rstrip("."), module, path.name == "__init__.py"):
                    missing.append(f"{where}: {reference}")
            missing += [f"{where}: {text}" for text in _PATH.findall(line)
                        if not _path_exists(text)]
    assert not missing, "\n".join(missing)


def test_the_check_reports_the_names_a_move_left_behind() -> None:
    """The check itself: names from before the store/ move and the stale references this
    test found are reported; their replacements are not."""
    assert not _exists("specdojo_routine.views")
    assert not _exists("specdojo_routine.store.defcache")
    assert not _exists("specdojo_routine.core.events.NoSuchEvent")
    assert not _exists("specdojo_routine.store.ledger.views.ledger")  # an import alias
    assert _exists("specdojo_routine.store.ledger.views.replay")
    assert _exists("specdojo_routine.core.routine_events.AttemptStarted")
    assert _exists("specdojo_routine.store.ledger.journal.Tail.seq")  # an attrs field
    assert not _refers(".worktree", "specdojo_routine.app.review", False)
    assert _refers("..core.health", "specdojo_routine.app.status", False)
    assert not _refers("import_under_locks", "specdojo_routine.app.adoption", False)
    assert _refers("import_project", "specdojo_routine.app.adoption", False)
    assert _refers("stamps.only_grew", "specdojo_routine.store.ledger.proven", False)
    assert _refers("KeyboardInterrupt", "specdojo_routine.execute.stop", False)
    assert not _path_exists("store/foldhelper.py")
    assert _path_exists("store/ledger/proven.py") and _path_exists("tests/test_fold.py")
