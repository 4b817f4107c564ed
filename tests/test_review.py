"""Review before merge in a worktree (SPEC §11.3, §11.4), with real git repositories, the real
CLI and the fake agent CLI as reviewer."""

from __future__ import annotations

import copy
import json
import shlex
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from specdojo_routine.execute import worktree
from tests import jobhelper
from tests.agenthelper import FAKE_AGENT, AgentProject, alive, terminated_once_its_child_runs


@pytest.fixture
def ap(tmp_path: Path) -> AgentProject:
    project = AgentProject(tmp_path / "proj")
    project.init_git()
    return project


def review_job(ap: AgentProject, command: str, review: str = "{}", extra: str = "") -> None:
    ap.job("job-r", f"""\
name: Reviewed job
task:
  mode: command
  command: '{command}'
  partial_exit_code: [3]
  review: {review}
{extra}run: {{idempotency_key: "{{{{job_id}}}}"}}
""")


def run(ap: AgentProject, *args: str, code: int | None = None,
        env: dict[str, str] | None = None) -> dict[str, Any]:
    done = ap.cli("job", "run", "--job", "job-r", "--json", *args, env=env)
    if code is not None:
        assert done.returncode == code, done.stdout + done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def branches(ap: AgentProject) -> list[str]:
    return ap.git("branch", "--format=%(refname:short)").splitlines()


def events(ap: AgentProject, run_id: str) -> list[dict[str, Any]]:
    path = ap.root / "execution" / "jobs" / "runs" / f"{run_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


WRITE = "echo new > docs/new.md; echo child=$SPECDOJO_JOB_REVIEW_WORKTREE_CHILD > docs/env.md"


def test_merged_run_end_to_end(ap: AgentProject) -> None:
    before = ap.git("rev-parse", "HEAD")
    review_job(ap, WRITE)
    ap.behave({"reporter:review-reporter": {"verdict": "complete"}})
    out = run(ap, code=0)
    run_id = out["run_id"]
    assert out["state"] == "succeeded" and out["review"]["merged"] is True
    # the integration branch carries exactly one merge commit of the exec commit
    assert ap.git("rev-list", "--count", f"{before}..HEAD") == "2"
    parents = ap.git("log", "-1", "--format=%P").split()
    assert parents[0] == before and parents[1] == out["review"]["commit"]
    assert out["review"]["merge_commit"] == ap.git("rev-parse", "HEAD")
    subject, body = ap.git("log", "-1", "--format=%s%n%b", parents[1]).split("\n", 1)
    assert subject == f"chore(routine): Reviewed job ({run_id}, succeeded)"
    assert run_id in body and "succeeded" in body
    assert ap.git("show", "--name-only", "--format=", parents[1]).split() == [
        "docs/env.md", "docs/new.md"]  # exactly the files the run changed
    assert (ap.root / "docs" / "env.md").read_text() == "child=1\n"
    # cleanup: no worktree, no exec branch
    assert not (ap.root.parent / "worktrees" / run_id).exists()
    assert branches(ap) == ["main"]
    # the reviewers ran in the worktree, read the plan naming the commit, saw the child flag
    rev_exec, rev_report = ap.launches()
    assert (rev_exec["nickname"], rev_exec["role"]) == ("reviewer", "review-executor")
    assert (rev_report["nickname"], rev_report["role"]) == ("reporter", "review-reporter")
    assert rev_exec["cwd"] == str((ap.root.parent / "worktrees" / run_id).resolve())
    assert rev_exec["env"]["SPECDOJO_JOB_REVIEW_WORKTREE_CHILD"] == "1"
    assert out["review"]["commit"] in rev_exec["stdin"]
    plan = ap.root / "execution" / "exec" / "plans" / f"{run_id}-review-plan.md"
    assert rev_exec["stdin"] == plan.read_text()
    # the ledger and the view
    ended = [e for e in events(ap, run_id) if e["type"] == "review_ended"]
    assert ended == [{**ended[0], "verdict": "complete", "merged": True,
                      "commit": out["review"]["commit"], "reason": None,
                      "merge_commit": out["review"]["merge_commit"]}]
    view = ap.view(run_id)
    assert view["state"] == "succeeded" and view["review"]["merged"] is True
    assert view["review"]["attempt"] == 1  # the attempt reviewed (SPEC §7.6)
    result = ap.result_text(run_id, "review-result")
    assert "status: complete" in result and "merged as" in result
    assert ap.cli("fold", "--check").returncode == 0


