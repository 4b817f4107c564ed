"""specdojo_routine: run SpecDojo routines with an append-only, event-sourced audit trail.

The public API is what ``__all__`` lists; every other module is private. See
``docs/integrator-guide.md``.
"""

from __future__ import annotations

from specdojo_routine.app.handlers import AttemptReport, RunReport, Selected
from specdojo_routine.app.listing import Listing, RoutineRow
from specdojo_routine.core.decide import PlannedAction
from specdojo_routine.core.errors import (
    ConfigError,
    CorruptLedgerError,
    DefinitionError,
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
from specdojo_routine.core.jobplan import JobRunOutcome
from specdojo_routine.core.model import JobDefinition, Result, Routine
from specdojo_routine.execute.agent import AgentExecutor, AgentRequest, AgentResult
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import Definitions
from specdojo_routine.store.locks import LockInfo
from specdojo_routine.store.views import replay

from .api import (
    fold_views,
    history,
    list_routines,
    load_project,
    resolve,
    run_due,
    run_job,
    run_routine,
    validate,
)

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
    "fold_views",
    "history",
    "list_routines",
    "load_project",
    "replay",
    "resolve",
    "run_due",
    "run_job",
    "run_routine",
    "validate",
]
