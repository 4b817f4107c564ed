"""The CLI's own agent executor (SPEC §11.1, §11.4), through the real CLI, a real roster and
exec-defaults file, and the fake agent CLI (tests/support/fake_agent.py)."""

from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.app import jobs
from specdojo_routine.core import agent_rules, agentdocs
from specdojo_routine.core.agent_rules import Detection, ExecDefaults, Member, Provider, Roster
from specdojo_routine.execute.agent import AgentRequest, AgentResult
from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.definitions import load as definitions
from tests.agenthelper import AgentProject, alive
from tests.conftest import Project
from tests.jobhelper import SCHEDULED


@pytest.fixture
def ap(tmp_path: Path) -> AgentProject:
    return AgentProject(tmp_path / "proj")


def run_json(ap: AgentProject, *args: str, code: int | None = None) -> dict[str, object]:
    done = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1", "--json", *args)
    assert not done.stderr.startswith("error"), done.stderr
    if code is not None:
        assert done.returncode == code, (done.stdout, done.stderr)
    data: dict[str, object] = json.loads(done.stdout)
    return data


def test_plan_on_stdin_environment_template_and_evidence(ap: AgentProject) -> None:
    ap.edit_job("job-e")
    ap.behave({"editor": {"stdout": "did it\n", "stderr": "warn\n"}})
    out = run_json(ap, code=0)
    assert out["state"] == "succeeded"
    (launch,) = ap.launches()
    run_id = str(out["run_id"])
    plan = ap.root / "execution" / "exec" / "plans" / f"{run_id}-plan.md"
    assert launch["stdin"] == plan.read_text()  # the plan Markdown, on stdin
    assert "- Result file: `execution/exec/results/" in launch["stdin"]
    env = launch["env"]
    assert env["SPECDOJO_AGENT_ROLE"] == "executor"
    assert env["SPECDOJO_PLAN_PATH"] == str(plan)
    assert Path(env["SPECDOJO_RESULT_PATH"]).is_absolute()
    assert env["SPECDOJO_JOB_RUN_ID"] == run_id and env["SPECDOJO_PROJECT"] == "demo"
    assert "SPECDOJO_EXEC_RUN_LOCK_TOKEN" in env
    assert launch["cwd"] == str(ap.root)
    # command_template with {nickname}, {mode} and command_params.by_mode
    assert launch["argv"] == ["--mode=edit", "--edit"]
    attempt = ap.root / "execution" / "exec" / "evidence" / run_id / "attempt-1"
    assert (attempt / "agent-executor.stdout.log").read_text() == "did it\n"
    assert (attempt / "agent-executor.stderr.log").read_text() == "warn\n"
    result = ap.result_text(run_id)
    assert "status: complete" in result and "Did the work." in result


def test_the_stdin_file_lives_in_the_attempts_evidence_folder_while_the_stage_runs(
    ap: AgentProject,
) -> None:
    """The plan reaches the agent from a private file in its attempt's evidence folder, gone
    once the stage ends: a runner killed mid-stage leaves it where retention prunes it, not in
    the system's temporary folder."""
    ap.edit_job("job-e")
    out = run_json(ap, code=0)
    (launch,) = ap.launches()
    attempt = ap.root / "execution" / "exec" / "evidence" / str(out["run_id"]) / "attempt-1"
    stdin_from = Path(launch["stdin_from"])
    assert stdin_from.parent == attempt
    assert stdin_from.name.startswith(".agent-executor.stdin.")
    assert not stdin_from.exists()
    assert sorted(p.name for p in attempt.iterdir() if p.name.startswith(".")) == []


def test_non_zero_exit_fails_the_attempt(ap: AgentProject) -> None:
    ap.edit_job("job-e")
    ap.behave({"editor": {"exit": 3}})
    out = run_json(ap, code=1)
    assert (out["state"], out["reason"], out["skipped"]) == (
        "failed", "agent editor exited with code 3", False)
    assert 'blocked_reason: "agent editor exited with code 3"' in ap.result_text(
        str(out["run_id"]))


