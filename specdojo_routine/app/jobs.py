"""Job Runs (SPEC §7.3, seed 002): materialise, execute, record; the routine ``job`` seam.

The decisions are :mod:`jobplan`'s; this module does the I/O around them:

1. resolve the inputs (git for ``git_head``/``git_revision``, checkpoints folded from the run
   ledgers), render the idempotency key, derive the run id, fold the run's ledger;
2. a NEW run with a precondition runs it first, before anything is locked or written, so a
   skip leaves no trace at all (E-11);
3. under the project exec lock (§7.7; busy -> skipped, nothing written) look at the run again,
   append ``run_created`` (new) and ``attempt_started``, write the plan, execute, write the
   evidence, append ``attempt_ended`` (+ ``checkpoint_advanced``), write the result, publish
   the views.

Nothing secret is recorded: the frozen task and the key are stored redacted (a retry re-renders
the task from the definition and runs it when it redacts to the recorded text), inputs carrying
a secret are refused, and free text from agents is redacted. The files around a run (git,
checkpoints, attempt owners, plan and result documents) live in :mod:`jobfiles`.
Recording one attempt whole is :mod:`.job_attempt`; executing its task (in place or reviewed;
command or agent) is :mod:`.job_execute`.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

import attrs

from specdojo_routine.app import review as review_flow
from specdojo_routine.app.job_attempt import RunLog, record_attempt
from specdojo_routine.app.job_execute import REASON_LIMIT, Clock, _Env
from specdojo_routine.app.job_seam import JobActionOutcome
from specdojo_routine.core import jobplan, jobtask
from specdojo_routine.core.errors import JobError, RoutineError, UsageError
from specdojo_routine.core.job_events import (
    CheckpointAdvanced,
    RunAttemptEnded,
    RunCreated,
)
from specdojo_routine.core.jobmodel import InputValue, JobDefinition
from specdojo_routine.core.jobplan import JobRunOutcome, Trigger
from specdojo_routine.core.model import Result
from specdojo_routine.core.redact import redact, secret_values
from specdojo_routine.core.templates import job_context
from specdojo_routine.core.timefmt import format_ms
from specdojo_routine.execute import agentflow, jobfiles, runner
from specdojo_routine.execute.agent import AgentExecutor
from specdojo_routine.execute.jobfiles import GitCli, Prepared
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions.load import Definitions
from specdojo_routine.store.fsfacts import describe as environment_error
from specdojo_routine.store.ledger import adopt, runcheck, views
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.locks import execlock
from specdojo_routine.store.locks import routine as locks

__all__ = ["ACTOR", "GitCli", "JobRunOutcome", "Prepared", "find_job", "prepare",
           "routine_job_runner", "run_job"]

ACTOR = "specdojo_routine"


def _utc_now() -> datetime:
    return datetime.now(UTC)


# --- preparing a run: computed, nothing written ------------------------------------------------


def find_job(defs: Definitions, job_id: str) -> JobDefinition:
    """The valid Job Definition ``job_id``; an invalid or unknown id is an error."""
    job = defs.job(job_id)
    if job is not None:
        return job
    if job_id in defs.invalid_job_ids:
        raise JobError(f"invalid Job Definition: {job_id} (run `job validate` and fix it)")
    known = ", ".join(j.id for j in defs.jobs) or "none"
    raise UsageError(f'unknown job "{job_id}" (known: {known})')


def prepare(
    paths: ProjectPaths, defs: Definitions, job_id: str, inputs: Mapping[str, InputValue], *,
    scheduled_at: datetime, trigger: Trigger, env: Mapping[str, str], run_id_only: bool = False,
) -> Prepared:
    """Resolve inputs, key, run id and the frozen task; writes nothing (``--dry-run``).
    ``run_id_only``: the caller keeps only the run id, so the checkpoint is read only when
    the run id depends on it (:func:`jobplan.key_reads_checkpoint`); the checkpoint and
    task of the result are then not the run's."""
    job = find_job(defs, job_id)
    checkpoint = None if run_id_only and not jobplan.key_reads_checkpoint(job) \
        else jobfiles.read_checkpoint(paths, job.id)
    values = jobplan.resolve_inputs(job, inputs, checkpoint, GitCli(root=paths.root, env=env))
    secrets = secret_values(env)
    jobplan.refuse_secret_inputs(job, values, secrets)
    specdojo = shlex.join(runner.specdojo_prefix(env))
    stamp = format_ms(scheduled_at)

    def context(given: Mapping[str, Any], run_id: str | None) -> dict[str, Any]:
        return job_context(job_id=job.id, project_id=paths.project_id, specdojo=specdojo,
                           scheduled_at=stamp, inputs=given, checkpoint=checkpoint,
                           job_run_id=run_id)

    base = context(values, None)
    key = jobplan.render_key(job, base)
    run_id = jobplan.run_id_for(job.id, key)
    task = jobtask.freeze_task(job, {**base, "job_run_id": run_id}, paths.project_id)
    jobplan.refuse_secrets_in_place(job, values, secrets, lambda given: jobtask.rendered_texts(
        job, context(given, run_id), paths.project_id))
    return Prepared(job=job, project_id=paths.project_id, specdojo=specdojo, trigger=trigger,
                    scheduled_at=stamp, inputs=values, checkpoint_before=checkpoint,
                    run_id=run_id, key=key, recorded_key=redact(key, secrets), task=task,
                    recorded_task=jobtask.redacted(task, secrets))