STATES = {"succeeded": ("echo x > docs/x.md", 0), "partial": ("echo x > docs/x.md; exit 3", 3)}
VERDICTS = ["complete", "complete-with-findings", "changes-requested", "blocked"]
MERGES = {("succeeded", "complete"), ("succeeded", "complete-with-findings"),
          ("partial", "complete-with-findings")}


@pytest.mark.parametrize("state", list(STATES))
@pytest.mark.parametrize("verdict", VERDICTS)
def test_every_state_and_verdict(ap: AgentProject, state: str, verdict: str) -> None:
    before = ap.git("rev-parse", "HEAD")
    review_job(ap, STATES[state][0])
    ap.behave({"reporter:review-reporter": {"verdict": verdict}})
    merged = (state, verdict) in MERGES
    out = run(ap, code=0 if merged and state == "succeeded" else 1)
    run_id = out["run_id"]
    assert out["review"]["verdict"] == verdict and out["review"]["merged"] is merged
    kept = ap.root.parent / "worktrees" / run_id
    if merged:
        assert out["state"] == state
        assert ap.git("rev-list", "--count", f"{before}..HEAD") == "2"
        assert not kept.exists() and branches(ap) == ["main"]
    else:
        assert out["state"] == "waiting"
        assert out["reason"] == f"not merged: run {state}, review verdict {verdict}"
        assert ap.git("rev-parse", "HEAD") == before  # untouched
        assert kept.is_dir() and (kept / "docs" / "x.md").exists()
        assert f"exec/demo-{run_id}" in branches(ap)
        assert ap.view(run_id)["review"]["reason"] == out["reason"]
        assert out["reason"] in ap.result_text(run_id, "review-result")
        assert ap.cli("fold", "--check").returncode == 0  # waiting is a fold of the ledger


@pytest.mark.parametrize(("recommendation", "verdict"), [
    ("approve", "complete"), ("revise", "changes-requested"), ("reject", "blocked")])
def test_upstream_recommendation_is_read_without_verdict(
        ap: AgentProject, recommendation: str, verdict: str) -> None:
    review_job(ap, "echo y > docs/y.md")
    ap.behave({"reviewer:review-executor": {"fill": False},
               "reporter:review-reporter": {"recommendation": recommendation}})
    assert run(ap)["review"]["verdict"] == verdict


def test_no_verdict_and_no_recommendation_is_blocked(ap: AgentProject) -> None:
    review_job(ap, "echo y > docs/y.md")
    ap.behave({"reviewer:review-executor": {"fill": False},
               "reporter:review-reporter": {"fill": False}})
    assert run(ap, code=1)["review"]["verdict"] == "blocked"


def test_changed_during_review(ap: AgentProject) -> None:
    before = ap.git("rev-parse", "HEAD")
    review_job(ap, "echo y > docs/y.md")
    ap.behave({"reviewer:review-executor": {"write": {"docs/sneaky.md": "x"}},
               "reporter:review-reporter": {"verdict": "complete"}})
    out = run(ap, code=1)
    assert out["state"] == "waiting"
    assert out["review"]["verdict"] == "changed-during-review"
    assert ap.git("rev-parse", "HEAD") == before


