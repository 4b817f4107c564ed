"""``python -m specdojo_routine job …`` for real, in subprocesses: exit codes, JSON, a crash."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from conftest import Project, period_job, wait_for_a_child_in_group, wait_for_text
from jobhelper import HELPER

JOB = """\
name: Weekly report
inputs:
  period: {type: string, required: true}
task:
  mode: command
  command: echo "report {{inputs.period}}"; exit "${CODE:-0}"
  partial_exit_code: [3]
  noop_exit_code: 4
run:
  idempotency_key: "{{job_id}}:{{inputs.period}}"
"""
JSON_KEYS = ["run_id", "job_id", "state", "attempt", "duplicate_complete", "skipped", "reason",
             "evidence_ref"]


def env(project: Project, **extra: str) -> dict[str, str]:
    base = project.env()
    return {k: v for k, v in base.items() if k not in ("CODE", "SPECDOJO_EXEC_RUN_LOCK_TOKEN")} \
        | extra


def job_run(project: Project, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return project.cli("job", "run", "--job", "job-weekly", *args, env=env(project, **extra))


def as_json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads(done.stdout)
    return data


@pytest.fixture
def weekly(project: Project) -> Project:
    project.job("job-weekly", JOB)
    return project


def test_json_document_has_exactly_the_documented_keys(weekly: Project) -> None:
    """`job run --json` prints one document with the SPEC §8 keys; exit 0 on success."""
    done = job_run(weekly, "--input", "period=W1", "--json")
    doc = as_json(done)
    assert (0, JSON_KEYS, "succeeded", 1, False) == (
        done.returncode, list(doc), doc["state"], doc["attempt"], doc["duplicate_complete"])
    assert "report W1" in done.stderr  # command output goes to stderr when stdout is JSON


@pytest.mark.parametrize(("code", "trigger", "expected", "state", "skipped"), [
    ("3", "manual", 1, "partial", False),
    ("4", "manual", 0, "noop", False),
    ("9", "manual", 1, "failed", False),
    ("75", "manual", 0, "failed", True),
    ("75", "routine", 75, "failed", True),
])
def test_exit_codes(
    weekly: Project, code: str, trigger: str, expected: int, state: str, skipped: bool
) -> None:
    """1 failed/partial, 0 noop and non-routine skips, 75 for a busy command under routine."""
    done = job_run(weekly, "--input", "period=W1", "--trigger", trigger, "--json", CODE=code)
    doc = as_json(done)
    assert (expected, state, skipped) == (done.returncode, doc["state"], doc["skipped"])


def test_duplicate_complete_exits_0(weekly: Project) -> None:
    """A second call for a succeeded run is duplicate complete, exit 0."""
    job_run(weekly, "--input", "period=W1")
    done = job_run(weekly, "--input", "period=W1", "--json")
    assert (0, True) == (done.returncode, as_json(done)["duplicate_complete"])


@pytest.mark.parametrize(("trigger", "expected"), [("manual", 0), ("ci", 0), ("routine", 75)])
def test_precondition_skip_exit_code(project: Project, trigger: str, expected: int) -> None:
    """SPEC §7.3/§8: a precondition skip: run_id null; exit 75 under --trigger routine,
    else (manual, ci) 0."""
    project.job("job-weekly", JOB.replace("run:\n", "  precondition: {command: 'true', "
                                                  "skip_when: empty-output}\nrun:\n", 1))
    done = job_run(project, "--input", "period=W1", "--trigger", trigger, "--json")
    doc = as_json(done)
    assert (expected, None, True) == (done.returncode, doc["run_id"], doc["skipped"])


def test_duplicate_input_is_a_usage_error_and_writes_nothing(weekly: Project) -> None:
    """`--input k=v` twice: exit 2, one error line, no traceback, no files."""
    before = weekly.files()
    done = job_run(weekly, "--input", "period=W1", "--input", "period=W2")
    assert (2, "error: duplicate --input period: give each input once\n") == (
        done.returncode, done.stderr)
    assert before == weekly.files()


def test_unknown_job_is_a_usage_error(weekly: Project) -> None:
    """An unknown --job exits 2 naming the known ones."""
    done = weekly.cli("job", "run", "--job", "job-nope", env=env(weekly))
    assert (2, "error: unknown job \"job-nope\" (known: job-weekly)\n") == (
        done.returncode, done.stderr)


def test_dry_run_prints_the_plan_and_writes_nothing(weekly: Project) -> None:
    """--dry-run shows inputs, key, run id and command; not a byte is written."""
    before = weekly.files()
    done = job_run(weekly, "--input", "period=W1", "--dry-run")
    assert 0 == done.returncode
    assert "idempotency_key: job-weekly:W1\n" in done.stdout
    assert 'command: echo "report W1"; exit "${CODE:-0}"\n' in done.stdout
    assert before == weekly.files()


def test_job_show_json_is_exactly_the_view(weekly: Project) -> None:
    """`job show --json` prints the runs/<run_id>.json bytes."""
    run_id = as_json(job_run(weekly, "--input", "period=W1", "--json"))["run_id"]
    done = weekly.cli("job", "show", run_id, "--json", env=env(weekly))
    view = weekly.root / "execution" / "jobs" / "runs" / f"{run_id}.json"
    assert (0, view.read_text()) == (done.returncode, done.stdout)


@pytest.mark.parametrize("command", [["show"], ["logs"], ["resolve", "--status", "failed",
                                                              "--note", "checked"]])
def test_a_job_run_id_that_names_nothing_says_what_was_meant(
    weekly: Project, command: list[str],
) -> None:
    """job show, job logs and job resolve answer an id that names no run alike (exit 2, one
    line, nothing written): the closest run ids for a near miss, where the runs are for a
    Job's own id, the expected form for anything else."""
    run_id = as_json(job_run(weekly, "--input", "period=W1", "--json"))["run_id"]
    near = run_id[:-1] + ("0" if run_id[-1] != "0" else "1")
    before = weekly.files()
    for given, said in (
        (near, f'unknown Job Run "{near}"; did you mean {run_id}? (see `job list`)'),
        ("job-weekly", "job-weekly is a Job, not a Job Run; `job list` shows its runs "
                       "(JBR-<slug>-<hash>)"),
        ("../x", "invalid Job Run id '../x' (expected JBR-<slug>-<hash>; see `job list`)"),
    ):
        done = weekly.cli("job", command[0], given, *command[1:], env=env(weekly))
        assert (2, f"error: {said}\n") == (done.returncode, done.stderr), given
    assert before == weekly.files()


