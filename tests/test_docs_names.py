"""The docs and docstrings name modules and objects that exist.

A move of a module (``store/`` became three wings) leaves old names in prose that no test
imports: a reader then looks for ``specdojo_routine.views`` and finds nothing. Every dotted
``specdojo_routine.…`` name in backticks in README.md and docs/*.md, and every ``:mod:`` /
``:func:`` / ``:class:`` / ``:meth:`` / ``:data:`` reference with a dot in the package's
docstrings and comments (relative ones resolved from the module that says them), must be a
module of the package or an attribute reached from one. Found by reading, not importing code
paths: the package's own modules are imported, nothing is run.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "specdojo_routine"
_IN_DOCS = re.compile(r"`(specdojo_routine(?:\.\w+)+)")
_ROLE = re.compile(r":(?:mod|func|class|meth|data|attr|exc):`~?(\.?[\w.]+)`")


def _exists(dotted: str) -> bool:
    """Whether ``dotted`` is a module of the package or an attribute reached from one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            found = None
        if found is None:
            continue
        value: object = importlib.import_module(name)
        for attr in parts[cut:]:
            if not hasattr(value, attr):
                annotations = getattr(value, "__annotations__", {})
                if attr in annotations or attr in getattr(value, "__attrs_attrs__", ()):
                    break  # a field of an attrs class (no class attribute with slots)
                return False
            value = getattr(value, attr)
        return True
    return False


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolved(reference: str, module: str, is_package: bool) -> str | None:
    """The name a reference made in ``module`` means: a relative one (``.x``, ``..x``) from
    its package, an absolute one as it is; None for a bare name (a builtin, a method of the
    class being described: Sphinx looks those up in context, and a move cannot break them)."""
    if reference.startswith("."):
        dots = len(reference) - len(reference.lstrip("."))
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = package[:len(package) - (dots - 1)]
        return ".".join([*base, reference[dots:]])
    if reference.startswith("specdojo_routine."):
        return reference
    return None


def test_the_docs_name_modules_and_objects_that_exist() -> None:
    missing = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for dotted in _IN_DOCS.findall(line):
                if not _exists(dotted):
                    missing.append(f"{doc.relative_to(REPO)}:{n}: {dotted}")
    assert not missing, "\n".join(missing)


def test_the_docstrings_refer_to_modules_and_objects_that_exist() -> None:
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for reference in _ROLE.findall(line):
                name = _resolved(reference.rstrip("."), module, path.name == "__init__.py")
                if name is not None and not _exists(name):
                    missing.append(f"{path.relative_to(REPO)}:{n}: {reference}")
    assert not missing, "\n".join(missing)


def test_a_moved_module_named_in_the_docs_is_found() -> None:
    """The check itself: the names the docs used before the move are reported, the names
    after it are not."""
    assert not _exists("specdojo_routine.views")
    assert not _exists("specdojo_routine.store.defcache")
    assert not _exists("specdojo_routine.core.events.NoSuchEvent")
    assert _exists("specdojo_routine.store.ledger.views.replay")
    assert _exists("specdojo_routine.core.events.AttemptStarted")
    assert "specdojo_routine.app.worktree" == _resolved(".worktree", "specdojo_routine.app.review",
                                                        False)
    assert "specdojo_routine.core.health" == _resolved("..core.health",
                                                       "specdojo_routine.app.status", False)
