"""Review before merge in a worktree (SPEC §11.3, §11.4): the flow, step by step.

1. preflight: the root is a git checkout on a branch with no tracked changes (else one line,
   nothing run);
2. branch ``exec/<project>-<run>`` from the integration branch's HEAD, worktree
   ``<worktree_base>/<run>`` (a previous attempt's are kept as ``…-attempt-<n>``);
3. the task runs there (``inner``), with ``SPECDOJO_JOB_REVIEW_WORKTREE_CHILD=1``;
4. exactly the files it changed are committed (none: worktree and branch removed, done);
5. the review agents (executor, optional reporter) read the review plan naming the commit; a
   changed worktree or moved HEAD afterwards is ``changed-during-review``;
6. merge ``--no-ff`` only by the rule of :func:`review_rules.may_merge`, then clean up; else
   keep both and say why. The caller records ``review_ended``.

A stop signal (SPEC §6.5) that ends a review agent is no verdict: the review ends without one,
the commit, worktree and branch are kept, and the attempt fails with the stop as its reason.

Decisions are :mod:`specdojo_routine.core.review_rules`'; git is
:mod:`specdojo_routine.execute.worktree`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TextIO

import attrs

from specdojo_routine.core import agent_rules, agentdocs, review_rules
from specdojo_routine.core.agent_rules import AgentConfigError, Pick
from specdojo_routine.core.jobplan import RunIdentity, Verdict
from specdojo_routine.core.redact import secret_values
from specdojo_routine.core.review_rules import CHILD_ENV
from specdojo_routine.execute import agents, stop, worktree
from specdojo_routine.execute.agents import DocValues, Launch
from specdojo_routine.execute.termination import KILL_GRACE_S
from specdojo_routine.execute.worktree import Git, GitError
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import agentconfig
from specdojo_routine.store.definitions.agentconfig import AgentConfig


@attrs.frozen(kw_only=True, repr=False)
class ReviewOptions:
    """``job run --worktree / --review-by / --reporter-by``, routine ``commit: true``."""

    worktree: bool = False
    review_by: str | None = None
    reporter_by: str | None = None


def selected(task: Mapping[str, Any], options: ReviewOptions, env: Mapping[str, str]) -> bool:
    """The Job declares ``task.review``, or ``--worktree`` / ``commit: true`` asks for it; a
    nested call inside a review worktree never starts a second flow."""
    if env.get(CHILD_ENV) == "1":
        return False
    return "review" in task or options.worktree


class HasVerdict(Protocol):
    @property
    def verdict(self) -> Verdict: ...


@attrs.frozen(kw_only=True, repr=False)
class RunInfo:
    paths: ProjectPaths
    run: RunIdentity
    attempt: int
    task: Mapping[str, Any]  # the task that runs (``run.task`` is the one recorded)
    env: Mapping[str, str]  # the child environment (SPEC §7.3) of the run
    echo: TextIO | None = None
    deadline: float | None = None
    kill_grace_s: float = KILL_GRACE_S  # SIGTERM -> SIGKILL for an agent at the deadline


@attrs.frozen(kw_only=True, repr=False)
class Record:
    """The ``review_ended`` payload."""

    verdict: str | None
    merged: bool
    commit: str | None
    reason: str | None
    merge_commit: str | None = None
    worktree: str | None = None  # kept worktree (None when removed)
    branch: str | None = None  # kept branch
    skipped: bool = False  # a review agent was rate limited: the attempt is a skip
    error: bool = False  # a git step failed after the run: the attempt fails
    stopped: bool = False  # a stop ended the review: no verdict, the attempt fails (§6.5)
    notes: tuple[str, ...] = ()  # cleanup that failed after a merge (the merge stands)

    def payload(self) -> dict[str, Any]:
        out = {"verdict": self.verdict, "merged": self.merged, "commit": self.commit,
               "reason": self.reason}
        return out | ({"merge_commit": self.merge_commit} if self.merge_commit else {})


@attrs.frozen(kw_only=True, repr=False)
class Flow:
    info: RunInfo
    options: ReviewOptions
    git: Git
    branch: str
    path: Path
    into: str  # the integration branch checked out at the root when the run began


def run_reviewed(
    info: RunInfo, options: ReviewOptions, inner: Callable[[Path, Mapping[str, str]], HasVerdict]
) -> tuple[HasVerdict | None, Record | Verdict]:
    """Run the task in a worktree and review it; (inner's result, record) — or (None, failed
    verdict) when the flow could not start (nothing ran)."""
    paths = info.paths
    git = Git(root=paths.root, env=info.env)
    try:
        base = worktree.preflight(git, exclude=[paths.execution_dir, paths.routines_dir])
        branch = review_rules.exec_branch(paths.project_id, info.run.run_id)
        path = paths.worktrees / info.run.run_id
        worktree.create(git, branch, path, base.head, keep_suffix=f"-attempt-{info.attempt - 1}")
    except GitError as exc:
        return None, Verdict(status="failed", reason=f"review flow: {exc}")
    flow = Flow(info=info, options=options, git=git, branch=branch, path=path,
                into=base.branch)
    done = inner(path, {**info.env, CHILD_ENV: "1"})
    try:
        return done, _after_run(flow, done.verdict)
    except GitError as exc:  # the work is not integrated: the attempt fails, nothing is lost
        return done, Record(verdict=None, merged=False, commit=None,
                            reason=f"review flow: {exc}", worktree=str(path), branch=branch,
                            error=True)


def _after_run(flow: Flow, verdict: Verdict) -> Record:
    git, path, state = flow.git, flow.path, verdict.status
    files = worktree.changed_files(git, path)
    if not files:
        worktree.remove(git, path, flow.branch)
        return Record(verdict=None, merged=False, commit=None, reason=review_rules.NO_CHANGES)
    subject, body = review_rules.commit_message(flow.info.run.name, flow.info.run.run_id, state)
    sha = worktree.commit(git, path, files, subject, body)
    kept: dict[str, Any] = {"worktree": str(path), "branch": flow.branch}
    if not review_rules.is_reviewed(state):
        why = f"run {state}" + (f": {verdict.reason}" if verdict.reason else "")
        return Record(verdict=None, merged=False, commit=sha, reason=why, **kept)
    review, reason, skipped = _review(flow, sha)
    if review is None:  # an operator's stop, not a reviewer's verdict (SPEC §6.5, §11.3)
        return Record(verdict=None, merged=False, commit=sha, reason=reason, stopped=True,
                      **kept)
    if skipped:
        return Record(verdict=None, merged=False, commit=sha, reason=reason, skipped=True,
                      **kept)
    if review_rules.may_merge(state, review):
        message = review_rules.merge_message(flow.info.run.name, flow.info.run.run_id, str(review))
        merge_commit, failed = worktree.merge(git, flow.branch, message, into=flow.into)
        if merge_commit is not None:
            return _merged(flow, review, sha, merge_commit)
        reason = failed
    reason = reason or review_rules.not_merged_reason(state, review)
    _note(flow, reason if reason.startswith("not merged") else f"not merged: {reason}")
    return Record(verdict=review, merged=False, commit=sha, reason=reason, **kept)


def _merged(flow: Flow, review: str, sha: str, merge_commit: str) -> Record:
    """The record of a merge, which stands whatever follows: a worktree or branch that cannot
    be removed afterwards is kept, named, and noted (recording the merged work as unmerged would
    make the next ``job run`` do it again)."""
    _note(flow, f"merged as {merge_commit}")
    try:
        worktree.remove(flow.git, flow.path, flow.branch)
    except GitError as exc:
        return Record(verdict=review, merged=True, commit=sha, reason=None,
                      merge_commit=merge_commit, worktree=str(flow.path), branch=flow.branch,
                      notes=(f"merged, but not cleaned up: {exc}; remove the worktree and the "
                             "branch by hand",))
    return Record(verdict=review, merged=True, commit=sha, reason=None,
                  merge_commit=merge_commit)


def review_plan_path(paths: ProjectPaths, run_id: str) -> Path:
    return paths.plans_dir / f"{run_id}-review-plan.md"


def review_result_path(paths: ProjectPaths, run_id: str) -> Path:
    return paths.results_dir / f"{run_id}-review-result.md"


def _review(flow: Flow, sha: str) -> tuple[str | None, str | None, bool]:
    """(verdict, reason when the review itself did not come to one, rate limited?); no
    verdict, with the stop as the reason, when a stop signal ended a review agent."""
    info = flow.info
    config = agentconfig.load_agent_config(info.paths)
    if config is None:
        return "blocked", "no review agent: the project names no members_path (roster)", False
    if (refused := config.refusal()) is not None:
        return "blocked", f"review: {refused}", False
    executor, reporter = agent_rules.review_agents(
        config.roster, info.task.get("review"), review_by=flow.options.review_by,
        reporter_by=flow.options.reporter_by)
    if executor.nickname is None:
        return ("blocked", "no review agent configured (no enabled agent with mode: review)",
                False)
    plan_path = review_plan_path(info.paths, info.run.run_id)
    result_path = review_result_path(info.paths, info.run.run_id)
    try:
        failure = _launch_review(flow, config, sha, executor, reporter, plan_path, result_path)
    except AgentConfigError as exc:
        return "blocked", f"review: {exc}", False
    if failure is not None:
        why = stop.reason()  # a stop ended the agent: that is no verdict of the reviewer
        agents.stamp_result(result_path, "failed", why or failure.reason,
                            secret_values(info.env))
        return (None, why, False) if why else ("blocked", failure.reason, failure.skipped)
    if worktree.changed_files(flow.git, flow.path) or worktree.head(flow.git, flow.path) != sha:
        agents.stamp_result(result_path, "failed", review_rules.CHANGED_DURING_REVIEW,
                            secret_values(info.env))
        return (review_rules.CHANGED_DURING_REVIEW,
                "not merged: the reviewer changed the worktree (changed-during-review)", False)
    text = agents.read_result(result_path)
    if not text.strip():  # no document: nothing says what the reviewer found
        return "blocked", _no_review_result(result_path, sha), False
    verdict = agentdocs.review_verdict(text)
    good = verdict in ("complete", "complete-with-findings")
    agents.stamp_result(result_path, "succeeded" if good else "failed", f"verdict {verdict}",
                        secret_values(info.env))
    return verdict, None, False


def _no_review_result(result_path: Path, sha: str) -> str:
    """The reason, and the runner's own review result in place of the one the review agent
    removed or emptied, so that the document the run points to says what happened."""
    from specdojo_routine.store.ledger import views

    reason = (f"the review agent exited 0 but left no review result for commit {sha} (it "
              "removed or emptied the document): no verdict, treated as blocked")
    views.publish(result_path, agentdocs.set_status(f"# Review\n\n{reason}\n", "blocked",
                                                    reason).encode("utf-8"))
    return reason


def _launch_review(
    flow: Flow, config: AgentConfig, sha: str, executor: Pick, reporter: Pick,
    plan_path: Path, result_path: Path,
) -> agents.Failure | None:
    info = flow.info
    task = info.task
    what = str(task.get("description") or task.get("command") or "")
    doc = DocValues(
        project_id=info.paths.project_id, run_id=info.run.run_id, job_id=info.run.job_id,
        name=info.run.name, mode="review", scheduled_at=info.run.scheduled_at,
        description=f"Review commit {sha} on branch {flow.branch} (Job Run {info.run.run_id}):\n\n"
                    f"{what}", inputs=dict(info.run.inputs),
        targets=[str(t) for t in task.get("targets") or []],
        paths=[str(p) for p in task.get("paths") or []],
        result_ref=str(result_path.resolve()), commit=sha)
    plan_text = agents.write_documents(info.paths, doc, plan_path, result_path, review=True,
                                       agent=str(executor.nickname))
    how = Launch(paths=info.paths, config=config, run_id=info.run.run_id, attempt=info.attempt,
                 cwd=flow.path, env={**info.env, CHILD_ENV: "1"}, plan_path=plan_path,
                 result_path=result_path, deadline=info.deadline, echo=info.echo,
                 kill_grace_s=info.kill_grace_s)
    first = agents.member_of(config, str(executor.nickname))
    second = agents.member_of(config, reporter.nickname) if reporter.nickname else None
    failed = agents.pipeline(how, first, second, plan_text,
                             roles=("review-executor", "review-reporter"))
    if failed is None or failed.skipped:
        return failed
    return agents.Failure(reason=f"review failed: {failed.reason}")


def _note(flow: Flow, line: str) -> None:
    """The merge decision, appended to the review result (SPEC §11.3 step 5)."""
    path = review_result_path(flow.info.paths, flow.info.run.run_id)
    text = agents.read_result(path)
    if text:
        from specdojo_routine.store.ledger import views

        views.publish(path, (text.rstrip("\n") + f"\n\n## Merge\n\n{line}\n").encode("utf-8"))


def deadline_for(task: Mapping[str, Any]) -> float | None:
    seconds = task.get("timeout_seconds")
    return None if not seconds else time.monotonic() + float(seconds)
