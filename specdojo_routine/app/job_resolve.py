"""``job resolve RUN_ID --status …``: an operator's outcome for an interrupted Job Run attempt
(SPEC §7.3, seed 004: a run that stopped mid-way is never re-sent silently).

An attempt is interrupted when it is open and its runner is dead (no live owner, no command
group that outlived it). ``job run`` and routine job actions refuse such a run until this
records ``attempt_resolved``; ``succeeded`` / ``noop`` then advance the checkpoint by
``advance_on`` as an ended attempt would. ``resolve`` of a routine attempt resolves the Job
Run attempts that attempt started (:func:`resolve_started_by`), so one decision covers both.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from specdojo_routine.app import named_run
from specdojo_routine.app.who import operator_name
from specdojo_routine.core import jobtask, review_rules
from specdojo_routine.core.errors import LockBusy, RoutineError, UsageError
from specdojo_routine.core.events import redacted
from specdojo_routine.core.job_events import CheckpointAdvanced, JobEvent, RunAttemptResolved
from specdojo_routine.core.redact import secret_values
from specdojo_routine.core.templates import job_context
from specdojo_routine.execute import jobfiles, runner
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger import adopt, runcheck, views
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.locks import execlock
from specdojo_routine.store.locks import routine as locks

if TYPE_CHECKING:
    from specdojo_routine.core.model import Routine

ACTOR = "specdojo_routine"
STATUSES = ("succeeded", "failed", "noop")
#: a routine attempt's resolved result -> its Job Runs' status (SPEC §7.3)
FROM_ROUTINE = {"success": "succeeded", "failure": "failed", "skipped": "failed",
                "partial": "succeeded"}
Clock = Callable[[], datetime]


def open_attempt(view: Mapping[str, Any] | None) -> int | None:
    """The run's open attempt, if any."""
    attempts = (view or {}).get("attempts") or []
    opened = [int(a["attempt"]) for a in attempts if a.get("status") == "running"]
    return max(opened, default=None)


def interrupted(paths: ProjectPaths, run_id: str, view: Mapping[str, Any] | None) -> bool:
    """Whether the run has an open attempt whose runner is gone (and nothing of it runs).

    A runner on this host is asked directly; one on another host is taken for alive while it
    holds the project's exec lock with a fresh heartbeat (SPEC §7.7's rule for another host,
    as ``list`` takes a routine attempt for running while the routine lock is held)."""
    attempt = open_attempt(view)
    if attempt is None:
        return False
    owner = jobfiles.attempt_owner(paths, run_id, attempt) or {}
    alive = locks.owner_alive(owner.get("pid"), owner.get("host"), owner.get("start"))
    if alive is True:
        return False
    if alive is None and _holds_the_exec_lock(paths, owner):
        return False
    return jobfiles.group_still_running(paths, run_id, attempt) is None \
        and _still_open(paths, run_id, attempt)


def _still_open(paths: ProjectPaths, run_id: str, attempt: int) -> bool:
    """Whether the run's ledger, read now, still has ``attempt`` open: a runner found gone
    records nothing more, so a run that ended the attempt and exited after its view was read
    is not interrupted. A run with no ledger of ours (another tool's view) is as it was read."""
    if not paths.run_ledger(run_id).exists():
        return True
    return open_attempt(views.load_job_run(paths, run_id)) == attempt


def _holds_the_exec_lock(paths: ProjectPaths, owner: Mapping[str, Any]) -> bool:
    """Whether the process ``owner`` names (an attempt's runner) holds the exec lock now."""
    holder = execlock.live_holder(paths.exec_locks_dir)
    here = locks.this_host()
    return holder is not None and (holder.pid, holder.host or here) == (
        owner.get("pid"), owner.get("host") or here)


