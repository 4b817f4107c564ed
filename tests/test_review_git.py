"""Review before merge against an unlucky root checkout (SPEC §11.3, §11.4): the root moved to
another branch or detached while the run worked, a file in the root in the way of the merge, a
worktree that cannot be removed after the merge, a previous worktree deleted by hand, a
symbolic link where the worktree goes. Real git, the real CLI, the fake agent as reviewer."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from specdojo_routine.execute import worktree
from tests.agenthelper import AgentProject
from tests.test_review import branches, review_job, run

COMPLETE = {"reporter:review-reporter": {"verdict": "complete"}}


@pytest.fixture
def ap(tmp_path: Path) -> AgentProject:
    project = AgentProject(tmp_path / "proj")
    project.init_git()
    return project


def test_a_previous_worktree_deleted_by_hand_does_not_block_later_attempts(
        ap: AgentProject) -> None:
    """``rm -rf`` of a kept worktree leaves git's registration behind; the next attempt prunes
    it, keeps the previous branch, and leaves no stray branch when anything fails."""
    review_job(ap, "echo $SPECDOJO_JOB_RUN_ID >> docs/log.md")
    ap.behave({"reporter:review-reporter": {"verdict": "changes-requested"}})
    first = run(ap, code=1)
    run_id = first["run_id"]
    shutil.rmtree(ap.root.parent / "worktrees" / run_id)
    ap.behave(COMPLETE)
    second = run(ap, code=0)
    assert second["attempt"] == 2 and second["review"]["merged"] is True
    assert branches(ap) == [f"exec/demo-{run_id}-attempt-1", "main"]
    assert ap.git("rev-parse", f"exec/demo-{run_id}-attempt-1") == first["review"]["commit"]


def test_a_failed_worktree_add_leaves_no_branch_behind(ap: AgentProject) -> None:
    """A previous worktree locked, then deleted by hand, is not pruned, and git refuses its
    path after creating the new branch: the attempt fails naming the path, and that branch is
    deleted again (the previous one is kept)."""
    git = worktree.Git(root=ap.root, env={"PATH": "/usr/bin:/bin"})
    head = ap.git("rev-parse", "HEAD")
    path = ap.root.parent / "worktrees" / "x"
    worktree.create(git, "exec/demo-x", path, head, keep_suffix="-attempt-0")
    ap.git("worktree", "lock", str(path))
    shutil.rmtree(path)
    with pytest.raises(worktree.GitError, match=f"cannot create the worktree {path}: .*unlock"):
        worktree.create(git, "exec/demo-x", path, head, keep_suffix="-attempt-1")
    assert branches(ap) == ["exec/demo-x-attempt-1", "main"]


def test_a_worktree_base_that_is_a_file_is_one_line(ap: AgentProject) -> None:
    (ap.root.parent / "worktrees").write_text("a file where the worktree base goes\n")
    review_job(ap, "echo x > docs/x.md")
    out = run(ap, code=1)
    assert out["state"] == "failed" and "\n" not in out["reason"]
    assert out["reason"].startswith("review flow: cannot create the worktree base ")
    assert "run.worktree_base" in out["reason"] and "runner error" not in out["reason"]


def test_a_symbolic_link_where_the_worktree_goes_is_refused(ap: AgentProject) -> None:
    """A link to the root (or any of our worktrees) is never moved or used through."""
    review_job(ap, "echo x > docs/x.md")
    dry = ap.cli("job", "run", "--job", "job-r", "--json", "--dry-run")
    run_id = dry.stdout.split('"run_id": "')[1].split('"')[0]
    (ap.root.parent / "worktrees").mkdir()
    (ap.root.parent / "worktrees" / run_id).symlink_to(ap.root)
    out = run(ap, code=1)
    assert out["state"] == "failed" and "is a symbolic link" in out["reason"]
    assert branches(ap) == ["main"]
