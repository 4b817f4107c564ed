"""specdojo_routine: run SpecDojo routines with an append-only, event-sourced audit trail.

The public API is what ``__all__`` lists; every other module is private. See
``docs/integrator-guide.md``.
"""

from __future__ import annotations

from .agent import AgentExecutor, AgentRequest, AgentResult
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
from .config import ProjectPaths
from .decide import PlannedAction
from .definitions import Definitions
from .errors import (
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
from .handlers import AttemptReport, RunReport, Selected
from .jobplan import JobRunOutcome
from .listing import Listing, RoutineRow
from .locks import LockInfo
from .model import JobDefinition, Result, Routine
from .views import replay

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
