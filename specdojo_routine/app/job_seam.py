"""The job action seam: how a routine run asks for one ``job`` action as a Job Run (SPEC §7.3).

:mod:`.handlers` calls a :class:`JobActionRunner`; :mod:`.jobs` provides one. Moved out of
:mod:`.handlers` (which re-exports both names).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol, TextIO

import attrs

from specdojo_routine.core.model import Result
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions.load import Definitions


@attrs.frozen(kw_only=True, repr=False)
class JobActionOutcome:
    result: Result
    reason: str | None = None
    job_run_id: str | None = None
    exit_code: int | None = None
    #: the evidence of the Job Run attempt this action ran (None: nothing ran, e.g. a
    #: duplicate complete or a busy skip)
    evidence_ref: str | None = None
    #: files around the Job Run's recorded outcome that could not be written
    #: (``JobRunOutcome.warnings``): the run shows them as warnings
    warnings: tuple[str, ...] = ()


class JobActionRunner(Protocol):
    """Runs one routine ``job`` action as a Job Run with ``trigger: routine``."""

    def __call__(
        self, paths: ProjectPaths, defs: Definitions, *, job_id: str,
        inputs: Mapping[str, str], scheduled_at: datetime, echo: TextIO | None,
    ) -> JobActionOutcome: ...