@pytest.mark.parametrize(("how", "reason"), [
    ({"exit": 42}, "rate limited (exit code 42)"),
    ({"exit": 1, "stderr": "Error: Rate Limit reached\n"},
     'rate limited (stderr matched "rate limit")'),
])
def test_rate_limit_is_a_skip(ap: AgentProject, how: dict[str, object], reason: str) -> None:
    ap.edit_job("job-e")
    ap.behave({"editor": how})
    out = run_json(ap, code=0)
    assert (out["state"], out["reason"], out["skipped"]) == ("failed", reason, True)
    again = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1", "--trigger", "routine")
    assert again.returncode == 75, again.stdout + again.stderr


def test_stderr_pattern_needs_a_non_zero_exit_by_default(ap: AgentProject) -> None:
    ap.edit_job("job-e")
    ap.behave({"editor": {"exit": 0, "stderr": "editing a page about rate limit\n"}})
    assert run_json(ap, code=0)["state"] == "succeeded"


def test_marker_left_fails_with_the_upstream_wording(ap: AgentProject) -> None:
    ap.edit_job("job-e")
    ap.behave({"editor": {"fill": False}})
    out = run_json(ap, code=1)
    assert out["reason"] == ("agent exited 0 but result mandatory sections remain unfilled "
                             "(treated as blocked)")
    assert "status: blocked" in ap.result_text(str(out["run_id"]))


@pytest.mark.parametrize("how", ["remove", "empty"])
def test_an_agent_that_leaves_no_result_fails_and_the_runner_writes_one(
        ap: AgentProject, how: str) -> None:
    """Exit 0 with the result removed or emptied is no outcome: the run is failed (not
    succeeded with nothing to show), and the runner writes the result document itself."""
    ap.edit_job("job-e")
    ap.behave({"editor": {"result": how}})
    out = run_json(ap, code=1)
    assert ("failed", agentdocs.NO_RESULT_REASON) == (out["state"], out["reason"])
    text = ap.result_text(str(out["run_id"]))
    assert "status: blocked" in text and "left no result document" in text


@pytest.mark.parametrize(("old", "new", "where"), [
    ("members:\n", "members: [\n", "members.yaml:4:3: YAML parse error"),
    ("nickname: editor-b\n", "nickname: Editor-B\n",
     'members.yaml:10:15: members[1].nickname must match [a-z0-9][a-z0-9_-]* (got "Editor-B")')])
def test_no_agent_is_launched_from_a_roster_with_errors(
        ap: AgentProject, old: str, new: str, where: str) -> None:
    """A roster that cannot be read whole is not the one its author meant: the attempt fails
    with its first error, located, instead of ``no agent executor configured`` or another
    member than the unreadable one (here editor-b, priority 1, would be the pick if enabled,
    and with its nickname unreadable the run must not fall back to editor)."""
    path = ap.root / "members.yaml"
    path.write_text(path.read_text().replace(old, new, 1).replace(
        "priority: 1\n    disabled: true\n", "priority: 1\n"))
    ap.edit_job("job-e")
    out = run_json(ap, code=1)
    assert where in str(out["reason"]) and "no agent is launched" in str(out["reason"])
    assert [] == ap.launches()


def test_outcome_noop_in_the_result(ap: AgentProject) -> None:
    ap.edit_job("job-e")
    ap.behave({"editor": {"outcome": "noop"}})
    out = run_json(ap, code=0)
    assert out["state"] == "noop"
    assert "status: complete" in ap.result_text(str(out["run_id"]))


def test_executor_then_reporter(ap: AgentProject) -> None:
    ap.edit_job("job-e", agent="{executor: own-command, reporter: reporter}")
    ap.behave({"own-command": {"stdout": "EXECUTOR SAID THIS\n", "fill": False},
               "reporter": {"stdout": "reported\n"}})
    out = run_json(ap, code=0)
    assert out["state"] == "succeeded"
    first, second = ap.launches()
    assert (first["nickname"], first["role"]) == ("own-command", "executor")
    assert (second["nickname"], second["role"]) == ("reporter", "reporter")
    assert second["stdin"].startswith(first["stdin"].rstrip())
    assert "```text\nEXECUTOR SAID THIS\n```" in second["stdin"]


def test_failing_executor_starts_no_reporter(ap: AgentProject) -> None:
    ap.edit_job("job-e", agent="{executor: editor, reporter: reporter}")
    ap.behave({"editor": {"exit": 5}})
    out = run_json(ap, code=1)
    assert out["reason"] == "agent editor exited with code 5"
    assert [launch["nickname"] for launch in ap.launches()] == ["editor"]