def _from_record(prep: Prepared, view: Mapping[str, Any], secrets: list[str]) -> Prepared:
    """The run as recorded (frozen inputs and task) for a new attempt."""
    recorded = dict(view["task"])
    base = attrs.evolve(prep, project_id=view["project_id"], trigger=view["trigger"],
                        scheduled_at=view["scheduled_at"], inputs=dict(view["inputs"]),
                        checkpoint_before=dict(view["checkpoint_before"]) or None,
                        recorded_task=recorded, task=recorded)
    try:
        fresh: dict[str, Any] | None = jobtask.freeze_task(prep.job, base.context(),
                                                           base.project_id)
    except JobError:
        fresh = None
    task = jobtask.task_for_retry(prep.job, recorded, fresh, secrets, prep.run_id)
    return attrs.evolve(base, task=task)


def _with_checkpoint(
    prep: Prepared, checkpoint: dict[str, Any] | None, secrets: list[str]
) -> Prepared:
    """``prep`` (made with ``run_id_only``, its run id independent of the checkpoint) with
    the Job's checkpoint: ``checkpoint_before`` and the task rendered with it."""
    done = attrs.evolve(prep, checkpoint_before=checkpoint)
    task = jobtask.freeze_task(prep.job, done.context(), prep.project_id)
    return attrs.evolve(done, task=task, recorded_task=jobtask.redacted(task, secrets))


# --- running -----------------------------------------------------------------------------------


def run_job(
    paths: ProjectPaths, defs: Definitions, job_id: str, inputs: Mapping[str, InputValue], *,
    scheduled_at: datetime, trigger: Trigger = "manual", agent: AgentExecutor | None = None,
    echo: TextIO | None = None, env: Mapping[str, str] | None = None, clock: Clock | None = None,
    review: review_flow.ReviewOptions | None = None, timeout_s: float | None = None,
) -> JobRunOutcome:
    """Materialise (or find) the Job Run for these inputs and run one attempt (SPEC §7.3);
    ``timeout_s`` is the caller's bound (a routine's timeout, SPEC §13) on top of the task's
    own ``task.timeout``: the attempt's task gets the smaller.

    The Job's checkpoint costs a look at every run of the Job
    (:mod:`~specdojo_routine.store.ledger.runcheck`), so it is read once: before the exec
    lock only when the run id or a new run's precondition, both decided there, depend on it;
    else from the import under the lock (:func:`_locked`)."""
    base_env = dict(os.environ if env is None else env)
    ctx = _Env(paths=paths, env=base_env, secrets=secret_values(base_env), echo=echo,
               agent=agentflow.default_executor(paths) if agent is None else agent,
               clock=clock or _utc_now, trigger=trigger,
               review=review or review_flow.ReviewOptions(),
               limit=None if timeout_s is None else time.monotonic() + timeout_s)
    prep = prepare(paths, defs, job_id, inputs, scheduled_at=scheduled_at, trigger=trigger,
                   env=base_env, run_id_only=True)
    # another tool's record counts (SPEC §10); one still to import is imported under the lock
    view, to_import = adopt.needed_run(paths, prep.run_id)
    decision = jobplan.existing_run(view, run_id=prep.run_id, job_id=prep.job.id,
                                    key=prep.recorded_key)
    complete = view if decision.action == "duplicate" and view is not None \
        and not jobplan.missing_checkpoint(view, prep.job) else None
    if complete is not None and not to_import:
        return _duplicate(prep, complete)
    checked = decision.action == "new" and "precondition" in prep.task
    if checked:
        if not jobplan.key_reads_checkpoint(prep.job):
            prep = _with_checkpoint(prep, jobfiles.read_checkpoint(paths, prep.job.id),
                                    ctx.secrets)
        early = _precondition(ctx, prep)
        if early is not None:
            return early
    return _exec_locked(ctx, prep, view, complete, precondition_done=checked)


