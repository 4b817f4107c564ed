"""Delegated output is evidence too (SPEC §14): SpecDojo calls keep their stdout and stderr
under E/exec/evidence/routines/<attempt_id>/action-<n>/, named by action_ended.evidence_ref;
`logs` and `job logs` print what an attempt kept - on a week of real history."""

from __future__ import annotations

import time

import orjson
import pytest

from tests.conftest import Project
from tests.weekhistory import SECRET, Week


def _ended(week: Week, rid: str) -> list[dict[str, object]]:
    return [e for e in week.events() if e["type"] == "action_ended" and e["routine_id"] == rid]


def test_every_delegated_call_keeps_its_output_redacted(week: Week) -> None:
    """Each SpecDojo call of the week has an evidence.json under routines/<attempt>/action-1/
    with its argv, exit code and both streams, the token redacted."""
    ended = _ended(week, "rtn-cleanup")
    refs = [str(e["evidence_ref"]) for e in ended]
    assert [f"execution/exec/evidence/routines/{e['attempt_id']}/action-1/evidence.json"
            for e in ended] == refs
    doc = orjson.loads((week.root / refs[-1]).read_bytes())
    command = doc["command"]
    assert (1, "rtn-cleanup", ended[-1]["attempt_id"], 1, "specdojo", 4,
            "cleaning /srv/cache\n",
            "using token [REDACTED]\nERROR: quota exceeded on /srv/cache\n") == (
        doc["schema_version"], doc["routine_id"], doc["attempt_id"], doc["action"],
        doc["kind"], command["exit_code"], command["stdout"], command["stderr"])
    assert [str(week.root / "fake-specdojo"), "cleanup", "--project", "demo"] == command["argv"]
    kept = b"".join((week.root / ref).parent.joinpath(name).read_bytes() for ref in refs
                    for name in ("evidence.json", "command.stdout.log", "command.stderr.log"))
    assert (len(ended) >= 7, SECRET.encode() in kept) == (True, False)


def test_a_job_actions_evidence_ref_names_its_job_run_attempt(week: Week) -> None:
    """A job action's evidence_ref is the evidence of the Job Run attempt it ran."""
    last = _ended(week, "rtn-nightly-export")[-1]
    assert (f"execution/exec/evidence/{last['job_run_id']}/attempt-1/evidence.json", True) == (
        last["evidence_ref"], (week.root / str(last["evidence_ref"])).is_file())


def test_logs_prints_the_last_attempts_output(week: Week) -> None:
    """`logs ID`: the last attempt, each action's recorded reason when it failed, its stdout
    and stderr, redacted; `--json` carries the same reason (null for a success)."""
    done = week.cli("logs", "rtn-cleanup")
    lines = done.stdout.splitlines()
    attempt = _ended(week, "rtn-cleanup")[-1]["attempt_id"]
    assert (0, f"rtn-cleanup attempt {attempt} (scheduled 2026-08-10T00:00:00.000Z, failure)",
            ["   reason: command exited with code 4", "-- stdout", "cleaning /srv/cache",
             "-- stderr", "using token [REDACTED]", "ERROR: quota exceeded on /srv/cache"]) == (
        done.returncode, lines[0], lines[2:])
    assert lines[1].startswith("== action 1 (specdojo): failure, exit 4 [execution/")
    as_json = orjson.loads(week.cli("logs", "rtn-cleanup", "--json").stdout)
    assert ["command exited with code 4"] == [o["reason"] for o in as_json["outputs"]]
    succeeded = [e for e in week.events() if e["type"] == "action_ended"
                 and e["result"] == "success" and e.get("evidence_ref")][-1]
    shown = orjson.loads(week.cli("logs", str(succeeded["routine_id"]), "--attempt",
                                  str(succeeded["attempt_id"]), "--json").stdout)
    assert [None] == [o["reason"] for o in shown["outputs"]
                      if o["evidence_ref"] == succeeded["evidence_ref"]]


def test_logs_of_a_given_attempt_and_action_and_as_json(week: Week) -> None:
    """`--attempt A --action N` chooses; `--json` is one pretty document."""
    first = _ended(week, "rtn-nightly-export")[0]
    done = week.cli("logs", "rtn-nightly-export", "--attempt", str(first["attempt_id"]),
                    "--action", "1", "--json")
    doc = orjson.loads(done.stdout)
    assert (0, first["attempt_id"], {"stdout": "exporting 2026-08-03T00:00:00.000Z\n",
                                      "stderr": "ERROR: disk /var/export full\n"}) == (
        done.returncode, doc["attempt_id"], doc["outputs"][0]["streams"])
    assert done.stdout.startswith('{\n  "routine_id"')


