"""The files around a Job Run (SPEC §7.3): the I/O pieces :mod:`jobs` orchestrates.

- :class:`GitCli`: ``git rev-parse`` for the ``git_head``/``git_revision`` inputs;
- :class:`Prepared`: a run's identity and content, as :func:`jobs.prepare` computes it;
- :func:`read_checkpoint`: a job's latest advanced checkpoint, folded from its run ledgers;
- :func:`attempt_owner` / :func:`owner_alive`: whether an open attempt's runner is dead;
- the plan and result Markdown documents (``exec/plans``, ``exec/results``).

This module never imports :mod:`jobs` (the arrow points one way).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from specdojo_routine.core.errors import JobError
from specdojo_routine.core.event_parts import Owner
from specdojo_routine.core.jobmodel import JobDefinition
from specdojo_routine.core.jobplan import RunIdentity, Trigger
from specdojo_routine.core.templates import job_context
from specdojo_routine.execute import evidence, groups, runner
from specdojo_routine.execute.agent import AttemptDoc, plan_markdown, result_markdown
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.ledger import runcheck, views
from specdojo_routine.store.locks import routine as locks

__all__ = ["GIT_TIMEOUT_S", "GitCli", "Prepared", "attempt_owner", "current_owner",
           "owner_alive", "plan_path", "read_checkpoint", "result_path",
           "write_plan", "write_result"]

GIT_TIMEOUT_S = 60.0


@attrs.frozen(kw_only=True, repr=False)
class GitCli:
    """:class:`jobplan.GitResolver` backed by ``git rev-parse`` in the project root."""

    root: Path
    env: Mapping[str, str]

    def _rev_parse(self, args: list[str], what: str) -> str:
        try:
            done = subprocess.run(["git", "rev-parse", *args], cwd=self.root, text=True,
                                  capture_output=True, env=runner.child_env(self.env, {}),
                                  stdin=subprocess.DEVNULL, timeout=GIT_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise JobError(f"cannot run git to resolve {what}: {exc}") from None
        sha = done.stdout.strip()
        if done.returncode != 0 or not sha:
            detail = (done.stderr.strip().splitlines() or ["git rev-parse failed"])[-1]
            raise JobError(f"cannot resolve {what} in {self.root}: {detail}")
        return sha

    def head(self) -> str:
        return self._rev_parse(["HEAD"], "git HEAD")

    def commit(self, revision: str) -> str:
        if not revision.strip() or revision.startswith("-"):
            raise JobError(f"invalid git revision {revision!r}")
        return self._rev_parse(["--verify", "--quiet", f"{revision}^{{commit}}"],
                               f"git revision {revision!r} (not a commit)")


# --- a prepared run and its checkpoint -----------------------------------------------------------


@attrs.frozen(kw_only=True, repr=False)
class Prepared:
    """A run's identity and content. ``task`` is what runs; ``recorded_*`` what is stored."""

    job: JobDefinition
    project_id: str
    specdojo: str
    trigger: Trigger
    scheduled_at: str
    inputs: dict[str, Any]
    checkpoint_before: dict[str, Any] | None
    run_id: str
    key: str
    recorded_key: str
    task: dict[str, Any]
    recorded_task: dict[str, Any]

    @property
    def identity(self) -> RunIdentity:
        """The run as its record and documents name it (the task as recorded)."""
        return RunIdentity(run_id=self.run_id, job_id=self.job.id, name=self.job.name,
                           project_id=self.project_id, trigger=self.trigger,
                           scheduled_at=self.scheduled_at, inputs=self.inputs,
                           task=self.recorded_task)

    def context(self) -> dict[str, str]:
        """Template values with ``job_run_id`` (task, checkpoint values)."""
        return job_context(job_id=self.job.id, project_id=self.project_id,
                           specdojo=self.specdojo, scheduled_at=self.scheduled_at,
                           inputs=self.inputs, checkpoint=self.checkpoint_before,
                           job_run_id=self.run_id)


def read_checkpoint(paths: ProjectPaths, job_id: str) -> dict[str, Any] | None:
    """The job's latest advanced checkpoint, folded from ITS run ledgers only (the ids are
    ``JBR-<slug>-<12 hex>``), with the same ordering rule as ``job-state.json``; records and
    checkpoints another tool wrote count as imported (SPEC §10, in memory). Runs whose files
    are unchanged since they were found ours are not read again (:mod:`runcheck`)."""
    return runcheck.checkpoint(paths, job_id)


# --- attempt owners ------------------------------------------------------------------------------


def current_owner() -> Owner:
    """This process as the owner of an attempt it starts."""
    return Owner(pid=os.getpid(), host=locks.this_host(), start=locks.process_start(os.getpid()))


def attempt_owner(paths: ProjectPaths, run_id: str, attempt: int) -> dict[str, Any] | None:
    """The ``owner`` recorded by the attempt's ``attempt_started``, if any."""
    for line in ledger.read(paths.run_ledger(run_id), torn="stop"):
        raw = line.raw
        if raw.get("type") == "attempt_started" and raw.get("attempt") == attempt:
            owner = raw.get("owner")
            return owner if isinstance(owner, dict) else None
    return None


def owner_alive(owner: Mapping[str, Any]) -> bool:
    """Whether the owner may still be running: a live process on this host with the recorded
    start time (other hosts cannot be checked: assume so)."""
    alive = locks.owner_alive(owner.get("pid"), owner.get("host"), owner.get("start"))
    return alive is None or alive


def group_path(paths: ProjectPaths, run_id: str, attempt: int) -> Path:
    """Where the process group of an attempt's command is recorded."""
    return paths.evidence_dir / run_id / f"attempt-{attempt}" / "process.json"


def record_group(paths: ProjectPaths, run_id: str, attempt: int, pgid: int) -> None:
    """Record the command's process group with the attempt, as soon as it runs (its folder
    made as the evidence's: never written through a link, :func:`.evidence.made_dir`)."""
    target = group_path(paths, run_id, attempt)
    evidence.made_dir(paths.evidence_dir, target.parent)
    groups.record(target, pgid)


def group_still_running(paths: ProjectPaths, run_id: str, attempt: int) -> int | None:
    """The recorded process group of an attempt's command if a member of it is still alive
    on this host (a command that outlived its runner), else None."""
    return groups.still_running(group_path(paths, run_id, attempt))


# --- plan and result documents -------------------------------------------------------------------


def plan_path(paths: ProjectPaths, run_id: str) -> Path:
    return paths.plans_dir / f"{run_id}-plan.md"


def result_path(paths: ProjectPaths, run_id: str) -> Path:
    return paths.results_dir / f"{run_id}-result.md"


def write_plan(paths: ProjectPaths, prep: Prepared) -> None:
    views.publish(plan_path(paths, prep.run_id), plan_markdown(prep.identity).encode())


def write_result(paths: ProjectPaths, prep: Prepared, done: AttemptDoc) -> None:
    text = result_markdown(prep.identity, done)
    views.publish(result_path(paths, prep.run_id), text.encode())
