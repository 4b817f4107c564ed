"""Analysis of command evidence (SPEC §11.2): after succeeded/partial commands only, with
``evidence.json`` verbatim on the agent's stdin; its outcome decides the run."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.agenthelper import AgentProject


@pytest.fixture
def ap(tmp_path: Path) -> AgentProject:
    return AgentProject(tmp_path / "proj")


def command_job(ap: AgentProject, command: str, analysis: bool = True) -> None:
    extra = "  analysis: {agent: analyst, description: \"Check the report\"}\n" if analysis else ""
    ap.job("job-c", f"""\
name: Command with analysis
task:
  mode: command
  command: "{command}"
  partial_exit_code: [3]
{extra}run: {{idempotency_key: "{{{{job_id}}}}"}}
""")


def run(ap: AgentProject, code: int) -> dict[str, object]:
    done = ap.cli("job", "run", "--job", "job-c", "--json")
    assert done.returncode == code, done.stdout + done.stderr
    data: dict[str, object] = json.loads(done.stdout)
    return data


def test_analysis_reads_the_evidence_verbatim_and_the_command_status_stands(
        ap: AgentProject) -> None:
    command_job(ap, "echo report-line")
    out = run(ap, 0)
    assert out["state"] == "succeeded"
    (launch,) = ap.launches()
    assert (launch["nickname"], launch["role"]) == ("analyst", "analysis")
    evidence = next((ap.root / "execution").rglob("evidence.json")).read_text()
    assert f"```json\n{evidence.rstrip()}\n```" in launch["stdin"]
    assert "Check the report" in launch["stdin"]
    assert '"stdout": "report-line\\n"' in launch["stdin"]
    result = ap.result_text(str(out["run_id"]))
    assert "status: complete" in result and "Did the work." in result


def test_analysis_runs_after_partial_too(ap: AgentProject) -> None:
    command_job(ap, "exit 3")
    out = run(ap, 1)
    assert out["state"] == "partial" and len(ap.launches()) == 1


def test_no_analysis_after_a_failed_command(ap: AgentProject) -> None:
    command_job(ap, "exit 9")
    out = run(ap, 1)
    assert out["state"] == "failed" and ap.launches() == []


def test_analysis_noop_makes_the_run_noop(ap: AgentProject) -> None:
    command_job(ap, "true")
    ap.behave({"analyst": {"outcome": "noop"}})
    assert run(ap, 0)["state"] == "noop"


@pytest.mark.parametrize(("how", "reason"), [
    ({"exit": 2}, "analysis failed: agent analyst exited with code 2"),
    ({"fill": False}, "analysis failed: agent exited 0 but result mandatory sections remain "
                      "unfilled (treated as blocked)"),
])
def test_analysis_failure_fails_the_run(ap: AgentProject, how: dict[str, object],
                                        reason: str) -> None:
    command_job(ap, "true")
    ap.behave({"analyst": how})
    out = run(ap, 1)
    assert (out["state"], out["reason"]) == ("failed", reason)
    assert "status: blocked" in ap.result_text(str(out["run_id"]))


def test_rate_limited_analysis_is_a_skip(ap: AgentProject) -> None:
    command_job(ap, "true")
    ap.behave({"analyst": {"exit": 42}})
    out = run(ap, 0)
    assert (out["state"], out["reason"], out["skipped"]) == (
        "failed", "rate limited (exit code 42)", True)


def test_without_analysis_the_runner_writes_the_result(ap: AgentProject) -> None:
    command_job(ap, "true", analysis=False)
    out = run(ap, 0)
    assert ap.launches() == []
    assert "- Status: succeeded" in ap.result_text(str(out["run_id"]))


def test_task_timeout_is_one_budget_for_the_command_and_its_analysis(ap: AgentProject) -> None:
    """SPEC §11.4: the analysis gets what the command left of task.timeout, not a fresh one."""
    ap.job("job-c", """\
name: Command with analysis
task:
  mode: command
  command: "sleep 2.5"
  timeout: 3s
  analysis: {agent: analyst, description: "Check the report"}
run: {idempotency_key: "{{job_id}}"}
""")
    ap.behave({"analyst": {"sleep": 60, "child": True}})
    started = time.monotonic()
    out = run(ap, 1)
    elapsed = time.monotonic() - started
    assert out["state"] == "failed"
    assert "analysis failed" in str(out["reason"]) and "timed out" in str(out["reason"])
    assert elapsed < 3 + 1.8, elapsed  # one 3 s budget, not 2.5 s + a fresh 3 s