def test_a_reviewer_that_moves_head_is_changed_during_review(ap: AgentProject) -> None:
    """SPEC §11.4: ``changed-during-review`` is a worktree that is not clean after the review
    *or whose HEAD moved*: a reviewer that commits (leaving the worktree clean) is not merged."""
    commit = "git -c user.name=t -c user.email=t@e commit -q --allow-empty -m sneaky"
    agent = " ".join(shlex.quote(str(x)) for x in (sys.executable, FAKE_AGENT, "committer",
                                                   ap.control))
    with (ap.root / "members.yaml").open("a") as roster:
        roster.write(f"  - nickname: committer\n    type: agent\n    mode: review\n"
                     f"    command: {json.dumps(commit + ' && ' + agent)}\n")
    ap.git("commit", "-qam", "a reviewer that commits")
    before = ap.git("rev-parse", "HEAD")
    review_job(ap, "echo y > docs/y.md", review="{agent: {executor: committer}}")
    ap.behave({"reporter:review-reporter": {"verdict": "complete"}})
    out = run(ap, code=1)
    first = ap.launches()[0]
    assert (first["nickname"], first["role"]) == ("committer", "review-executor")
    assert (out["state"], out["review"]["verdict"]) == ("waiting", "changed-during-review")
    assert out["review"]["merged"] is False
    assert ap.git("rev-parse", "HEAD") == before


def test_worktree_base_comes_from_the_project_config(tmp_path: Path) -> None:
    """SPEC §11.3.1 / §11.4: the worktree is ``<worktree_base>/<run-id>`` with
    ``projects.<id>.run.worktree_base`` relative to the root (``../worktrees`` only by default)."""
    ap = AgentProject(tmp_path / "proj", run={"worktree_base": "../custom-trees"})
    ap.init_git()
    review_job(ap, "echo k > docs/k.md")
    ap.behave({"reporter:review-reporter": {"verdict": "changes-requested"}})
    out = run(ap, code=1)
    kept = tmp_path / "custom-trees" / out["run_id"]
    assert out["state"] == "waiting" and (kept / "docs" / "k.md").read_text() == "k\n"
    assert ap.launches()[0]["cwd"] == str(kept.resolve())
    assert not (tmp_path / "worktrees").exists()


def test_no_changes_cleans_up_and_reviews_nothing(ap: AgentProject) -> None:
    review_job(ap, "true")
    out = run(ap, code=0)
    assert out["state"] == "succeeded"
    assert out["review"] == {"verdict": None, "merged": False, "commit": None,
                             "reason": "no changes"}
    assert ap.launches() == [] and branches(ap) == ["main"]
    assert not (ap.root.parent / "worktrees" / out["run_id"]).exists()


def test_a_failed_run_is_committed_kept_and_not_reviewed(ap: AgentProject) -> None:
    before = ap.git("rev-parse", "HEAD")
    review_job(ap, "echo z > docs/z.md; exit 9")
    out = run(ap, code=1)
    assert out["state"] == "failed" and ap.launches() == []
    assert out["review"]["merged"] is False and out["review"]["commit"]
    assert ap.git("rev-parse", "HEAD") == before
    assert (ap.root.parent / "worktrees" / out["run_id"] / "docs" / "z.md").exists()


def test_precondition_skip_leaves_no_branch_and_no_worktree(ap: AgentProject) -> None:
    review_job(ap, "echo z > docs/z.md", extra="  precondition: {command: 'true', "
               "skip_when: empty-output}\n")
    out = run(ap, code=0)
    assert out["skipped"] is True and out["run_id"] is None
    assert branches(ap) == ["main"] and not (ap.root.parent / "worktrees").exists()
    assert not (ap.root / "execution").exists()


