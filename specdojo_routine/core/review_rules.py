"""Review before merge (SPEC §11.3, §11.4), pure: names and the merge rule.

The git work itself is :mod:`specdojo_routine.execute.worktree`'s; the flow that strings the
steps together is :mod:`specdojo_routine.app.review`'s. Everything here is a function of its
arguments, so every combination of run state and verdict is testable without a repository.
Which agents review is :func:`specdojo_routine.core.agent_rules.review_agents`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specdojo_routine.core.model import Result

CHILD_ENV = "SPECDOJO_JOB_REVIEW_WORKTREE_CHILD"
MERGING_VERDICTS = {"succeeded": ("complete", "complete-with-findings"),
                    "partial": ("complete-with-findings",)}
CHANGED_DURING_REVIEW = "changed-during-review"
NO_CHANGES = "no changes"


def exec_branch(project_id: str, run_id: str) -> str:
    return f"exec/{project_id}-{run_id}"


def commit_message(job_name: str, run_id: str, state: str) -> tuple[str, str]:
    """(subject, body) of the exec branch's commit."""
    return (f"chore(routine): {job_name} ({run_id}, {state})",
            f"Job Run: {run_id}\nState: {state}\n")


def merge_message(job_name: str, run_id: str, verdict: str) -> str:
    return f"Merge {run_id}: {job_name} (review: {verdict})"


def may_merge(state: str, verdict: str | None) -> bool:
    """Merge only a succeeded run with complete(-with-findings), or a partial run with
    complete-with-findings (seed 002 §4)."""
    return verdict is not None and verdict in MERGING_VERDICTS.get(state, ())


def not_merged_reason(state: str, verdict: str | None) -> str:
    return f"not merged: run {state}, review verdict {verdict or 'none'}"


def is_reviewed(state: str) -> bool:
    """Only a run that may be merged is reviewed (a failed run keeps its branch)."""
    return state in MERGING_VERDICTS


def parse_porcelain(output: str) -> list[str]:
    """Paths of ``git status --porcelain=v1 -z`` output (both sides of a rename)."""
    paths: list[str] = []
    entries = output.split("\0")
    index = 0
    while index < len(entries):
        entry = entries[index]
        index += 1
        if len(entry) < 4:
            continue
        paths.append(entry[3:])
        if entry[0] in "RC":  # the next entry is the rename's source
            if index < len(entries) and entries[index]:
                paths.append(entries[index])
            index += 1
    return sorted(set(paths))




def integrated(review: Mapping[str, Any] | None) -> bool:
    """Whether a run's work is in the integration branch (or was never apart from it), asked
    of its last review as recorded: ``review_ended``'s payload, which is also the view's
    ``review``. No review, a merged commit or no commit at all (nothing changed) is integrated;
    a commit kept unmerged (not reviewed, not approved, a conflict, a rate-limited reviewer)
    is not. Only integrated work advances the checkpoint, when the attempt ends and when a
    later call records a checkpoint a crash lost, so both ask this one question."""
    return review is None or bool(review.get("merged")) or not review.get("commit")


def state_after(status: str, review: Mapping[str, Any] | None) -> str:
    """The run's state after its attempt: ``waiting`` when a reviewed commit was not merged."""
    return "waiting" if status in MERGING_VERDICTS and not integrated(review) else status


def routine_result(state: str | None, review: Mapping[str, Any] | None) -> Result | None:
    """The routine action's result for a reviewed run (None: not a reviewed run)."""
    if review is None:
        return None
    if state == "waiting":
        return Result.FAILURE
    if review.get("merged") and state == "partial":
        return Result.PARTIAL
    return None
