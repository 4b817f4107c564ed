"""Job Runs on a real temp project: idempotency, checkpoints, preconditions, locks, secrets."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import Project
from jobhelper import HELPER, clean_env, commit, git, ledger_events, paths_of, run

from specdojo_routine.app import jobs
from specdojo_routine.core.errors import JobError, UsageError
from specdojo_routine.core.event_parts import Owner
from specdojo_routine.core.job_events import RunAttemptStarted, RunCreated
from specdojo_routine.core.model import Result
from specdojo_routine.execute.agent import AgentRequest, AgentResult
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.definitions.load import load_jobs
from specdojo_routine.store.ledger import views
from specdojo_routine.store.ledger.journal import Ledger

WEEKLY = """\
name: Weekly report
inputs:
  period: {type: string, required: true}
task:
  mode: command
  command: echo "report {{inputs.period}}" > "report-{{inputs.period}}.txt"; exit "${CODE:-0}"
run:
  idempotency_key: "{{job_id}}:{{inputs.period}}"
"""


def weekly(project: Project, **task: Any) -> None:
    body = WEEKLY
    for key, value in task.items():
        body = body.replace("run:\n", f"  {key}: {value}\nrun:\n")
    project.job("job-weekly", body)


def command_job(project: Project, command: str, extra: str = "") -> None:
    project.job("job-cmd", f"name: Cmd\ntask:\n  mode: command\n  command: '{command}'\n{extra}"
                           'run:\n  idempotency_key: "{{job_id}}:{{scheduled_at}}"\n')


def state_of(project: Project) -> dict[str, Any]:
    path = project.root / "execution" / "jobs" / "generated" / "job-state.json"
    data: dict[str, Any] = orjson.loads(path.read_bytes())
    return data


# --- E-08 idempotency --------------------------------------------------------------------------


def test_second_run_after_success_is_duplicate_complete_and_appends_nothing(
    project: Project,
) -> None:
    """E-08: the same key after success is the same run; its ledger bytes stay unchanged."""
    weekly(project)
    first = run(project.root, "job-weekly", {"period": "2026-W32"})
    ledger = paths_of(project.root).run_ledger(first.run_id or "")
    before = ledger.read_bytes()
    again = run(project.root, "job-weekly", {"period": "2026-W32"})
    assert (first.run_id, True, "succeeded", 1) == (
        again.run_id, again.duplicate_complete, again.state, again.attempt)
    assert before == ledger.read_bytes()


def test_run_after_failure_is_the_same_run_with_a_second_attempt(project: Project) -> None:
    """E-08: a failed run is retried as a new attempt of the same run."""
    weekly(project)
    failed = run(project.root, "job-weekly", {"period": "W1"}, env=clean_env(CODE="3"))
    retried = run(project.root, "job-weekly", {"period": "W1"})
    doc = views.load_job_run(paths_of(project.root), failed.run_id or "")
    assert doc is not None
    assert (failed.run_id, 2, "succeeded") == (retried.run_id, retried.attempt, doc["state"])
    assert ["failed", "succeeded"] == [a["status"] for a in doc["attempts"]]


def test_different_key_is_a_different_run(project: Project) -> None:
    """Another period is another run id."""
    weekly(project)
    a = run(project.root, "job-weekly", {"period": "W1"})
    b = run(project.root, "job-weekly", {"period": "W2"})
    assert a.run_id != b.run_id and b.attempt == 1


def test_identity_collision_is_refused(project: Project) -> None:
    """A ledger under our run id with another key is a collision, and nothing is appended."""
    weekly(project)
    paths = paths_of(project.root)
    prep = jobs.prepare(paths, load_jobs(paths), "job-weekly", {"period": "W1"},
                        scheduled_at=datetime.now(UTC), trigger="manual", env=clean_env())
    log = Ledger(paths.run_ledger(prep.run_id))
    log.append(RunCreated(run_id=prep.run_id, job_id="job-weekly", idempotency_key="other",
                          project_id="demo", trigger="manual",
                          scheduled_at="2026-08-07T08:00:00.000Z", inputs={}, task={},
                          checkpoint_before=None))
    before = log.path.read_bytes()
    with pytest.raises(JobError, match=f"^Job Run identity collision: {prep.run_id}$"):
        run(project.root, "job-weekly", {"period": "W1"})
    assert before == log.path.read_bytes()


# --- E-09 checkpoints --------------------------------------------------------------------------

TRANSLATE = """\
name: Translate updated documents
inputs:
  from_revision: {type: string, from_checkpoint: revision, default: HEAD~1, git_revision: true}
  to_revision: {type: string, resolve: git_head, git_revision: true}
  languages: {type: list, default: [en]}
