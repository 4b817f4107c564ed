"""Job Run decisions (pure): inputs, identity, existing runs, statuses, documents."""

from __future__ import annotations

import hashlib
import subprocess
from typing import Any

import attrs
import pytest

from specdojo_routine.core import jobplan, jobtask
from specdojo_routine.core.errors import JobError, UsageError
from specdojo_routine.core.jobmodel import (
    AgentTask,
    CheckpointSpec,
    CommandTask,
    InputSpec,
    JobDefinition,
    Precondition,
)
from specdojo_routine.core.jobplan import (
    InputError,
    JobRunOutcome,
    RunIdentity,
    Verdict,
    command_verdict,
    existing_run,
    precondition_skips,
)
from specdojo_routine.core.model import Result
from specdojo_routine.core.templates import job_context
from specdojo_routine.execute.agent import AttemptDoc, plan_markdown, result_markdown


class FakeGit:
    """A GitResolver answering from a table; records what it was asked."""

    def __init__(self, head: str = "h" * 40, commits: dict[str, str] | None = None) -> None:
        self._head, self.commits, self.asked = head, commits or {}, list[str]()

    def head(self) -> str:
        self.asked.append("HEAD")
        return self._head

    def commit(self, revision: str) -> str:
        self.asked.append(revision)
        if revision not in self.commits:
            raise JobError(f"cannot resolve git revision {revision!r}")
        return self.commits[revision]


def job(*inputs: InputSpec, key: str = "{{job_id}}:{{inputs.period}}", **kw: Any) -> JobDefinition:
    task = kw.pop("task", CommandTask(command="echo {{inputs.period}}"))
    return JobDefinition(id="job-weekly", path="jobs/job-weekly.yaml", name="Weekly",
                         inputs=inputs, task=task, idempotency_key=key, **kw)


PERIOD = InputSpec(name="period", required=True)
TRANSLATE = job(
    InputSpec(name="from_revision", from_checkpoint="revision", default="HEAD~1",
              git_revision=True),
    InputSpec(name="to_revision", resolve="git_head", git_revision=True),
    InputSpec(name="languages", type="list", default=("en",)),
    key="{{job_id}}:{{inputs.from_revision}}:{{inputs.to_revision}}:{{inputs.languages}}",
    checkpoint=CheckpointSpec(values={"revision": "{{inputs.to_revision}}"}),
)
SHAS = {"HEAD~1": "1" * 40, "c" * 40: "c" * 40, "h" * 40: "h" * 40, "abc": "a" * 40}


def context(j: JobDefinition, inputs: dict[str, Any], **kw: Any) -> dict[str, str]:
    return job_context(job_id=j.id, project_id="demo", specdojo="specdojo",
                       scheduled_at="2026-08-07T08:00:00.000Z", inputs=inputs,
                       checkpoint=kw.get("checkpoint"), job_run_id=kw.get("run_id"))


# --- command-line inputs -----------------------------------------------------------------------


def test_cli_input_splits_at_the_first_equals_sign() -> None:
    """``--input k=v`` splits at the first ``=``; the rest belongs to the value."""
    assert {"period": "a=b=c"} == jobplan.parse_cli_inputs(job(PERIOD), ["period=a=b=c"])


def test_duplicate_cli_input_is_a_usage_error() -> None:
    """Giving the same input twice is refused (exit 2)."""
    with pytest.raises(UsageError, match="duplicate --input period"):
        jobplan.parse_cli_inputs(job(PERIOD), ["period=a", "period=b"])


def test_cli_input_without_equals_sign_is_refused() -> None:
    """An --input without ``=`` names the expected form."""
    with pytest.raises(InputError, match="use key=value"):
        jobplan.parse_cli_inputs(job(PERIOD), ["period"])


def test_unknown_cli_input_names_the_declared_ones() -> None:
    """An input the Job does not declare is an error listing the declared inputs."""
    with pytest.raises(InputError, match=r"unknown input for job-weekly: nope \(declared: period"):
        jobplan.parse_cli_inputs(job(PERIOD), ["nope=1"])


def test_cli_input_is_parsed_to_its_declared_type() -> None:
    """Integer, boolean and list inputs are typed from text."""
    j = job(InputSpec(name="n", type="integer"), InputSpec(name="b", type="boolean"),
            InputSpec(name="l", type="list"))
    parsed = jobplan.parse_cli_inputs(j, ["n=5", "b=true", "l=a, b,"])
    assert {"n": 5, "b": True, "l": ("a", "b")} == parsed


