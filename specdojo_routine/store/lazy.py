"""Modules imported on first use, so that a command loads only what it touches.

``python -m specdojo_routine validate`` must start like git; importing the job runner, the
agent seam, the ledger codec (cattrs) and portalocker (which imports redis when it is
installed) costs more than the command itself. A module that needs one of them only in some
functions writes::

    if TYPE_CHECKING:
        from specdojo_routine.store import views
    else:
        views = lazy.module("specdojo_routine.store.views")

Type checkers (and tests/test_architecture.py) still see the import; at run time the module
is loaded by :class:`importlib.util.LazyLoader` the first time one of its attributes is read.
Notes and figures: tests/bench/IMPORTS.md.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def module(name: str) -> ModuleType:
    """The module ``name``, executed on first attribute access (at once if already loaded)."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    lazy = importlib.util.module_from_spec(spec)
    sys.modules[name] = lazy
    loader.exec_module(lazy)
    parent, _, child = name.rpartition(".")
    if parent and parent in sys.modules:
        setattr(sys.modules[parent], child, lazy)
    return lazy