def resolve_job_run(
    paths: ProjectPaths, run_id: str, *, status: str, note: str, by: str | None = None,
    env: Mapping[str, str] | None = None, clock: Clock | None = None,
) -> int:
    """Record the operator's ``status`` for the run's interrupted attempt; its number."""
    if status not in STATUSES:
        raise UsageError(f"--status must be one of {', '.join(STATUSES)} (got {status!r})")
    if not note.strip():
        raise UsageError("job resolve needs a --note saying what was checked (got an empty "
                         "note)")
    the_env = dict(os.environ if env is None else env)
    who = operator_name(by, the_env)
    named_run.load(paths, run_id)  # a usage error when the id names no run
    with _exec_lock(paths, the_env):
        done = _resolve_locked(paths, [run_id], status=status, note=note, who=who,
                               env=the_env, clock=clock or _now, strict=True)
    return done[run_id]


def unmerged_worktree(paths: ProjectPaths, run_id: str, status: str) -> str | None:
    """What an operator who resolved a run ``succeeded`` or ``noop`` must still do when the
    interrupted attempt left its review worktree (SPEC §11.3): its work was never committed to
    the exec branch nor merged, and resolving does not merge it; None when there is none."""
    path = paths.worktrees / run_id
    if status == "failed" or not os.path.lexists(path):
        return None
    branch = review_rules.exec_branch(paths.project_id, run_id)
    return (f"the interrupted attempt's review worktree {path} is kept and its work was never "
            f"merged: resolving as {status} merges nothing; merge what it holds by hand, or "
            f"remove it (git worktree remove --force {shlex.quote(str(path))}; git branch -D "
            f"{branch})")


def resolve_started_by(
    paths: ProjectPaths, run_ids: Iterable[str], *, result: str, note: str, who: str,
    clock: Clock | None = None,
) -> list[str]:
    """``resolve`` of a routine attempt: its interrupted Job Runs with the matching status
    (skipped -> failed, reason ``resolved as skipped``); the runs resolved."""
    wanted = [r for r in dict.fromkeys(run_ids) if r]
    if not wanted:
        return []
    env = dict(os.environ)
    with _exec_lock(paths, env):
        done = _resolve_locked(paths, wanted, status=FROM_ROUTINE[result], note=note, who=who,
                               env=env, clock=clock or _now, strict=False,
                               reason="resolved as skipped" if result == "skipped" else None)
    return sorted(done)


def runs_started_by(
    paths: ProjectPaths, job_ids: Iterable[str], owner: Mapping[str, Any], known: Iterable[str],
) -> list[str]:
    """The Job Runs a routine attempt started: those its action events name (``known``) and
    the runs of its Jobs with an open attempt of the same owner (pid, host and start: an
    action interrupted before it could record its run id)."""
    found = [r for r in known if r]
    key = (owner.get("pid"), owner.get("host"), owner.get("start"))
    for job_id in dict.fromkeys(job_ids):
        for run_id in adopt.run_ids(paths, job_id):
            view = views.load_job_run(paths, run_id)
            attempt = open_attempt(view)
            if attempt is None or run_id in found:
                continue
            theirs = jobfiles.attempt_owner(paths, run_id, attempt) or {}
            if (theirs.get("pid"), theirs.get("host"), theirs.get("start")) == key:
                found.append(run_id)
    return found


def attempt_runs(
    paths: ProjectPaths, routine: Routine | None, state: Mapping[str, Any],
) -> list[str]:
    """The Job Runs a routine's open attempt started (``state`` its routine view entry,
    ``routine`` its definition or None): those its action events name, and the open runs of
    its Jobs that its runner owns (:func:`runs_started_by`)."""
    from specdojo_routine.core.model import JobAction

    opened = state.get("open_attempt") or {}
    known = [a.get("job_run_id") for a in opened.get("actions") or []]
    job_ids = [a.job for a in (routine.actions if routine else ()) if isinstance(a, JobAction)]
    return runs_started_by(paths, job_ids, opened.get("owner") or {}, known)


def outlived(paths: ProjectPaths, attempt_id: str, runs: Iterable[str]) -> tuple[str, int] | None:
    """(what, process group) of what a routine attempt whose runner is gone started and that
    still runs on this host (SPEC §6.5): a delegated call's group, or the command of a Job Run
    it started (``runs``); None when nothing does. Closing the attempt meanwhile would let its
    work be done twice."""
    from specdojo_routine.execute import groups

    pgid = groups.action_still_running(paths, attempt_id)
    if pgid is not None:
        return "its action", pgid
    live = live_command(paths, runs)
    return None if live is None else (f"the command of its Job Run {live[0]}", live[1])