def test_cli_input_violating_enum_is_refused() -> None:
    """Values are checked with the same rules as defaults."""
    j = job(InputSpec(name="lang", enum=("en", "ja")))
    with pytest.raises(InputError, match="must be one of: en, ja"):
        jobplan.parse_cli_inputs(j, ["lang=fr"])


# --- resolution order --------------------------------------------------------------------------


def test_explicit_input_wins_over_every_other_source() -> None:
    """explicit -> from_checkpoint -> git_head -> default."""
    git = FakeGit(commits=SHAS)
    got = jobplan.resolve_inputs(TRANSLATE, {"from_revision": "abc", "to_revision": "abc"},
                                 {"revision": "c" * 40}, git)
    assert {"from_revision": "a" * 40, "to_revision": "a" * 40, "languages": ["en"]} == got


def test_checkpoint_wins_over_default() -> None:
    """from_checkpoint is used when the checkpoint has the path."""
    got = jobplan.resolve_inputs(TRANSLATE, {}, {"revision": "c" * 40}, FakeGit(commits=SHAS))
    assert "c" * 40 == got["from_revision"]


def test_default_is_used_on_the_first_run_and_normalised_to_a_sha() -> None:
    """Without a checkpoint the default (HEAD~1) is resolved to a full commit sha."""
    got = jobplan.resolve_inputs(TRANSLATE, {}, None, FakeGit(commits=SHAS))
    assert ("1" * 40, "h" * 40) == (got["from_revision"], got["to_revision"])


def test_git_head_is_asked_only_when_nothing_explicit_is_given() -> None:
    """resolve: git_head reads HEAD only as a fallback."""
    git = FakeGit(commits=SHAS)
    jobplan.resolve_inputs(TRANSLATE, {"to_revision": "abc"}, None, git)
    assert "HEAD" not in git.asked


def test_unresolvable_git_revision_is_an_error() -> None:
    """A revision git cannot resolve to a commit stops the run."""
    with pytest.raises(JobError, match="nope"):
        jobplan.resolve_inputs(TRANSLATE, {"from_revision": "nope"}, None, FakeGit(commits=SHAS))


def test_dotted_checkpoint_path_is_followed() -> None:
    """from_checkpoint may name a nested value."""
    j = job(InputSpec(name="rev", from_checkpoint="git.rev", default="x"), key="{{job_id}}")
    assert {"rev": "deep"} == jobplan.resolve_inputs(j, {}, {"git": {"rev": "deep"}}, FakeGit())


def test_checkpoint_text_is_coerced_to_the_input_type() -> None:
    """A checkpoint stores text; an integer input gets an integer."""
    j = job(InputSpec(name="n", type="integer", from_checkpoint="n"), key="{{job_id}}")
    assert {"n": 7} == jobplan.resolve_inputs(j, {}, {"n": "7"}, FakeGit())


def test_missing_required_input_is_an_error() -> None:
    """A required input without any source is refused with the flag to pass."""
    with pytest.raises(InputError, match=r"missing required input for job-weekly: period"):
        jobplan.resolve_inputs(job(PERIOD), {}, None, FakeGit())


def test_optional_input_without_value_is_left_out() -> None:
    """An optional input with no source does not appear in the run's inputs."""
    j = job(InputSpec(name="period"), key="{{job_id}}")
    assert {} == jobplan.resolve_inputs(j, {}, None, FakeGit())


def test_unknown_explicit_input_is_refused_before_resolving() -> None:
    """Unknown inputs are checked first."""
    git = FakeGit()
    with pytest.raises(InputError, match="unknown input"):
        jobplan.resolve_inputs(TRANSLATE, {"bogus": "x"}, None, git)
    assert [] == git.asked


# --- identity ----------------------------------------------------------------------------------


def test_run_id_is_slug_and_12_hex_of_sha256_of_the_key() -> None:
    """JBR-<slug>-<first 12 hex of sha256(key)>."""
    key = "job-weekly:2026-W32"
    expected = "JBR-weekly-" + hashlib.sha256(key.encode()).hexdigest()[:12]
    assert expected == jobplan.run_id_for("job-weekly", key)


def test_key_is_rendered_from_inputs() -> None:
    """The idempotency key substitutes job_id and inputs."""
    j = job(PERIOD)
    assert "job-weekly:2026-W32" == jobplan.render_key(j, context(j, {"period": "2026-W32"}))


def test_key_with_lists_joins_them_with_commas() -> None:
    """List inputs render joined with ``,``."""
    ctx = context(TRANSLATE, {"from_revision": "a", "to_revision": "b", "languages": ["en", "ja"]})
    assert "job-weekly:a:b:en,ja" == jobplan.render_key(TRANSLATE, ctx)