def _exec_locked(
    ctx: _Env, prep: Prepared, view: Mapping[str, Any] | None,
    complete: Mapping[str, Any] | None, *, precondition_done: bool,
) -> JobRunOutcome:
    """:func:`_locked` under the project exec lock (SPEC §7.7); held by someone else, the
    run is skipped with nothing written, or answered as complete when it is (``complete``:
    the next command imports what is left)."""
    lock = execlock.exec_lock(ctx.paths.exec_locks_dir, actor=ACTOR, env=ctx.env)
    try:
        handle = lock.__enter__()
    except execlock.ExecLockBusy as exc:
        if complete is not None:
            return _duplicate(prep, complete)
        return JobRunOutcome(job_id=prep.job.id, run_id=prep.run_id if view else None,
                             state=view["state"] if view else None, attempt=None,
                             skipped=True, reason=str(exc), trigger=ctx.trigger)
    with contextlib.ExitStack() as stack:
        stack.push(lock)
        return _locked(ctx, prep, handle, precondition_done=precondition_done)


def _duplicate(prep: Prepared, view: Mapping[str, Any]) -> JobRunOutcome:
    attempts = view.get("attempts") or [{}]
    return JobRunOutcome(job_id=prep.job.id, run_id=prep.run_id, state=view["state"],
                         attempt=attempts[-1].get("attempt"), duplicate_complete=True,
                         evidence_ref=attempts[-1].get("evidence_ref"), trigger=prep.trigger)


def _precondition(ctx: _Env, prep: Prepared) -> JobRunOutcome | None:
    """Run a new run's precondition; an outcome when it skips or fails, else None.

    It runs before the exec lock is taken: it decides whether a run materialises at all, and a
    skip writes nothing - no run, plan or evidence (E-11), and not the lock directory, its
    take-over mutex file or the import check's cache either, which taking the lock would leave.
    Holding nothing, it needs no lock token: a ``specdojo exec`` it calls takes the lock
    itself."""
    condition = prep.task["precondition"]
    outcome = runner.run_shell(condition["command"], cwd=ctx.paths.root,
                               env=ctx.child(prep.run_id, None), echo=ctx.echo)
    skip, failure = jobplan.precondition_skips(condition, exit_code=outcome.exit_code,
                                               stdout=outcome.stdout, error=outcome.error)
    if not skip and failure is None:
        return None
    if skip:
        detail = ("empty output" if outcome.exit_code == 0 and not outcome.stdout.strip()
                  else f"exit code {outcome.exit_code}")
        reason = f"precondition skipped the run ({detail})"
    else:
        reason = failure or "precondition failed"
    return JobRunOutcome(job_id=prep.job.id, run_id=None, state=None, attempt=None,
                         skipped=skip, reason=ctx.reason(reason), exit_code=outcome.exit_code,
                         trigger=ctx.trigger)


def _locked(
    ctx: _Env, prep: Prepared, handle: execlock.ExecLockHandle, *, precondition_done: bool
) -> JobRunOutcome:
    """Under the exec lock: import first (SPEC §10: only the Job's runs whose files changed
    are read, :mod:`~specdojo_routine.store.ledger.runcheck`), then create or reuse the run,
    run one attempt, record it."""
    found = runcheck.import_job_runs(ctx.paths, ctx.clock, job_id=prep.job.id,
                                     needed=prep.run_id)
    log = RunLog(ledger.Ledger(ctx.paths.run_ledger(prep.run_id), clock=ctx.clock),
                  ctx.secrets)  # before the fold: it appends only to the file it folded
    view = views.load_job_run(ctx.paths, prep.run_id)
    decision = jobplan.existing_run(view, run_id=prep.run_id, job_id=prep.job.id,
                                    key=prep.recorded_key)
    if decision.action == "duplicate" and view is not None:
        return _repair_checkpoint(ctx, prep, view, log)
    if decision.action == "new":
        if not (precondition_done or jobplan.key_reads_checkpoint(prep.job)):
            prep = _with_checkpoint(prep, found.checkpoint(prep.job.id), ctx.secrets)
        if "precondition" in prep.task and not precondition_done:
            early = _precondition(ctx, prep)
            if early is not None:
                return early
        _create(ctx, prep, log)
    else:
        assert view is not None
        prep = _from_record(prep, view, ctx.secrets)
        refused = _refused_retry(ctx, prep, handle, log, view, decision)
        if refused is not None:
            return refused
        if not jobfiles.plan_path(ctx.paths, prep.run_id).exists():
            jobfiles.write_plan(ctx.paths, prep)
    return record_attempt(ctx, prep, handle, log, decision.attempt)