def test_reporter_by_replaces_the_reporter(ap: AgentProject) -> None:
    ap.edit_job("job-e", agent="{executor: editor, reporter: reporter}")
    run_json(ap, "--reporter-by", "own-command", code=0)
    assert [(x["nickname"], x["role"]) for x in ap.launches()] == [
        ("editor", "executor"), ("own-command", "reporter")]
    bad = ap.cli("job", "run", "--job", "job-e", "--input", "period=w2", "--reporter-by", "nobody")
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "nobody" in bad.stderr


def test_timeout_kills_the_agents_process_group(ap: AgentProject) -> None:
    ap.edit_job("job-e", timeout="2s")
    ap.behave({"editor": {"sleep": 60, "child": True}})
    started = time.monotonic()
    out = run_json(ap, code=1)
    assert time.monotonic() - started < 30
    assert out["state"] == "failed" and "timed out after" in str(out["reason"])
    child = int(Path(f"{ap.control}.child.pid").read_text())
    assert not alive(child)



@pytest.mark.parametrize(("routine_timeout", "task_timeout", "grace"), [
    ("1s", "", True),  # the routine's bound: SIGTERM, 10 s, SIGKILL (SPEC §13)
    ("1m", "1s", False),  # the Job's own task.timeout: the runner's short grace (SPEC §7.3)
])
def test_an_agent_stage_gets_the_grace_of_whose_timeout_it_is(
        ap: AgentProject, routine_timeout: str, task_timeout: str, grace: bool) -> None:
    """An agent that ignores SIGTERM is killed as a Job's command is: 10 s after a routine
    action's timeout, the runner's 2 s after the Job's own."""
    ap.edit_job("job-e", **({"timeout": task_timeout} if task_timeout else {}))
    ap.behave({"editor": {"sleep": 60, "ignore_term": True}})
    ap.routine("rtn-agent", "interval: 1h\naction: {kind: job, job: job-e, inputs: {period: w1}, "
               f"timeout: {routine_timeout}}}\n")
    started = time.monotonic()
    done = ap.cli("run", "--due", timeout=60)
    took = time.monotonic() - started
    assert 1 == done.returncode, done.stdout + done.stderr
    assert (10.5 <= took < 30) if grace else (took < 9), took
    (launch,) = ap.launches()
    assert launch["nickname"] == "editor"


def test_task_timeout_is_one_budget_for_the_executor_and_its_reporter(
        ap: AgentProject) -> None:
    """SPEC §11.4: `timeout` bounds the whole attempt: the reporter gets what the executor
    left of it, not a fresh one, and its process group is killed when it runs out."""
    ap.edit_job("job-e", timeout="4s", agent="{executor: editor, reporter: reporter}")
    ap.behave({"editor": {"sleep": 2}, "reporter": {"sleep": 60, "child": True}})
    out = run_json(ap, code=1)
    ledger = ap.root / "execution" / "jobs" / "runs" / f"{out['run_id']}.jsonl"
    at = {e["type"]: datetime.fromisoformat(e["at"])
          for e in map(orjson.loads, ledger.read_bytes().splitlines())}
    spent = (at["attempt_ended"] - at["attempt_started"]).total_seconds()
    assert (["executor", "reporter"], "failed", "agent reporter: timed out after") == (
        [x["role"] for x in ap.launches()], out["state"], str(out["reason"])[:31])
    # one 4 s budget (ends near 4 s), not 2 s + a fresh 4 s for the reporter (6 s or more):
    # a second of margin either way, for a loaded machine
    assert spent < 5, spent
    assert not alive(int(Path(f"{ap.control}.child.pid").read_text()))


def test_executor_chosen_by_mode_and_priority(ap: AgentProject) -> None:
    """No task.agent: the enabled agent of the task's mode with the lowest priority (editor-b
    has priority 1 but is disabled; own-command has none and sorts last)."""
    ap.edit_job("job-e")
    run_json(ap, code=0)
    assert [x["nickname"] for x in ap.launches()] == ["editor"]