def test_review_agent_resolution_order(ap: AgentProject) -> None:
    review_job(ap, "echo a > docs/q.md", review="{agent: {executor: analyst}}")
    ap.behave({"analyst:review-executor": {"verdict": "complete"},
               "reviewer-2:review-executor": {"verdict": "complete"}})
    dry = ap.cli("job", "run", "--job", "job-r", "--dry-run")
    assert "review executor: analyst (task.review.agent.executor)" in dry.stdout
    assert "review reporter: reporter (auto)" in dry.stdout
    assert "branch: exec/demo-JBR-r-" in dry.stdout and "worktree: " in dry.stdout
    dry = ap.cli("job", "run", "--job", "job-r", "--dry-run", "--review-by", "reviewer-2",
                 "--reporter-by", "own-command")
    assert "review executor: reviewer-2 (--review-by)" in dry.stdout
    assert "review reporter: own-command (--reporter-by)" in dry.stdout
    run(ap, "--review-by", "reviewer-2", "--reporter-by", "own-command", code=0)
    assert [(x["nickname"], x["role"]) for x in ap.launches()] == [
        ("reviewer-2", "review-executor"), ("own-command", "review-reporter")]


def test_automatic_review_agents(ap: AgentProject) -> None:
    review_job(ap, "echo a > docs/q.md")
    ap.behave({"reporter:review-reporter": {"verdict": "complete"}})
    run(ap, code=0)
    assert [(x["nickname"], x["role"]) for x in ap.launches()] == [
        ("reviewer", "review-executor"), ("reporter", "review-reporter")]


def test_a_conflicting_merge_is_aborted(ap: AgentProject) -> None:
    """While the run works in its worktree, the integration branch gets a conflicting commit;
    the merge is aborted and the integration branch carries only that commit."""
    root = str(ap.root)
    command = (f"echo ours > docs/a.md; cd {root} && echo theirs > docs/a.md && "
               "git -c user.name=t -c user.email=t@e commit -qam theirs")
    review_job(ap, command)
    ap.behave({"reporter:review-reporter": {"verdict": "complete"}})
    out = run(ap, code=1)
    assert out["state"] == "waiting"
    assert out["reason"].startswith("merge conflict: ")
    assert ap.git("log", "-1", "--format=%s") == "theirs"
    assert ap.git("status", "--porcelain", "--untracked-files=no") == ""
    assert not (ap.root / ".git" / "MERGE_HEAD").exists()
    assert (ap.root / "docs" / "a.md").read_text() == "theirs\n"


def test_dirty_root_fails_before_anything_runs(ap: AgentProject) -> None:
    (ap.root / "docs" / "a.md").write_text("dirty\n")
    review_job(ap, "echo ran > ran.txt")
    out = run(ap, code=1)
    assert out["state"] == "failed"
    assert out["reason"].startswith("review flow: the checkout at ")
    assert "uncommitted changes" in out["reason"] and "\n" not in out["reason"]
    assert not (ap.root / "ran.txt").exists() and branches(ap) == ["main"]


def test_detached_root_fails(ap: AgentProject) -> None:
    ap.git("checkout", "-q", "--detach")
    review_job(ap, "echo ran > ran.txt")
    out = run(ap, code=1)
    assert "detached" in out["reason"] and not (ap.root / "ran.txt").exists()


def test_no_repository_fails(tmp_path: Path) -> None:
    ap = AgentProject(tmp_path / "plain")
    review_job(ap, "echo ran > ran.txt")
    done = ap.cli("job", "run", "--job", "job-r", "--json",
                  env=ap.env(GIT_CEILING_DIRECTORIES=str(tmp_path)))
    out = json.loads(done.stdout)
    assert done.returncode == 1 and "not inside a git repository" in out["reason"]


