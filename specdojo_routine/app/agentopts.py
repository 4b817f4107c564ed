"""``job run --by / --executor-by / --reporter-by / --review-by`` (SPEC §11.3, §11.4, §13):
the CLI's agent choices.

A nickname given on the command line must be a member of the roster; an unknown one (or one
given to a project without a roster) is a usage error (exit 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specdojo_routine.app import review
from specdojo_routine.app.review import ReviewOptions
from specdojo_routine.core import agent_rules, review_rules
from specdojo_routine.core.agent_rules import Roster
from specdojo_routine.core.errors import UsageError
from specdojo_routine.core.jobplan import JobRunOutcome
from specdojo_routine.execute import agentflow
from specdojo_routine.execute.agents import RosterExecutor
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import agentconfig


def check_nicknames(paths: ProjectPaths, **given: str | None) -> None:
    """Each ``--<option> NICK`` names a member of the roster."""
    named = {option: nick for option, nick in given.items() if nick}
    if not named:
        return
    config = agentconfig.load_agent_config(paths)
    for option, nick in named.items():
        flag = "--" + option.replace("_", "-")
        if config is None:
            raise UsageError(f"{flag} {nick}: the project has no roster (no members_path, "
                             "no .specdojo/agent-members.yaml)")
        if config.roster.get(str(nick)) is None:
            raise UsageError(f'{flag} "{nick}" is not a member of {config.roster.path}; '
                             "register the nickname there before use")


def cli_executor(
    paths: ProjectPaths, reporter_by: str | None, *, executor_by: str | None = None,
    by: str | None = None,
) -> RosterExecutor | None:
    """The roster executor with ``--reporter-by`` / ``--executor-by`` (per stage) or ``--by``
    (one agent for the run) applied (None without a roster); ``--by`` with a stage option is
    a usage error."""
    if by and (reporter_by or executor_by):
        raise UsageError("--by replaces the whole nomination with one agent: use it alone, or "
                         "--executor-by / --reporter-by per stage")
    check_nicknames(paths, by=by, executor_by=executor_by, reporter_by=reporter_by)
    return agentflow.default_executor(paths, reporter=reporter_by, executor=executor_by,
                                      single=by)


# --- review options (SPEC §11.3) ---------------------------------------------------------------


def review_options(paths: ProjectPaths, args: Any) -> ReviewOptions:
    """``--worktree / --review-by / --reporter-by`` of ``job run``, nicknames checked."""
    options = ReviewOptions(worktree=bool(getattr(args, "worktree", False)),
                            review_by=getattr(args, "review_by", None),
                            reporter_by=getattr(args, "reporter_by", None))
    check_nicknames(paths, review_by=options.review_by, reporter_by=options.reporter_by)
    return options


def dry_run_review(
    paths: ProjectPaths, run_id: str, task: Mapping[str, Any], options: ReviewOptions,
    env: Mapping[str, str],
) -> dict[str, Any] | None:
    """What the review flow would do: branch, worktree, review agents and their source."""
    if not review.selected(task, options, env):
        return None
    config = agentconfig.load_agent_config(paths)
    roster = config.roster if config is not None else Roster(path="")
    executor, reporter = agent_rules.review_agents(
        roster, task.get("review"), review_by=options.review_by,
        reporter_by=options.reporter_by)
    return {"branch": review_rules.exec_branch(paths.project_id, run_id),
            "worktree": str(paths.worktrees / run_id),
            "review_executor": {"nickname": executor.nickname, "source": executor.source},
            "review_reporter": {"nickname": reporter.nickname, "source": reporter.source}}


def dry_run_lines(flow: Mapping[str, Any] | None) -> list[str]:
    if flow is None:
        return []
    lines = ["review before merge:", f"  branch: {flow['branch']}",
             f"  worktree: {flow['worktree']}"]
    nobody = {"review_executor": "none: no enabled agent with mode: review, so the review "
                                 "ends blocked, not merged",
              "review_reporter": "none: the review executor writes the result"}
    for role in ("review_executor", "review_reporter"):
        pick = flow[role]
        who = pick["nickname"] or nobody[role]
        lines.append(f"  {role.replace('_', ' ')}: {who} ({pick['source']})")
    return lines


def review_summary(paths: ProjectPaths, outcome: JobRunOutcome) -> str:
    """The review lines of ``job run``: the verdict, and where a kept worktree is."""
    found = outcome.review
    if found is None or outcome.run_id is None:
        return ""
    line = f"  review: verdict {found.get('verdict') or '-'}, merged {str(found['merged']).lower()}"
    if found.get("merge_commit"):
        line += f" ({found['merge_commit']})"
    elif found.get("reason"):
        line += f": {found['reason']}"
    if not found["merged"] and found.get("commit"):
        branch = review_rules.exec_branch(paths.project_id, outcome.run_id)
        line += (f"\n  kept: branch {branch}, worktree {paths.worktrees / outcome.run_id} "
                 f"(commit {found['commit']})")
    return line + "\n"