def _refused_retry(
    ctx: _Env, prep: Prepared, handle: execlock.ExecLockHandle, log: RunLog,
    view: Mapping[str, Any], decision: jobplan.Existing,
) -> JobRunOutcome | None:
    """Why a new attempt of an existing run does not start (its previous attempt still runs,
    or was interrupted: never re-sent silently, SPEC §7.3), else None; an interrupted attempt
    of a Job with ``run.on_interrupted: retry`` is closed first."""
    busy = _still_running(ctx, prep, decision.attempt - 1)
    if busy is not None:
        return JobRunOutcome(job_id=prep.job.id, run_id=prep.run_id, state=view["state"],
                             attempt=None, skipped=True, reason=busy, trigger=ctx.trigger)
    if decision.open_attempt is None:
        return None
    if prep.job.on_interrupted != "retry":
        _refuse_if_owner_lives(ctx, prep, handle, decision.open_attempt)
        return JobRunOutcome(job_id=prep.job.id, run_id=prep.run_id, state="interrupted",
                             attempt=decision.open_attempt,  # as job list and job show say
                             reason=interrupted_reason(prep.run_id), trigger=ctx.trigger)
    _close_interrupted(ctx, prep, handle, log, decision.open_attempt)
    return None


def _create(ctx: _Env, prep: Prepared, log: RunLog) -> None:
    """Materialise the run: its plan, then ``run_created``. In that order, a full disk
    leaves nothing half-made: a plan that cannot be written records nothing, and a
    ``run_created`` that cannot be appended takes back the plan written for it - never a
    run that is ``running`` with no attempt and no plan, which nothing would end. Only the
    disk's refusal takes the plan back: a stop that lands during the append may come after
    the line is written, and a plan without its run is overwritten by the next one."""
    plan = jobfiles.plan_path(ctx.paths, prep.run_id)
    made = not plan.exists()
    jobfiles.write_plan(ctx.paths, prep)
    try:
        log.append(RunCreated(
            run_id=prep.run_id, job_id=prep.job.id, idempotency_key=prep.recorded_key,
            project_id=prep.project_id, trigger=prep.trigger, scheduled_at=prep.scheduled_at,
            inputs=prep.inputs, task=prep.recorded_task,
            checkpoint_before=prep.checkpoint_before))
    except OSError:
        if made:
            with contextlib.suppress(OSError):
                plan.unlink(missing_ok=True)
        raise


def _still_running(ctx: _Env, prep: Prepared, attempt: int) -> str | None:
    """Why the previous attempt still runs (a busy skip, never a second execution): its owner
    is alive on this host, or its command's process group outlived the owner."""
    if attempt < 1:
        return None
    owner = jobfiles.attempt_owner(ctx.paths, prep.run_id, attempt)
    if owner is not None and not locks.is_self(owner.get("pid"), owner.get("host")) and \
            locks.owner_alive(owner.get("pid"), owner.get("host"), owner.get("start")) is True:
        return (f"busy: attempt {attempt} of {prep.run_id} is still running "
                f"(pid {owner.get('pid')} on {owner.get('host')})")
    pgid = jobfiles.group_still_running(ctx.paths, prep.run_id, attempt)
    if pgid is not None:
        return (f"busy: the command of attempt {attempt} of {prep.run_id} is still running "
                f"(process group {pgid} outlived its runner)")
    return None


def interrupted_reason(run_id: str) -> str:
    """Why ``job run`` and a routine job action refuse an interrupted run (SPEC §7.3)."""
    return f"Job Run {run_id} was interrupted; resolve it first"