task:
  mode: command
  command: >-
    git diff --name-only {{inputs.from_revision}} {{inputs.to_revision}}
    > "diff-{{job_run_id}}.txt"; test -z "${FAIL:-}"
run:
  idempotency_key: >-
    {{job_id}}:{{inputs.from_revision}}:{{inputs.to_revision}}:{{inputs.languages}}
checkpoint:
  values:
    revision: "{{inputs.to_revision}}"
  advance_on: [succeeded, noop]
"""


@pytest.fixture
def repo(project: Project) -> Iterator[Project]:
    git(project.root, "init", "-q")
    project.job("job-translate", TRANSLATE)
    yield project


def checkpoint_of(project: Project) -> str:
    return str(state_of(project)["jobs"]["job-translate"]["checkpoint"]["revision"])


def test_first_translation_covers_head_1_to_head_and_advances(repo: Project) -> None:
    """E-09: no checkpoint -> from HEAD~1 (default, as a sha) to HEAD; success advances."""
    c1, c2 = commit(repo.root, "a.md"), commit(repo.root, "b.md")
    out = run(repo.root, "job-translate")
    doc = views.load_job_run(paths_of(repo.root), out.run_id or "")
    assert doc is not None
    assert {"from_revision": c1, "to_revision": c2, "languages": ["en"]} == doc["inputs"]
    assert (None, c2) == (doc["checkpoint_before"] or None, checkpoint_of(repo))
    assert "docs/b.md\n" == (repo.root / f"diff-{out.run_id}.txt").read_text()


def test_failed_translation_keeps_the_checkpoint_and_retry_reuses_the_range(
    repo: Project,
) -> None:
    """E-09: failure keeps the previous checkpoint; the retry is the same run and advances."""
    commit(repo.root, "a.md")
    c2 = commit(repo.root, "b.md")
    run(repo.root, "job-translate")
    c3 = commit(repo.root, "c.md")
    failed = run(repo.root, "job-translate", env=clean_env(FAIL="1"))
    assert ("failed", c2) == (failed.state, checkpoint_of(repo))
    retried = run(repo.root, "job-translate")
    assert (failed.run_id, 2, c3) == (retried.run_id, retried.attempt, checkpoint_of(repo))


def test_checkpoint_feeds_from_revision_of_the_next_run(repo: Project) -> None:
    """E-09: the advanced revision is the next run's from_revision."""
    commit(repo.root, "a.md")
    c2 = commit(repo.root, "b.md")
    run(repo.root, "job-translate")
    c3 = commit(repo.root, "c.md")
    nxt = run(repo.root, "job-translate")
    doc = views.load_job_run(paths_of(repo.root), nxt.run_id or "")
    assert doc is not None
    assert ({"revision": c2}, c2, c3) == (
        doc["checkpoint_before"], doc["inputs"]["from_revision"], doc["inputs"]["to_revision"])


def test_checkpoints_of_a_job_with_a_prefix_slug_stay_apart(project: Project) -> None:
    """job-t never reads job-t-x's checkpoint (run ids JBR-t-… vs JBR-t-x-…)."""
    body = ("name: T\ninputs:\n  last: {type: string, from_checkpoint: v, default: none}\n"
            "task:\n  mode: command\n  command: 'true'\n"
            "run:\n  idempotency_key: '{{job_id}}:{{inputs.last}}'\n"
            "checkpoint:\n  values: {v: '{{job_id}}'}\n")
    project.job("job-t", body)
    project.job("job-t-x", body)
    run(project.root, "job-t-x")
    first_t = run(project.root, "job-t")
    second_t = run(project.root, "job-t")
    inputs = [views.load_job_run(paths_of(project.root), o.run_id or "") for o in (first_t,
                                                                                     second_t)]
    assert [{"last": "none"}, {"last": "job-t"}] == [d["inputs"] for d in inputs if d]