def test_a_waiting_run_retries_on_a_fresh_branch_keeping_the_old_one(ap: AgentProject) -> None:
    review_job(ap, "echo $SPECDOJO_JOB_RUN_ID >> docs/log.md")
    ap.behave({"reporter:review-reporter": {"verdict": "changes-requested"}})
    first = run(ap, code=1)
    run_id = first["run_id"]
    ap.behave({"reporter:review-reporter": {"verdict": "complete"}})
    second = run(ap, code=0)
    assert second["attempt"] == 2 and second["review"]["merged"] is True
    assert f"exec/demo-{run_id}-attempt-1" in branches(ap)
    assert ap.git("rev-parse", f"exec/demo-{run_id}-attempt-1") == first["review"]["commit"]
    assert (ap.root.parent / "worktrees" / f"{run_id}-attempt-1").is_dir()
    assert ap.view(run_id)["state"] == "succeeded"


def test_rate_limited_reviewer_is_a_skip(ap: AgentProject) -> None:
    review_job(ap, "echo y > docs/y.md")
    ap.behave({"reviewer:review-executor": {"exit": 42}})
    out = run(ap, code=0)
    assert (out["state"], out["skipped"], out["reason"]) == (
        "failed", True, "rate limited (exit code 42)")


def test_worktree_flag_selects_the_flow_for_a_job_without_review(ap: AgentProject) -> None:
    ap.job("job-r", """\
name: Plain
task: {mode: command, command: "echo w > docs/w.md"}
run: {idempotency_key: "{{job_id}}"}
""")
    ap.behave({"reporter:review-reporter": {"verdict": "complete"}})
    plain_dry = ap.cli("job", "run", "--job", "job-r", "--dry-run")
    assert "review before merge" not in plain_dry.stdout
    out = run(ap, "--worktree", code=0)
    assert out["review"]["merged"] is True
    assert "w.md" in ap.git("show", "--name-only", "--format=", "HEAD^2")


def test_edit_job_reviewed_with_two_stage_executor(ap: AgentProject) -> None:
    ap.edit_job("job-e", agent="{executor: editor, reporter: reporter}",
                review="{agent: {executor: reviewer}}")
    ap.behave({"editor:executor": {"write": {"docs/edited.md": "edited\n"}},
               "reporter:review-reporter": {"verdict": "complete"}})
    done = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "review: verdict complete, merged true" in done.stdout
    assert (ap.root / "docs" / "edited.md").read_text() == "edited\n"
    roles = [(x["nickname"], x["role"]) for x in ap.launches()]
    assert roles == [("editor", "executor"), ("reporter", "reporter"),
                     ("reviewer", "review-executor"), ("reporter", "review-reporter")]


def test_kept_worktree_is_shown_by_job_run(ap: AgentProject) -> None:
    review_job(ap, "echo k > docs/k.md")
    ap.behave({"reporter:review-reporter": {"verdict": "blocked"}})
    done = ap.cli("job", "run", "--job", "job-r")
    assert done.returncode == 1
    assert "waiting" in done.stdout and "kept: branch exec/demo-JBR-r-" in done.stdout
    subprocess.run(["git", "worktree", "list"], cwd=ap.root, check=True)