def _refuse_if_owner_lives(
    ctx: _Env, prep: Prepared, handle: execlock.ExecLockHandle, attempt: int
) -> None:
    owner = jobfiles.attempt_owner(ctx.paths, prep.run_id, attempt)
    if handle.inherited and owner is not None and jobfiles.owner_alive(owner):
        raise JobError(f"Job Run {prep.run_id} attempt {attempt} is still running "
                       f"(pid {owner.get('pid')} on {owner.get('host')})")


def _close_interrupted(
    ctx: _Env, prep: Prepared, handle: execlock.ExecLockHandle, log: RunLog, attempt: int
) -> None:
    """``run.on_interrupted: retry``: close the open attempt of a dead runner as
    failed/interrupted (a new attempt follows)."""
    _refuse_if_owner_lives(ctx, prep, handle, attempt)
    log.append(RunAttemptEnded(run_id=prep.run_id, attempt=attempt, status="failed",
                               reason="interrupted"))


def _repair_checkpoint(
    ctx: _Env, prep: Prepared, view: Mapping[str, Any], log: RunLog
) -> JobRunOutcome:
    """Duplicate complete; a checkpoint lost to a crash after ``attempt_ended`` is recorded."""
    if jobplan.missing_checkpoint(view, prep.job):
        done = _from_record(prep, view, ctx.secrets)
        values = jobtask.checkpoint_after(prep.job, view["state"], done.context())
        if values is not None:
            log.append(CheckpointAdvanced(run_id=prep.run_id, job_id=prep.job.id, values=values))
            views.refresh_job_views(ctx.paths, [prep.run_id])
    return _duplicate(prep, view)


# --- the routine seam --------------------------------------------------------------------------


@attrs.frozen(repr=False)
class RoutineJobRunner:
    """:class:`.job_seam.JobActionRunner`: one routine ``job`` action as a Job Run with
    ``trigger: routine``, using ``agent`` for edit/review Jobs and ``env`` for commands."""

    agent: AgentExecutor | None = None
    env: Mapping[str, str] | None = None

    def __call__(
        self, paths: ProjectPaths, defs: Definitions, *, job_id: str, inputs: Mapping[str, str],
        scheduled_at: datetime, echo: TextIO | None, worktree: bool = False,
        timeout_s: float | None = None,
    ) -> JobActionOutcome:
        try:
            typed = jobplan.parse_text_inputs(find_job(defs, job_id), inputs)
            outcome = run_job(paths, defs, job_id, typed, scheduled_at=scheduled_at,
                              trigger="routine", echo=echo, agent=self.agent, env=self.env,
                              review=review_flow.ReviewOptions(worktree=worktree),
                              timeout_s=timeout_s)
        except (RoutineError, OSError) as exc:  # an OSError: where, what and what to do
            secrets = secret_values(os.environ if self.env is None else self.env)
            text = environment_error(exc) if isinstance(exc, OSError) else str(exc)
            message = redact(text, secrets).replace("\n", " ")[:REASON_LIMIT]
            return JobActionOutcome(result=Result.FAILURE, reason=message)
        result, reason = jobplan.routine_result(outcome)
        ran = outcome.attempt is not None and not outcome.duplicate_complete
        return JobActionOutcome(result=result, reason=reason, job_run_id=outcome.run_id,
                                exit_code=outcome.exit_code,
                                evidence_ref=outcome.evidence_ref if ran else None,
                                warnings=outcome.warnings)


#: The CLI's runner: no agent executor, the process environment.
routine_job_runner = RoutineJobRunner()


def routine_run_id(
    paths: ProjectPaths, defs: Definitions, *, job_id: str, inputs: Mapping[str, str],
    scheduled_at: datetime, env: Mapping[str, str],
) -> str | None:
    """The id of the Job Run a routine ``job`` action with these inputs is about to run, as
    :func:`prepare` derives it from the rendered key (SPEC §5: its ``action_started`` names it
    before delegation); None when the inputs or the key do not resolve (the runner then
    reports why)."""
    try:
        typed = jobplan.parse_text_inputs(find_job(defs, job_id), inputs)
        return prepare(paths, defs, job_id, typed, scheduled_at=scheduled_at,
                       trigger="routine", env=env, run_id_only=True).run_id
    except (RoutineError, OSError):
        return None
