"""Audit of SPEC §7 (Job Definitions and Job Runs): the promises the other Job tests left open.

Shell-data guarantee in nested expansions, the input resolution order, git resolution under a
caller's git variables, retries reusing the frozen run, E-08 writing nothing at all, and no
secret in any file a Job Run (or the routine around it) leaves behind.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import Project
from jobhelper import clean_env, commit, git, paths_of, run

from specdojo_routine.core import jobplan
from specdojo_routine.core.jobmodel import CommandTask, InputSpec, JobDefinition
from specdojo_routine.core.templates import TemplateError, render_shell
from specdojo_routine.execute.agent import AgentRequest, AgentResult
from specdojo_routine.execute.runner import run_shell
from specdojo_routine.store.ledger import views

# --- §7.2: values reach the shell as data, also inside nested expansions ----------------------

INJECTING = "$(touch PWNED1)`touch PWNED2`'\"\\ ${Y:-$(touch PWNED3)} * ;touch PWNED4"
# values that close the surrounding construct first, then inject
BREAKOUTS = [INJECTING, "\\\n$(touch PWNED5)", "'\\''$(touch PWNED6)'", "\")$(touch PWNED7)#",
             "}$(touch PWNED8))\"'`touch PWNED9`"]


def _files_created(template: str, tmp_path: Path) -> list[str]:
    """Render ``template`` with injecting values and run them; the files they created (none
    when rendering refuses the placeholder)."""
    for value in BREAKOUTS:
        try:
            command = render_shell(template, {"inputs.x": value})
        except TemplateError:
            return []
        for shell in ("/bin/sh", "bash"):
            subprocess.run([shell, "-u", "-c", command], cwd=tmp_path, capture_output=True,
                           env={"PATH": os.environ["PATH"], "X": ""}, timeout=20, check=False)
    return sorted(os.listdir(tmp_path))


@pytest.mark.parametrize("template", [
    'printf "%s|" "${X:-"{{inputs.x}}"}"',
    'printf "%s|" "${UNSET:-"pre-{{inputs.x}}"}"',
    'printf "%s|" "${X:-${X:-"{{inputs.x}}"}}"',
    'echo $(( "{{inputs.x}}" + 1 ))',
    'echo "$(( "{{inputs.x}}" ))"',
    "echo $(( 1 + ${X:-'{{inputs.x}}'} ))",
    'printf "%s|" "`printf %s "\\\\{{inputs.x}}"`"',
    'printf "%s|" `printf %s \\\\{{inputs.x}}`',
    'printf "%s|" `printf %s "\\$({{inputs.x}})"`',
], ids=["dq-default-in-dq-param", "dq-prefixed-default", "nested-params", "dq-in-arith",
        "dq-in-quoted-arith", "sq-param-in-arith", "backslash-dq-in-backticks",
        "backslash-in-backticks", "dollar-escape-in-backticks"])
def test_nested_expansion_never_runs_the_value(template: str, tmp_path: Path) -> None:
    """§7.2: in a quoted ${...}, $((...)) or `...`, the value is refused or stays data."""
    assert [] == _files_created(template, tmp_path)


@pytest.mark.parametrize(("template", "expected"), [
    ('printf "%s|" ${X:-"{{inputs.x}}"}', "{v}|"),
    ('printf "%s|" "$(printf %s ${X:-"{{inputs.x}}"})"', "{v}|"),
    ('printf "%s|" "${X:-`printf "%s" "{{inputs.x}}"`}"', "{v}|"),
    ('printf "%s|" "$(( $(printf %s 1) ))" "{{inputs.x}}"', "1|{v}|"),
], ids=["dq-default-in-bare-param", "bare-param-in-cmdsub", "backticks-in-dq-param",
        "after-an-arith"])
def test_placeholders_next_to_expansions_still_render_exactly(
    template: str, expected: str, tmp_path: Path
) -> None:
    """The refusals above stay narrow: these contexts still receive exactly the value."""
    value = INJECTING.replace("\\", "")
    outcome = run_shell(render_shell(template, {"inputs.x": value}), cwd=tmp_path,
                        env={"PATH": os.environ["PATH"], "X": ""}, timeout_s=20)
    assert (expected.format(v=value), []) == (outcome.stdout, sorted(os.listdir(tmp_path)))


def test_job_with_a_value_in_a_quoted_default_never_runs_it(project: Project) -> None:
    """§7.2 end to end: `job run --input 'x=$(touch …)'` cannot make the shell run it."""
    project.job("job-inject", """\
        name: Inject
        inputs:
          x: {type: string, required: true}
        task:
          mode: command
          command: 'printf "%s" "${OUT:-"{{inputs.x}}"}" > out.txt'
        run:
          idempotency_key: "{{job_id}}:{{inputs.x}}"
        """)
    done = project.cli("job", "run", "--job", "job-inject", "--input", "x=$(touch PWNED)",
                       env=project.env())
    assert (1, False) == (done.returncode, (project.root / "PWNED").exists())
    assert "job-inject" in done.stderr


# --- §7.3.1: input resolution order ------------------------------------------------------------


class _Git:
    """A GitResolver whose HEAD is ``h…h`` and whose revisions are their own shas."""

    def head(self) -> str:
        return "h" * 40

    def commit(self, revision: str) -> str:
        return revision


ALL_SOURCES = JobDefinition(
    id="job-x", path="jobs/job-x.yaml", name="X", idempotency_key="{{job_id}}",
    task=CommandTask(command="true"),
    inputs=(InputSpec(name="rev", from_checkpoint="rev", resolve="git_head", default="d" * 40),),
)


@pytest.mark.parametrize(("explicit", "checkpoint", "expected"), [
    ({"rev": "e" * 40}, {"rev": "c" * 40}, "e" * 40),
    ({}, {"rev": "c" * 40}, "c" * 40),
    ({}, {"other": "x"}, "h" * 40),
    ({}, None, "h" * 40),
], ids=["explicit", "from_checkpoint", "git_head-over-default", "first-run"])
def test_resolution_order_explicit_checkpoint_git_head_default(
    explicit: dict[str, Any], checkpoint: dict[str, Any] | None, expected: str
) -> None:
    """§7.3: explicit -> from_checkpoint -> git_head -> default, for one input with all four."""
    got = jobplan.resolve_inputs(ALL_SOURCES, explicit, checkpoint, _Git())
    assert {"rev": expected} == got


def test_git_head_is_the_project_repository_despite_the_callers_git_dir(
    project: Project, tmp_path: Path
) -> None:
    """git_head/git_revision resolve in the root even when GIT_DIR names another repository."""
    project.job("job-head", """\
        name: Head
        inputs:
          rev: {type: string, resolve: git_head, git_revision: true}
        task:
          mode: command
          command: "true"
        run:
          idempotency_key: "{{job_id}}:{{inputs.rev}}"
        """)
    git(project.root, "init", "-q")
    ours = commit(project.root, "a.md")
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    commit(other, "b.md")
    out = run(project.root, "job-head",
              env=clean_env(GIT_DIR=str(other / ".git"), GIT_WORK_TREE=str(other)))
    doc = views.load_job_run(paths_of(project.root), out.run_id or "")
    assert doc is not None
    assert ("succeeded", ours) == (out.state, doc["inputs"]["rev"])


# --- §7.3.2: a new attempt reuses the frozen run -----------------------------------------------

NOTE_JOB = """\
name: Note
inputs:
  period: {type: string, required: true}
  note: {type: string, default: none}
