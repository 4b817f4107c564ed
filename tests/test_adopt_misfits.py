"""SPEC §10 rule 4 for foreign files that do not fit where they sit: a Job Run record under
another run's file name, and a routine-state.json that contradicts our ledger or holds a cron
cursor in the future. Each is shown where operators look (import, fold, fold --check, list,
status, run --dry-run); only a command that needs the file's facts refuses; nothing is
overwritten."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.test_adopt_upstream import RUNS, E, Upstream

COPY = "JBR-weekly-report-aaaaaaaaaaaa"


@pytest.fixture
def up(tmp_path: Path) -> Upstream:
    return Upstream(tmp_path)


# --- a Job Run record under another run's name -----------------------------------------------


def _copy_record(up: Upstream) -> Path:
    """An operator's copy of an upstream record under another run's file name."""
    copy = up.path(f"{E}/jobs/runs/{COPY}.json")
    copy.write_bytes(up.path(f"{E}/jobs/runs/{RUNS[3]}.json").read_bytes())
    return copy


@pytest.mark.parametrize("args", [["import"], ["fold"], ["fold", "--check"]])
def test_a_record_under_another_runs_name_is_a_conflict_naming_why(
        up: Upstream, args: list[str]) -> None:
    """import, fold and fold --check exit 1 with one conflict line naming the file and the
    run id it holds; the copy stays byte for byte and gets no ledger."""
    copy = _copy_record(up)
    data = copy.read_bytes()
    proc = up.cli(*args)
    assert 1 == proc.returncode, proc.stdout + proc.stderr
    assert (f"conflict: {E}/jobs/runs/{COPY}.json (succeeded, 1 attempt, "
            in proc.stderr), proc.stderr
    assert f"holds run_id {RUNS[3]!r}, not {COPY!r}" in proc.stderr
    assert "restore the ledger" not in proc.stderr
    assert data == copy.read_bytes()
    assert not copy.with_suffix(".jsonl").exists()


def test_a_record_under_another_runs_name_leaves_the_other_runs_usable(up: Upstream) -> None:
    """Job commands that do not need the copy answer as before: job list and job show of the
    original exit 0, a job run of another Job is a duplicate complete, and the original run
    is imported; job show of the copy refuses with the conflict (exit 1)."""
    _copy_record(up)
    assert RUNS[3] in up.ok("job", "list")
    assert RUNS[3] == orjson.loads(up.ok("job", "show", RUNS[3], "--json"))["run_id"]
    record = orjson.loads(up.path(f"{E}/jobs/runs/{RUNS[4]}.json").read_bytes())
    inputs = [f"--input={k}={v}" for k, v in record["inputs"].items()]
    out = orjson.loads(up.ok("job", "run", "--job", "job-translate-docs", *inputs, "--json"))
    assert (RUNS[4], True) == (out["run_id"], out["duplicate_complete"])
    assert up.path(f"{E}/jobs/runs/{RUNS[3]}.jsonl").exists()
    shown = up.cli("job", "show", COPY)
    assert 1 == shown.returncode
    assert shown.stderr.startswith(f"error: conflict: {E}/jobs/runs/{COPY}.json"), shown.stderr


def test_run_due_runs_job_actions_beside_a_record_under_another_name(up: Upstream) -> None:
    """The weekly report's job action runs (its own run is not the copy): the attempt
    succeeds instead of every job action being recorded as failed."""
    _copy_record(up)
    proc = up.cli("run", "--due", "--json", "--now", "2026-12-04T08:00:30Z")
    results = {r["routine_id"]: r["result"] for r in orjson.loads(proc.stdout)["results"]}
    assert "success" == results["rtn-weekly-report"], proc.stdout + proc.stderr


def test_a_record_is_usable_only_for_the_run_its_file_name_names() -> None:
    """run_record_usable with the file's run id refuses another run's record."""
    from specdojo_routine.core import adopt as rules

    record = {"run_id": RUNS[3], "job_id": "job-weekly-report", "idempotency_key": "k",
              "state": "succeeded", "updated_at": "2026-12-01T07:00:32.736Z",
              "attempts": [{"attempt": 1, "status": "succeeded"}]}
    assert (True, True, False) == (rules.run_record_usable(record),
                                   rules.run_record_usable(record, RUNS[3]),
                                   rules.run_record_usable(record, COPY))
