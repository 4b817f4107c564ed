"""SPEC §7.3 "an interrupted attempt is never re-sent silently": a Job Run whose runner was
SIGKILLed mid-task waits for `job resolve RUN_ID --status … --note …`; `job run` (and a routine
job action) refuse it meanwhile; `resolve` of a routine attempt resolves the Job Runs it
started; `run.on_interrupted: retry` opts a Job back in. Real runners, real SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from specdojo_routine.app import jobs
from specdojo_routine.core.event_parts import Owner
from specdojo_routine.core.job_events import RunAttemptStarted, RunCreated
from specdojo_routine.store.definitions.load import load_jobs
from specdojo_routine.store.ledger import views
from specdojo_routine.store.ledger.journal import Ledger
from tests.conftest import Project
from tests.jobhelper import clean_env, paths_of

T0 = "2026-05-01T10:00:30Z"


def _job(project: Project, extra: str = "", checkpoint_extra: str = "") -> None:
    """A Job that sleeps (recording its group) until the file `ok` exists, then succeeds
    (``extra``, ``checkpoint_extra``: more keys of its `run` and `checkpoint` mappings)."""
    command = (f'if [ -e "{project.root}/ok" ]; then exit 0; fi; '
               f'echo $$ > "{project.root}/pgid"; sleep 60')
    project.job("job-send", f"""\
        name: Send the weekly report
        task: {{mode: command, command: {orjson.dumps(command).decode()}}}
        run: {{idempotency_key: "{{{{job_id}}}}"{extra}}}
        checkpoint: {{values: {{sent: "{{{{job_run_id}}}}"}}{checkpoint_extra}}}
        """)


def _kill_mid_task(project: Project, proc: subprocess.Popen[str]) -> None:
    marker = project.root / "pgid"
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text().strip()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
        time.sleep(0.02)
    pgid = int(marker.read_text())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError):  # the task dies with its runner; be sure
        os.killpg(pgid, signal.SIGKILL)
    marker.unlink()


def _view(project: Project, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads(
        (project.root / "execution" / "jobs" / "runs" / f"{run_id}.json").read_bytes())
    return data


def test_an_interrupted_job_run_waits_for_job_resolve(project: Project) -> None:
    _job(project)
    _kill_mid_task(project, project.popen("job", "run", "--job", "job-send"))
    (project.root / "ok").touch()  # a re-send would now "succeed": it must not happen
    listed = orjson.loads(project.cli("job", "list", "--json").stdout)
    (run,) = listed["runs"]
    run_id = run["run_id"]
    assert ("interrupted", True) == (run["state"], run["interrupted"])
    refused = project.cli("job", "run", "--job", "job-send")
    assert 1 == refused.returncode
    assert f"Job Run {run_id} was interrupted; resolve it first" in refused.stdout + \
        refused.stderr
    assert 1 == len(_view(project, run_id)["attempts"])  # nothing was re-sent
    shown = project.cli("job", "show", run_id)
    assert "state: interrupted" in shown.stdout
    as_json = orjson.loads(project.cli("job", "show", run_id, "--json").stdout)
    stored = _view(project, run_id)  # the view keeps the ledger's state (SPEC §7.3)
    assert ("running", "running", True) == (
        stored["state"], as_json["state"], as_json["interrupted"])
    assert {**stored, "interrupted": True} == as_json
    done = project.cli("job", "resolve", run_id, "--status", "succeeded", "--note",
                       "the report was in the outbox", "--by", "ops")
    assert 0 == done.returncode, done.stderr
    view = _view(project, run_id)
    assert "succeeded" == view["state"]
    assert "interrupted" not in orjson.loads(
        project.cli("job", "show", run_id, "--json").stdout)
    attempt = view["attempts"][-1]
    assert ("succeeded", "ops") == (attempt["status"], attempt["resolved_by"])
    assert "the report was in the outbox" in attempt["reason"]
    assert {"sent": run_id} == view["checkpoint_after"]  # advanced as an ended attempt would
    again = project.cli("job", "run", "--job", "job-send")
    assert 0 == again.returncode and "duplicate complete" in again.stdout
    wrong = project.cli("job", "resolve", run_id, "--status", "failed", "--note", "x")
    assert 1 == wrong.returncode and "is not interrupted" in wrong.stderr
    assert 1 == len(wrong.stderr.strip().splitlines())


def _interrupted_run(project: Project, checkpoint_extra: str = "") -> str:
    """The id of job-send's run, interrupted by a SIGKILL of its runner mid-task."""
    _job(project, checkpoint_extra=checkpoint_extra)
    _kill_mid_task(project, project.popen("job", "run", "--job", "job-send"))
    (run,) = orjson.loads(project.cli("job", "list", "--json").stdout)["runs"]
    return str(run["run_id"])