def live_command(paths: ProjectPaths, run_ids: Iterable[str]) -> tuple[str, int] | None:
    """(run id, process group) of the first of the runs whose open attempt's command is still
    running on this host (it outlived its runner), else None."""
    for run_id in run_ids:
        attempt = open_attempt(views.load_job_run(paths, run_id))
        pgid = None if attempt is None else jobfiles.group_still_running(paths, run_id, attempt)
        if pgid is not None:
            return run_id, pgid
    return None


def _now() -> datetime:
    return datetime.now(UTC)


def _exec_lock(paths: ProjectPaths, env: Mapping[str, str]) -> Any:
    """The project exec lock (busy: ``ExecLockBusy``, exit 75), as ``job run`` takes it."""
    return execlock.exec_lock(paths.exec_locks_dir, actor=ACTOR, env=env)


def _resolve_locked(
    paths: ProjectPaths, run_ids: list[str], *, status: str, note: str, who: str,
    env: Mapping[str, str], clock: Clock, strict: bool, reason: str | None = None,
) -> dict[str, int]:
    defs = definitions.load_jobs(paths)
    secrets = secret_values(env)
    done: dict[str, int] = {}
    for run_id in run_ids:
        view = adopt.load_run(paths, run_id)
        if view is None:
            continue
        runcheck.import_job_runs(paths, clock, job_id=view["job_id"], needed=run_id)
        log = ledger.Ledger(paths.run_ledger(run_id), clock=clock)
        view = views.load_job_run(paths, run_id)
        attempt = open_attempt(view)
        if view is None or attempt is None or not interrupted(paths, run_id, view):
            if strict:
                _refuse_while_it_works(paths, run_id, attempt)
                shown = "running" if attempt is not None else view["state"] if view else None
                raise RoutineError(f"Job Run {run_id} is not interrupted (state: {shown}); "
                                   "nothing was recorded")
            continue
        batch: list[JobEvent] = [redacted(RunAttemptResolved(  # --by too: it is free text
            run_id=run_id, attempt=attempt, status=status,  # type: ignore[arg-type]
            note=note, resolved_by=who, reason=reason), secrets)]
        job = defs.job(view["job_id"])
        if job is not None:
            context = job_context(
                job_id=job.id, project_id=view["project_id"],
                specdojo=shlex.join(runner.specdojo_prefix(env)),
                scheduled_at=view["scheduled_at"], inputs=dict(view["inputs"]),
                checkpoint=dict(view["checkpoint_before"]) or None, job_run_id=run_id)
            values = jobtask.checkpoint_after(job, status, context)
            if values is not None:
                batch.append(CheckpointAdvanced(run_id=run_id, job_id=job.id, values=values))
        log.append_many(batch)
        views.refresh_job_views(paths, [run_id])
        done[run_id] = attempt
    return done


def _refuse_while_it_works(paths: ProjectPaths, run_id: str, attempt: int | None) -> None:
    """Busy (exit 75, nothing recorded) when the attempt's runner is dead but its command's or
    agent's process group still works: resolving it now would let a retry do that work a
    second time beside it. The group is named, so the operator can wait for it or end it."""
    if attempt is None:
        return
    owner = jobfiles.attempt_owner(paths, run_id, attempt) or {}
    if locks.owner_alive(owner.get("pid"), owner.get("host"), owner.get("start")) is True:
        return  # its runner lives: simply running
    pgid = jobfiles.group_still_running(paths, run_id, attempt)
    if pgid is not None:
        raise LockBusy(f"Job Run {run_id} attempt {attempt} is still running (process group "
                       f"{pgid} outlived its runner); wait for it to end or stop it "
                       f"(kill -TERM -- -{pgid}), then resolve; nothing was recorded")