def test_selection_rules() -> None:
    roster = Roster(path="m.yaml", members=(
        Member(nickname="a", mode="edit", index=0),
        Member(nickname="b", mode="edit", priority=3, index=1),
        Member(nickname="c", mode="edit", priority=3, index=2),
        Member(nickname="h", type="human", mode="review", priority=0, index=3),
        Member(nickname="r", mode="edit", stage_role="reporter", priority=7, index=4)))
    assert agent_rules.executor_for_mode(roster, "edit").nickname == "b"  # type: ignore[union-attr]
    assert agent_rules.executor_for_mode(roster, "review") is None  # humans are not launched
    assert agent_rules.auto_reporter(roster).nickname == "r"  # type: ignore[union-attr]


def test_no_member_for_the_mode(ap: AgentProject) -> None:
    (ap.root / "members.yaml").write_text("version: 1\nmembers:\n  - {nickname: x, type: human}\n")
    ap.edit_job("job-e")
    out = run_json(ap, code=1)
    assert out["reason"] == "no agent executor configured for mode edit"


def test_provider_detection_replaces_the_global_key_by_key() -> None:
    defaults = ExecDefaults(
        detection=Detection(exit_codes=(42,), stderr_patterns=("rate limit",)),
        providers={"p": Provider(name="p", detection=Detection(exit_codes=(9,)))})
    mine = defaults.detection_for("p")
    assert mine.exit_codes == (9,) and mine.stderr_patterns == ("rate limit",)
    assert agent_rules.rate_limit_signal(mine, 42, "", "") is None
    assert agent_rules.rate_limit_signal(mine, 9, "", "") == "exit code 9"
    assert agent_rules.rate_limit_signal(mine, 1, "RATE LIMIT on stdout", "") == \
        'stderr matched "rate limit"'
    ungated = Detection(stderr_patterns=("limit",), stderr_requires_nonzero_exit=False)
    assert agent_rules.rate_limit_signal(ungated, 0, "", "limit") == 'stderr matched "limit"'


def test_validate_reports_unknown_nicknames_with_positions(ap: AgentProject) -> None:
    ap.edit_job("job-e", agent="{executor: ghost}")
    ap.job("job-c", """\
        name: C
        task:
          mode: command
          command: "true"
          analysis: {agent: nobody, description: look}
          review: {agent: {executor: reviewer, reporter: phantom}}
        run: {idempotency_key: "{{job_id}}"}
        """)
    done = ap.cli("validate")
    assert done.returncode == 1
    assert ('jobs/job-e.yaml:9:21: task.agent.executor "ghost" is not a member of members.yaml; '
            "register the nickname there before use") in done.stderr.splitlines()
    assert 'jobs/job-c.yaml:6:21: task.analysis.agent "nobody" is not a member' in done.stderr
    assert 'task.review.agent.reporter "phantom"' in done.stderr
    assert "reviewer" not in done.stderr


def test_nicknames_are_checked_only_when_the_config_names_members_path(tmp_path: Path) -> None:
    """SPEC §11.4: nicknames are checked only when the project config names `members_path`."""
    body = """\
        name: E
        task:
          mode: edit
          description: d
          paths: [docs]
          agent: {executor: ghost}
        run: {idempotency_key: "{{job_id}}"}
        """
    plain = Project(tmp_path / "plain")  # its config names no members_path
    plain.job("job-e", body)
    done = plain.cli("validate")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ghost" not in done.stdout + done.stderr
    rostered = AgentProject(tmp_path / "rostered" / "proj")  # members_path: members.yaml
    rostered.job("job-e", body)
    done = rostered.cli("validate")
    assert done.returncode == 1, done.stdout + done.stderr
    assert ('task.agent.executor "ghost" is not a member of members.yaml; '
            "register the nickname there before use") in done.stderr


def test_validate_reports_unresolvable_placeholders_at_the_template(ap: AgentProject) -> None:
    path = ap.root / ".specdojo" / "exec-defaults.yaml"
    path.write_text(path.read_text().replace("{flags}", "{flags} {model}"))
    ap.edit_job("job-e")
    done = ap.cli("validate")
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if "exec-defaults" in line]
    assert lines and all(line.startswith(".specdojo/exec-defaults.yaml:6:23: cannot resolve "
                                         "{model} in providers.fake.command_template for member ")
                         for line in lines)
    assert any("member editor " in line for line in lines)


