"""``validate``'s checks of the roster members a Job Definition runs (SPEC §11.1, §11.3,
§11.4), pure: the members it names, and those the run picks where it names none, must exist
and be launchable, found by the run's own rules (:mod:`.agent_rules`) and said in its words.
"""

from __future__ import annotations

from collections.abc import Sequence

from specdojo_routine.core.agent_rules import (
    ExecDefaults,
    Member,
    Roster,
    auto_reporter,
    executor_for_mode,
    no_launcher,
)
from specdojo_routine.core.validation import Node, Report

# --- Job Definitions name members -----------------------------------------------------------------

_NICKNAME_FIELDS: Sequence[tuple[str, ...]] = (
    ("agent", "executor"), ("agent", "reporter"), ("analysis", "agent"),
    ("review", "agent", "executor"), ("review", "agent", "reporter"))


def check_job_nicknames(
    r: Report, job: Node, roster: Roster, defaults: ExecDefaults | None = None
) -> None:
    """Every nickname a Job names must be a member of the roster (SPEC §11.1) that can be
    launched (:func:`no_launcher`; its command's own problems are reported where written)."""
    task = job.get("task")
    for field in _NICKNAME_FIELDS:
        node = task
        for key in field:
            node = node.get(key) if node is not None else None
        if node is None or not isinstance(node.value, str):
            continue
        member = roster.get(node.value)
        if member is None:
            r.error(node.where(), f'task.{".".join(field)} "{node.value}" is not a member of '
                    f"{roster.path}; register the nickname there before use")
        elif defaults is not None and (why := no_launcher(defaults, member)) is not None:
            r.error(node.where(), f'task.{".".join(field)} "{node.value}" cannot be launched: '
                    f"{why}")


def check_job_picks(r: Report, job: Node, roster: Roster, defaults: ExecDefaults) -> None:
    """The members the run picks itself where a Job names none (SPEC §11.3, §11.4), checked as
    a named one is (:func:`check_job_nicknames`): the executor of an ``edit``/``review`` task
    without ``task.agent.executor``; the review executor and reporter of a declared
    ``task.review`` without them. A pick that cannot be launched is an error in the run's
    words; no executor at all is a warning, since the run records that as its outcome (``no
    agent executor configured for mode <mode>``, a review ``blocked``) and ``job run --by`` /
    ``--review-by`` still runs it."""
    task = job.get("task")
    if task is None or not isinstance(task.value, dict):
        return
    mode = task.get("mode")
    if mode is not None and mode.value in ("edit", "review") and _unnamed(task, "agent",
                                                                         "executor"):
        where = f"{mode.label} {mode.value}"
        picked = executor_for_mode(roster, str(mode.value))
        if picked is None:
            r.warn(mode.where(), f"{where}: no agent executor configured for mode "
                   f"{mode.value}: task.agent.executor is not given and {roster.path} has no "
                   f"enabled agent with mode: {mode.value}; every run fails unless job run "
                   "--by or --executor-by names one")
        _launchable(r, mode, where, "task.agent.executor", picked, f"mode: {mode.value}",
                    defaults)
    review = task.get("review")
    if review is None or not isinstance(review.value, dict):
        return
    for role, rule, picked in (
            ("executor", "mode: review", executor_for_mode(roster, "review")),
            ("reporter", "stage_role: reporter", auto_reporter(roster))):
        if not _unnamed(review, "agent", role):
            continue
        if picked is None and role == "executor":
            r.warn(review.where(), f"{review.label}: no review agent configured (no enabled "
                   f"agent with mode: review): task.review.agent.executor is not given and "
                   f"{roster.path} has none; every review ends blocked, not merged, unless job "
                   "run --review-by names one")
        _launchable(r, review, review.label, f"task.review.agent.{role}", picked, rule,
                    defaults)


def _unnamed(node: Node, *path: str) -> bool:
    found: Node | None = node
    for key in path:
        found = found.get(key) if found is not None and isinstance(found.value, dict) else None
    return found is None or found.value is None


def _launchable(
    r: Report, node: Node, where: str, field: str, picked: Member | None, rule: str,
    defaults: ExecDefaults,
) -> None:
    if picked is not None and (why := no_launcher(defaults, picked)) is not None:
        r.error(node.where(), f'{where}: {field} is not given, and the member the run picks, '
                f'"{picked.nickname}" (the enabled agent with {rule} and the lowest '
                f"priority), cannot be launched: {why}")