@pytest.mark.parametrize(("advance_on", "advanced"), [
    ("", True), ("  advance_on: [succeeded]\n", False), ("  advance_on: [noop]\n", True)])
def test_checkpoint_advance_on_defaults_to_succeeded_and_noop(
    project: Project, advance_on: str, advanced: bool,
) -> None:
    """SPEC §7.1: ``checkpoint.advance_on`` ⊆ {succeeded, noop}, default both; §7.3.4: a status
    in ``advance_on`` appends ``checkpoint_advanced``. A noop run without ``advance_on`` advances
    the checkpoint; with ``advance_on: [succeeded]`` it does not."""
    project.job("job-n", "name: N\ntask: {mode: command, command: 'exit 4', noop_exit_code: 4}\n"
                         "run:\n  idempotency_key: '{{job_id}}'\n"
                         "checkpoint:\n  values: {mark: '{{job_id}}'}\n" + advance_on)
    out = run(project.root, "job-n")
    assert out.state == "noop"
    types = [e["type"] for e in ledger_events(paths_of(project.root), out.run_id or "")]
    assert ("checkpoint_advanced" in types) is advanced
    checkpoint = state_of(project)["jobs"].get("job-n", {}).get("checkpoint")
    assert checkpoint == ({"mark": "job-n"} if advanced else None)


def test_checkpoint_placeholder_is_the_previous_successful_checkpoint(project: Project) -> None:
    """SPEC §7.2: `{{checkpoint.<path>}}` in a command renders the previous successful
    checkpoint: empty before the first, unchanged by a failed run in between."""
    project.job("job-c", "name: C\ninputs:\n  rev: {type: string, required: true}\n"
                         "task:\n  mode: command\n"
                         "  command: printf '%s\\n' \"{{checkpoint.rev}}\" >> seen.log; "
                         "exit \"${CODE:-0}\"\n"
                         "run:\n  idempotency_key: '{{job_id}}:{{inputs.rev}}'\n"
                         "checkpoint:\n  values: {rev: '{{inputs.rev}}'}\n")
    for rev, code in (("A", "0"), ("B", "1"), ("C", "0")):
        run(project.root, "job-c", {"rev": rev}, env=clean_env(CODE=code))
    assert ["", "A", "A"] == (project.root / "seen.log").read_text().splitlines()


def test_a_precondition_and_the_record_see_the_previous_checkpoint(project: Project) -> None:
    """SPEC §7.2, §7.3.3: a new run's precondition, which runs before the exec lock, renders
    ``{{checkpoint.<path>}}`` with the previous successful checkpoint too, and the run
    records it as ``checkpoint_before``, though its key does not read the checkpoint."""
    project.job("job-c", "name: C\ninputs:\n  rev: {type: string, required: true}\n"
                         "task:\n  mode: command\n  command: 'true'\n"
                         "  precondition:\n"
                         "    command: printf '%s\\n' \"{{checkpoint.rev}}\" >> seen.log\n"
                         "    skip_when: 3\n"
                         "run:\n  idempotency_key: '{{job_id}}:{{inputs.rev}}'\n"
                         "checkpoint:\n  values: {rev: '{{inputs.rev}}'}\n")
    outcomes = [run(project.root, "job-c", {"rev": rev}) for rev in ("A", "B")]
    view = orjson.loads(paths_of(project.root).run_view(outcomes[1].run_id or "").read_bytes())
    assert (["", "A"], {"rev": "A"}) == (
        (project.root / "seen.log").read_text().splitlines(), view["checkpoint_before"])


