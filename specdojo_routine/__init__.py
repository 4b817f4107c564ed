"""specdojo_routine: run SpecDojo routines with an append-only, event-sourced audit trail.

The public API is what ``__all__`` lists; every other module is private. See
``docs/integrator-guide.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time each name is imported on first use
    from specdojo_routine.api import (
        backfill,
        fold_views,
        history,
        list_routines,
        load_project,
        prune,
        release,
        replay,
        resolve,
        run_due,
        run_job,
        run_routine,
        upcoming,
        validate,
    )
    from specdojo_routine.app.listing import Listing, RoutineRow
    from specdojo_routine.app.prune import PruneReport, Removal
    from specdojo_routine.app.run_report import AttemptReport, RunReport, Selected
    from specdojo_routine.core.decide import PlannedAction
    from specdojo_routine.core.errors import (
        ConfigError,
        CorruptLedgerError,
        DefinitionError,
        FileSystemError,
        InvalidTransition,
        JobError,
        LedgerError,
        LockBusy,
        Problem,
        RoutineError,
        TooManyMissedOccurrences,
        TornLedgerError,
        UsageError,
    )
    from specdojo_routine.core.jobmodel import JobDefinition
    from specdojo_routine.core.jobplan import JobRunOutcome
    from specdojo_routine.core.model import Result, Routine
    from specdojo_routine.execute.agent import AgentExecutor, AgentRequest, AgentResult
    from specdojo_routine.store.config import ProjectPaths
    from specdojo_routine.store.definitions.load import Definitions
    from specdojo_routine.store.locks.routine import LockInfo

# public name -> the module that defines it (imported when the name is first used, so that
# `python -m specdojo_routine validate` does not load the job runner, the ledger codec, ...)
_EXPORTS = {
    "AttemptReport": "app.run_report", "RunReport": "app.run_report", "Selected": "app.run_report",
    "Listing": "app.listing", "RoutineRow": "app.listing", "PlannedAction": "core.decide",
    "PruneReport": "app.prune", "Removal": "app.prune",
    **dict.fromkeys(
        ["ConfigError", "CorruptLedgerError", "DefinitionError", "FileSystemError",
         "InvalidTransition", "JobError", "LedgerError", "LockBusy", "Problem", "RoutineError",
         "TooManyMissedOccurrences", "TornLedgerError", "UsageError"], "core.errors"),
    "JobRunOutcome": "core.jobplan", "JobDefinition": "core.jobmodel", "Result": "core.model",
    "Routine": "core.model", "AgentExecutor": "execute.agent", "AgentRequest": "execute.agent",
    "AgentResult": "execute.agent", "ProjectPaths": "store.config",
    "Definitions": "store.definitions.load", "LockInfo": "store.locks.routine",
    **dict.fromkeys(
        ["backfill", "fold_views", "history", "list_routines", "load_project", "prune",
         "release", "replay", "resolve", "run_due", "run_job", "run_routine", "upcoming",
         "validate"], "api"),
}


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0"

__all__ = [
    "AgentExecutor",
    "AgentRequest",
    "AgentResult",
    "AttemptReport",
    "ConfigError",
    "CorruptLedgerError",
    "DefinitionError",
    "Definitions",
    "FileSystemError",
    "InvalidTransition",
    "JobDefinition",
    "JobError",
    "JobRunOutcome",
    "LedgerError",
    "Listing",
    "LockBusy",
    "LockInfo",
    "PlannedAction",
    "Problem",
    "ProjectPaths",
    "PruneReport",
    "Removal",
    "Result",
    "Routine",
    "RoutineError",
    "RoutineRow",
    "RunReport",
    "Selected",
    "TooManyMissedOccurrences",
    "TornLedgerError",
    "UsageError",
    "__version__",
    "backfill",
    "fold_views",
    "history",
    "list_routines",
    "load_project",
    "prune",
    "release",
    "replay",
    "resolve",
    "run_due",
    "run_job",
    "run_routine",
    "upcoming",
    "validate",
]
