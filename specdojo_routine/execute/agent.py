"""The agent-facing side of a Job Run: the executor seam and the exec plan/result documents.

SpecDojo's exec runner hands an agent a *plan* (``exec/plans/<run_id>-plan.md``) and reads its
outcome from a *result* (``exec/results/<run_id>-result.md``); the Job runner writes both as
the upstream runner does (SPEC §7.6): the plan when the run is materialised, the result at the
end of every attempt (``complete``, or ``blocked`` with the reason). The texts are built here,
purely; :mod:`jobs` writes them.

When the project names a roster (``members_path``), the Job runner launches the project's
own agents with :class:`specdojo_routine.execute.agents.RosterExecutor` (SPEC §11.1). A caller
may pass its own :class:`AgentExecutor` to :func:`specdojo_routine.app.jobs.run_job` (embedding,
tests), which wins; with neither, an ``edit``/``review`` attempt fails with reason
``no agent executor configured for mode edit``.

The executor gets the run's FROZEN task (templates already rendered when the run was created,
the same on every attempt), and returns a status. It must not write the run's ledger: the Job
runner records the attempt, the result document and the checkpoint from what it returns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, TextIO

import attrs

from specdojo_routine.core.jobplan import RunIdentity
from specdojo_routine.execute.termination import KILL_GRACE_S
from specdojo_routine.store.config import ProjectPaths

AgentStatus = Literal["succeeded", "partial", "failed", "noop"]
_COMPLETE = frozenset({"succeeded", "noop"})


@attrs.frozen(kw_only=True)
class AgentRequest:
    """One attempt of an ``edit``/``review`` Job Run, as handed to the executor."""

    run_id: str
    job_id: str
    attempt: int  # 1-based
    mode: Literal["edit", "review"]
    task: Mapping[str, Any]  # the frozen task: description, targets, paths, agent, ...
    inputs: Mapping[str, Any]  # the run's resolved inputs
    paths: ProjectPaths
    plan_path: Path  # the plan Markdown written at materialisation
    result_path: Path  # where the runner writes the result Markdown after the attempt
    env: Mapping[str, str]  # SPECDOJO_JOB_RUN_ID, SPECDOJO_PROJECT, the exec lock token, ...
    # added for the CLI's own executor (SPEC §11.1); defaults keep older callers working
    name: str = ""  # the Job's name
    scheduled_at: str = ""
    cwd: Path | None = None  # the run's working tree (the root, or a review worktree)
    timeout_s: float | None = None  # what is left of task.timeout for this attempt
    #: SIGTERM -> SIGKILL when ``timeout_s`` runs out: a routine's timeout gives 10 s (§13)
    kill_grace_s: float = KILL_GRACE_S
    echo: TextIO | None = None  # the live console


@attrs.frozen(kw_only=True)
class AgentResult:
    """What the agent achieved. ``reason`` explains a non-success; ``final_message`` is the
    agent's closing summary (both are redacted before anything records them)."""

    status: AgentStatus
    reason: str | None = None
    final_message: str | None = None
    skipped: bool = False  # a transient limit (rate limit): the routine action is skipped
    result_written: bool = False  # the agent filled the result document; the runner stamps it


class AgentExecutor(Protocol):
    """Runs one attempt of an ``edit``/``review`` Job Run and reports its status."""

    def __call__(self, request: AgentRequest) -> AgentResult: ...


# --- plan and result Markdown (SpecDojo exec plan/result files) ---------------------------------


def frontmatter(run: RunIdentity, kind: str, status: str, extra: Sequence[str] = ()) -> list[str]:
    """The ``specdojo:`` front matter of a plan or result document of ``run``."""
    prefix = "xep" if kind == "exec-plan" else "xer"
    mode = "edit" if run.task.get("mode") == "command" else str(run.task.get("mode"))
    lines = [f"id: {run.project_id}:{prefix}-{run.run_id.lower()}", f"type: {kind}",
             *(["rulebook: none"] if kind == "exec-plan" else []), f"task_id: {run.run_id}",
             f"name: {json.dumps(run.name, ensure_ascii=False)}",
             f"mode: {mode}", f"status: {status}", f"project_id: {run.project_id}",
             "origin: job", f"job_id: {run.job_id}", f"run_id: {run.run_id}", *extra]
    return ["---", "specdojo:", *(f"  {line}" for line in lines), "---", ""]


def _fenced(text: str, info: str = "") -> list[str]:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, text, fence]


def _show(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(f"`{item}`" for item in value)
    return f"`{value}`" if isinstance(value, str) else json.dumps(value)


def plan_markdown(doc: RunIdentity) -> str:
    """The plan written when the run is materialised."""
    lines = frontmatter(doc, "exec-plan", "ready", [f"result_ref: {doc.result_ref}"])
    lines += [f"# Job Run plan: {doc.name}", "", f"- Job: `{doc.job_id}`",
              f"- Run: `{doc.run_id}`", f"- Trigger: {doc.trigger}",
              f"- Scheduled at: {doc.scheduled_at}", f"- Result: `{doc.result_ref}`", "",
              "## Inputs", ""]
    lines += [f"- `{k}`: {_show(v)}" for k, v in doc.inputs.items()] or ["- (none)"]
    lines += ["", "## Task", ""]
    if doc.task.get("mode") == "command":
        lines.append("The runner executes this resolved command directly (`/bin/sh -eu -c`):")
        lines += ["", *_fenced(str(doc.task.get("command", "")), "sh")]
    else:
        lines.append(f"Mode `{doc.task.get('mode')}`, delegated to the agent executor:")
        lines += ["", str(doc.task.get("description", "")).rstrip()]
    return "\n".join(lines) + "\n"


@attrs.frozen(kw_only=True, repr=False)
class AttemptDoc:
    """One finished attempt, for the result document."""

    attempt: int
    status: str
    reason: str | None
    started_at: str
    completed_at: str
    exit_code: int | None = None
    evidence_ref: str | None = None
    final_message: str | None = None


def result_markdown(doc: RunIdentity, done: AttemptDoc) -> str:
    """The result written at the end of every attempt: ``complete`` or ``blocked`` + reason."""
    status = "complete" if done.status in _COMPLETE else "blocked"
    extra = [f"plan_ref: {doc.plan_ref}", f'started_at: "{done.started_at}"',
             f'completed_at: "{done.completed_at}"']
    lines = frontmatter(doc, "exec-result", status, extra)
    outcome = status if status == "complete" else f"blocked: {done.reason or done.status}"
    lines += [f"# Job Run result: {doc.name}", "", f"- Run: `{doc.run_id}`",
              f"- Attempt: {done.attempt}", f"- Status: {done.status}", f"- Result: {outcome}"]
    if done.exit_code is not None:
        lines.append(f"- Exit code: {done.exit_code}")
    if done.evidence_ref is not None:
        lines.append(f"- Evidence: `{done.evidence_ref}`")
    if done.final_message:
        lines += ["", "## Final message", "", *_fenced(done.final_message.rstrip("\n"), "text")]
    return "\n".join(lines) + "\n"
