"""SPEC §10 at the edges, on the project the upstream CLI really ran (fixtures/upstream):
upstream's run lines beside its own routine-state.json, a job-state.json upstream rewrote
without the checkpoint it cannot read, upstream killed inside a routine's first run, hand edits
after adoption, a conflicting record asked for by `job run`, and upstream's run lines for an
interval routine. Nothing upstream (or an operator) wrote is dropped; nothing is called drift
that would import cleanly."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from tests.test_adopt_upstream import COMMIT_B, RUNS, E, R, Upstream
from tests.test_adopt_upstream import run_line as _line
from tests.test_adopt_upstream import write_doc as _write

COMMIT_A = "064ac71aad669c714f68dacde0cd06105f5a36d3"
STATE = R / "generated/routine-state.json"
LEDGER = R / "generated/routine-runs.jsonl"
JOB_STATE = E / "jobs/generated/job-state.json"


@pytest.fixture
def up(tmp_path: Path) -> Upstream:
    return Upstream(tmp_path)


def _types(up: Upstream, rel: Path | str) -> list[str]:
    return [e.get("type", "<upstream>") for e in up.lines(rel)]


# --- 1. false drift --------------------------------------------------------------------------


def test_upstream_run_lines_beside_its_own_state_file_are_not_drift(up: Upstream) -> None:
    """A newer upstream wrote run lines to routine-runs.jsonl and its own routine-state.json
    (same facts, upstream's shape): import --dry-run is clean and so is fold --check."""
    state = orjson.loads(up.path(STATE).read_bytes())["routines"]
    up.path(LEDGER).write_bytes(b"".join(
        _line(rid, e["last_run"], e.get("last_scheduled_for", e["last_run"][:-1] + ".000Z"))
        for rid, e in state.items()))
    assert up.cli("import", "--dry-run").returncode == 0
    check = up.cli("fold", "--check")
    assert (0, "") == (check.returncode, check.stderr), check.stderr
    assert up.original[str(STATE)] == up.path(STATE).read_bytes()


def test_job_state_rewritten_without_our_command_jobs_checkpoint_is_not_drift(
    up: Upstream,
) -> None:
    """Upstream rewrites job-state.json with the entries it can read: our command Job's
    checkpoint is left out. Nothing in it is new, so import --dry-run and fold --check are
    clean, and the next fold puts our checkpoint back."""
    up.path("projects/prj-demo/jobs/job-stamp.yaml").write_text(
        "id: job-stamp\nname: Stamp\ninputs:\n  period: {type: string, required: true}\n"
        "task: {mode: command, command: 'true'}\n"
        'run: {idempotency_key: "{{job_id}}:{{inputs.period}}"}\n'
        'checkpoint: {values: {last_period: "{{inputs.period}}"}}\n')
    up.ok("import")
    up.ok("job", "run", "--job", "job-stamp", "--input", "period=W1")
    path = up.path(JOB_STATE)
    ours = orjson.loads(path.read_bytes())
    assert {"job-stamp", "job-translate-docs"} == set(ours["jobs"])
    _write(path, {"version": 1, "jobs": {"job-translate-docs":
                                         ours["jobs"]["job-translate-docs"]}})
    assert "would import 0 routine states, 0 Job Runs, 0 checkpoints; 0 conflicts\n" == \
        up.ok("import", "--dry-run")
    check = up.cli("fold", "--check")
    assert (0, "") == (check.returncode, check.stderr)
    up.ok("fold")
    assert ours == orjson.loads(path.read_bytes())


# --- 2. upstream killed inside a routine's first run -----------------------------------------


def test_upstream_killed_in_a_first_run_imports_as_never(up: Upstream) -> None:
    """Its entry has last_run and last_scheduled_for but no last_result, and its lock directory
    was left behind. Once that is stale, recording commands go on: the entry is imported with
    status never, and the occurrence upstream started is not started again."""
    up.path(R / "rtn-monthly.yaml").write_text(
        'id: rtn-monthly\ntrigger: {cron: "0 9 1 * *", timezone: UTC}\n'
        "action: {kind: specdojo, args: [index, build]}\n")
    doc = orjson.loads(up.path(STATE).read_bytes())
    record = {"last_run": "2026-12-01T09:00:03Z",
              "last_scheduled_for": "2026-12-01T09:00:00.000Z"}
    doc["routines"]["rtn-monthly"] = record
    _write(up.path(STATE), doc)
    lock = up.path(R / ".locks/routine-run.lock")
    lock.mkdir(parents=True)
    old = time.time() - 2 * 3600
    os.utime(lock, (old, old))
    proc = up.cli("run", "--due", "--now", "2026-12-01T09:30:00Z")
    assert 0 == proc.returncode, proc.stderr
    assert "rtn-monthly" not in proc.stdout  # only the 1-minute sweep was due
    assert not [c for c in up.calls() if "index build" in c]
    imported = {e["routine_id"]: e["record"] for e in up.lines(LEDGER)
                if e["type"] == "routine_state_imported"}
    assert record == imported["rtn-monthly"]
    entry = orjson.loads(up.path(STATE).read_bytes())["routines"]["rtn-monthly"]
    assert ("never", "2026-12-01T09:00:03Z", "2026-12-01T09:00:00.000Z") == (
        entry["status"], entry["last_run"], entry["last_scheduled_for"])
    assert 0 == up.cli("fold", "--check").returncode


# --- 3. hand edits after adoption ------------------------------------------------------------


def test_a_hand_edited_last_result_is_imported_not_overwritten(up: Upstream) -> None:
    """After adoption an operator edits an entry's last_result, last_run unchanged: the next
    fold imports the entry verbatim (it is a fact our ledger lacks) instead of writing over it."""
    up.ok("import")
    doc = orjson.loads(up.path(STATE).read_bytes())
    doc["routines"]["rtn-weekly-report"]["last_result"] = "failure"
    _write(up.path(STATE), doc)
    record = doc["routines"]["rtn-weekly-report"]
    assert "would import 1 routine state," in up.ok("import", "--dry-run")
    assert 0 == up.cli("fold", "--check").returncode  # it would import cleanly
    up.ok("fold")
    last = up.lines(LEDGER)[-1]
    assert ("routine_state_imported", record) == (last["type"], last["record"])
    entry = orjson.loads(up.path(STATE).read_bytes())["routines"]["rtn-weekly-report"]
    assert ("failure", "failure") == (entry["last_result"], entry["status"])
    assert "imported 0 routine states" in up.ok("import")


def test_a_rewound_checkpoint_is_imported_not_overwritten(up: Upstream) -> None:
    """job-state.json's revision set back to commit A by hand, last_run_id and updated_at
    unchanged: it is imported, and the next translation starts from commit A."""
    up.ok("import")
    doc = orjson.loads(up.path(JOB_STATE).read_bytes())
    entry = doc["jobs"]["job-translate-docs"]
    assert {"revision": COMMIT_B} == entry["checkpoint"]
    entry["checkpoint"] = {"revision": COMMIT_A}
    _write(up.path(JOB_STATE), doc)
    data = up.path(JOB_STATE).read_bytes()
    assert "imported 0 routine states, 0 Job Runs, 1 checkpoint; 0 conflicts\n" == \
        up.ok("import")
    events = up.lines(f"{E}/jobs/runs/{entry['last_run_id']}.jsonl")
    assert ("checkpoint_imported", {"revision": COMMIT_A}) == (events[-1]["type"],
                                                                events[-1]["checkpoint"])
    assert data == up.path(JOB_STATE).read_bytes()
    plan = orjson.loads(up.ok("job", "run", "--job", "job-translate-docs", "--dry-run",
                              "--json"))
    assert COMMIT_A == plan["inputs"]["from_revision"]
    assert "imported 0 routine states, 0 Job Runs, 0 checkpoints" in up.ok("import")
    assert 0 == up.cli("fold", "--check").returncode


def test_an_edited_run_state_is_a_conflict_and_job_run_refuses_it(up: Upstream) -> None:
    """A run record whose top-level state was edited does not extend ours: import, fold and
    fold --check exit 1 naming it and keep the file; job run for its key refuses it (one
    line, exit 1, nothing recorded) instead of answering duplicate complete."""
    up.ok("import")
    run_id = RUNS[4]  # B..B, the translate Job's next run while HEAD is still B
    view = up.path(f"{E}/jobs/runs/{run_id}.json")
    doc = orjson.loads(view.read_bytes())
    doc["state"] = "failed"
    _write(view, doc)
    data = view.read_bytes()
    ledger = view.with_suffix(".jsonl").read_bytes()
    for args in (["import"], ["fold"], ["fold", "--check"]):
        proc = up.cli(*args)
        assert 1 == proc.returncode, (args, proc.stdout, proc.stderr)
        assert f"conflict: {E}/jobs/runs/{run_id}.json (failed, 1 attempt, " in proc.stderr
    proc = up.cli("job", "run", "--job", "job-translate-docs", "--json")
    assert 1 == proc.returncode, proc.stdout
    assert proc.stderr.startswith(f"error: conflict: {E}/jobs/runs/{run_id}.json"), proc.stderr
    assert 1 == len(proc.stderr.splitlines())
    assert (data, ledger) == (view.read_bytes(), view.with_suffix(".jsonl").read_bytes())
    assert [] == up.calls()


def test_an_older_view_of_ours_written_back_is_stale_not_imported(up: Upstream) -> None:
    """A copy of our own earlier routine-state.json written back (upstream read it before our
    run and wrote it after) holds only facts our ledger already has: nothing is imported and
    the next publication replaces it."""
    up.ok("import")
    before = up.path(STATE).read_bytes()
    up.ok("run", "--due", "--now", "2026-12-01T07:05:00Z")  # the 1-minute sweep runs
    after = up.path(STATE).read_bytes()
    assert before != after
    up.path(STATE).write_bytes(before)
    assert "imported 0 routine states" in up.ok("import")
    assert after == up.path(STATE).read_bytes()


# --- 9a. upstream's run lines for an interval routine ----------------------------------------


def test_an_upstream_run_line_gives_an_interval_routine_no_last_scheduled_for(
    up: Upstream,
) -> None:
    """Upstream's run lines name an occurrence for every routine; last_scheduled_for is for
    cron routines only (SPEC §5): the interval sweep keeps none, the cron routine takes it."""
    up.ok("import")
    with up.path(LEDGER).open("ab") as f:
        f.write(_line("rtn-register-sweep", "2026-12-01T07:10:00Z", "2026-12-01T07:10:00.000Z"))
        f.write(_line("rtn-weekly-report", "2026-12-01T07:11:00Z", "2026-12-01T07:11:00.000Z"))
    listing = orjson.loads(up.ok("list", "--json", "--now", "2026-12-01T07:10:30Z"))
    rows = {r["id"]: r for r in listing["routines"]}
    assert ("2026-12-01T07:10:00Z", None) == (rows["rtn-register-sweep"]["last_run"],
                                              rows["rtn-register-sweep"]["last_scheduled_for"])
    assert "2026-12-01T07:11:00.000Z" == rows["rtn-weekly-report"]["last_scheduled_for"]
    up.ok("fold")
    entries = orjson.loads(up.path(STATE).read_bytes())["routines"]
    assert "last_scheduled_for" not in entries["rtn-register-sweep"]
    assert 0 == up.cli("fold", "--check").returncode


# --- 8. publishing over a foreign write ------------------------------------------------------


def test_a_rewrite_during_our_run_is_imported_before_the_end_is_published(
    up: Upstream, tmp_path: Path,
) -> None:
    """Upstream rewrites routine-state.json while our run delegates (its shallow merge of
    another routine's entry). The publish after attempt_ended imports that entry first: it is
    in the ledger verbatim and in the view, not written over."""
    up.ok("import")
    started, go = tmp_path / "started", tmp_path / "go"
    waiter = tmp_path / "waiting-specdojo"
    waiter.write_text(f"#!/bin/sh\ntouch {started}\n"
                      f"while [ ! -e {go} ]; do sleep 0.02; done\nexit 0\n")
    waiter.chmod(0o755)
    proc = subprocess.Popen(
        [sys.executable, "-m", "specdojo_routine", "run", "--id", "rtn-register-sweep",
         "--now", "2026-12-01T07:05:00Z", "--root", str(up.root)], cwd=up.root,
        env=up.env() | {"SPECDOJO_CLI": str(waiter)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
            time.sleep(0.02)
        doc = orjson.loads(up.path(STATE).read_bytes())
        assert "running" == doc["routines"]["rtn-register-sweep"]["status"]
        record = {**doc["routines"]["rtn-weekly-report"], "last_run": "2026-12-01T07:04:00Z",
                  "last_result": "failure", "last_scheduled_for": "2026-12-01T07:04:00.000Z"}
        doc["routines"]["rtn-weekly-report"] = record
        _write(up.path(STATE), doc)
    finally:
        go.touch()
        out, err = proc.communicate(timeout=60)
    assert 0 == proc.returncode, out + err
    events = up.lines(LEDGER)
    imported = [e for e in events if e["type"] == "routine_state_imported"
                and e["record"] == record]
    assert 1 == len(imported)
    assert events.index(imported[0]) > max(i for i, e in enumerate(events)
                                           if e["type"] == "attempt_started")
    entries = orjson.loads(up.path(STATE).read_bytes())["routines"]
    assert ("failure", "2026-12-01T07:04:00Z") == (entries["rtn-weekly-report"]["last_result"],
                                                   entries["rtn-weekly-report"]["last_run"])
    assert "success" == entries["rtn-register-sweep"]["status"]
    assert 0 == up.cli("fold", "--check").returncode