def test_command_template_expands_proficiency_and_by_proficiency(ap: AgentProject) -> None:
    """SPEC §11.1: the launch command is the provider's ``command_template`` expanded with
    ``{proficiency}`` and the ``command_params.by_proficiency[proficiency]`` variables too (the
    member editor has ``proficiency: high``)."""
    path = ap.root / ".specdojo" / "exec-defaults.yaml"
    path.write_text(path.read_text().replace("{flags}", "{flags} --prof={proficiency} {depth}")
                    + '      by_proficiency:\n        high: {depth: "--deep"}\n')
    ap.edit_job("job-e", agent="{executor: editor}")
    out = run_json(ap, code=0)
    assert out["state"] == "succeeded"
    assert [x["argv"] for x in ap.launches()] == [["--mode=edit", "--edit", "--prof=high",
                                                   "--deep"]]


def test_a_shell_expansion_in_the_command_template_is_not_a_placeholder(
        ap: AgentProject) -> None:
    """SPEC §11.4: `${…}` in `command_template` is shell, not a placeholder: `${model}` (no
    such variable) is no `validate` error and `${mode}` is not filled in; the shell gets
    both as written (quoted here, so they reach the agent verbatim)."""
    path = ap.root / ".specdojo" / "exec-defaults.yaml"
    path.write_text(path.read_text().replace("{flags}", "{flags} '${mode}' '${model}'"))
    ap.edit_job("job-e")
    done = ap.cli("validate")
    assert 0 == done.returncode, done.stderr
    assert "succeeded" == run_json(ap, code=0)["state"]
    assert [["--mode=edit", "--edit", "${mode}", "${model}"]] == [
        x["argv"] for x in ap.launches()]


def test_a_variable_in_both_by_mode_and_by_proficiency_is_a_validate_error(
        ap: AgentProject) -> None:
    """SPEC §11.4: a variable defined in both ``by_mode`` and ``by_proficiency`` is a
    ``validate`` error located at the template's node in the exec-defaults file, naming the
    member."""
    path = ap.root / ".specdojo" / "exec-defaults.yaml"
    path.write_text(path.read_text() + '      by_proficiency:\n        high: {flags: "--deep"}\n')
    ap.edit_job("job-e")
    done = ap.cli("validate")
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if "exec-defaults" in line]
    assert lines and all(line.startswith(".specdojo/exec-defaults.yaml:6:23: ") for line in lines)
    assert all("by_mode" in line and "by_proficiency" in line for line in lines)
    assert any("member editor" in line for line in lines)


def test_run_exec_defaults_in_the_config_names_the_exec_defaults_file(tmp_path: Path) -> None:
    """SPEC §11.1/§11.4: the project config's `run.exec_defaults` (root-relative) is the exec
    defaults file the launch command comes from, instead of .specdojo/exec-defaults.yaml."""
    ap = AgentProject(tmp_path / "proj", run={"exec_defaults": "conf/exec.yaml"})
    default = ap.root / ".specdojo" / "exec-defaults.yaml"
    (ap.root / "conf").mkdir()
    (ap.root / "conf" / "exec.yaml").write_text(
        default.read_text().replace('"--edit"', '"--edit-conf"'))
    ap.edit_job("job-e")
    assert "succeeded" == run_json(ap, code=0)["state"]
    assert [["--mode=edit", "--edit-conf"]] == [x["argv"] for x in ap.launches()]


def test_missing_roster_is_a_configuration_error(ap: AgentProject) -> None:
    (ap.root / "members.yaml").unlink()
    done = ap.cli("validate")
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and len(done.stderr.splitlines()) == 1
    assert "members.yaml" in done.stderr


def test_injected_executor_overrides_the_roster(ap: AgentProject) -> None:
    ap.edit_job("job-e")
    seen: list[AgentRequest] = []

    def injected(request: AgentRequest) -> AgentResult:
        seen.append(request)
        return AgentResult(status="succeeded")

    paths = resolve_project(ap.root, env={})
    outcome = jobs.run_job(paths, definitions.load_jobs(paths), "job-e", {"period": "w1"},
                           scheduled_at=SCHEDULED, agent=injected, env=ap.env())
    assert outcome.state == "succeeded" and len(seen) == 1
    assert ap.launches() == []