def test_empty_key_is_an_error() -> None:
    """A key that renders blank would merge unrelated runs: refused."""
    j = job(InputSpec(name="period"), key="{{inputs.period}}")
    with pytest.raises(JobError, match="renders empty"):
        jobplan.render_key(j, context(j, {}))


# --- the frozen task ---------------------------------------------------------------------------


def test_command_values_reach_the_shell_as_data() -> None:
    """A hostile input value is rendered quoted; the shell prints it verbatim."""
    j = job(PERIOD, task=CommandTask(command="printf %s {{inputs.period}}"))
    value = '$(touch PWNED); `id` "x" \'y\''
    task = jobtask.freeze_task(j, context(j, {"period": value}, run_id="JBR-weekly-1"), "demo")
    done = subprocess.run(["/bin/sh", "-c", task["command"]], capture_output=True, text=True)
    assert value == done.stdout


def test_frozen_command_task_keeps_what_a_retry_needs() -> None:
    """Precondition, partial/noop codes and timeout are frozen with the rendered command."""
    cmd = CommandTask(command="run {{job_run_id}}", partial_exit_codes=(3,), noop_exit_code=4,
                      timeout="2m", timeout_seconds=120,
                      precondition=Precondition(command="sel {{job_run_id}}", skip_when=9))
    task = jobtask.freeze_task(job(task=cmd, key="k"), context(job(), {}, run_id="R"), "demo")
    assert {"mode": "command", "precondition": {"command": "sel 'R'", "skip_when": 9},
            "command": "run 'R'", "partial_exit_code": [3], "noop_exit_code": 4,
            "timeout": "2m", "timeout_seconds": 120} == task


def test_frozen_agent_task_qualifies_targets_with_the_project() -> None:
    """edit/review tasks render the description and qualify bare targets."""
    agent = AgentTask(mode="edit", description="Report {{inputs.period}}",
                      targets=("pr-report", "other:doc"), executor="claude", reporter="rep")
    j = job(PERIOD, task=agent)
    task = jobtask.freeze_task(j, context(j, {"period": "W1"}, run_id="R"), "demo")
    assert {"mode": "edit", "description": "Report W1", "targets": ["demo:pr-report", "other:doc"],
            "agent": {"executor": "claude", "reporter": "rep"}} == task


def test_checkpoint_values_render_only_for_advance_on_statuses() -> None:
    """checkpoint.values render with the run's inputs on succeeded/noop, else None."""
    ctx = context(TRANSLATE, {"to_revision": "c" * 40}, run_id="R")
    assert {"revision": "c" * 40} == jobtask.checkpoint_after(TRANSLATE, "noop", ctx)
    assert None is jobtask.checkpoint_after(TRANSLATE, "failed", ctx)


def test_retry_runs_the_fresh_task_when_it_redacts_to_the_record() -> None:
    """A recorded task with redactions is re-rendered; the real command runs."""
    fresh = {"mode": "command", "command": "echo api_key=s3cr3tvalue"}
    recorded = {"mode": "command", "command": "echo api_key=[REDACTED]"}
    assert fresh == jobtask.task_for_retry(TRANSLATE, recorded, fresh, [], "R")


def test_retry_keeps_the_frozen_task_when_the_definition_changed() -> None:
    """Without redactions the frozen task wins over a changed definition."""
    recorded = {"mode": "command", "command": "echo old"}
    assert recorded == jobtask.task_for_retry(TRANSLATE, recorded, {"command": "new"}, [], "R")


def test_retry_refuses_a_redacted_task_it_cannot_reproduce() -> None:
    """A redacted record and a different definition: refused."""
    recorded = {"mode": "command", "command": "echo api_key=[REDACTED]"}
    with pytest.raises(JobError, match="cannot retry R"):
        jobtask.task_for_retry(TRANSLATE, recorded, {"command": "other"}, [], "R")


def test_inputs_holding_secrets_are_refused() -> None:
    """An input equal to a secret environment value is refused; plain values pass."""
    jobplan.refuse_secret_inputs(TRANSLATE, {"languages": ["en"]}, ["sekrit-value"])
    with pytest.raises(jobplan.InputError, match="input languages of job-weekly looks like a "):
        jobplan.refuse_secret_inputs(TRANSLATE, {"languages": ["sekrit-value"]}, ["sekrit-value"])


# --- existing runs -----------------------------------------------------------------------------


