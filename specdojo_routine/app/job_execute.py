"""One Job Run attempt's task, executed (SPEC §7.3, §11): in place or in a review worktree.

The attempt's environment (:class:`_Env`), what executing it came to (:class:`_Done`), and the
task itself: a command through :mod:`runner` (with its evidence and an optional analysis) or an
edit/review agent through the executor. :mod:`.jobs` records the outcome around it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TextIO

import attrs

from specdojo_routine.app import review as review_flow
from specdojo_routine.core import jobplan, review_rules, timeouts
from specdojo_routine.core.jobplan import Trigger, Verdict
from specdojo_routine.core.redact import redact
from specdojo_routine.execute import agentflow, evidence, jobfiles, runner, stop, termination
from specdojo_routine.execute.agent import AgentExecutor, AgentRequest
from specdojo_routine.execute.jobfiles import Prepared
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.fsfacts import describe as environment_error
from specdojo_routine.store.locks import execlock

REASON_LIMIT = 500  # characters of a recorded reason
Clock = Callable[[], datetime]


@attrs.frozen(kw_only=True, repr=False)
class _Env:
    paths: ProjectPaths
    env: Mapping[str, str]
    secrets: list[str]
    echo: TextIO | None
    agent: AgentExecutor | None
    clock: Clock
    trigger: Trigger
    review: review_flow.ReviewOptions = attrs.field(factory=review_flow.ReviewOptions)
    cwd: Path | None = None  # the review worktree the task runs in (None: the root)
    extra_env: Mapping[str, str] = attrs.field(factory=dict)
    deadline: float | None = None  # time.monotonic() when task.timeout runs out (SPEC §11.4)
    limit: float | None = None  # time.monotonic() when the caller's bound runs out (SPEC §13)

    def child(self, run_id: str, token: str | None) -> dict[str, str]:
        extra = {"SPECDOJO_JOB_RUN_ID": run_id, "SPECDOJO_PROJECT": self.paths.project_id}
        if self.trigger == "routine":
            extra["SPECDOJO_ROUTINE_EXEC"] = "1"
        if token is not None:
            extra[execlock.EXEC_LOCK_TOKEN_ENV] = token
        env = runner.child_env(self.env, {**extra, **self.extra_env})
        if self.trigger != "routine":  # set only when a routine runs the Job (SPEC §7.3),
            env.pop("SPECDOJO_ROUTINE_EXEC", None)  # even if the caller inherited it
        return env

    def reason(self, text: str | None) -> str | None:
        if not text:
            return None
        return redact(text, self.secrets).replace("\n", " ")[:REASON_LIMIT]


@attrs.frozen(kw_only=True, repr=False)
class _Done:
    verdict: Verdict
    exit_code: int | None = None
    evidence_ref: str | None = None
    final_message: str | None = None
    result_written: bool = False  # an agent filled the result document: stamp, not rewrite
    review: review_flow.Record | None = None  # the review before merge (SPEC §11.3)
    notes: tuple[str, ...] = ()  # side effects that failed (the outcome still stands)


def _execute(ctx: _Env, prep: Prepared, handle: execlock.ExecLockHandle, attempt: int) -> _Done:
    """The attempt's task, in place, or in a review worktree (SPEC §11.3). ``task.timeout`` is
    one budget for the whole attempt: every stage gets what is left of it (SPEC §11.4)."""
    own = review_flow.deadline_for(prep.task)
    ctx = attrs.evolve(ctx, deadline=min((d for d in (own, ctx.limit) if d is not None),
                                         default=None))
    if not review_flow.selected(prep.task, ctx.review, ctx.env):
        return _execute_here(ctx, prep, handle, attempt)
    info = review_flow.RunInfo(
        paths=ctx.paths, run=prep.identity, attempt=attempt, task=prep.task,
        env=ctx.child(prep.run_id, handle.token), echo=ctx.echo, deadline=ctx.deadline,
        kill_grace_s=_kill_grace(ctx))

    def inner(path: Path, extra: Mapping[str, str]) -> _Done:
        here = attrs.evolve(ctx, cwd=path, extra_env={review_rules.CHILD_ENV: "1"})
        return _execute_here(here, prep, handle, attempt)

    done, record = review_flow.run_reviewed(info, ctx.review, inner)
    if done is None or not isinstance(record, review_flow.Record):
        assert isinstance(record, Verdict)
        return _Done(verdict=record)
    assert isinstance(done, _Done)
    verdict = done.verdict
    if record.skipped:  # a rate-limited review agent: a skip, like busy (SPEC §11.4)
        verdict = Verdict(status="failed", reason=record.reason, busy=True)
    elif record.error or record.stopped:  # a git step failed, or a stop ended the review
        verdict = Verdict(status="failed", reason=record.reason)
    return attrs.evolve(done, verdict=verdict, review=record,
                        notes=(*done.notes, *record.notes))


def _execute_here(
    ctx: _Env, prep: Prepared, handle: execlock.ExecLockHandle, attempt: int
) -> _Done:
    task = prep.task
    if task.get("mode") != "command":
        return _execute_agent(ctx, prep, handle, attempt)
    outcome = runner.run_shell(  # with the grace of whose bound it is
        task["command"], cwd=ctx.cwd or ctx.paths.root,
        env=ctx.child(prep.run_id, handle.token), timeout_s=_remaining(ctx.deadline),
        echo=ctx.echo, kill_grace_s=_kill_grace(ctx),
        on_start=lambda pgid: jobfiles.record_group(ctx.paths, prep.run_id, attempt, pgid))
    verdict = jobplan.command_verdict(task, exit_code=outcome.exit_code, error=outcome.error)
    message = verdict.status + (f": {verdict.reason}" if verdict.reason else "")
    try:
        ref: str | None = evidence.write_evidence(
            ctx.paths.evidence_dir, run_id=prep.run_id, attempt=attempt,
            command=task["command"], outcome=outcome, secrets=ctx.secrets,
            final_message=message, root=ctx.paths.root)
    except OSError as exc:  # the command ran: its outcome is recorded all the same
        return _Done(verdict=verdict, exit_code=outcome.exit_code,
                     notes=(f"evidence not written: {environment_error(exc)}",))
    if "analysis" in task and verdict.status in ("succeeded", "partial"):  # SPEC §11.2
        analysed = agentflow.analyse(ctx.paths, _request(ctx, prep, handle, attempt),
                                     verdict, evidence.attempt_dir(
                                         ctx.paths.evidence_dir, prep.run_id, attempt)
                                     / evidence.EVIDENCE_JSON)
        return _Done(verdict=analysed.verdict, exit_code=outcome.exit_code, evidence_ref=ref,
                     result_written=analysed.result_written)
    return _Done(verdict=verdict, exit_code=outcome.exit_code, evidence_ref=ref)


def _kill_grace(ctx: _Env) -> float:
    """How long the command's (or agent's) group has between SIGTERM and SIGKILL when its
    time runs out:
    the 10 s of SPEC §13 when the bound is the caller's (a routine action's or attempt's
    timeout), the runner's own when it is the Job's ``task.timeout`` (SPEC §7.3)."""
    if ctx.limit is not None and ctx.deadline == ctx.limit:
        return timeouts.TIMEOUT_GRACE_S
    return termination.KILL_GRACE_S


def _remaining(deadline: float | None) -> float | None:
    """Seconds left of the attempt's ``task.timeout`` (None: no timeout), at least 0.1."""
    if deadline is None:
        return None
    return max(0.1, round(deadline - time.monotonic(), 1))


