"""Review before merge against an unlucky root checkout (SPEC §11.3, §11.4): the root moved to
another branch or detached while the run worked, a file in the root in the way of the merge, a
worktree that cannot be removed after the merge, a previous worktree deleted by hand, a
symbolic link where the worktree goes. Real git, the real CLI, the fake agent as reviewer."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from specdojo_routine.execute import runner, worktree
from tests.agenthelper import AgentProject
from tests.conftest import wait_for, wait_for_a_child_in_group, wait_for_text
from tests.test_review import branches, review_job, run

COMPLETE = {"reporter:review-reporter": {"verdict": "complete"}}


@pytest.fixture
def ap(tmp_path: Path) -> AgentProject:
    project = AgentProject(tmp_path / "proj")
    project.init_git()
    return project


@pytest.mark.parametrize("move", ["checkout -q feature", "checkout -q --detach"])
def test_an_approved_run_is_never_merged_into_a_root_moved_off_its_branch(
        ap: AgentProject, move: str) -> None:
    """The operator switched the root to another branch (or detached it) during the run: the
    approved commit is kept on its branch, not merged into whatever is checked out now."""
    ap.git("branch", "feature")
    before = ap.git("rev-parse", "HEAD")
    review_job(ap, f"echo new > docs/new.md; git -C {ap.root} {move}")
    ap.behave(COMPLETE)
    out = run(ap, code=1)
    assert out["state"] == "waiting" and out["review"]["merged"] is False
    assert "is no longer on main" in out["reason"] and "check out main" in out["reason"]
    assert ap.git("rev-parse", "HEAD") == before  # nothing merged anywhere
    branch = f"exec/demo-{out['run_id']}"
    assert ap.git("rev-parse", branch) == out["review"]["commit"]  # the work is kept


@pytest.mark.parametrize(("in_the_way", "said"), [
    ("new.md", "untracked working tree files would be overwritten by merge: docs/new.md."),
    ("a.md", "local changes to the following files would be overwritten by merge: docs/a.md."),
])
def test_a_merge_refused_by_the_root_says_which_file_and_what_to_do(
        ap: AgentProject, in_the_way: str, said: str) -> None:
    """An untracked file, or a change made meanwhile, in the root's checkout where the merge
    writes: the reason names the file and git's advice, not "Merge with strategy ort failed"."""
    root_file = ap.root / "docs" / in_the_way
    review_job(ap, f"echo run > docs/{in_the_way}; echo operator > {root_file}")
    ap.behave(COMPLETE)
    out = run(ap, code=1)
    assert out["state"] == "waiting"
    assert out["reason"].startswith("merge failed: ") and said in out["reason"]
    assert "Please " in out["reason"] and "\n" not in out["reason"]
    assert root_file.read_text() == "operator\n"


def test_merge_failure_reasons() -> None:
    assert worktree.merge_failure("Auto-merging a\nCONFLICT (content): Merge conflict in a\n"
                                  "Automatic merge failed") == \
        "merge conflict: CONFLICT (content): Merge conflict in a"
    many = "error: Your local changes would be overwritten:\n" + "".join(
        f"\tf{i}\n" for i in range(7)) + "Aborting\nMerge with strategy ort failed.\n"
    assert worktree.merge_failure(many) == (
        "merge failed: Your local changes would be overwritten: f0, f1, f2, f3, f4 and 2 more.")
    assert worktree.merge_failure("fatal: refusing\n") == "merge failed: fatal: refusing"


def test_a_merge_stands_when_the_worktree_cannot_be_removed_afterwards(
        ap: AgentProject) -> None:
    """The merge happened: it is recorded as merged (the run succeeded, so the next
    ``job run`` is a duplicate, not the work again); the worktree kept is named."""
    review_job(ap, 'echo x > docs/x.md; git worktree lock "$PWD"')
    ap.behave(COMPLETE)
    out = run(ap, code=0)
    run_id = out["run_id"]
    assert out["state"] == "succeeded" and out["review"]["merged"] is True
    assert out["review"]["merge_commit"] == ap.git("rev-parse", "HEAD")
    assert out["reason"].startswith("merged, but not cleaned up: cannot remove the worktree ")
    assert ap.view(run_id)["review"]["merged"] is True
    assert ap.view(run_id)["state"] == "succeeded"
    again = run(ap, code=0)
    assert again["duplicate_complete"] is True


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


@pytest.mark.parametrize("status", ["succeeded", "failed"])
def test_resolving_an_interrupted_reviewed_run_names_the_worktree_it_left(
        ap: AgentProject, status: str) -> None:
    """The runner died mid-task: its worktree holds work never committed nor merged. `job
    resolve --status succeeded` records the operator's word (SPEC §7.3) but merges nothing,
    so a `warning:` line names the worktree and how to remove it; `failed` needs no word."""
    marker = ap.root.parent / "task.pid"
    review_job(ap, f"echo new > docs/new.md; echo $$ > {marker}; sleep 30")
    proc = ap.popen("job", "run", "--job", "job-r")
    pgid = int(wait_for_text(marker))
    wait_for_a_child_in_group(pgid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    os.killpg(pgid, signal.SIGKILL)
    wait_for(lambda: not runner.group_alive(pgid))
    [ledger] = (ap.root / "execution" / "jobs" / "runs").glob("*.jsonl")
    kept = ap.root.parent / "worktrees" / ledger.stem
    assert (kept / "docs" / "new.md").exists()
    done = ap.cli("job", "resolve", ledger.stem, "--status", status, "--note", "checked")
    assert 0 == done.returncode, done.stderr
    if status == "failed":
        assert "" == done.stderr
        return
    assert done.stderr.startswith(f"warning: the interrupted attempt's review worktree {kept} "
                                  "is kept and its work was never merged"), done.stderr
    assert f"git branch -D exec/demo-{ledger.stem}" in done.stderr
    assert 1 == len(done.stderr.splitlines())


@pytest.mark.parametrize("how", ["remove", "empty"])
def test_a_review_agent_that_leaves_no_result_blocks_and_the_runner_writes_one(
        ap: AgentProject, how: str) -> None:
    """The review agent exits 0 after removing (or emptying) its review result: nothing says
    what it found, so the work is not merged (blocked, the reason says why) and the review
    result the run points to is the runner's, saying so; there was none to read."""
    review_job(ap, "echo new > docs/new.md")
    ap.behave({"reporter:review-reporter": {"result": how}})
    out = run(ap, code=1)
    assert (out["state"], out["review"]["merged"]) == ("waiting", False), out
    assert "left no review result" in out["reason"], out["reason"]
    written = ap.root / "execution" / "exec" / "results" / f"{out['run_id']}-review-result.md"
    assert "status: blocked" in written.read_text() and "left no review result" in \
        written.read_text()