def test_lost_checkpoint_is_recorded_by_the_next_duplicate_call(repo: Project) -> None:
    """A crash between attempt_ended and checkpoint_advanced is repaired on the next call."""
    commit(repo.root, "a.md")
    c2 = commit(repo.root, "b.md")
    out = run(repo.root, "job-translate")
    paths = paths_of(repo.root)
    ledger = paths.run_ledger(out.run_id or "")
    lines = ledger.read_bytes().splitlines(keepends=True)
    ledger.write_bytes(b"".join(lines[:-1]))  # drop checkpoint_advanced
    paths.run_view(out.run_id or "").unlink()  # ... and the views published after it, as a
    paths.job_state.unlink()  # crash before publication leaves them (else they are imported)
    again = run(repo.root, "job-translate")
    events = ledger_events(paths, out.run_id or "")
    assert (True, "checkpoint_advanced", {"revision": c2}) == (
        again.duplicate_complete, events[-1]["type"], events[-1]["values"])


# --- E-11 preconditions ------------------------------------------------------------------------


@pytest.mark.parametrize(("precondition", "skip_when"), [
    ("printf \"\\n  \\n\"", "empty-output"), ("exit 3", "3"),
])
def test_precondition_skip_writes_nothing_at_all(
    project: Project, precondition: str, skip_when: str
) -> None:
    """E-11: a skip leaves every file under the project as it was."""
    command_job(project, "echo ran > ran.txt",
                f"  precondition:\n    command: '{precondition}'\n    skip_when: {skip_when}\n")
    before = project.files()
    out = run(project.root, "job-cmd")
    assert (True, None, None) == (out.skipped, out.run_id, out.state)
    assert before == project.files()


def test_precondition_with_output_lets_the_run_happen(project: Project) -> None:
    """Non-empty output under empty-output: the run is created and executed."""
    command_job(project, "echo ran > ran.txt",
                "  precondition:\n    command: 'echo item'\n    skip_when: empty-output\n")
    out = run(project.root, "job-cmd")
    assert ("succeeded", True) == (out.state, (project.root / "ran.txt").exists())


def test_failing_precondition_is_a_failure_without_a_run(project: Project) -> None:
    """Another non-zero exit fails the Job without creating a run."""
    command_job(project, "echo ran > ran.txt",
                "  precondition:\n    command: 'exit 2'\n    skip_when: empty-output\n")
    before = project.files()
    out = run(project.root, "job-cmd")
    assert (False, None, "precondition failed with exit code 2") == (
        out.skipped, out.run_id, out.reason)
    assert before == project.files()


def test_open_attempt_is_interrupted_under_our_exec_lock(project: Project) -> None:
    """Holding the exec lock ourselves, an open attempt cannot be running: it is interrupted,
    and never re-sent silently (SPEC §7.3): the run waits for `job resolve`."""
    weekly(project)
    paths = paths_of(project.root)
    prep = jobs.prepare(paths, load_jobs(paths), "job-weekly", {"period": "W1"},
                        scheduled_at=datetime.now(UTC), trigger="manual", env=clean_env())
    log = Ledger(paths.run_ledger(prep.run_id))
    log.append_many([
        RunCreated(run_id=prep.run_id, job_id="job-weekly", idempotency_key=prep.recorded_key,
                   project_id="demo", trigger="manual", scheduled_at=prep.scheduled_at,
                   inputs=prep.inputs, task=prep.recorded_task, checkpoint_before=None),
        RunAttemptStarted(run_id=prep.run_id, attempt=1, owner=Owner(pid=os.getpid(), host="x")),
    ])
    out = run(project.root, "job-weekly", {"period": "W1"})
    assert ("interrupted", 1, f"Job Run {prep.run_id} was interrupted; resolve it first") == (
        out.state, out.attempt, out.reason)
    assert 2 == len(ledger_events(paths, prep.run_id))


# --- statuses ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("code", "state", "reason", "skipped"), [
    (3, "partial", "command exited with code 3 (partial)", False),
    (4, "noop", "command exited with code 4 (noop)", False),
    (75, "failed", "busy", True),
    (9, "failed", "command exited with code 9", False),
])
def test_command_exit_code_mapping(
    project: Project, code: int, state: str, reason: str, skipped: bool
) -> None:
    """partial_exit_code, noop_exit_code, 75 (busy: skipped) and other exits."""
    weekly(project, partial_exit_code="[3]", noop_exit_code="4")
    out = run(project.root, "job-weekly", {"period": "W1"}, env=clean_env(CODE=str(code)))
    assert (state, reason, skipped, code) == (out.state, out.reason, out.skipped, out.exit_code)