task:
  mode: command
  command: printf "%s" "{{inputs.note}}" > note.txt; test -e ok
run:
  idempotency_key: "{{job_id}}:{{inputs.period}}"
"""


def test_retry_runs_with_the_recorded_inputs(project: Project) -> None:
    """§7.3: a retry is the same run with its frozen inputs, not the caller's new ones."""
    project.job("job-note", NOTE_JOB)
    first = run(project.root, "job-note", {"period": "W1", "note": "first"})
    (project.root / "ok").write_text("")
    second = run(project.root, "job-note", {"period": "W1", "note": "second"})
    assert (first.run_id, 2, "succeeded", "first") == (
        second.run_id, second.attempt, second.state, (project.root / "note.txt").read_text())


def test_precondition_is_not_consulted_on_a_retry(project: Project) -> None:
    """§7.3: the precondition gates the first attempt only; a retry runs even if it would skip."""
    project.job("job-pre", """\
        name: Pre
        task:
          mode: command
          precondition: {command: cat items.txt, skip_when: empty-output}
          command: test -e ok
        run:
          idempotency_key: "{{job_id}}"
        """)
    (project.root / "items.txt").write_text("item\n")
    first = run(project.root, "job-pre")
    (project.root / "items.txt").write_text("")
    (project.root / "ok").write_text("")
    second = run(project.root, "job-pre")
    assert ("failed", first.run_id, 2, "succeeded", False) == (
        first.state, second.run_id, second.attempt, second.state, second.skipped)