def test_project_templates_are_used(ap: AgentProject) -> None:
    templates = ap.root / "docs" / "ja" / "specdojo" / "templates"
    templates.mkdir(parents=True)
    (templates / "xep-job-template.md").write_text(
        "_FRONTMATTER_\n\nOWN PLAN for _JOB_ID_ / _RUN_ID_ -> _RESULT_REF_\n_COMMON_CONVENTIONS_\n")
    (templates / "xep-common-conventions-template.md").write_text("OWN CONVENTIONS\n")
    (templates / "xer-template.md").write_text(
        "_FRONTMATTER_\n\nOWN RESULT\n_TODO_: 実施した内容\n")
    ap.edit_job("job-e")
    out = run_json(ap, code=0)
    stdin = ap.launches()[0]["stdin"]
    assert f"OWN PLAN for job-e / {out['run_id']} -> execution/exec/results/" in stdin
    assert "OWN CONVENTIONS" in stdin
    assert "OWN RESULT" in ap.result_text(str(out["run_id"]))


SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_a_secret_printed_by_an_agent_reaches_no_file_and_no_console(ap: AgentProject) -> None:
    ap.edit_job("job-e", agent="{executor: editor, reporter: reporter}")
    leak = "token {env:MY_API_TOKEN} and " + SECRET + "\n"
    ap.behave({"editor": {"stdout": leak, "stderr": leak, "result_extra": leak},
               "reporter": {"stdout": leak, "stderr": leak, "exit": 4}})
    env = ap.env(MY_API_TOKEN="s3cr3t-value-123")
    done = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1", env=env)
    assert done.returncode == 1
    for text in (done.stdout, done.stderr):
        assert "s3cr3t-value-123" not in text and SECRET not in text
    assert "[REDACTED]" in done.stdout
    for rel, data in ap.files().items():
        assert b"s3cr3t-value-123" not in data and SECRET.encode() not in data, rel
    reporter_stdin = ap.launches()[1]["stdin"]
    assert "s3cr3t-value-123" not in reporter_stdin and SECRET not in reporter_stdin


def test_the_view_records_the_agent_attempt(ap: AgentProject) -> None:
    ap.edit_job("job-e")
    out = run_json(ap, code=0)
    view = ap.view(str(out["run_id"]))
    assert view["state"] == "succeeded" and view["attempts"][0]["status"] == "succeeded"
    assert orjson.loads(orjson.dumps(view))["task"]["mode"] == "edit"


def test_agent_evidence_is_bounded(ap: AgentProject) -> None:
    ap.edit_job("job-e")
    ap.behave({"editor": {"stdout": "x" * 200_000 + "\n"}})
    out = run_json(ap, code=0)
    log = (ap.root / "execution" / "exec" / "evidence" / str(out["run_id"]) / "attempt-1"
           / "agent-executor.stdout.log")
    assert 60_000 < log.stat().st_size <= 65536


def test_reporter_gets_both_executor_streams_redacted_bounded_and_fenced(
        ap: AgentProject) -> None:
    """SPEC §11.4 Pipelines: a reporter's stdin is the plan plus the executor's stdout and
    stderr, each redacted, bounded to 64 KiB and fenced."""
    ap.edit_job("job-e", agent="{executor: own-command, reporter: reporter}")
    ap.behave({"own-command": {"stdout": "O" * 200_000 + "\nSTDOUT-TAIL\n",
                               "stderr": "leaked {env:MY_API_TOKEN}\n" + "E" * 100_000
                                         + "\nSTDERR-TAIL\n",
                               "fill": False}})
    env = ap.env(MY_API_TOKEN="s3cr3t-value-123")
    done = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1", "--json", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    first, second = ap.launches()
    assert (first["role"], second["role"]) == ("executor", "reporter")
    stdin = second["stdin"]
    assert stdin.startswith(first["stdin"].rstrip())
    fenced = re.fullmatch(
        r"(?s).*\n### stdout\n\n```text\n(?P<out>[^`]*)\n```\n\n"
        r"### stderr\n\n```text\n(?P<err>[^`]*)\n```\n", stdin)
    assert fenced is not None, stdin[-300:]
    limit = 64 * 1024
    # each stream is cut on its own to the bound: the head is kept, the tail is gone
    assert fenced["out"] == "O" * limit
    assert fenced["err"] == ("leaked [REDACTED]\n" + "E" * 100_000)[:limit]
    assert len(fenced["err"].encode("utf-8")) == limit
    assert "STDOUT-TAIL" not in stdin and "STDERR-TAIL" not in stdin
    assert "s3cr3t-value-123" not in stdin