def view(state: str, *statuses: str, key: str = "k", job_id: str = "job-weekly") -> dict[str, Any]:
    attempts = [{"attempt": n, "status": s} for n, s in enumerate(statuses, 1)]
    return {"idempotency_key": key, "job_id": job_id, "state": state, "attempts": attempts}


@pytest.mark.parametrize(("found", "expected"), [
    (None, jobplan.Existing(action="new", attempt=1)),
    (view("succeeded", "succeeded"), jobplan.Existing(action="duplicate", attempt=1)),
    (view("noop", "failed", "noop"), jobplan.Existing(action="duplicate", attempt=2)),
    (view("failed", "failed"), jobplan.Existing(action="retry", attempt=2)),
    (view("partial", "partial"), jobplan.Existing(action="retry", attempt=2)),
    (view("running", "failed", "running"),
     jobplan.Existing(action="retry", attempt=3, open_attempt=2)),
    (view("running"), jobplan.Existing(action="retry", attempt=1)),
])
def test_existing_run_decision(found: dict[str, Any] | None, expected: jobplan.Existing) -> None:
    """New, duplicate complete (succeeded/noop) or a new attempt (closing an open one)."""
    assert expected == existing_run(found, run_id="R", job_id="job-weekly", key="k")


@pytest.mark.parametrize("found", [view("failed", key="other"), view("failed", job_id="job-x")])
def test_identity_collision_is_an_error(found: dict[str, Any]) -> None:
    """Same run id, different key or job: refused."""
    with pytest.raises(JobError, match=r"^Job Run identity collision: JBR-x-1$"):
        existing_run(found, run_id="JBR-x-1", job_id="job-weekly", key="k")


def test_missing_checkpoint_is_detected_for_complete_runs_only() -> None:
    """A complete run of a checkpointing job without checkpoint_after needs one."""
    assert jobplan.missing_checkpoint(view("succeeded"), TRANSLATE)
    assert not jobplan.missing_checkpoint(view("failed"), TRANSLATE)
    assert not jobplan.missing_checkpoint({**view("noop"), "checkpoint_after": {}}, TRANSLATE)


SHA = "e" * 40
KEPT = {"verdict": None, "merged": False, "commit": SHA, "reason": "run noop"}


@pytest.mark.parametrize(("state", "review", "missing"), [
    ("noop", None, True),  # no review flow: the run's work is in the root already
    ("succeeded", {"verdict": "complete", "merged": True, "commit": SHA, "reason": None,
                   "merge_commit": "f" * 40}, True),
    ("noop", KEPT, False),  # a commit kept unmerged: the attempt withheld the checkpoint
    ("succeeded", {**KEPT, "verdict": "blocked", "reason": "not merged"}, False),
    ("noop", {"verdict": None, "merged": False, "commit": None, "reason": "no changes"}, True),
    ("failed", None, False),
])
def test_missing_checkpoint_asks_whether_the_reviewed_work_was_integrated(
    state: str, review: dict[str, Any] | None, missing: bool,
) -> None:
    """SPEC §7.3, §11.4: a complete run without ``checkpoint_after`` lost its checkpoint only
    when its work is integrated (review_rules.integrated of the view's ``review``): no review,
    a merged commit or no commit at all; a kept, unmerged commit never advanced it."""
    found = view(state) | ({} if review is None else {"review": review})
    assert jobplan.missing_checkpoint(found, TRANSLATE) is missing


# --- statuses ----------------------------------------------------------------------------------

TASK = {"mode": "command", "command": "x", "partial_exit_code": [3, 75], "noop_exit_code": 4}


@pytest.mark.parametrize(("code", "error", "expected"), [
    (0, None, Verdict(status="succeeded")),
    (3, None, Verdict(status="partial", reason="command exited with code 3 (partial)")),
    (4, None, Verdict(status="noop", reason="command exited with code 4 (noop)")),
    (5, None, Verdict(status="failed", reason="command exited with code 5")),
    (None, "timed out after 1s", Verdict(status="failed", reason="timed out after 1s")),
    (None, "executable not found: x", Verdict(status="failed", reason="executable not found: x")),
])
def test_command_status_mapping(code: int | None, error: str | None, expected: Verdict) -> None:
    """Exit code -> status and reason, from the frozen task."""
    assert expected == command_verdict(TASK, exit_code=code, error=error)


def test_exit_75_is_busy_unless_declared_partial() -> None:
    """75 fails with reason busy (action skipped); a declared partial code wins."""
    assert Verdict(status="failed", reason="busy", busy=True) == command_verdict(
        {"command": "x"}, exit_code=75, error=None)
    assert "partial" == command_verdict(TASK, exit_code=75, error=None).status