def test_duplicate_complete_changes_no_file_at_all(project: Project) -> None:
    """E-08: a duplicate complete call leaves every file (ledger, views, plan, result) as is."""
    project.job("job-note", NOTE_JOB)
    (project.root / "ok").write_text("")
    run(project.root, "job-note", {"period": "W1"})
    before = project.files()
    again = run(project.root, "job-note", {"period": "W1"})
    assert (True, before) == (again.duplicate_complete, project.files())


# --- §7.5: no secret in any file ---------------------------------------------------------------

ENV_SECRET = "env-secret-0123456789"
PATTERN_SECRETS = ["sk-proj-abcdefgh12345678", "ghp_abcdefgh12345678", "AKIAABCDEFGHIJKLMNOP",
                   "xoxb-12345678-abcdef", "hunter2hunter2", "bearer-token-value-xyz",
                   "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"]
LEAKY_JOB = """\
name: Leaky
inputs:
  period: {type: string, required: true}
task:
  mode: command
  command: >-
    echo "key sk-proj-abcdefgh12345678 ghp_abcdefgh12345678 AKIAABCDEFGHIJKLMNOP";
    echo "xoxb-12345678-abcdef password=hunter2hunter2 $MY_SERVICE_TOKEN" >&2;
    echo "Authorization: Bearer bearer-token-value-xyz";
    printf -- '%s\\n' '-----BEGIN PRIVATE KEY-----'
    MIIEvQIBADANBgkqhkiG9w0BAQEFAASC '-----END PRIVATE KEY-----';
    test -e ok || { echo "failing with $MY_SERVICE_TOKEN" >&2; exit 1; }
  timeout: 30s
run:
  idempotency_key: "{{job_id}}:{{inputs.period}}"
checkpoint:
  values: {period: "{{inputs.period}}"}
"""


def _leaks(project: Project) -> list[str]:
    """Files outside the definitions that hold any of the secrets."""
    secrets = [s.encode() for s in [ENV_SECRET, *PATTERN_SECRETS]]
    return sorted(name for name, data in project.files().items()
                  if not name.startswith(("jobs/", "routines/rtn-"))
                  and any(secret in data for secret in secrets))


def test_no_secret_in_any_file_after_routine_runs_with_a_failure_and_a_retry(
    project: Project,
) -> None:
    """§7.5: ledgers, views, plan/result, evidence, job-state: no secret after two attempts."""
    project.job("job-leaky", LEAKY_JOB)
    project.routine("rtn-leaky", """\
        interval: 1d
        action: {kind: job, job: job-leaky, inputs: {period: "{{scheduled_at | iso_week}}"}}
        """)
    env = {k: v for k, v in project.env().items() if not k.startswith("SPECDOJO_EXEC")}
    env["MY_SERVICE_TOKEN"] = ENV_SECRET
    failed = project.cli("run", "--id", "rtn-leaky", env=env)
    (project.root / "ok").write_text("")
    passed = project.cli("run", "--id", "rtn-leaky", env=env)
    state = orjson.loads(
        (project.root / "execution/jobs/generated/job-state.json").read_bytes())
    assert (1, 0, ["job-leaky"]) == (failed.returncode, passed.returncode, list(state["jobs"]))
    assert [] == _leaks(project)


def test_agent_reason_and_final_message_are_redacted_everywhere(project: Project) -> None:
    """§7.5: an executor's reason and final message reach no file with their secrets."""
    project.job("job-edit", """\
        name: Edit
        task:
          mode: edit
          description: Edit it
          targets: [doc]
        run:
          idempotency_key: "{{job_id}}"
        """)

    def executor(request: AgentRequest) -> AgentResult:
        return AgentResult(status="failed", reason=f"login as {ENV_SECRET} failed; "
                           "password=hunter2hunter2", final_message=f"gave up: {ENV_SECRET}")

    out = run(project.root, "job-edit", agent=executor,
              env=clean_env(MY_SERVICE_TOKEN=ENV_SECRET))
    assert ("failed", "login as [REDACTED] failed; password=[REDACTED]") == (
        out.state, out.reason)
    assert [] == _leaks(project)