def test_a_members_own_command_wins_over_its_providers_template(ap: AgentProject) -> None:
    """SPEC §11.1: a member with both a ``provider`` and its own ``command`` is launched with
    its command; the provider's ``command_template`` is only for members without one (and
    `validate` does not try to expand it for this member either)."""
    roster = ap.root / "members.yaml"
    roster.write_text(roster.read_text().replace(
        "  - nickname: own-command\n    type: agent\n",
        "  - nickname: own-command\n    type: agent\n    provider: fake\n"))
    path = ap.root / ".specdojo" / "exec-defaults.yaml"
    path.write_text(path.read_text().replace("{flags}", "{flags} {unknown_variable}"))
    ap.edit_job("job-e", agent="{executor: own-command}")
    checked = ap.cli("validate")
    assert "member editor " in checked.stderr  # the template is broken for the others
    assert "member own-command" not in checked.stderr
    out = run_json(ap, code=0)
    assert "succeeded" == out["state"]
    [launch] = ap.launches()
    assert ("own-command", []) == (launch["nickname"], launch["argv"])


@pytest.mark.parametrize(("make", "said"), [
    (lambda p: p.unlink(), "does not exist; create the roster or fix members_path"),
    (lambda p: (p.unlink(), p.mkdir()), "is a directory, not the roster file; point "
     "members_path at the roster"),
    (lambda p: (p.unlink(), os.mkfifo(p)), "is a FIFO, not the roster file; point "
     "members_path at the roster"),
])
def test_a_members_path_that_is_no_roster_file_says_what_it_is(
    tmp_path: Path, make: Any, said: str,
) -> None:
    """A roster path that names a directory or a FIFO is reported as what it is (it was
    reported as missing, sending the operator to look for a file that is there), in one line,
    exit 2; and a FIFO is never opened (nothing waits for a writer)."""
    ap = AgentProject(tmp_path / "proj")
    make(ap.root / "members.yaml")
    done = ap.cli("validate", timeout=60)
    assert 2 == done.returncode, done.stderr
    assert [f'error: members_path "members.yaml" of project "demo" {said}'] == [
        line.split(" (see `")[0] for line in done.stderr.splitlines()]


@pytest.mark.parametrize("key", ["members_path", "exec_defaults", "worktree_base"])
def test_a_config_path_that_is_a_symbolic_link_loop_is_a_configuration_error(
        tmp_path: Path, key: str) -> None:
    """A roster, exec-defaults or worktree path that loops (a -> b -> a) is one line, exit 2,
    saying so; it was an internal error (Python's RuntimeError of ``Path.resolve``)."""
    ap = AgentProject(tmp_path / "proj")
    (ap.root / "loop-a").symlink_to("loop-b")
    (ap.root / "loop-b").symlink_to("loop-a")
    config = ap.root / ".specdojo" / "specdojo.config.json"
    data = json.loads(config.read_text())
    entry = data["projects"]["demo"]
    (entry if key == "members_path" else entry.setdefault("run", {}))[key] = "loop-a/x"
    config.write_text(json.dumps(data))
    done = ap.cli("validate", timeout=60)
    assert 2 == done.returncode, done.stderr
    assert f'"{key}" "loop-a/x" is a symbolic link loop; point it at a real file or folder' \
        in done.stderr and "internal error" not in done.stderr


def test_dry_run_says_a_review_without_a_review_agent_ends_blocked(ap: AgentProject) -> None:
    """With no ``mode: review`` agent, ``--dry-run`` says the review ends blocked; it said
    "the review executor writes the result" of the review executor that is not there."""
    path = ap.root / "members.yaml"
    path.write_text(path.read_text().replace("mode: review", "mode: edit"))
    ap.edit_job("job-e", review="{}")
    done = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1", "--dry-run")
    assert ("  review executor: none: no enabled agent with mode: review, so the review ends "
            "blocked, not merged (auto)") in done.stdout.splitlines(), done.stdout