def test_job_resolve_noop_appends_attempt_resolved_with_the_specs_fields(
        project: Project) -> None:
    """SPEC §7.3: `job resolve --status noop` appends `attempt_resolved` {run_id, attempt,
    status, note, resolved_by} and the run's state becomes noop."""
    run_id = _interrupted_run(project)
    done = project.cli("job", "resolve", run_id, "--status", "noop", "--note",
                       "nothing was due", "--by", "ops")
    assert 0 == done.returncode, done.stderr
    ledger = project.root / "execution" / "jobs" / "runs" / f"{run_id}.jsonl"
    [event] = [e for e in map(orjson.loads, ledger.read_bytes().splitlines())
               if e["type"] == "attempt_resolved"]
    payload = {k: v for k, v in event.items() if k not in ("version", "seq", "type", "at",
                                                           "prev")}
    assert ({"run_id": run_id, "attempt": 1, "status": "noop", "note": "nothing was due",
             "resolved_by": "ops"}, "noop") == (payload, _view(project, run_id)["state"])


def test_job_resolve_redacts_a_secret_in_by_as_in_note(project: Project) -> None:
    """``--by`` is free text like ``--note``: a token pasted there never reaches the ledger,
    as the routine ``resolve`` already redacts it."""
    run_id = _interrupted_run(project)
    token = "ghp_" + "a1B2c3D4e5" * 4
    done = project.cli("job", "resolve", run_id, "--status", "failed", "--note",
                       f"checked; token={token}", "--by", token)
    assert 0 == done.returncode, done.stderr
    ledger = project.root / "execution" / "jobs" / "runs" / f"{run_id}.jsonl"
    assert token not in ledger.read_text()
    assert token not in (project.root / "execution" / "jobs" / "runs" / f"{run_id}.json"
                         ).read_text()


def test_job_run_of_an_interrupted_run_names_its_state_and_open_attempt(
        project: Project) -> None:
    """`job run` refusing an interrupted run says `interrupted (attempt N)`, N its open
    attempt (not `running (attempt None)`), and its `--json` carries the state `job list`
    gives the run and that attempt; exit 1 both ways."""
    run_id = _interrupted_run(project)
    text = project.cli("job", "run", "--job", "job-send")
    as_json = project.cli("job", "run", "--job", "job-send", "--json")
    doc = orjson.loads(as_json.stdout)
    (listed,) = orjson.loads(project.cli("job", "list", "--json").stdout)["runs"]
    assert (1, f"{run_id}: interrupted (attempt 1): Job Run {run_id} was interrupted; "
               "resolve it first\n") == (text.returncode, text.stdout)
    assert (1, "interrupted", "interrupted", 1, 1) == (
        as_json.returncode, listed["state"], doc["state"], doc["attempt"], listed["attempts"])
    assert 1 == len(_view(project, run_id)["attempts"])  # nothing was re-sent


@pytest.mark.parametrize(("checkpoint_extra", "advanced"), [
    ("", True), (", advance_on: [succeeded]", False)], ids=["default", "succeeded-only"])
def test_job_resolve_noop_advances_the_checkpoint_by_advance_on(
        project: Project, checkpoint_extra: str, advanced: bool) -> None:
    """SPEC §7.3: a run resolved noop advances the checkpoint as an ended noop attempt
    would: under the default advance_on (succeeded, noop), not under [succeeded]."""
    run_id = _interrupted_run(project, checkpoint_extra)
    done = project.cli("job", "resolve", run_id, "--status", "noop", "--note", "checked")
    assert 0 == done.returncode, done.stderr
    assert ({"sent": run_id} if advanced else None) == _view(project, run_id).get(
        "checkpoint_after")


def test_on_interrupted_retry_runs_it_again(project: Project) -> None:
    _job(project, ", on_interrupted: retry")
    _kill_mid_task(project, project.popen("job", "run", "--job", "job-send"))
    (project.root / "ok").touch()
    again = project.cli("job", "run", "--job", "job-send")
    assert 0 == again.returncode, again.stdout + again.stderr
    (run_file,) = (project.root / "execution" / "jobs" / "runs").glob("*.json")
    attempts = orjson.loads(run_file.read_bytes())["attempts"]
    assert [("failed", "interrupted"), ("succeeded", None)] == [
        (a["status"], a.get("reason")) for a in attempts]


@pytest.mark.parametrize(("result", "state", "checkpointed"), [
    ("skipped", "failed", False), ("success", "succeeded", True), ("failure", "failed", False)])
