"""The pure rules of agents' documents and of review before merge (SPEC §11.1, §11.3)."""

from __future__ import annotations

import pytest

from specdojo_routine.core import agent_rules, agentdocs, review_rules
from specdojo_routine.core.agent_rules import Member, Roster
from specdojo_routine.core.event_checks import RUN_STATUSES
from specdojo_routine.core.job_events import REVIEW_VERDICTS

GOOD = {("succeeded", "complete"), ("succeeded", "complete-with-findings"),
        ("partial", "complete-with-findings")}


@pytest.mark.parametrize("state", [*RUN_STATUSES, "waiting"])
@pytest.mark.parametrize("verdict", [*REVIEW_VERDICTS, None])
def test_merge_rule_is_exactly_seed_002s(state: str, verdict: str | None) -> None:
    assert review_rules.may_merge(state, verdict) is ((state, verdict) in GOOD)


KEPT = {"verdict": "blocked", "merged": False, "commit": "e" * 40, "reason": "not merged"}
MERGED = {**KEPT, "verdict": "complete", "merged": True, "reason": None}
NOTHING = {"verdict": None, "merged": False, "commit": None, "reason": "no changes"}


@pytest.mark.parametrize(("review", "integrated"), [
    (None, True), (MERGED, True), (NOTHING, True), (KEPT, False)])
@pytest.mark.parametrize("state", ["succeeded", "partial", "noop", "failed"])
def test_a_run_waits_exactly_when_its_reviewed_work_is_not_integrated(
    review: dict[str, object] | None, integrated: bool, state: str,
) -> None:
    """One rule for the checkpoint and the run's state: only integrated work advances the
    checkpoint, and a reviewed state (succeeded, partial) whose commit is not integrated
    waits; noop and failed keep their own state either way (SPEC §11.4)."""
    assert review_rules.integrated(review) is integrated
    waits = state in ("succeeded", "partial") and not integrated
    assert review_rules.state_after(state, review) == ("waiting" if waits else state)


def test_porcelain_paths_include_both_sides_of_a_rename() -> None:
    out = " M docs/a.md\0R  new name.md\0old name.md\0?? untracked/x.txt\0 D gone.md\0"
    assert review_rules.parse_porcelain(out) == [
        " M docs/a.md"[3:], "gone.md", "new name.md", "old name.md", "untracked/x.txt"]


ROSTER = Roster(path="m.yaml", members=(
    Member(nickname="rev-a", mode="review", priority=5, index=0),
    Member(nickname="rev-b", mode="review", priority=2, index=1),
    Member(nickname="rev-off", mode="review", priority=1, disabled=True, index=2),
    Member(nickname="rep", mode="edit", stage_role="reporter", priority=3, index=3)))


def test_review_agents_resolution_order() -> None:
    auto = agent_rules.review_agents(ROSTER, {}, review_by=None, reporter_by=None)
    assert [(p.nickname, p.source) for p in auto] == [("rev-b", "auto"), ("rep", "auto")]
    task = {"agent": {"executor": "rev-a", "reporter": "rev-b"}}
    named = agent_rules.review_agents(ROSTER, task, review_by=None, reporter_by=None)
    assert [(p.nickname, p.source) for p in named] == [
        ("rev-a", "task.review.agent.executor"), ("rev-b", "task.review.agent.reporter")]
    cli = agent_rules.review_agents(ROSTER, task, review_by="x", reporter_by="y")
    assert [(p.nickname, p.source) for p in cli] == [("x", "--review-by"), ("y", "--reporter-by")]
    bare = agent_rules.review_agents(Roster(path="m"), None, review_by=None, reporter_by=None)
    assert [(p.nickname, p.source) for p in bare] == [(None, "auto"), (None, "none")]


def test_commit_message_names_run_and_state() -> None:
    subject, body = review_rules.commit_message("Weekly", "JBR-w-0123456789ab", "partial")
    assert subject == "chore(routine): Weekly (JBR-w-0123456789ab, partial)"
    assert "JBR-w-0123456789ab" in body and "partial" in body


DOC = """---
specdojo:
  id: p:xrr-x
  status: pending
  verdict: complete-with-findings
---

# Review result

recommendation: reject
"""


def test_frontmatter_verdict_wins_over_the_recommendation() -> None:
    assert agentdocs.review_verdict(DOC) == "complete-with-findings"
    assert agentdocs.review_verdict(DOC.replace("  verdict: complete-with-findings\n", "")) \
        == "blocked"
    top = "---\nverdict: changes-requested\n---\nbody\n"
    assert agentdocs.review_verdict(top) == "changes-requested"
    assert agentdocs.review_verdict("no frontmatter\nrecommendation: revise\n") == \
        "changes-requested"
    assert agentdocs.review_verdict("nothing here") == "blocked"


def test_set_status_replaces_the_status_and_records_the_reason() -> None:
    stamped = agentdocs.set_status(DOC, "blocked", 'said "no"', completed_at="2026-01-01")
    assert "status: pending" not in stamped
    assert '  status: blocked\n  completed_at: "2026-01-01"\n  blocked_reason: "said \\"no\\""' \
        in stamped
    assert stamped.endswith("recommendation: reject\n")
    assert agentdocs.frontmatter_value(stamped, "status") == "blocked"


@pytest.mark.parametrize(("text", "expected"), [
    (f"x\n{agentdocs.WORK_MARKER}\n", ("failed", agentdocs.UNFILLED_REASON)),
    (f"x\n{agentdocs.FILES_MARKER}\n", ("failed", agentdocs.UNFILLED_REASON)),
    ("---\nspecdojo:\n  outcome: noop\n---\ndone\n", ("noop", None)),
    ("---\noutcome: NOOP\n---\ndone\n", ("noop", None)),
    ("---\nspecdojo:\n  outcome: changed\n---\ndone\n", ("succeeded", None)),
])
def test_agent_outcome_from_the_result(text: str, expected: tuple[str, str | None]) -> None:
    assert agentdocs.agent_outcome(text) == expected


def test_fill_does_not_rescan_values() -> None:
    assert agentdocs.fill("_JOB_ID_ _RUN_ID_", {"_JOB_ID_": "_RUN_ID_", "_RUN_ID_": "r"}) == \
        "_RUN_ID_ r"
