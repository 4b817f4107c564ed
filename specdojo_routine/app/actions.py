"""One routine action run: a delegated SpecDojo call or a Job Run (SPEC §3, §6, §14).

What :mod:`.handlers` records for an action comes from here: its result, reason, exit code,
Job Run id, the evidence of its output and the last lines of its stderr. A delegated call's
output is kept as evidence under ``E/exec/evidence/routines/<attempt_id>/action-<n>/``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TextIO

import attrs

from specdojo_routine.app.job_seam import JobActionRunner
from specdojo_routine.core import decide, errors, tail
from specdojo_routine.core.model import Result
from specdojo_routine.core.redact import redact, secret_values
from specdojo_routine.core.timeouts import TIMEOUT_GRACE_S, Limit
from specdojo_routine.execute import evidence, groups, runner
from specdojo_routine.store import fsfacts
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions.load import Definitions


@attrs.frozen(kw_only=True, repr=False)
class Where:
    """What an action runs with and whose it is."""

    paths: ProjectPaths
    defs: Definitions
    env: Mapping[str, str]
    echo: TextIO | None
    job_runner: JobActionRunner | None
    routine_id: str
    attempt_id: str
    #: the run's warnings (``RunReport.warnings``): a Job Run's files that could not be written
    warnings: list[str] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class ActionReport:
    """What one action did, as ``run`` shows it under a failed or skipped attempt."""

    index: int
    kind: str
    result: Result
    reason: str | None = None
    job_run_id: str | None = None
    exit_code: int | None = None
    evidence_ref: str | None = None
    stderr_tail: tuple[str, ...] = ()  # the last lines of its stderr, redacted (SPEC §14)




def job_run_id(ctx: Where, planned: decide.PlannedAction, scheduled_for: datetime) -> str | None:
    """The Job Run a ``job`` action is about to run, for its ``action_started`` (None for a
    delegated call, a Job that is not valid, or no Job runner)."""
    job_id = planned.job
    if planned.kind != "job" or job_id is None or ctx.job_runner is None \
            or ctx.defs.job(job_id) is None:
        return None
    from specdojo_routine.app import jobs  # a Job action runs it next, through the runner

    return jobs.routine_run_id(ctx.paths, ctx.defs, job_id=job_id,
                               inputs=dict(planned.inputs or {}), scheduled_at=scheduled_for,
                               env=ctx.env)


def execute(
    ctx: Where, planned: decide.PlannedAction, scheduled_for: datetime,
    limit: Limit | None = None,
) -> ActionReport:
    """Run one action, bounded by ``limit`` (SPEC §13: on expiry its process group is
    terminated and it fails ``timed out after <d>``). Never raises for the action's own
    failures - they are results."""
    if planned.argv is None:
        return _execute_job(ctx, planned, scheduled_for, limit)
    argv = [*runner.specdojo_prefix(ctx.env), *planned.argv]
    extra = {"SPECDOJO_PROJECT": ctx.paths.project_id, "SPECDOJO_ROUTINE_EXEC": "1"}
    outcome = runner.run_argv(
        argv, cwd=ctx.paths.root, env=runner.child_env(ctx.env, extra), echo=ctx.echo,
        on_start=lambda pgid: groups.record_action(ctx.paths, pgid, attempt_id=ctx.attempt_id,
                                                   index=planned.index),
        timeout_s=None if limit is None else limit.seconds, kill_grace_s=TIMEOUT_GRACE_S)
    if outcome.timed_out and limit is not None:
        outcome = attrs.evolve(outcome, error=limit.reason)
    secrets = secret_values(ctx.env)
    base = ActionReport(index=planned.index, kind=planned.kind, result=Result.FAILURE,
                        exit_code=outcome.exit_code,
                        evidence_ref=_action_evidence(ctx, planned, argv, outcome, secrets),
                        stderr_tail=tuple(tail.last_lines(outcome.stderr, secrets)))
    if outcome.error is not None:
        # the reason reaches the ledger and every answer: never a secret (SPEC §7.5)
        return attrs.evolve(base, reason=redact(_with_hint(outcome.error, argv), secrets),
                            exit_code=None)
    result = decide.exit_code_result(outcome.exit_code)
    reason = None
    if result is Result.SKIPPED:
        reason = "project busy (exit 75)"
    elif result is Result.FAILURE:
        reason = f"command {errors.exited_with(outcome.exit_code or 0)}"
    return attrs.evolve(base, result=result, reason=reason)


#: What to do when the SpecDojo CLI itself cannot be started: the operator reads it in
#: ``status`` and ``run``, where the reason is the only clue.
CLI_HINT = "the SpecDojo CLI: put specdojo on PATH or set SPECDOJO_CLI"


def _with_hint(error: str, argv: list[str]) -> str:
    """A delegated call's start error, with what to do when the CLI could not be started."""
    if argv and runner.executable_unusable(error, argv[0]):
        return f"{error} ({CLI_HINT})"
    return error


def _action_evidence(
    ctx: Where, planned: decide.PlannedAction, argv: list[str], outcome: runner.CommandOutcome,
    secrets: list[str],
) -> str | None:
    """Keep a delegated call's output as evidence (SPEC §14); a full disk costs the evidence,
    never the action's result, and the run says so (a warning: ``logs`` will have nothing)."""
    try:
        return evidence.write_action_evidence(
            ctx.paths.evidence_dir, routine_id=ctx.routine_id, attempt_id=ctx.attempt_id,
            index=planned.index, kind=planned.kind, argv=argv, outcome=outcome,
            secrets=secrets, root=ctx.paths.root)
    except (OSError, errors.JobError) as exc:
        why = fsfacts.describe(exc) if isinstance(exc, OSError) else str(exc)
        ctx.warnings.append(redact(f"warning: {ctx.routine_id}: action {planned.index}'s "
                                   f"output was not kept as evidence: {why}", secrets))
        return None


def _execute_job(ctx: Where, planned: decide.PlannedAction, scheduled_for: datetime,
                 limit: Limit | None) -> ActionReport:
    job_id = planned.job or ""
    failed = ActionReport(index=planned.index, kind=planned.kind, result=Result.FAILURE)
    if job_id in ctx.defs.invalid_job_ids or ctx.defs.job(job_id) is None:
        return attrs.evolve(failed, reason=f"invalid Job Definition: {job_id}")
    if ctx.job_runner is None:
        return attrs.evolve(failed, reason="no Job runner configured")
    extra: dict[str, Any] = {"worktree": True} if planned.commit else {}  # SPEC §11.3
    if limit is not None:  # passed only when set: a runner written before it keeps working
        extra["timeout_s"] = limit.seconds
    t0 = time.monotonic()
    out = ctx.job_runner(ctx.paths, ctx.defs, job_id=job_id, inputs=dict(planned.inputs or {}),
                         scheduled_at=scheduled_for, echo=ctx.echo, **extra)
    ref = getattr(out, "evidence_ref", None)  # a runner written before it had one
    ctx.warnings.extend(f"warning: {w}" for w in getattr(out, "warnings", ()))
    reason = out.reason
    if (limit is not None and out.result is Result.FAILURE and reason is not None
            and reason.startswith("timed out after")
            and time.monotonic() - t0 >= limit.seconds - 0.5):  # our bound, not task.timeout
        reason = limit.reason
    return attrs.evolve(failed, result=out.result, reason=reason, job_run_id=out.job_run_id,
                        exit_code=out.exit_code, evidence_ref=ref,
                        stderr_tail=tuple(evidence.stderr_tail(ctx.paths.root, ref,
                                                               ctx.paths.evidence_dir))
                        if out.result is not Result.SUCCESS else ())
