"""Command logic of a routine run (pure): what to run, the delegated argv, the aggregate.

Takes definitions, the folded routine state and ``now``; returns plans. No clock, no disk.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import attrs

from specdojo_routine.core.model import (
    Action,
    Duration,
    ExecAutoAction,
    ExecResumeAction,
    JobAction,
    RegisterAction,
    Result,
    Routine,
    SpecdojoAction,
)
from specdojo_routine.core.redact import redact, redact_words

if TYPE_CHECKING:  # annotations only: deciding creates no event class
    from specdojo_routine.core.routine_events import EndTransition, StartTransition

START_TRANSITIONS: Mapping[str, StartTransition] = {
    "never": "T-02",
    "success": "T-06",
    "failure": "T-07",
    "skipped": "T-08",
    "partial": "T-06",  # partial is T-03's family: it starts again like success (SPEC §11.4)
}
END_TRANSITIONS: Mapping[Result, EndTransition] = {
    Result.SUCCESS: "T-03",
    Result.FAILURE: "T-04",
    Result.SKIPPED: "T-05",
    Result.PARTIAL: "T-03",
}


@attrs.frozen(kw_only=True)
class PlannedAction:
    """One action of an occurrence, resolved: the argv to delegate, or the Job to run."""

    index: int  # 1-based
    kind: str
    argv: tuple[str, ...] | None = None  # SpecDojo CLI arguments (without the CLI prefix)
    job: str | None = None
    inputs: Mapping[str, str] | None = None  # rendered routine inputs
    commit: bool = False  # legacy ``commit: true``: review before merge (SPEC §11.3)
    timeout: Duration | None = None  # the action's own ``timeout`` (SPEC §13)

    def to_json(self, prefix: Sequence[str]) -> dict[str, Any]:
        """The plan as a dry run shows it: redacted (a ``--password=...`` written into a
        definition never reaches the console, SPEC §7.5)."""
        data: dict[str, Any] = {"index": self.index, "kind": self.kind}
        if self.argv is not None:
            data["command"] = redact_words([*prefix, *self.argv])
        else:
            data["job"] = self.job
            data["inputs"] = {k: redact(v) for k, v in (self.inputs or {}).items()}
            if self.commit:
                data["commit"] = True
        return data


def _exec_options(action: ExecAutoAction) -> list[str]:
    argv: list[str] = []
    if action.strategy is not None:
        argv += ["--strategy", action.strategy]
    if action.parallel is not None:
        argv += ["--parallel", str(action.parallel)]
    if action.loop:
        argv.append("--loop")
        if action.max_rounds is not None:
            argv += ["--max-rounds", str(action.max_rounds)]
    return argv


def _register_argv(action: RegisterAction, project_id: str) -> list[str]:
    argv = ["exec", "run", "--register-filter", "--project", project_id,
            "--on-failure", "continue", "--if-busy", "skip"]
    for flag, values in (("--register-types", action.types),
                         ("--register-priorities", action.priorities),
                         ("--register-statuses", action.statuses)):
        if values:
            argv += [flag, ",".join(values)]
    if action.limit is not None:
        argv += ["--register-limit", str(action.limit)]
    return argv


def delegated_argv(action: Action, project_id: str) -> list[str] | None:
    """The SpecDojo CLI arguments an action delegates to (SPEC §3), or None for ``job``."""
    if isinstance(action, SpecdojoAction):
        return [*action.args, "--project", project_id]
    if isinstance(action, RegisterAction):
        return _register_argv(action, project_id)
    if isinstance(action, ExecAutoAction):
        head = (["exec", "run", "--auto"] if action.kind == "exec-auto" else ["exec", "cycle"])
        return [*head, "--project", project_id, "--if-busy", "skip", *_exec_options(action)]
    if isinstance(action, ExecResumeAction):
        argv = ["exec", "resume", "--due", "--project", project_id, "--if-busy", "skip"]
        if action.parallel is not None:
            argv += ["--parallel", str(action.parallel)]
        return argv
    return None


def plan_actions(routine: Routine, scheduled_for: datetime, project_id: str) -> list[PlannedAction]:
    """Resolve every action of ``routine`` for one occurrence, in order."""
    if not any(isinstance(action, JobAction) for action in routine.actions):
        return list(_delegated(routine.actions, project_id))  # the same for every occurrence
    from specdojo_routine.core.templates import render_routine_inputs  # a Job action's inputs

    planned: list[PlannedAction] = []
    for index, action in enumerate(routine.actions, start=1):
        if isinstance(action, JobAction):
            inputs = render_routine_inputs(
                action.inputs, scheduled_for=scheduled_for, timezone=routine.timezone
            )
            planned.append(PlannedAction(index=index, kind="job", job=action.job, inputs=inputs,
                                         commit=action.commit, timeout=action.timeout))
        else:
            argv = delegated_argv(action, project_id)
            planned.append(PlannedAction(index=index, kind=action.kind, argv=tuple(argv or ()),
                                         timeout=action.timeout))
    return planned


@functools.lru_cache(maxsize=1024)  # routines share their actions: each planned once a run
def _delegated(actions: tuple[Action, ...], project_id: str) -> tuple[PlannedAction, ...]:
    """The plan of actions that all delegate to the SpecDojo CLI: a function of the actions
    and the project alone."""
    return tuple(PlannedAction(index=index, kind=action.kind,
                               argv=tuple(delegated_argv(action, project_id) or ()),
                               timeout=action.timeout)
                 for index, action in enumerate(actions, start=1))


def exit_code_result(exit_code: int | None) -> Result:
    """A delegated call's exit code: 0 success, 75 skipped (project busy), else failure."""
    if exit_code == 0:
        return Result.SUCCESS
    if exit_code == 75:
        return Result.SKIPPED
    return Result.FAILURE


def start_transition(status: str) -> StartTransition:
    """T-02/T-06/T-07/T-08 for an attempt starting from ``status``."""
    return START_TRANSITIONS[status]


def action_results_payload(
    routine: Routine, results: Sequence[tuple[int, str, Result]]
) -> list[dict[str, Any]] | None:
    """``action_results`` of ``attempt_ended``: a list for list actions, else None."""
    if not routine.is_list:
        return None
    return [{"index": i, "kind": k, "result": r.value} for i, k, r in results]


def failure_reason(results: Sequence[tuple[int, str, Result, str | None]]) -> str | None:
    """The attempt's reason: the first failing (else skipped) action's reason, located."""
    for wanted in (Result.FAILURE, Result.SKIPPED):
        for index, kind, result, reason in results:
            if result is wanted:
                return f"action {index} ({kind}): {reason or result.value}"
    return None


TriggerKind = Literal["due", "id"]