def test_timeout_fails_the_attempt(project: Project) -> None:
    """A command over task.timeout is killed; failed, reason timed out after 1s."""
    command_job(project, "sleep 30", "  timeout: 1s\n")
    out = run(project.root, "job-cmd")
    assert ("failed", "timed out after 1s") == (out.state, out.reason)


def test_evidence_and_documents_are_written(project: Project) -> None:
    """Evidence per attempt, the plan at creation and the result at the end."""
    weekly(project)
    out = run(project.root, "job-weekly", {"period": "W1"}, env=clean_env(CODE="2"))
    exec_dir = project.root / "execution" / "exec"
    result = (exec_dir / "results" / f"{out.run_id}-result.md").read_text()
    assert f"{out.evidence_ref}".endswith("/evidence.json")
    assert (project.root / f"{out.evidence_ref}").is_file()
    assert (exec_dir / "plans" / f"{out.run_id}-plan.md").is_file()
    assert "- Result: blocked: command exited with code 2\n" in result


def test_views_match_the_ledgers_after_runs(project: Project) -> None:
    """fold --check finds nothing to rebuild after a failure and a retry."""
    weekly(project)
    run(project.root, "job-weekly", {"period": "W1"}, env=clean_env(CODE="1"))
    run(project.root, "job-weekly", {"period": "W1"})
    assert [] == views.fold_all(paths_of(project.root), check=True)


def test_child_environment_names_the_run_and_project(project: Project) -> None:
    """SPECDOJO_JOB_RUN_ID, SPECDOJO_PROJECT and SPECDOJO_ROUTINE_EXEC (routine only)."""
    command_job(project, 'echo "$SPECDOJO_JOB_RUN_ID $SPECDOJO_PROJECT ${SPECDOJO_ROUTINE_EXEC:-}'
                         ' ${GIT_DIR:-none}" > env-$SPECDOJO_JOB_RUN_ID.txt')
    env = clean_env(GIT_DIR="/nowhere")
    manual = run(project.root, "job-cmd", env=env)
    routine = run(project.root, "job-cmd", env=env, trigger="routine",
                  scheduled_at=datetime.now(UTC))
    text = {o.run_id: (project.root / f"env-{o.run_id}.txt").read_text() for o in (manual, routine)}
    assert f"{manual.run_id} demo  none\n" == text[manual.run_id]
    assert f"{routine.run_id} demo 1 none\n" == text[routine.run_id]


# --- edit / review -----------------------------------------------------------------------------

EDIT = """\
name: Edit report
inputs:
  period: {type: string, required: true}
task:
  mode: edit
  description: Write the report for {{inputs.period}}
  targets: [pr-report]
run:
  idempotency_key: "{{job_id}}:{{inputs.period}}"
"""


def test_edit_mode_without_executor_fails_with_the_reason(project: Project) -> None:
    """No AgentExecutor: the attempt fails, reason names the mode."""
    project.job("job-edit", EDIT)
    out = run(project.root, "job-edit", {"period": "W1"})
    assert ("failed", "no agent executor configured for mode edit") == (out.state, out.reason)


def test_edit_mode_with_a_fake_executor_succeeds(project: Project) -> None:
    """The executor gets the frozen task and the lock token; its status is recorded."""
    project.job("job-edit", EDIT)
    seen: list[AgentRequest] = []

    def executor(request: AgentRequest) -> AgentResult:
        seen.append(request)
        return AgentResult(status="succeeded", final_message="done, token=abcdef123456")

    out = run(project.root, "job-edit", {"period": "W1"}, agent=executor)
    result = (project.root / "execution" / "exec" / "results" / f"{out.run_id}-result.md")
    assert ("succeeded", "Write the report for W1", ["demo:pr-report"]) == (
        out.state, seen[0].task["description"], seen[0].task["targets"])
    assert "SPECDOJO_EXEC_RUN_LOCK_TOKEN" in seen[0].env
    assert "abcdef123456" not in result.read_text()