@pytest.mark.parametrize(("skip_when", "code", "stdout", "expected"), [
    ("empty-output", 0, " \n", (True, None)),
    ("empty-output", 0, "item\n", (False, None)),
    ("empty-output", 2, "", (False, "precondition failed with exit code 2")),
    (9, 9, "x", (True, None)),
    (9, 0, "", (False, None)),
    (9, 1, "", (False, "precondition failed with exit code 1")),
])
def test_precondition_decision(
    skip_when: Any, code: int, stdout: str, expected: tuple[bool, str | None]
) -> None:
    """empty-output/blank or exit == skip_when skip; other non-zero exits fail."""
    got = precondition_skips({"skip_when": skip_when}, exit_code=code, stdout=stdout, error=None)
    assert expected == got


OUTCOMES = {
    "succeeded": JobRunOutcome(job_id="j", run_id="R", state="succeeded", attempt=1),
    "noop": JobRunOutcome(job_id="j", run_id="R", state="noop", attempt=1),
    "duplicate": JobRunOutcome(job_id="j", run_id="R", state="succeeded", attempt=1,
                               duplicate_complete=True),
    "failed": JobRunOutcome(job_id="j", run_id="R", state="failed", attempt=1, reason="boom"),
    "partial": JobRunOutcome(job_id="j", run_id="R", state="partial", attempt=1, reason="x"),
    "skipped": JobRunOutcome(job_id="j", run_id=None, state=None, attempt=None, skipped=True,
                             reason="precondition"),
}


@pytest.mark.parametrize(("name", "expected"), [
    ("succeeded", (Result.SUCCESS, None)), ("noop", (Result.SUCCESS, None)),
    ("duplicate", (Result.SUCCESS, None)), ("failed", (Result.FAILURE, "boom")),
    ("partial", (Result.FAILURE, "partial")), ("skipped", (Result.SKIPPED, "precondition")),
])
def test_routine_action_result_mapping(name: str, expected: tuple[Result, str | None]) -> None:
    """succeeded/noop/duplicate success; skipped; failed failure; partial failure 'partial'."""
    assert expected == jobplan.routine_result(OUTCOMES[name])


@pytest.mark.parametrize(("name", "manual", "routine"), [
    ("succeeded", 0, 0), ("noop", 0, 0), ("duplicate", 0, 0), ("failed", 1, 1),
    ("partial", 1, 1), ("skipped", 0, 75),
])
def test_job_run_exit_codes(name: str, manual: int, routine: int) -> None:
    """0 ok / non-routine skip, 1 failed or partial, 75 a skip under --trigger routine."""
    outcome = OUTCOMES[name]
    as_routine = attrs.evolve(outcome, trigger="routine")
    assert (manual, routine) == (jobplan.exit_code_for(outcome), jobplan.exit_code_for(as_routine))


# --- documents ---------------------------------------------------------------------------------

DOC = RunIdentity(run_id="JBR-weekly-abc", job_id="job-weekly", name='Weekly "report"',
                  project_id="demo", trigger="manual", scheduled_at="2026-08-07T08:00:00.000Z",
                  inputs={"period": "2026-W32", "langs": ["en", "ja"]},
                  task={"mode": "command", "command": "echo ```x```"})


def test_plan_has_specdojo_frontmatter_and_the_command() -> None:
    """The plan is an exec-plan with origin job; a command with backticks keeps its fence."""
    text = plan_markdown(DOC)
    assert text.startswith("---\nspecdojo:\n  id: demo:xep-jbr-weekly-abc\n  type: exec-plan\n")
    assert '  name: "Weekly \\"report\\""\n' in text and "  origin: job\n" in text
    assert "````sh\necho ```x```\n````\n" in text
    assert "- `langs`: `en`, `ja`\n" in text


@pytest.mark.parametrize(("status", "reason", "line"), [
    ("succeeded", None, "- Result: complete\n"),
    ("noop", "x", "- Result: complete\n"),
    ("failed", "command exited with code 2", "- Result: blocked: command exited with code 2\n"),
])
def test_result_is_complete_or_blocked_with_reason(status: str, reason: str | None,
                                                   line: str) -> None:
    """The result says complete, or blocked with the reason."""
    done = AttemptDoc(attempt=2, status=status, reason=reason, started_at="2026-08-07T08:00:00Z",
                      completed_at="2026-08-07T08:01:00Z")
    text = result_markdown(DOC, done)
    expected = "complete" if status != "failed" else "blocked"
    assert line in text and f"  status: {expected}\n" in text
