"""Evidence that `prune` removed is on record (SPEC §15): `logs`, `job logs` and `status ID`
say it was pruned and when, instead of guessing ("gone (pruned?)") or pointing at a path that
no longer exists as if `logs` would show it."""

from __future__ import annotations

import orjson

from tests.conftest import Project

FAILING_JOB = """\
name: Export
task: {mode: command, command: "echo ERROR: disk full >&2; exit 3"}
run: {idempotency_key: "{{job_id}}:{{scheduled_at}}"}
"""


def _failed_and_pruned(project: Project) -> None:
    project.job("job-export", FAILING_JOB)
    project.routine("rtn-call", "interval: 1h\naction: {kind: specdojo, args: [index]}\n")
    project.routine("rtn-export", "interval: 1h\naction: {kind: job, job: job-export}\n")
    project.exit_codes({"index": 3})
    assert 1 == project.cli("run", "--due", "--now", "2026-08-07T08:00:00Z").returncode
    pruned = project.cli("prune", "--keep-days", "1", "--keep-runs", "0",
                         "--now", "2099-01-01T00:00:00Z")  # events are stamped by the clock
    assert (0, "pruned 1 Job Run(s) and 1 routine attempt(s)") == (
        pruned.returncode, pruned.stdout[:44])


def test_logs_says_the_evidence_was_pruned_and_when(project: Project) -> None:
    _failed_and_pruned(project)
    at = [e["at"] for e in project.events() if e["type"] == "evidence_pruned"]
    call = project.cli("logs", "rtn-call")
    export = project.cli("logs", "rtn-export")
    as_json = orjson.loads(project.cli("logs", "rtn-call", "--json").stdout)
    assert (0, 0) == (call.returncode, export.returncode)
    assert f"   (no output: pruned at {at[0]} by `prune`)" in call.stdout.splitlines()
    assert "pruned?" not in export.stdout
    assert "   (no output: pruned at 20" in export.stdout
    assert f"pruned at {at[0]} by `prune`" == as_json["outputs"][0]["missing"]


def test_job_logs_says_the_evidence_was_pruned(project: Project) -> None:
    _failed_and_pruned(project)
    run_id = next(e["job_run_id"] for e in project.events() if e.get("job_run_id"))
    view = orjson.loads((project.root / "execution" / "jobs" / "runs" / f"{run_id}.json")
                        .read_bytes())
    shown = project.cli("job", "logs", run_id)
    assert (0, f"   (no output: pruned at {view['pruned'][0]['at']} by `prune`)") == (
        shown.returncode, shown.stdout.splitlines()[-1])


def test_status_does_not_send_the_operator_to_pruned_evidence(project: Project) -> None:
    _failed_and_pruned(project)
    at = next(e["at"] for e in project.events() if e["type"] == "evidence_pruned")
    lines = project.cli("status", "rtn-call").stdout
    evidence = [line for line in lines.splitlines() if line.startswith("  evidence")]
    assert ["  evidence  execution/exec/evidence/routines/"] == [e[:45] for e in evidence]
    assert (evidence[0].endswith(f"(pruned at {at})"), "(all of it: `logs" in lines) == (
        True, False)


def test_logs_of_a_running_action_says_it_is_running(project: Project) -> None:
    """`logs ID` while the attempt's action runs: its output is kept when it ends; saying "no
    output was kept for this action" reads as if it had ended without any."""
    import time

    gate = project.root / "go"
    project.routine("rtn-long", f"interval: 1h\naction: {{kind: specdojo, args: [gate-{gate}]}}\n")
    runner = project.popen("run", "--id", "rtn-long")
    try:
        deadline = time.monotonic() + 60
        while not project.calls():
            assert time.monotonic() < deadline and runner.poll() is None
            time.sleep(0.02)
        shown = project.cli("logs", "rtn-long")
        as_json = orjson.loads(project.cli("logs", "rtn-long", "--json").stdout)
    finally:
        gate.touch()
        runner.wait(timeout=60)
    assert (0, "== action 1 (specdojo): running",
            "   (no output: it is still running; its output is kept when it ends)") == (
        shown.returncode, *shown.stdout.splitlines()[1:3])
    assert "it is still running; its output is kept when it ends" == \
        as_json["outputs"][0]["missing"]