def test_resolving_the_routine_attempt_resolves_its_job_run(
    project: Project, result: str, state: str, checkpointed: bool,
) -> None:
    """A routine attempt killed mid-Job: `resolve --result R` closes the Job Run it started
    (SPEC §7.3): success -> succeeded, and the checkpoint advances; failure -> failed;
    skipped -> failed, `resolved as skipped`; neither of those two moves the checkpoint."""
    _job(project)
    project.routine("rtn-send", "interval: 1h\naction: {kind: job, job: job-send}\n")
    _kill_mid_task(project, project.popen("run", "--due", "--now", T0))
    (run_file,) = (project.root / "execution" / "jobs" / "runs").glob("*.json")
    # SPEC §5: the action's start named the Job Run before delegating, so the killed
    # runner's ledger, and the fold resolve reads, say which run it started
    started = next(e for e in project.events() if e["type"] == "action_started")
    routines = views.replay(project.ledger)["routine-state.json"]
    opened = routines["routines"]["rtn-send"]["open_attempt"]
    assert [run_file.stem] * 2 == [started["job_run_id"], opened["actions"][0]["job_run_id"]]
    done = project.cli("resolve", "rtn-send", "--result", result, "--note", "checked")
    assert 0 == done.returncode, done.stderr
    view = orjson.loads(run_file.read_bytes())
    reason = "resolved as skipped" if result == "skipped" else view["attempts"][-1]["reason"]
    assert (state, reason) == (view["state"], view["attempts"][-1]["reason"])
    jobs = orjson.loads((run_file.parent.parent / "generated" / "job-state.json").read_bytes())
    assert checkpointed == ("checkpoint_after" in view)
    assert ({"sent": run_file.stem} if checkpointed else None) == \
        jobs["jobs"].get("job-send", {}).get("checkpoint")


def test_a_routine_job_action_refuses_an_interrupted_run(project: Project) -> None:
    _job(project)
    _kill_mid_task(project, project.popen("job", "run", "--job", "job-send"))
    project.routine("rtn-send", "interval: 1h\naction: {kind: job, job: job-send}\n")
    done = project.cli("run", "--due", "--now", T0)
    assert 1 == done.returncode
    ended = next(e for e in project.events() if e["type"] == "action_ended")
    assert ended["reason"].endswith("was interrupted; resolve it first")


def test_validate_checks_run_on_interrupted(project: Project) -> None:
    project.job("job-bad", """\
        name: Bad
        task: {mode: command, command: "true"}
        run: {idempotency_key: "{{job_id}}", on_interrupted: again}
        """)
    done = project.cli("validate")
    assert 1 == done.returncode
    assert ("jobs/job-bad.yaml:4:54: run.on_interrupted must be review or retry "
            '(got "again")') in done.stdout + done.stderr


def _open_attempt_on_another_host(project: Project) -> str:
    """A Job Run whose attempt 1 is open, started by pid 4242 on ``other-host`` (whose
    liveness this host cannot check); its id."""
    _job(project)
    paths = paths_of(project.root)
    prep = jobs.prepare(paths, load_jobs(paths), "job-send", {},
                        scheduled_at=datetime.now(UTC), trigger="manual", env=clean_env())
    Ledger(paths.run_ledger(prep.run_id)).append_many([
        RunCreated(run_id=prep.run_id, job_id="job-send", idempotency_key=prep.recorded_key,
                   project_id="demo", trigger="manual", scheduled_at=prep.scheduled_at,
                   inputs=prep.inputs, task=prep.recorded_task, checkpoint_before=None),
        RunAttemptStarted(run_id=prep.run_id, attempt=1,
                          owner=Owner(pid=4242, host="other-host")),
    ])
    return prep.run_id


def _exec_lock_held_by(project: Project, pid: int, age_s: float) -> None:
    """The project's exec lock as a runner on ``other-host`` holds it, its heartbeat
    ``age_s`` old."""
    lock = project.root / "execution" / "exec" / ".locks" / "exec-run.lock"
    lock.mkdir(parents=True)
    (lock / "owner.json").write_bytes(orjson.dumps({
        "actor": "specdojo_routine", "pid": pid, "token": f"{pid}-0123456789abcdef",
        "acquired_at_utc": "2026-05-01T10:00:00Z", "host": "other-host"}))
    beat = time.time() - age_s
    os.utime(lock, (beat, beat))


def _listed_state(project: Project, run_id: str) -> tuple[str, bool, str, bool]:
    """(state, interrupted) as `job list --json` gives them, then as `job show --json` does."""
    (row,) = orjson.loads(project.cli("job", "list", "--json").stdout)["runs"]
    shown = orjson.loads(project.cli("job", "show", run_id, "--json").stdout)
    return (row["state"], row.get("interrupted", False), shown["state"],
            shown.get("interrupted", False))


@pytest.mark.parametrize(("holder", "age_s", "interrupted"), [
    (4242, 1.0, False),  # its runner holds the exec lock, heartbeat fresh: running
    (4242, 31.0, True),  # the heartbeat went stale (30 s): interrupted
    (999, 1.0, True),  # someone else holds the lock: the attempt's runner is not running
])
def test_another_hosts_runner_is_running_while_it_holds_the_exec_lock(
    project: Project, holder: int, age_s: float, interrupted: bool,
) -> None:
    """`job list` and `job show` take an open attempt of a runner on another host for running
    while that runner holds the exec lock with a fresh heartbeat (SPEC §7.7's rule for another
    host), as `list` does for a routine attempt under a held routine lock (SPEC §7.3)."""
    run_id = _open_attempt_on_another_host(project)
    _exec_lock_held_by(project, holder, age_s)
    state = "interrupted" if interrupted else "running"
    assert (state, interrupted, "running", interrupted) == _listed_state(project, run_id)