def test_routine_commit_true_and_a_merged_partial_run_is_partial(ap: AgentProject) -> None:
    """The routine action's legacy ``commit: true`` selects the flow for a Job without
    ``task.review``; a merged partial run makes the routine result ``partial`` (exit 0)."""
    ap.job("job-p", """\
name: Partial job
task: {mode: command, command: "echo p > docs/p.md; exit 3", partial_exit_code: [3]}
run: {idempotency_key: "{{job_id}}"}
""")
    ap.routine("rtn-p", "interval: 1h\naction: {kind: job, job: job-p, commit: true}\n")
    ap.behave({"reporter:review-reporter": {"verdict": "complete-with-findings"}})
    done = ap.cli("run", "--id", "rtn-p", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["results"][0]["result"] == "partial"
    state = ap.state()["routines"]["rtn-p"]
    assert (state["status"], state["last_result"]) == ("partial", "partial")
    assert "p.md" in ap.git("show", "--name-only", "--format=", "HEAD^2")
    assert ap.cli("list").returncode == 0


def test_routine_waiting_run_is_a_failure_with_the_reason(ap: AgentProject) -> None:
    review_job(ap, "echo q > docs/q.md")
    ap.routine("rtn-w", "interval: 1h\naction: {kind: job, job: job-r}\n")
    ap.behave({"reporter:review-reporter": {"verdict": "changes-requested"}})
    done = ap.cli("run", "--id", "rtn-w")
    assert done.returncode == 1
    state = ap.state()["routines"]["rtn-w"]
    assert state["last_result"] == "failure"
    assert "not merged: run succeeded, review verdict changes-requested" in state["last_reason"]


def test_a_nested_call_inside_the_worktree_starts_no_second_flow(ap: AgentProject) -> None:
    import shlex
    import sys
    ap.job("job-inner", """\
name: Inner
task: {mode: command, command: "true", review: {}}
run: {idempotency_key: "{{job_id}}"}
""")
    nested = (f"{shlex.quote(sys.executable)} -m specdojo_routine job run --job job-inner "
              f"--root {shlex.quote(str(ap.root))} --json > inner.json; echo o > docs/o.md")
    review_job(ap, nested)
    ap.behave({"reporter:review-reporter": {"verdict": "complete"}})
    out = run(ap, code=0)
    inner = json.loads((ap.root / "inner.json").read_text())
    assert inner["state"] == "succeeded" and "review" not in inner
    assert out["review"]["merged"] is True


def test_unknown_review_by_is_a_usage_error(ap: AgentProject) -> None:
    review_job(ap, "true")
    done = ap.cli("job", "run", "--job", "job-r", "--review-by", "ghost")
    assert done.returncode == 2
    assert done.stderr.startswith('error: --review-by "ghost" is not a member of members.yaml')


def test_the_commit_holds_exactly_the_changed_files(ap: AgentProject) -> None:
    """Deleted, new (nested, untracked) and modified files are committed; ignored ones not."""
    (ap.root / "docs" / "keep.md").write_text("keep\n")
    ap.git("add", "-A")
    ap.git("commit", "-qm", "more")
    review_job(ap, "rm docs/a.md; mkdir -p docs/deep/er; echo n > docs/deep/er/n.md; "
               "echo m >> docs/keep.md; mkdir -p execution; echo i > execution/ignored.txt")
    ap.behave({"reporter:review-reporter": {"verdict": "changes-requested"}})
    out = run(ap, code=1)
    commit = out["review"]["commit"]
    changed = ap.git("show", "--name-status", "--format=", commit).splitlines()
    assert sorted(changed) == ["A\tdocs/deep/er/n.md", "D\tdocs/a.md", "M\tdocs/keep.md"]


def test_a_noop_run_with_changes_is_kept_not_reviewed(ap: AgentProject) -> None:
    ap.job("job-r", """\
name: Noop with changes
task: {mode: command, command: "echo n > docs/n.md; exit 4", noop_exit_code: 4, review: {}}
run: {idempotency_key: "{{job_id}}"}
""")
    out = run(ap, code=0)
    assert out["state"] == "noop" and ap.launches() == []
    assert out["review"]["merged"] is False and out["review"]["commit"]
    assert out["review"]["reason"].startswith("run noop")


def test_an_unmerged_noop_run_never_advances_the_checkpoint(ap: AgentProject) -> None:
    """SPEC §7.3, §11.4: a noop run with changes keeps its commit unmerged, so its work is not
    in the integration branch and the Job's checkpoint stays, both when the attempt ends and
    when a later `job run` finds the run complete: a duplicate records a checkpoint only a
    crash lost, never one the attempt rightly withheld."""
    ap.job("job-r", """\
name: Noop with changes
task: {mode: command, command: "echo n > docs/n.md; exit 4", noop_exit_code: 4, review: {}}
run: {idempotency_key: "{{job_id}}"}
checkpoint: {values: {mark: "{{job_run_id}}"}}
""")

    def checkpoint() -> tuple[Any, Any]:
        """(the run's checkpoint_after per `job show`, the Job's checkpoint per `job list`)."""
        shown = json.loads(ap.cli("job", "show", run_id, "--json").stdout)
        jobs = json.loads(ap.cli("job", "list", "--json").stdout)["jobs"]
        return shown.get("checkpoint_after"), next(j for j in jobs if j["id"] == "job-r")[
            "checkpoint"]

    out = run(ap, code=0)
    run_id = str(out["run_id"])
    assert out["state"] == "noop" and out["review"]["merged"] is False
    assert branches(ap) == ["exec/demo-" + run_id, "main"]  # the commit is kept, not merged
    types = [e["type"] for e in events(ap, run_id)]
    assert "checkpoint_advanced" not in types
    assert checkpoint() == (None, None)
    again = run(ap, code=0)
    assert (again["run_id"], again["duplicate_complete"]) == (run_id, True)
    assert [e["type"] for e in events(ap, run_id)] == types  # nothing appended
    assert checkpoint() == (None, None)


def test_task_timeout_bounds_the_review_stage_too(ap: AgentProject) -> None:
    """SPEC §11.4: `timeout` bounds the whole attempt (all stages, analysis and review included):
    the reviewer gets what the command left of it, and running out is a failed review."""
    review_job(ap, "sleep 2; echo x > docs/x.md", extra="  timeout: 4s\n")
    ap.behave({"reviewer:review-executor": {"sleep": 30, "child": True},
               "reporter:review-reporter": {"verdict": "complete"}})
    started = time.monotonic()
    out = run(ap, code=1)
    assert time.monotonic() - started < 15  # far less than the reviewer's 30 s sleep
    at = {e["type"]: datetime.fromisoformat(e["at"]) for e in events(ap, str(out["run_id"]))}
    spent = (at["attempt_ended"] - at["attempt_started"]).total_seconds()
    # one 4 s budget (ends near 4 s), not 2 s + a fresh 4 s for the review (6 s or more): a
    # second of margin either way, for a loaded machine
    assert spent < 5, spent
    assert out["state"] == "waiting"
    assert out["review"]["verdict"] == "blocked" and out["review"]["merged"] is False
    assert str(out["review"]["reason"]).startswith(
        "review failed: agent reviewer: timed out after"), out["review"]
    assert [(x["nickname"], x["role"]) for x in ap.launches()] == [
        ("reviewer", "review-executor")]  # the reporter never started
    child = int(Path(f"{ap.control}.child.pid").read_text())
    assert not alive(child)  # the reviewer's process group was killed



def test_a_sibling_clones_worktree_by_the_runs_name_is_never_used(tmp_path: Path) -> None:
    """Two clones side by side share the default worktree base (``../worktrees``) and give a
    Job Run the same id: the second clone's run fails before anything runs, with one line
    naming the directory and the config key that gives this project a base of its own; the
    first clone's worktree, with its work, stays as it was."""
    ap = AgentProject(tmp_path / "a")
    ap.init_git()
    review_job(ap, "echo k > docs/k.md")
    ap.git("add", "-A")
    ap.git("commit", "-qm", "the job")
    subprocess.run(["git", "clone", "-q", str(ap.root), str(tmp_path / "b")], check=True)
    sibling = copy.copy(ap)
    sibling.root = tmp_path / "b"
    ap.behave({"reporter:review-reporter": {"verdict": "changes-requested"}})
    first = run(ap, code=1)
    theirs = tmp_path / "worktrees" / first["run_id"]
    (theirs / "docs" / "k.md").write_text("theirs, not committed\n")
    launched = len(ap.launches())
    second = run(sibling, code=1)
    assert (second["run_id"], second["state"]) == (first["run_id"], "failed")
    reason = str(second["reason"])
    assert str(theirs) in reason and "another repository" in reason, reason
    assert "run.worktree_base" in reason and "\n" not in reason, reason
    assert (theirs / "docs" / "k.md").read_text() == "theirs, not committed\n"
    assert str(theirs) in ap.git("worktree", "list")
    assert sorted(p.name for p in theirs.parent.iterdir()) == [first["run_id"]]
    assert len(ap.launches()) == launched  # nothing ran for the sibling
    assert not (sibling.root / "docs" / "k.md").exists()
    assert sibling.git("branch", "--format=%(refname:short)").splitlines() == ["main"]


def test_a_previous_attempt_is_never_kept_inside_a_sibling_clones_worktree(
        tmp_path: Path) -> None:
    """Keeping a previous attempt's worktree moves it to ``<run>-attempt-<n>``; when a sibling
    clone has a worktree by that name, git would move this one inside it. Nothing is moved:
    the attempt fails saying whose directory it is."""
    base = tmp_path / "worktrees"
    repos = []
    for name in ("a", "b"):
        repo = tmp_path / name
        repo.mkdir()
        jobhelper.git(repo, "init", "-q", "-b", "main")
        jobhelper.commit(repo, "base")
        repos.append(repo)
    theirs, ours = base / "JBR-r-1-attempt-1", base / "JBR-r-1"
    jobhelper.git(repos[0], "worktree", "add", "-q", "-b", "exec/theirs", str(theirs))
    jobhelper.git(repos[1], "worktree", "add", "-q", "-b", "exec/ours", str(ours))
    git = worktree.Git(root=repos[1], env=jobhelper.clean_env())
    head = jobhelper.git(repos[1], "rev-parse", "HEAD")
    with pytest.raises(worktree.GitError) as raised:
        worktree.create(git, "exec/ours", ours, head, keep_suffix="-attempt-1")
    assert f"{theirs} is a worktree of another repository" in str(raised.value)
    assert "run.worktree_base" in str(raised.value)
    assert (sorted(p.name for p in theirs.iterdir()), ours.is_dir()) == ([".git", "docs"], True)
    assert jobhelper.git(repos[1], "branch", "--list", "exec/ours").strip(" *+") == "exec/ours"


def test_a_stop_during_the_review_is_a_stop_not_a_verdict(ap: AgentProject) -> None:
    """SPEC §6.5, §11.3: SIGTERM while the reviewer works ends its process group and the
    attempt `failed`, reason `stopped by SIGTERM` (exit 143); `review_ended` has no verdict
    and keeps the commit, worktree and branch. It was `review_ended verdict blocked, reason
    "review failed: agent reviewer: stopped by SIGTERM"` and the run `waiting`, and the stop's
    line said the attempt kept that result."""
    review_job(ap, WRITE)
    ap.behave({"reviewer:review-executor": {"sleep": 60, "child": True}})
    proc = ap.popen("job", "run", "--job", "job-r")
    code, stderr, child = terminated_once_its_child_runs(ap, proc)
    assert 143 == code, stderr
    assert not alive(child)
    [ledger] = (ap.root / "execution" / "jobs" / "runs").glob("*.jsonl")
    run_id = ledger.stem
    ended, reviewed = events(ap, run_id)[-2:]
    assert ("attempt_ended", "failed", "stopped by SIGTERM") == (
        ended["type"], ended["status"], ended["reason"])
    assert ("review_ended", None, False, "stopped by SIGTERM") == (
        reviewed["type"], reviewed["verdict"], reviewed["merged"], reviewed["reason"])
    assert reviewed["commit"] and f"exec/demo-{run_id}" in branches(ap)
    assert "failed" == ap.view(run_id)["state"]
    assert f'attempt 1 of {run_id} was recorded as failed (reason "stopped by SIGTERM")' in (
        stderr), stderr
    ap.behave({"reviewer:review-executor": {"verdict": "complete"}})
    again = run(ap, code=0)
    assert (2, "succeeded") == (again["attempt"], again["state"]), again