def test_executor_exception_fails_the_attempt_and_closes_it(project: Project) -> None:
    """An executor that raises fails the attempt; the run is not left open."""
    project.job("job-edit", EDIT)

    def executor(request: AgentRequest) -> AgentResult:
        raise RuntimeError("agent crashed")

    out = run(project.root, "job-edit", {"period": "W1"}, agent=executor)
    assert ("failed", "agent executor failed: agent crashed") == (out.state, out.reason)


# --- exec lock ---------------------------------------------------------------------------------


@pytest.fixture
def exec_holder(project: Project) -> Iterator[subprocess.Popen[str]]:
    locks_dir = project.root / "execution" / "exec" / ".locks"
    proc = subprocess.Popen([sys.executable, str(HELPER), "hold-exec", str(locks_dir)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip()
    yield proc
    proc.communicate("", timeout=10)


def _outside_locks(files: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in files.items() if not k.startswith("execution/exec/.locks/")}


def test_busy_exec_lock_skips_the_job_and_writes_nothing(
    project: Project, exec_holder: subprocess.Popen[str]
) -> None:
    """E-03: another process holds the exec lock -> skipped; no run, view, plan, evidence."""
    weekly(project)
    before = _outside_locks(project.files())
    out = run(project.root, "job-weekly", {"period": "W1"})
    assert (True, None, "Exec run is busy") == (out.skipped, out.run_id, (out.reason or "")[:16])
    assert before == _outside_locks(project.files())


def test_a_precondition_skip_decides_before_the_exec_lock_is_asked(
    project: Project, exec_holder: subprocess.Popen[str]
) -> None:
    """The precondition decides whether a run materialises before the exec lock is taken: it
    runs while another process holds the lock, and its skip is the outcome (E-11, not the
    busy skip of E-03), with nothing written (SPEC §7.3, §7.7)."""
    command_job(project, "true",
                "  precondition:\n    command: 'true'\n    skip_when: empty-output\n")
    before = project.files()
    out = run(project.root, "job-cmd")
    assert (True, None, "precondition skipped the run (empty output)") == (
        out.skipped, out.run_id, out.reason)
    assert before == project.files()


def test_busy_exec_lock_is_a_skipped_routine_action(
    project: Project, exec_holder: subprocess.Popen[str]
) -> None:
    """The routine seam maps a busy exec lock to skipped."""
    weekly(project)
    paths = paths_of(project.root)
    got = jobs.routine_job_runner(paths, load_jobs(paths), job_id="job-weekly",
                                  inputs={"period": "W1"}, scheduled_at=datetime.now(UTC),
                                  echo=None)
    assert (Result.SKIPPED, None) == (got.result, got.job_run_id)


def test_lock_token_is_exported_to_the_command(project: Project) -> None:
    """The command sees SPECDOJO_EXEC_RUN_LOCK_TOKEN equal to owner.json's token."""
    command_job(project, 'printf %s "$SPECDOJO_EXEC_RUN_LOCK_TOKEN" > token.txt; '
                         "cp execution/exec/.locks/exec-run.lock/owner.json owner.json")
    out = run(project.root, "job-cmd")
    owner = orjson.loads((project.root / "owner.json").read_bytes())
    assert ("succeeded", owner["token"]) == (out.state, (project.root / "token.txt").read_text())
    assert not (project.root / "execution" / "exec" / ".locks" / "exec-run.lock").exists()


# --- secrets -----------------------------------------------------------------------------------

SECRET_ENV = "tok-0123456789-very-secret"
SECRET_TEXT = "hunter2hunter2"


def test_secrets_reach_only_redacted_evidence(project: Project) -> None:
    """Output and command secrets never reach ledgers, views, plan or result."""
    command_job(project, f'echo "api_key={SECRET_TEXT}"; echo "$MY_API_TOKEN"; '
                         'echo "Authorization: Bearer $MY_API_TOKEN" >&2')
    out = run(project.root, "job-cmd", env=clean_env(MY_API_TOKEN=SECRET_ENV))
    files = project.files()
    leaks = [name for name, data in files.items()
             if SECRET_ENV.encode() in data or SECRET_TEXT.encode() in data]
    evidence = files[f"{out.evidence_ref}".replace("evidence.json", "command.stdout.log")].decode()
    assert ("succeeded", []) == (out.state, [n for n in leaks if n.startswith("execution/")])
    assert "api_key=[REDACTED]\n[REDACTED]\n" == evidence


def test_retry_of_a_redacted_command_after_a_definition_change_is_refused(
    project: Project,
) -> None:
    """The redacted record cannot be re-run once the definition renders differently."""
    command_job(project, f'echo "api_key={SECRET_TEXT}"; exit 1')
    first = run(project.root, "job-cmd")
    command_job(project, f'echo "api_key={SECRET_TEXT}2"; exit 0')
    with pytest.raises(JobError, match=f"cannot retry {first.run_id}: its recorded task"):
        run(project.root, "job-cmd")


def test_retry_of_a_redacted_command_runs_the_real_command(project: Project) -> None:
    """The stored command is redacted; a retry re-renders it and runs the real one."""
    command_job(project, f'test -e ok || exit 1; echo "api_key={SECRET_TEXT}" > out.txt')
    first = run(project.root, "job-cmd")
    (project.root / "ok").write_text("")
    second = run(project.root, "job-cmd")
    assert (first.run_id, "succeeded", f"api_key={SECRET_TEXT}\n") == (
        second.run_id, second.state, (project.root / "out.txt").read_text())


def test_input_carrying_a_secret_is_refused(project: Project) -> None:
    """An input holding a secret environment value is refused, as a usage error, before
    anything is written."""
    weekly(project)
    with pytest.raises(UsageError, match="looks like a secret"):
        run(project.root, "job-weekly", {"period": SECRET_ENV},
            env=clean_env(MY_API_TOKEN=SECRET_ENV))
    assert not (project.root / "execution").exists()


# --- the routine seam --------------------------------------------------------------------------


def routine(project: Project, job_id: str, inputs: dict[str, str],
            env: dict[str, str] | None = None) -> Any:
    paths = paths_of(project.root)
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env or clean_env())
    try:
        return jobs.routine_job_runner(paths, load_jobs(paths), job_id=job_id, inputs=inputs,
                                       scheduled_at=datetime.now(UTC), echo=None)
    finally:
        os.environ.clear()
        os.environ.update(old)


def test_routine_seam_success_records_the_run(project: Project) -> None:
    """succeeded -> success with the job_run_id and exit code."""
    weekly(project)
    got = routine(project, "job-weekly", {"period": "W1"})
    assert (Result.SUCCESS, None, 0) == (got.result, got.reason, got.exit_code)
    assert got.job_run_id and paths_of(project.root).run_ledger(got.job_run_id).exists()


def test_routine_seam_partial_is_failure_with_reason_partial(project: Project) -> None:
    """partial -> failure, reason partial."""
    weekly(project, partial_exit_code="[3]")
    got = routine(project, "job-weekly", {"period": "W1"}, clean_env(CODE="3"))
    assert (Result.FAILURE, "partial") == (got.result, got.reason)


def test_routine_seam_converts_inputs_to_declared_types(project: Project) -> None:
    """Routine inputs are strings; an integer input is parsed, a bad one fails the action."""
    project.job("job-n", "name: N\ninputs:\n  n: {type: integer, maximum: 5}\ntask:\n"
                         "  mode: command\n  command: test {{inputs.n}} -eq 4\n"
                         "run:\n  idempotency_key: '{{job_id}}:{{inputs.n}}'\n")
    ok = routine(project, "job-n", {"n": "4"})
    bad = routine(project, "job-n", {"n": "9"})
    assert (Result.SUCCESS, Result.FAILURE) == (ok.result, bad.result)
    assert "must be at most 5" in (bad.reason or "")


def test_routine_seam_precondition_skip_is_skipped(project: Project) -> None:
    """A precondition skip is a skipped action with no run id."""
    command_job(project, "true",
                "  precondition:\n    command: 'true'\n    skip_when: empty-output\n")
    got = routine(project, "job-cmd", {})
    assert (Result.SKIPPED, None) == (got.result, got.job_run_id)


def test_routine_seam_unknown_input_fails(project: Project) -> None:
    """An input the Job does not declare fails the action with the reason."""
    weekly(project)
    got = routine(project, "job-weekly", {"period": "W1", "bogus": "x"})
    assert Result.FAILURE == got.result and "unknown input" in (got.reason or "")


def test_inherited_lock_with_a_live_owner_refuses_to_steal_the_attempt(
    project: Project,
) -> None:
    """A nested call (inherited token) does not close an attempt whose runner is alive."""
    command_job(project, '"$PY" -m specdojo_routine job run --job job-cmd --root . '
                         '--scheduled-at 2026-08-07T08:00:00.000Z > nested.txt 2>&1 || true')
    repo = str(Path(__file__).resolve().parent.parent)
    out = run(project.root, "job-cmd", env=clean_env(PY=sys.executable, PYTHONPATH=repo))
    nested = (project.root / "nested.txt").read_text()
    assert "succeeded" == out.state
    assert f"busy: attempt 1 of {out.run_id} is still running (pid {os.getpid()}" in nested


def test_manual_run_does_not_pass_an_inherited_routine_marker(tmp_path: Path) -> None:
    """SPECDOJO_ROUTINE_EXEC=1 reaches the command only when a routine runs the Job, even if
    the caller's environment already has it (SPEC §7.3)."""
    from specdojo_routine.testing import write_project

    paths = write_project(tmp_path / "p", jobs={"job-env": """
        name: Env probe
        task: {mode: command, command: 'printf "%s" "${SPECDOJO_ROUTINE_EXEC:-unset}" > marker'}
        run: {idempotency_key: "{{job_id}}:{{scheduled_at}}"}
    """})
    defs = definitions.load_definitions(paths)
    env = {**os.environ, "SPECDOJO_ROUTINE_EXEC": "1"}
    at = datetime(2026, 8, 7, tzinfo=UTC)
    jobs.run_job(paths, defs, "job-env", {}, scheduled_at=at, trigger="manual", env=env)
    assert "unset" == (paths.root / "marker").read_text()
    jobs.run_job(paths, defs, "job-env", {}, scheduled_at=at + timedelta(days=1),
                 trigger="routine", env=env)
    assert "1" == (paths.root / "marker").read_text()


CLOSE_MY_ATTEMPT = (
    "import os, sys\n"
    "from specdojo_routine.core.job_events import RunAttemptEnded\n"
    "from specdojo_routine.store.ledger.journal import Ledger\n"
    "run_id = os.environ['SPECDOJO_JOB_RUN_ID']\n"
    "Ledger(f'execution/jobs/runs/{run_id}.jsonl').append(RunAttemptEnded(\n"
    "    run_id=run_id, attempt=1, status='failed', reason='interrupted'))\n"
)


def test_a_result_for_an_attempt_closed_by_a_takeover_is_not_recorded(project: Project) -> None:
    """A runner whose attempt another runner closed (its exec lock was taken over while it was
    stalled) records nothing more: the run ledger stays foldable (fold --check passes)."""
    (project.root / "close_attempt.py").write_text(CLOSE_MY_ATTEMPT)
    command_job(project, f"{sys.executable} close_attempt.py")
    proc = project.cli("job", "run", "--job", "job-cmd", "--scheduled-at", "2026-05-01T00:00:00Z")
    assert 1 == proc.returncode
    assert "was closed by another runner" in proc.stderr
    assert 1 == len(proc.stderr.splitlines())
    run_ids = [p.stem for p in (project.root / "execution" / "jobs" / "runs").glob("*.jsonl")]
    kinds = [e["type"] for e in ledger_events(paths_of(project.root), run_ids[0])]
    assert ["run_created", "attempt_started", "attempt_ended"] == kinds
    assert 0 == project.cli("fold", "--check").returncode
