"""What a run selected and what it did: the values ``run``, ``release`` and backfill return.

:class:`Selected` is an occurrence chosen to start, with its planned actions; :class:`AttemptReport`
one attempt as recorded; :class:`RunReport` the whole call, which the CLI renders and whose
``exit_code`` it returns. Moved out of :mod:`.handlers` so that the selection
(:mod:`.run_select`) and the recording of an attempt (:mod:`.run_attempt`) share them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from specdojo_routine.core import decide, errors, policy, schedule
from specdojo_routine.core.errors import EXIT_FAILURE, EXIT_OK
from specdojo_routine.core.model import Result, Routine
from specdojo_routine.store.definitions.load import Definitions

if TYPE_CHECKING:
    from specdojo_routine.app.actions import ActionReport
    from specdojo_routine.app.prune import PruneReport


@attrs.frozen(kw_only=True)
class AttemptReport:
    routine_id: str
    attempt_id: str
    scheduled_for: str
    result: str
    reason: str | None
    action_results: list[dict[str, Any]] | None
    job_run_ids: tuple[str, ...] = ()
    actions: tuple[ActionReport, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"routine_id": self.routine_id, "attempt_id": self.attempt_id,
                "scheduled_for": self.scheduled_for, "result": self.result,
                "reason": self.reason, "job_run_ids": list(self.job_run_ids),
                "action_results": self.action_results}


@attrs.frozen(kw_only=True)
class Selected:
    routine: Routine
    occurrence: schedule.Occurrence
    actions: list[decide.PlannedAction]
    #: ``run --id --input k=v`` (SPEC §13): recorded in ``attempt_started.inputs_override``
    inputs_override: Mapping[str, str] | None = None
    #: a retry (SPEC §13): the occurrence's first attempt and this attempt's number
    retry_of: str | None = None
    retry_number: int | None = None


@attrs.define(kw_only=True)
class RunReport:
    dry_run: bool
    prefix: list[str]
    selected: list[Selected] = attrs.field(factory=list)
    results: list[AttemptReport] = attrs.field(factory=list)
    interrupted: list[str] = attrs.field(factory=list)
    closed_interrupted: list[str] = attrs.field(factory=list)
    #: open attempts left alone: their action's process group outlived the runner (§6.5)
    still_running: list[str] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)
    #: ``warning:`` lines that do not change the exit (a failing notification hook, SPEC §13)
    warnings: list[str] = attrs.field(factory=list)
    held: list[policy.Decision] = attrs.field(factory=list)  # SPEC §9.1
    missed: list[policy.Decision] = attrs.field(factory=list)  # SPEC §9.2
    paused: list[policy.Decision] = attrs.field(factory=list)  # SPEC §13
    lock_lost: bool = False  # the routine lock was lost mid-run: the run stopped (SPEC §12)
    #: ``run --id ID --input k=v`` (SPEC §13), checked: over the Job actions' own inputs
    inputs_override: Mapping[str, str] = attrs.field(factory=dict)
    defs: Definitions | None = None  # the Jobs the override applies to
    #: what ``retention.auto`` pruned as the run went (SPEC §15), and why it could not
    pruned: PruneReport | None = None
    prune_error: str | None = None
    #: what a run that started nothing says instead of ``no due routines`` (an empty backfill)
    nothing: str | None = None

    @property
    def exit_code(self) -> int:
        if self.lock_lost:
            return errors.EXIT_BUSY
        failed = any(r.result == Result.FAILURE.value for r in self.results)
        return EXIT_FAILURE if failed or self.interrupted or self.errors else EXIT_OK