def test_job_list_shows_definitions_and_runs(weekly: Project) -> None:
    """`job list --json` lists each job with its run ids, and every run."""
    run_id = as_json(job_run(weekly, "--input", "period=W1", "--json"))["run_id"]
    doc = orjson.loads(weekly.cli("job", "list", "--json", env=env(weekly)).stdout)
    assert ([run_id], [run_id], ["succeeded"]) == (
        doc["jobs"][0]["runs"], [r["run_id"] for r in doc["runs"]],
        [r["state"] for r in doc["runs"]])
    table = weekly.cli("job", "list", env=env(weekly)).stdout
    assert table.startswith("JOB         NAME           MODE     RUNS  LAST RUN")


# --- the exec lock -----------------------------------------------------------------------------


@pytest.fixture
def holder(weekly: Project) -> Iterator[subprocess.Popen[str]]:
    locks_dir = weekly.root / "execution" / "exec" / ".locks"
    proc = subprocess.Popen([sys.executable, str(HELPER), "hold-exec", str(locks_dir)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip()
    yield proc
    proc.communicate("", timeout=10)


@pytest.mark.parametrize(("trigger", "expected"), [("manual", 0), ("ci", 0), ("routine", 75)])
def test_busy_exec_lock_exit_code(
    weekly: Project, holder: subprocess.Popen[str], trigger: str, expected: int
) -> None:
    """Exec lock held elsewhere: skipped; exit 75 under --trigger routine, else 0."""
    done = job_run(weekly, "--input", "period=W1", "--trigger", trigger)
    assert expected == done.returncode
    assert "skipped, no Job Run created: Exec run is busy" in done.stdout
    assert not (weekly.root / "execution" / "jobs").exists()


# --- crash ---------------------------------------------------------------------------------------

CRASHY = """\
name: Crashy
inputs:
  period: {type: string, required: true}
task:
  mode: command
  command: if [ -e armed ]; then rm armed; echo $$ > pid.txt; sleep 60; fi; echo done
run:
  idempotency_key: "{{job_id}}:{{inputs.period}}"
  on_interrupted: retry
"""


def test_killed_runner_is_recorded_as_interrupted_by_the_next_run(project: Project) -> None:
    """SIGKILL mid-command of a Job with `run.on_interrupted: retry`: the next run closes
    attempt 1 (interrupted) and runs attempt 2 (without it the run waits for `job resolve`:
    tests/test_job_interrupted.py)."""
    project.job("job-crashy", CRASHY)
    (project.root / "armed").write_text("")
    args = ("job", "run", "--job", "job-crashy", "--input", "period=W1")
    proc = project.popen(*args, env=env(project))
    pgid = int(wait_for_text(project.root / "pid.txt"))
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    os.killpg(pgid, signal.SIGKILL)
    done = project.cli(*args, "--json", env=env(project))
    doc = as_json(done)
    view = orjson.loads(project.cli("job", "show", doc["run_id"], "--json").stdout)
    assert (0, 2, "succeeded") == (done.returncode, doc["attempt"], doc["state"])
    assert [("failed", "interrupted"), ("succeeded", None)] == [
        (a["status"], a.get("reason")) for a in view["attempts"]]
    assert 0 == project.cli("fold", "--check", env=env(project)).returncode


# --- a routine job action end to end ----------------------------------------------------------


def test_routine_job_action_runs_a_job_run(weekly: Project) -> None:
    """`run --id` with a job action records the Job Run id in the routine ledger."""
    weekly.routine("rtn-weekly", """\
        interval: 1d
        action:
          kind: job
          job: job-weekly
          inputs: {period: "{{scheduled_at | iso_week}}"}
        """)
    done = weekly.cli("run", "--id", "rtn-weekly", env=env(weekly))
    ended = [e for e in weekly.events() if e["type"] == "action_ended"]
    assert (0, "success") == (done.returncode, ended[0]["result"])
    run_id = ended[0]["job_run_id"]
    assert (weekly.root / "execution" / "jobs" / "runs" / f"{run_id}.jsonl").is_file()



SLOW = """\
name: Slow side effect
inputs:
  period: {type: string, required: true}
task:
  mode: command
  command: echo "start $$" >> effects.log; sleep 5; echo "end $$" >> effects.log
run:
  idempotency_key: "{{job_id}}:{{inputs.period}}"
  on_interrupted: retry
"""


def test_a_command_is_never_run_twice_at_once_after_its_runner_is_killed(
    project: Project,
) -> None:
    """kill -9 a `job run` mid-command and retry at once: the command's shell died with its
    runner (PR_SET_PDEATHSIG), the retry finds the recorded process group still alive (its
    `sleep`) and is a busy skip; once the group is gone, the next retry runs attempt 2 (the
    Job opts in with `run.on_interrupted: retry`)."""
    project.job("job-slow", SLOW)
    effects = project.root / "effects.log"
    args = ("job", "run", "--job", "job-slow", "--input", "period=W1")
    proc = project.popen(*args, env=env(project))
    wait_for_text(effects)
    deadline = time.monotonic() + 20
    while not list((project.root / "execution").rglob("process.json")):
        assert time.monotonic() < deadline, "the process group was never recorded"
        time.sleep(0.02)
    wait_for_a_child_in_group(orjson.loads(
        next((project.root / "execution").rglob("process.json")).read_bytes())["pgid"])
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    retry = project.cli(*args, "--json", env=env(project))
    doc = as_json(retry)
    assert (0, True, None) == (retry.returncode, doc["skipped"], doc["attempt"]), retry.stderr
    assert "still running" in doc["reason"]
    assert 1 == effects.read_text().count("start")
    record = orjson.loads(next((project.root / "execution").rglob("process.json")).read_bytes())
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        done = project.cli(*args, "--json", env=env(project))
        if not as_json(done)["skipped"]:
            break
        time.sleep(0.5)
    assert (0, 2, "succeeded") == (done.returncode, as_json(done)["attempt"],
                                   as_json(done)["state"])
    lines = effects.read_text().splitlines()
    assert [f"start {record['pgid']}"] == [x for x in lines if str(record["pgid"]) in x]
    assert 2 == sum(x.startswith("start") for x in lines)
    assert lines[-2].startswith("start") and lines[-1].startswith("end")  # never overlapped
    assert 0 == project.cli("fold", "--check", env=env(project)).returncode


@pytest.mark.parametrize("value", [
    "password=hunter2-XY", "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "Bearer eyJhbGciOiJIUzI1NiJ9.payload", "env-secret-value"])
def test_an_input_value_that_is_a_secret_is_refused_and_never_recorded(
    weekly: Project, value: str,
) -> None:
    """SPEC §7.5: no secret reaches a ledger, view or evidence file - and input values are
    recorded in all three (§7.3). A value the redaction rules match, or the value of a secret
    environment variable, is refused as a usage error (§8: exit 2), one line that does not
    show it, nothing written, the command never run."""
    before = weekly.files()
    done = job_run(weekly, "--input", f"period={value}", "--json", DEPLOY_TOKEN="env-secret-value")
    lines = done.stderr.splitlines()
    assert (2, 1, before) == (done.returncode, len(lines), weekly.files()), done.stderr
    assert lines[0].startswith("error: input period of job-weekly looks like a secret")
    assert value.split("=")[-1].split()[-1] not in done.stdout + done.stderr


def test_an_input_named_like_a_secret_is_a_validation_error(project: Project) -> None:
    """An input whose name ends in a credential word (db_password, api_token, api_key) is
    refused where it is declared, with file:line:col; token_count is an ordinary name."""
    project.job("job-deploy", """\
        name: Deploy
        inputs:
          token_count: {type: integer, default: 3}
          db_password: {type: string}
          api_key: {type: string}
        task: {mode: command, command: "echo {{inputs.token_count}}"}
        run: {idempotency_key: "{{job_id}}"}
        """)
    done = project.cli("validate")
    lines = [x for x in done.stderr.splitlines() if "named like a secret" in x]
    assert (1, 2) == (done.returncode, len(lines)), done.stderr
    assert lines[0].startswith("jobs/job-deploy.yaml:5:3: inputs.db_password is named like a "
                               "secret, but input values are recorded in the run ledger")
    assert lines[1].startswith("jobs/job-deploy.yaml:6:3: inputs.api_key is named like")


def test_a_line_continuation_cannot_turn_an_input_into_code(project: Project) -> None:
    """SPEC §7.2: a backslash-newline joins the lines before the shell reads them, so after
    ``start \\<newline>`` the ``#`` starts a comment and the input stays inside it: the newline
    in the value does not end the comment, nothing is run."""
    project.job("job-note", period_job("Note", "|\n    printf start \\\n    #{{inputs.period}}"))
    done = project.cli("job", "run", "--job", "job-note", "--input",
                       "period=x\ntouch PWNED\n#", env=env(project))
    assert (0, False) == (done.returncode, (project.root / "PWNED").exists()), done.stderr


@pytest.mark.parametrize(("command", "where"), [
    ("cat <\\\n    <EOF\n    {{inputs.period}}\n    EOF", "10:5: task.command: placeholder "
     "{{inputs.period}} cannot be used safely inside a here-document body"),
    ('echo "$\\\n    {X:-{{inputs.period}}}"', "9:9: task.command: placeholder "
     "{{inputs.period}} cannot be used safely inside a ${...} expansion"),
])
def test_a_placeholder_hidden_by_a_line_continuation_is_refused(
    project: Project, command: str, where: str,
) -> None:
    """Where a line continuation puts a placeholder in a context no quoting makes safe (a
    here-document body after ``<\\<newline><``, a ``${...}`` after ``$\\<newline>{``), validate
    reports it at its line and column inside the literal block, and the Job never runs."""
    project.job("job-note", period_job("Note", "|\n    " + command))
    checked = project.cli("validate", env=env(project))
    assert 1 == checked.returncode, checked.stderr
    assert f"jobs/job-note.yaml:{where}" in checked.stderr
    done = project.cli("job", "run", "--job", "job-note", "--input", "period=$(touch PWNED)",
                       env=env(project))
    assert (1, False) == (done.returncode, (project.root / "PWNED").exists()), done.stderr
    assert 1 == len(done.stderr.splitlines()) and "Traceback" not in done.stderr


@pytest.mark.parametrize(("command", "where"), [
    ("\"echo 'abc\"", "7:13: task.command: unterminated single quote in shell command"),
    ('"echo a\\0b"', "7:12: task.command: a NUL character (\\0) is in the command (no command "
                     "can receive one: remove it)"),
])
def test_validate_refuses_a_command_run_would_refuse_without_a_placeholder(
    project: Project, command: str, where: str,
) -> None:
    """A command that ``run`` cannot render (an unterminated quote; a NUL, which no process
    can receive) is a validate error at its line and column even when it holds no
    placeholder: validate passed it and every run then failed."""
    project.job("job-note", period_job("Note", command))
    checked = project.cli("validate", env=env(project))
    assert 1 == checked.returncode, checked.stderr
    assert f"jobs/job-note.yaml:{where}" in checked.stderr
    done = project.cli("job", "run", "--job", "job-note", "--input", "period=p", env=env(project))
    assert 1 == done.returncode and "Traceback" not in done.stderr, done.stderr


def test_an_input_value_with_a_nul_is_refused_by_validate(project: Project) -> None:
    """A NUL in an input's default reaches the command as data, which no process can receive:
    validate says so at the default, and the Job never starts a process with it."""
    project.job("job-note", 'name: Note\ninputs:\n  period: {type: string, default: "a\\0b"}\n'
                'task: {mode: command, command: "echo {{inputs.period}}"}\n'
                'run: {idempotency_key: "{{job_id}}:{{inputs.period}}"}\n')
    checked = project.cli("validate", env=env(project))
    assert 1 == checked.returncode, checked.stderr
    assert "jobs/job-note.yaml:4:35: inputs.period.default is invalid" in checked.stderr
    assert "Input period must not hold a NUL character" in checked.stderr


def test_validate_refuses_half_a_surrogate_pair_where_every_command_failed(
    project: Project,
) -> None:
    """``"\\ud83d"`` (half of a UTF-16 pair, as JSON writes an emoji) is not a character: no
    digest, ledger or command can hold it. validate and run stopped with "internal error
    (UnicodeEncodeError ...)"; validate now says where it is, and run refuses the file."""
    project.routine("rtn-s", 'interval: 1h\naction: {kind: specdojo, args: ["\\ud83d"]}\n')
    project.job("job-note", 'name: Note\ninputs:\n  period: {type: string, default: "\\udc00"}\n'
                'task: {mode: command, command: "echo {{inputs.period}}"}\n'
                'run: {idempotency_key: "{{job_id}}:{{inputs.period}}"}\n')
    checked = project.cli("validate", env=env(project))
    assert 1 == checked.returncode and "internal error" not in checked.stderr, checked.stderr
    assert "jobs/job-note.yaml:4:35: \\udc00 is half of a UTF-16 surrogate pair" \
        in checked.stderr
    assert "routines/rtn-s.yaml:3:33: \\ud83d is half" in checked.stderr
    for args in (("run", "--id", "rtn-s"), ("job", "run", "--job", "job-note")):
        done = project.cli(*args, env=env(project))
        assert 1 == done.returncode and "internal error" not in done.stderr, done.stderr


def test_validate_refuses_a_nul_in_a_specdojo_action_argument(project: Project) -> None:
    """No process receives a NUL in its arguments: validate passed ``args: ["a\\0b"]`` and every
    run failed with "embedded null byte"; it is now an error at the argument."""
    project.routine("rtn-nul", 'interval: 1h\naction: {kind: specdojo, args: [index, "a\\0b"]}\n')
    checked = project.cli("validate", env=env(project))
    assert 1 == checked.returncode, checked.stderr
    assert ("routines/rtn-nul.yaml:3:40: action.args[1] must not hold a NUL character (\\0)"
            in checked.stderr)


@pytest.mark.parametrize(("value", "where"), [
    ("{{scheduled_at}}", "3:53: action.inputs.period renders to a value job-note refuses at "
                         'every run: Input period must be an integer (got "2026-08-07T'),
    ("a\\0{{scheduled_at | iso_week}}", "3:53: action.inputs.period renders to a value "
                                         "job-note refuses at every run: Input period must "
                                         "not hold a NUL character"),
])
def test_validate_checks_a_templated_routine_input_as_every_run_renders_it(
    project: Project, value: str, where: str,
) -> None:
    """A routine input with a placeholder was not checked against the Job's input at all: an
    integer input given ``{{scheduled_at}}``, or a NUL beside a placeholder, passed validate
    and failed every run. The value is rendered for one occurrence and checked."""
    project.job("job-note", "name: Note\ninputs:\n  period: {type: integer, required: true}\n"
                'task: {mode: command, command: "echo {{inputs.period}}"}\n'
                'run: {idempotency_key: "{{job_id}}:{{inputs.period}}"}\n')
    if "\\0" in value:
        project.job("job-note", period_job("Note", '"echo {{inputs.period}}"'))
    project.routine("rtn-r", f'interval: 1h\naction: {{kind: job, job: job-note, inputs: '
                             f'{{period: "{value}"}}}}\n')
    checked = project.cli("validate", env=env(project))
    assert 1 == checked.returncode, checked.stderr
    assert f"routines/rtn-r.yaml:{where}" in checked.stderr
    done = project.cli("run", "--id", "rtn-r", env=env(project))
    assert 1 == done.returncode and "Traceback" not in done.stderr, done.stderr


def test_a_templated_routine_input_outside_the_enum_is_a_warning(project: Project) -> None:
    """The rendered value changes with the occurrence, so a value outside the Job input's
    ``enum`` for the occurrence validate renders is a warning, not an error."""
    project.job("job-note", "name: Note\ninputs:\n  period: {type: string, enum: [2026-W32]}\n"
                'task: {mode: command, command: "echo {{inputs.period}}"}\n'
                'run: {idempotency_key: "{{job_id}}:{{inputs.period}}"}\n')
    project.routine("rtn-r", "interval: 1h\naction: {kind: job, job: job-note, inputs: "
                             '{period: "{{scheduled_at}}"}}\n')
    checked = project.cli("validate", env=env(project))
    assert 0 == checked.returncode, checked.stderr
    assert ("routines/rtn-r.yaml:3:53: warning: action.inputs.period renders to a different "
            'value at each occurrence ("2026-08-07T08:00:00.000Z" at 2026-08-07 08:00 UTC), and '
            "job-note accepts only one of: 2026-W32") in checked.stderr


def test_validate_refuses_a_nul_in_a_checkpoint_value(project: Project) -> None:
    """A checkpoint value is rendered after a run and reaches the next run's command: with a
    NUL in it validate passed, the first run succeeded and every later one failed with
    "cannot render task.command". validate now says where it is."""
    project.job("job-note", period_job("Note", '"echo {{checkpoint.last}}"',
                                       'checkpoint: {values: {last: "a\\0{{inputs.period}}"}}\n'))
    checked = project.cli("validate", env=env(project))
    assert 1 == checked.returncode, checked.stderr
    assert ("jobs/job-note.yaml:10:29: checkpoint.values.last: a NUL character (\\0) is in it"
            in checked.stderr)
