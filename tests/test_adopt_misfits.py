"""SPEC §10 rule 4 for foreign files that do not fit where they sit: a Job Run record under
another run's file name, and a routine-state.json that contradicts our ledger or holds a cron
cursor in the future. Each is shown where operators look (import, fold, fold --check, list,
status, run --dry-run); only a command that needs the file's facts refuses; nothing is
overwritten."""

from __future__ import annotations

import os
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


# --- routine-state.json in conflict: read-only commands say so ---------------------------------

STATE = "projects/prj-demo/routines/generated/routine-state.json"
CONFLICT = f"conflict: {STATE} entry 'rtn-nightly-translate' cannot be imported"


def _edit_entry(up: Upstream, rid: str, **facts: str) -> None:
    doc = orjson.loads(up.path(STATE).read_bytes())
    doc["routines"][rid].update(facts)
    up.path(STATE).write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")


@pytest.fixture
def partial(up: Upstream) -> Upstream:
    """An entry whose last_result no fold of ours can take (`partial`)."""
    _edit_entry(up, "rtn-nightly-translate", last_result="partial")
    up.original = up.files()
    return up


def test_list_names_a_routine_state_conflict_and_exits_1(partial: Upstream) -> None:
    """list shows the rest of the file imported in memory and a line naming the conflict;
    list --json has it in problems; both exit 1 and write nothing."""
    proc = partial.cli("list")
    assert 1 == proc.returncode, proc.stdout + proc.stderr
    assert f"! {CONFLICT}" in proc.stdout
    assert "(until then `run` refuses)" in proc.stdout
    listing = partial.cli("list", "--json")
    assert 1 == listing.returncode
    doc = orjson.loads(listing.stdout)
    assert [CONFLICT] == [p[:len(CONFLICT)] for p in doc["problems"]]
    rows = {r["id"]: r for r in doc["routines"]}
    assert "success" == rows["rtn-weekly-report"]["last_result"]  # the rest is imported
    assert partial.original == partial.files()


def test_status_is_unhealthy_with_the_conflict_as_the_reason(partial: Upstream) -> None:
    """status says unhealthy because of the conflict and what to do, not healthy; so does
    status --json and status of one routine."""
    proc = partial.cli("status")
    assert 1 == proc.returncode, proc.stdout
    assert f"unhealthy: {CONFLICT}" in proc.stdout
    assert "fix or remove the entry" in proc.stdout
    assert not any(x.startswith("healthy: ") for x in proc.stdout.splitlines())
    doc = orjson.loads(partial.cli("status", "--json").stdout)
    assert (False, True) == (doc["healthy"], any(p.startswith(CONFLICT) for p in doc["problems"]))
    one = partial.cli("status", "rtn-weekly-report")
    assert (1, True) == (one.returncode, f"unhealthy: {CONFLICT}" in one.stdout), one.stdout


def test_run_dry_run_prints_the_conflict_and_exits_1_as_the_run_does(partial: Upstream) -> None:
    """The run refuses (exit 1, `error: conflict: …`); its dry run says so too and exits 1."""
    dry = partial.cli("run", "--due", "--dry-run")
    assert 1 == dry.returncode, dry.stdout + dry.stderr
    assert f"error: {CONFLICT}" in dry.stderr
    assert partial.original == partial.files()
    real = partial.cli("run", "--due")
    assert (1, True) == (real.returncode, f"error: {CONFLICT}" in real.stderr), real.stderr


def test_a_fifo_for_the_routine_state_is_named_by_list_and_status(up: Upstream) -> None:
    """A FIFO where upstream's routine-state.json was (no ledger of ours yet): list and
    status name the conflict and exit 1 at once instead of showing the routines never run
    and healthy."""
    up.path(STATE).unlink()
    os.mkfifo(up.path(STATE))
    for args in (["list"], ["status"]):
        proc = up.cli(*args)
        assert 1 == proc.returncode, (args, proc.stdout, proc.stderr)
        assert f"conflict: {STATE} is not a routine state document" in proc.stdout, proc.stdout


# --- a cron cursor in the future ------------------------------------------------------------

FUTURE = "2030-01-01T00:00:00.000Z"


def test_a_cron_cursor_later_than_now_is_a_problem_of_status_and_list(up: Upstream) -> None:
    """An imported last_scheduled_for in 2030: status is unhealthy naming the routine, the
    instant and what to do; list --json has it in problems; a replay in the past still
    flags it, a --now after it does not."""
    _edit_entry(up, "rtn-nightly-translate", last_scheduled_for=FUTURE)
    proc = up.cli("status")
    assert 1 == proc.returncode, proc.stdout
    line = [x for x in proc.stdout.splitlines() if "cron cursor" in x]
    assert 1 == len(line), proc.stdout
    assert line[0].startswith(f"unhealthy: rtn-nightly-translate: its cron cursor "
                              f"{FUTURE} is later than now")
    assert "`run --id rtn-nightly-translate`" in line[0] and "no command moves" in line[0]
    for now in ([], ["--now", "2026-12-01T07:02:20Z"]):
        doc = orjson.loads(up.cli("list", "--json", *now).stdout)
        assert any(p.startswith("rtn-nightly-translate: its cron cursor")
                   for p in doc["problems"]), doc["problems"]
    later = orjson.loads(up.cli("list", "--json", "--now", "2030-06-01T00:00:00Z").stdout)
    assert not any("cron cursor" in p for p in later["problems"])
    other = orjson.loads(up.cli("status", "rtn-weekly-report", "--json").stdout)
    assert not any("cron cursor" in p for p in other["problems"])


def test_next_warns_of_a_routine_state_conflict(partial: Upstream) -> None:
    """`next ID` and the agenda still answer (exit 0) but say on stderr, one `warning:` line,
    that the routine state is in conflict and every run refuses, as list and status do."""
    for args in (["next", "rtn-weekly-report"], ["next"], ["next", "--json"]):
        proc = partial.cli(*args)
        assert 0 == proc.returncode, (args, proc.stdout, proc.stderr)
        assert f"warning: {CONFLICT}" in proc.stderr, (args, proc.stderr)
        assert "(until then `run` refuses)" in proc.stderr
    orjson.loads(partial.cli("next", "--json").stdout)  # the document stays whole
    assert partial.original == partial.files()


def test_next_of_a_routine_whose_cron_cursor_is_later_than_now(up: Upstream) -> None:
    """`next ID` reads the state another tool recorded, as the agenda does: an imported cron
    cursor in 2030 puts the routine's next occurrence after it (not at tomorrow's, which no
    run would start), and a `warning:` line names it; another routine has no such line."""
    _edit_entry(up, "rtn-nightly-translate", last_scheduled_for=FUTURE)
    proc = up.cli("next", "rtn-nightly-translate", "--json")
    assert 0 == proc.returncode, proc.stderr
    first = orjson.loads(proc.stdout)["occurrences"][0]
    assert first["utc"] > FUTURE, first
    assert proc.stderr.startswith(
        f"warning: rtn-nightly-translate: its cron cursor {FUTURE} is later than now"), proc.stderr
    assert "cron cursor" in up.cli("next").stderr
    assert "cron cursor" not in up.cli("next", "rtn-weekly-report").stderr