def _request(
    ctx: _Env, prep: Prepared, handle: execlock.ExecLockHandle, attempt: int
) -> AgentRequest:
    mode = str(prep.task.get("mode"))
    return AgentRequest(
        run_id=prep.run_id, job_id=prep.job.id, attempt=attempt,
        mode="review" if mode == "review" else "edit", task=prep.task, inputs=prep.inputs,
        paths=ctx.paths, plan_path=jobfiles.plan_path(ctx.paths, prep.run_id),
        result_path=jobfiles.result_path(ctx.paths, prep.run_id),
        env=ctx.child(prep.run_id, handle.token), name=prep.job.name,
        scheduled_at=prep.scheduled_at, timeout_s=_remaining(ctx.deadline),
        kill_grace_s=_kill_grace(ctx), echo=ctx.echo, cwd=ctx.cwd)


def _execute_agent(
    ctx: _Env, prep: Prepared, handle: execlock.ExecLockHandle, attempt: int
) -> _Done:
    mode = str(prep.task.get("mode"))
    if ctx.agent is None:
        return _Done(verdict=Verdict(status="failed", reason=jobplan.no_agent_reason(mode)))
    request = _request(ctx, prep, handle, attempt)
    try:
        result = ctx.agent(request)
    except Exception as exc:  # the executor's failure is the attempt's
        return _Done(verdict=Verdict(status="failed", reason=f"agent executor failed: {exc}"))
    if result.status not in ("succeeded", "partial", "failed", "noop"):
        reason = f"agent executor returned an unknown status {result.status!r}"
        return _Done(verdict=Verdict(status="failed", reason=reason))
    message = redact(result.final_message, ctx.secrets) if result.final_message else None
    why = stop.reason()
    stopped = why is not None and result.status == "failed" and why in (result.reason or "")
    # a stop that ended the agent is the attempt's reason, as for a command (§6.5)
    return _Done(verdict=Verdict(status=result.status, reason=why if stopped else result.reason,
                                 busy=result.skipped),
                 final_message=message, result_written=result.result_written)