def test_logs_refuses_unknown_routines_attempts_and_actions(week: Week) -> None:
    """Unknown ids are usage errors (exit 2), one line each, with did you mean."""
    routine = week.cli("logs", "rtn-cleanpu")
    attempt = week.cli("logs", "rtn-cleanup", "--attempt", "att-nope")
    action = week.cli("logs", "rtn-cleanup", "--action", "2")
    assert [2, 2, 2] == [routine.returncode, attempt.returncode, action.returncode]
    assert 'did you mean rtn-cleanup?' in routine.stderr
    assert "has no action 2 (it has 1; see `status rtn-cleanup`)" in action.stderr
    assert [1, 1, 1] == [p.stderr.count("\n") for p in (routine, attempt, action)]


@pytest.mark.parametrize("body", [
    "interval: 1h\naction: {kind: specdojo, args: [index]}\n",
    "interval: 1x\naction: {kind: specdojo, args: [index]}\n",  # invalid: next would refuse
])
def test_logs_of_a_routine_without_attempts_points_to_status(project: Project, body: str) -> None:
    """Nothing ran yet: exit 1, one line pointing to `status ID`, which answers for a valid
    routine (its next occurrence) and an invalid one (what to fix) alike; it pointed to
    `next ID`, which refuses an invalid routine."""
    project.routine("rtn-new", body)
    done = project.cli("logs", "rtn-new")
    assert (1, "error: rtn-new has no attempt yet, so no output (`status rtn-new` says whether "
            "and when it runs)\n") == (done.returncode, done.stderr)


def test_logs_of_an_action_the_running_attempt_has_not_started_says_so(
    project: Project,
) -> None:
    """`logs ID --action 2` while the attempt still runs action 1: action 2 has not started
    yet (exit 0 and no output, as for a running action, and what to do), not "has no action
    2" (exit 2); an action past the routine's last is still refused."""
    gate = project.root / "go"
    project.routine("rtn-two", f"interval: 1h\naction:\n  - {{kind: specdojo, args: "
                               f"[gate-{gate}]}}\n  - {{kind: specdojo, args: [second]}}\n")
    runner = project.popen("run", "--id", "rtn-two")
    try:
        deadline = time.monotonic() + 60
        while not project.calls():
            assert time.monotonic() < deadline and runner.poll() is None
            time.sleep(0.02)
        shown = project.cli("logs", "rtn-two", "--action", "2")
        as_json = orjson.loads(project.cli("logs", "rtn-two", "--action", "2", "--json").stdout)
        past = project.cli("logs", "rtn-two", "--action", "3")
    finally:
        gate.touch()
        runner.wait(timeout=60)
    said = ("it has not started yet (the attempt is still running action 1); run `logs "
            "rtn-two --action 2` again once it has, or watch `status rtn-two`")
    assert (0, "== action 2 (specdojo): not started", f"   (no output: {said})", "") == (
        shown.returncode, *shown.stdout.splitlines()[1:3], shown.stderr)
    assert [("action 2 (specdojo): not started", None, said)] == [
        (o["title"], o["evidence_ref"], o["missing"]) for o in as_json["outputs"]]
    assert (2, "has no action 3 (the routine has 2; see `status rtn-two`)") == (
        past.returncode, past.stderr.partition(" of rtn-two ")[2].strip())


def test_job_logs_prints_a_job_runs_attempt(week: Week) -> None:
    """`job logs RUN_ID [--attempt N]`: the attempt's stdout and stderr."""
    run_id = str(_ended(week, "rtn-nightly-export")[-1]["job_run_id"])
    done = week.cli("job", "logs", run_id, "--attempt", "1")
    assert (0, [f"{run_id} (job-export, failed)",
                f"== attempt 1: failed, exit 3 [execution/exec/evidence/{run_id}/attempt-1/"
                "evidence.json]", "-- stdout", "exporting 2026-08-10T00:00:00.000Z",
                "-- stderr", "ERROR: disk /var/export full"]) == (
        done.returncode, done.stdout.splitlines())


def test_job_logs_of_an_unknown_run_says_did_you_mean(week: Week) -> None:
    """A mistyped run id: exit 2 with the closest run ids."""
    run_id = str(_ended(week, "rtn-nightly-export")[-1]["job_run_id"])
    done = week.cli("job", "logs", run_id[:-1] + "x")
    assert (2, True) == (done.returncode, run_id in done.stderr.split("; did you mean ")[1])
