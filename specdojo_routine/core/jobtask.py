"""What a Job Run runs (pure; SPEC §7.2, §7.3): the Job's templates rendered for the run.

:func:`freeze_task` renders the task once, when the run is created, and the run records it; a
retry runs the recorded task unless the definition still renders to it
(:func:`task_for_retry`), so an attempt never runs something the ledger does not say.
:func:`checkpoint_after` renders the checkpoint values a finished run advances to. Missing
optional names (an input not given, a first run's checkpoint) render as empty, like the
upstream tool. Deciding which run to create and how it ended is :mod:`.jobplan`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specdojo_routine.core.errors import JobError
from specdojo_routine.core.jobmodel import AgentTask, CommandTask, JobDefinition, ReviewSpec
from specdojo_routine.core.redact import redact
from specdojo_routine.core.redact_rules import REDACTED
from specdojo_routine.core.templates import TemplateError, render_shell, render_text

#: Template roots whose missing dotted names render as "" (an optional input, a first-run
#: checkpoint), like the upstream tool.
OPTIONAL_ROOTS = frozenset({"inputs", "checkpoint"})


def render(
    job: JobDefinition, where: str, template: str, context: Mapping[str, str], *, shell: bool
) -> str:
    """``template`` (the Job's field ``where``) rendered for a run; a placeholder it cannot
    render is a :class:`JobError` naming the Job file and the field."""
    try:
        if shell:
            return render_shell(template, context, empty_if_missing=OPTIONAL_ROOTS)
        return render_text(template, context, empty_if_missing=OPTIONAL_ROOTS)
    except TemplateError as exc:
        raise JobError(f"{job.path}: cannot render {where}: {exc.message}") from None


def freeze_task(job: JobDefinition, context: Mapping[str, str], project_id: str) -> dict[str, Any]:
    """The task as the run records it: templates rendered (``job_run_id`` included)."""
    task = job.task
    if isinstance(task, CommandTask):
        return _freeze_command(job, task, context)
    return _freeze_agent(job, task, context, project_id)


def _present(frozen: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in frozen.items() if v is not None and v != []}


def _freeze_command(
    job: JobDefinition, task: CommandTask, context: Mapping[str, str]
) -> dict[str, Any]:
    pre, analysis = task.precondition, task.analysis
    return _present({
        "mode": "command",
        "precondition": None if pre is None else {
            "command": render(job, "task.precondition.command", pre.command, context, shell=True),
            "skip_when": pre.skip_when},
        "command": render(job, "task.command", task.command, context, shell=True),
        "partial_exit_code": list(task.partial_exit_codes),
        "noop_exit_code": task.noop_exit_code,
        "timeout": task.timeout,
        "timeout_seconds": task.timeout_seconds if task.timeout is not None else None,
        "analysis": None if analysis is None else {
            "agent": analysis.agent,
            "description": render(job, "task.analysis.description", analysis.description,
                                   context, shell=False)},
        "review": _freeze_review(task.review),
    })


def _freeze_review(review: ReviewSpec | None) -> dict[str, Any] | None:
    if review is None:
        return None
    agent = _present({"executor": review.executor, "reporter": review.reporter})
    return {"agent": agent} if agent else {}


def _freeze_agent(
    job: JobDefinition, task: AgentTask, context: Mapping[str, str], project_id: str
) -> dict[str, Any]:
    agent = None if task.executor is None else _present(
        {"executor": task.executor, "reporter": task.reporter})
    return _present({
        "mode": task.mode,
        "owner": task.owner,
        "description": render(job, "task.description", task.description, context, shell=False),
        # targets are qualified like the upstream tool does: <project>:<target>
        "targets": [t if ":" in t else f"{project_id}:{t}" for t in task.targets],
        "paths": list(task.paths),
        "agent": agent,
        "capabilities": list(task.capabilities),
        "proficiency": task.proficiency,
        "timeout": task.timeout,
        "timeout_seconds": task.timeout_seconds if task.timeout is not None else None,
        "review": _freeze_review(task.review),
    })


def rendered_texts(job: JobDefinition, context: Mapping[str, str], project_id: str) -> list[str]:
    """Every text a run renders from ``context`` and may record: the idempotency key, the
    task's strings and the checkpoint values."""
    texts = [render(job, "run.idempotency_key", job.idempotency_key, context, shell=False)]
    texts += _strings(freeze_task(job, context, project_id))
    values = job.checkpoint.values if job.checkpoint is not None else {}
    return texts + [render(job, f"checkpoint.values.{key}", template, context, shell=False)
                    for key, template in values.items()]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [text for item in items for text in _strings(item)]


def redacted(value: Any, secrets: Sequence[str]) -> Any:
    """``value`` (JSON data) with every string redacted."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [redacted(item, secrets) for item in value]
    if isinstance(value, dict):
        return {k: redacted(v, secrets) for k, v in value.items()}
    return value


def task_for_retry(
    job: JobDefinition, recorded: Mapping[str, Any], fresh: Mapping[str, Any] | None,
    secrets: Sequence[str], run_id: str,
) -> dict[str, Any]:
    """What a new attempt runs: the task as freshly rendered from the definition when it
    redacts to the recorded (frozen) task, else the recorded task unless it lost secrets."""
    if fresh is not None and redacted(dict(fresh), secrets) == dict(recorded):
        return dict(fresh)
    if REDACTED in repr(recorded):
        raise JobError(f"cannot retry {run_id}: its recorded task holds redacted secrets and "
                       f"{job.path} no longer renders to it; start a new run")
    return dict(recorded)


def checkpoint_after(
    job: JobDefinition, status: str, context: Mapping[str, str]
) -> dict[str, str] | None:
    """The values to record when ``status`` is in ``checkpoint.advance_on``, else ``None``.

    ``context`` carries the run's inputs, ``checkpoint_before`` and ``job_run_id``.
    """
    spec = job.checkpoint
    if spec is None or status not in spec.advance_on:
        return None
    return {key: render(job, f"checkpoint.values.{key}", template, context, shell=False)
            for key, template in spec.values.items()}
