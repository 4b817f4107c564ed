"""The public API: exported names, a typed embedding run for real, and mypy --strict over it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import specdojo_routine
from tests.conftest import FAKE_CLI
from tests.typed.usage import embed

REPO = Path(__file__).resolve().parent.parent


def test_all_names_resolve() -> None:
    """Every name in __all__ exists and nothing private is exported."""
    missing = [n for n in specdojo_routine.__all__ if not hasattr(specdojo_routine, n)]
    assert [] == missing
    assert all(not n.startswith("_") or n == "__version__" for n in specdojo_routine.__all__)


def test_the_policy_calls_are_exported_with_the_01_names() -> None:
    """An embedding tool can release a hold, backfill and preview from the package itself,
    and every name 0.1 exported is still there."""
    from specdojo_routine import api

    names_01 = {"AgentExecutor", "AgentRequest", "AgentResult", "AttemptReport", "ConfigError",
                "CorruptLedgerError", "DefinitionError", "Definitions", "InvalidTransition",
                "JobDefinition", "JobError", "JobRunOutcome", "LedgerError", "Listing",
                "LockBusy", "LockInfo", "PlannedAction", "Problem", "ProjectPaths", "Result",
                "Routine", "RoutineError", "RoutineRow", "RunReport", "Selected",
                "TooManyMissedOccurrences", "TornLedgerError", "UsageError", "__version__",
                "fold_views", "history", "list_routines", "load_project", "replay", "resolve",
                "run_due", "run_job", "run_routine", "validate"}
    assert names_01 <= set(specdojo_routine.__all__)
    for name in ("release", "backfill", "upcoming", "prune"):
        assert name in specdojo_routine.__all__
        assert getattr(api, name) is getattr(specdojo_routine, name)


def test_prune_and_its_report_are_exported() -> None:
    """Retention is callable from the package, and its report types are public names (the
    typed embedding below prunes for real and mypy checks it)."""
    from specdojo_routine.app import prune

    assert specdojo_routine.PruneReport is prune.PruneReport
    assert specdojo_routine.Removal is prune.Removal
    assert {"prune", "PruneReport", "Removal"} <= set(specdojo_routine.__all__)


def test_package_is_typed() -> None:
    """The package ships py.typed so users' type checkers read its annotations."""
    assert (REPO / "specdojo_routine" / "py.typed").is_file()


def test_typed_embedding_runs(tmp_path: Path) -> None:
    """The embedding example runs: validate, run_due with an agent, list, fold, replay."""
    statuses = embed(tmp_path / "proj", str(FAKE_CLI))
    assert {"rtn-cycle": "success", "rtn-weekly": "success"} == statuses


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy not installed (pip install -e '.[dev]')")
def test_typed_embedding_passes_mypy_strict() -> None:
    """A user's strictly typed code type-checks against the public API."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--cache-dir", "/dev/null", "tests/typed/usage.py"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert 0 == proc.returncode, proc.stdout + proc.stderr


def test_hold_routine_lock_makes_run_due_raise_lock_busy(tmp_path: Path) -> None:
    """testing.hold_routine_lock holds the lock: an embedded run_due raises LockBusy (75)."""
    from specdojo_routine.testing import hold_routine_lock, write_project

    paths = write_project(tmp_path / "p", routines={
        "rtn-x": "interval: 1h\naction: {kind: exec-cycle}\n"})
    with hold_routine_lock(paths), pytest.raises(specdojo_routine.LockBusy) as busy:
        specdojo_routine.run_due(paths, env={"SPECDOJO_CLI": str(FAKE_CLI)})
    assert 75 == busy.value.exit_code
    assert not paths.routine_ledger.exists()


# --- which records print themselves -------------------------------------------------------------

_PRINTED_MODULES = {"specdojo_routine.core.model", "specdojo_routine.core.jobmodel",
                    "specdojo_routine.core.events", "specdojo_routine.core.routine_events",
                    "specdojo_routine.core.job_events", "specdojo_routine.core.event_parts",
                    "specdojo_routine.core.errors"}


def _records() -> list[type]:
    """Every attrs class the package defines, each module imported."""
    import pkgutil

    import attrs

    found = []
    for info in pkgutil.walk_packages(specdojo_routine.__path__, "specdojo_routine."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        found += [v for v in vars(module).values()
                  if isinstance(v, type) and attrs.has(v) and v.__module__ == module.__name__]
    return found


def _reaching_a_caller(records: list[type]) -> set[type]:
    """The records a caller gets to see: the exported classes, the definitions model, the
    events and the errors, and every record their fields hold."""
    import typing

    import attrs

    names = {c.__name__: c for c in records}
    todo = [getattr(specdojo_routine, n) for n in specdojo_routine.__all__]
    todo = [c for c in todo if isinstance(c, type)]
    todo += [c for c in records if c.__module__ in _PRINTED_MODULES]
    seen: set[type] = set()
    while todo:
        cls = todo.pop()
        if cls in seen or not attrs.has(cls):
            continue
        seen.add(cls)
        hints = typing.get_type_hints(cls, {**vars(sys.modules[cls.__module__]), **names})
        stack = list(hints.values())
        while stack:
            hint = stack.pop()
            stack += typing.get_args(hint)
            if isinstance(hint, type) and attrs.has(hint):
                todo.append(hint)
    return seen


def test_records_a_caller_sees_print_their_fields_and_internal_ones_skip_the_repr() -> None:
    """A record that reaches a caller (the public API, the model, events, errors and what
    they hold) has attrs' generated ``__repr__``; every other record is declared
    ``repr=False``, because attrs compiles each generated method when its module is imported
    and every command would pay for a repr nobody prints."""
    records = _records()
    seen = _reaching_a_caller(records)
    assert len(seen) > 40 and len(records) - len(seen) > 40  # both kinds exist in number
    without = sorted(f"{c.__module__}.{c.__qualname__}" for c in seen
                     if "__repr__" not in vars(c))
    assert [] == without
    internal = sorted(f"{c.__module__}.{c.__qualname__}" for c in records
                      if c not in seen and "__repr__" in vars(c))
    assert [] == internal
