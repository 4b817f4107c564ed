"""SPEC §10: living beside the upstream CLI on a project of ours — upstream run records
appended to our ledger, routine-state.json rewritten by upstream's shallow merge, an attempt
added to one of our run views, and a record that contradicts ours (a conflict)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import Project, period_job

from specdojo_routine.core import adopt as rules
from tests.clirun import run_cli
from tests.test_adopt_upstream import write_doc as _write

NOW = "2026-12-01T07:00:00Z"


def _upstream_line(rid: str, started: str, result: str = "success") -> bytes:
    return orjson.dumps({"version": 1, "routine_id": rid, "scheduled_for": started[:-1] + ".000Z",
                         "started_at": started, "completed_at": started, "result": result,
                         "job_run_ids": []}) + b"\n"


@pytest.fixture
def cron(project: Project) -> Project:
    project.routine("rtn-hourly", 'trigger: {cron: "0 * * * *", timezone: UTC}\n'
                                  "action: {kind: specdojo, args: [index, build]}\n")
    return project


# --- upstream lines in our ledger ------------------------------------------------------------


def test_upstream_lines_after_ours_are_events_with_their_line_number(cron: Project) -> None:
    """Lines without type/seq that upstream appended read as upstream_run_recorded with seq =
    line number: no command refuses the ledger, our appends continue after them, the fold
    takes last_run/last_result/last_scheduled_for from them, fold --check is clean."""
    assert 0 == cron.cli("run", "--due", "--now", NOW).returncode
    ours = len(cron.events())
    with cron.ledger.open("ab") as f:
        f.write(_upstream_line("rtn-hourly", "2026-12-01T08:00:05Z", "failure"))
    history = cron.cli("history", "rtn-hourly")
    assert 0 == history.returncode, history.stderr
    assert f"{ours + 1}" in history.stdout and "upstream_run_recorded" in history.stdout
    listing = orjson.loads(cron.cli("list", "--json", "--now", "2026-12-01T08:10:00Z").stdout)
    row = listing["routines"][0]
    assert ("2026-12-01T08:00:05Z", "failure", "2026-12-01T08:00:05.000Z", False) == (
        row["last_run"], row["last_result"], row["last_scheduled_for"], row["due"])
    proc = cron.cli("run", "--due", "--now", "2026-12-01T09:00:30Z")
    assert 0 == proc.returncode, proc.stderr
    seqs = [e.get("seq") for e in cron.events()]
    assert [*range(1, ours + 1), None, *range(ours + 2, len(seqs) + 1)] == seqs
    assert 0 == cron.cli("fold", "--check").returncode
    assert "success" == cron.state()["routines"]["rtn-hourly"]["last_result"]


def test_history_json_prints_upstream_lines_as_stored(cron: Project) -> None:
    """history --json shows only what is stored: the upstream line exactly as written."""
    assert 0 == cron.cli("run", "--due", "--now", NOW).returncode
    line = _upstream_line("rtn-hourly", "2026-12-01T08:00:05Z")
    with cron.ledger.open("ab") as f:
        f.write(line)
    assert cron.cli("history", "--json").stdout.endswith(line.decode())


# --- routine-state.json rewritten by upstream ------------------------------------------------


def _shallow_merge(project: Project, rid: str, **facts: str) -> bytes:
    """What upstream does after its run: read the file, overwrite three keys of the entry,
    keep every other key (ours included), write it back."""
    path = project.root / "routines" / "generated" / "routine-state.json"
    doc = orjson.loads(path.read_bytes())
    doc["routines"][rid] = {**doc["routines"][rid], **facts}
    _write(path, doc)
    return path.read_bytes()


def test_a_shallow_merge_by_upstream_is_imported_not_overwritten(cron: Project) -> None:
    """Upstream's rewrite keeps our keys and changes last_run/last_result/last_scheduled_for:
    the next recording command imports the entry verbatim, then the due logic uses it."""
    assert 0 == cron.cli("run", "--due", "--now", NOW).returncode
    data = _shallow_merge(cron, "rtn-hourly", last_run="2026-12-01T08:00:02Z",
                          last_result="failure", last_scheduled_for="2026-12-01T08:00:02.000Z")
    record = orjson.loads(data)["routines"]["rtn-hourly"]
    listing = orjson.loads(cron.cli("list", "--json", "--now", "2026-12-01T08:30:00Z").stdout)
    assert ("failure", False) == (listing["routines"][0]["last_result"],
                                  listing["routines"][0]["due"])
    proc = cron.cli("run", "--due", "--now", "2026-12-01T08:30:00Z")
    assert (0, "no due routines\n") == (proc.returncode, proc.stdout), proc.stderr
    imported = [e for e in cron.events() if e["type"] == "routine_state_imported"]
    assert [record] == [e["record"] for e in imported]
    assert rules.routine_facts(record) == rules.routine_facts(
        cron.state()["routines"]["rtn-hourly"])
    assert 0 == cron.cli("fold", "--check").returncode


def test_fold_after_a_foreign_rewrite_counts_the_view_the_import_republished(
    cron: Project,
) -> None:
    """fold imports upstream's shallow merge and republishes routine-state.json in that step:
    its report counts it (1 view rewritten, not 0), and a second fold rewrites nothing."""
    assert 0 == cron.cli("run", "--due", "--now", NOW).returncode
    _shallow_merge(cron, "rtn-hourly", last_run="2026-12-01T08:00:02Z",
                   last_result="failure", last_scheduled_for="2026-12-01T08:00:02.000Z")
    folded = cron.cli("fold")
    assert (0, "folded: 1 view(s) rewritten\n") == (folded.returncode, folded.stdout), \
        folded.stderr
    assert "failure" == cron.state()["routines"]["rtn-hourly"]["last_result"]
    assert "folded: 0 view(s) rewritten\n" == cron.cli("fold").stdout


def test_a_rewrite_that_looks_exactly_like_our_view_is_still_imported(cron: Project) -> None:
    """Upstream's merge can leave a document of our own shape and consistent status (success
    -> success, a newer last_run, our ledger proof kept): only the view's digest of its own
    body tells it apart, so it is imported, not trusted as ours and not overwritten."""
    assert 0 == cron.cli("run", "--due", "--now", NOW).returncode
    _shallow_merge(cron, "rtn-hourly", last_run="2026-12-01T08:00:01Z",
                   last_scheduled_for="2026-12-01T08:00:01.000Z")
    listing = orjson.loads(cron.cli("list", "--json", "--now", "2026-12-01T08:30:00Z").stdout)
    assert ("2026-12-01T08:00:01Z", False) == (listing["routines"][0]["last_run"],
                                               listing["routines"][0]["due"])
    assert "imported 1 routine state," in cron.cli("import").stdout
    assert 0 == cron.cli("fold", "--check").returncode


def test_a_view_of_ours_not_yet_republished_is_stale_not_imported(cron: Project) -> None:
    """An older picture of our own ledger (a crash before publication, or a copy of it
    written back) imports nothing: every entry in it is one our fold gave before."""
    assert 0 == cron.cli("run", "--due", "--now", NOW).returncode
    older = cron.state_path.read_bytes()
    assert 0 == cron.cli("run", "--due", "--now", "2026-12-01T08:00:30Z").returncode
    cron.state_path.write_bytes(older)
    assert "imported 0 routine states" in cron.cli("import").stdout
    assert not [e for e in cron.events() if e["type"] == "routine_state_imported"]
    assert "2026-12-01T08:00:30Z" == cron.state()["routines"]["rtn-hourly"]["last_run"]


def _view_at(project: Project, tmp_path: Path, seq: int) -> bytes:
    """The routine-state.json our fold published when the ledger ended at line ``seq``: what
    a runner killed (or a disk filled) before its next publication leaves behind."""
    copy = tmp_path / "at-seq"
    shutil.copytree(project.root, copy)
    lines = project.ledger.read_bytes().splitlines(keepends=True)
    (copy / project.ledger.relative_to(project.root)).write_bytes(b"".join(lines[:seq]))
    shutil.rmtree(copy / ".cache", ignore_errors=True)
    state = copy / project.state_path.relative_to(project.root)
    state.unlink()
    assert 0 == run_cli(["fold", "--root", str(copy)], cwd=copy, env=project.env()).returncode
    return state.read_bytes()


def test_a_view_of_ours_left_mid_attempt_is_stale_whatever_the_fold_says_since(
    cron: Project, tmp_path: Path
) -> None:
    """The picture our fold published while a routine's first attempt ran (running, no
    result yet: an entry the fold could not apply as a fact) and that a crash left beside a
    ledger that has since ended the attempt is ours, not another tool's: it imports nothing,
    is no conflict, and the next run, resolve and fold go on and republish it."""
    assert 0 == cron.cli("run", "--due", "--now", NOW).returncode
    [started] = [e["seq"] for e in cron.events() if e["type"] == "attempt_started"]
    mid = _view_at(cron, tmp_path, started)
    assert (None, "running") == (orjson.loads(mid)["routines"]["rtn-hourly"]["last_result"],
                                 orjson.loads(mid)["routines"]["rtn-hourly"]["status"])
    cron.state_path.write_bytes(mid)
    proc = cron.cli("run", "--due", "--now", "2026-12-01T08:00:30Z")
    assert (0, "") == (proc.returncode, proc.stderr)
    assert "success" == cron.state()["routines"]["rtn-hourly"]["last_result"]
    cron.state_path.write_bytes(mid)
    assert (0, "imported 0 routine states") == (
        cron.cli("fold").returncode, cron.cli("import").stdout.split(",")[0])
    assert 0 == cron.cli("fold", "--check").returncode
    assert not [e for e in cron.events() if e["type"] == "routine_state_imported"]


def test_an_entry_no_fold_of_ours_gives_is_a_conflict_without_reading_the_history(
    cron: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry with a result our fold never writes (`last_result: bogus`) is a conflict at
    once: no command folds the whole ledger again to look for it among our earlier pictures
    (it would, on every command, for as long as the entry stays)."""
    from specdojo_routine.store.ledger import foreign

    assert 0 == cron.cli("run", "--due", "--now", NOW).returncode
    doc = orjson.loads(cron.state_path.read_bytes())
    doc["routines"]["rtn-hourly"]["last_result"] = "bogus"
    _write(cron.state_path, doc)
    looked: list[object] = []
    real = foreign._routine_history
    monkeypatch.setattr(foreign, "_routine_history",
                        lambda *a, **k: looked.append(a) or real(*a, **k))
    done = cron.cli("run", "--due", "--now", "2026-12-01T08:00:30Z")
    assert (1, []) == (done.returncode, looked), done.stderr
    assert "entry 'rtn-hourly' cannot be imported" in done.stderr


def test_an_entry_rewound_by_hand_is_imported(cron: Project) -> None:
    """An entry no picture of ours ever held - last_run set back by hand - is a fact our
    ledger lacks: imported verbatim, never judged older and overwritten."""
    assert 0 == cron.cli("run", "--due", "--now", NOW).returncode
    data = _shallow_merge(cron, "rtn-hourly", last_run="2026-12-01T06:00:00Z")
    assert "imported 1 routine state" in cron.cli("import").stdout
    [event] = [e for e in cron.events() if e["type"] == "routine_state_imported"]
    assert orjson.loads(data)["routines"]["rtn-hourly"] == event["record"]
    assert "2026-12-01T06:00:00Z" == cron.state()["routines"]["rtn-hourly"]["last_run"]


# --- Job Run records rewritten by upstream ---------------------------------------------------


@pytest.fixture
def failing_job(project: Project) -> Project:
    flag = project.root / "ok-now"
    project.job("job-report", period_job("Report", f"test -f {flag}"))
    return project


def _run_view(project: Project, run_id: str) -> Path:
    return project.root / "execution" / "jobs" / "runs" / f"{run_id}.json"


def _job_run(project: Project, *extra: str) -> tuple[int, dict[str, Any]]:
    proc = project.cli("job", "run", "--job", "job-report", "--input", "period=W1", "--json",
                       *extra)
    return proc.returncode, (orjson.loads(proc.stdout) if proc.stdout.strip() else {})


def test_an_attempt_upstream_added_to_our_run_is_imported(failing_job: Project) -> None:
    """Our run failed at attempt 1; upstream retried it and added a succeeded attempt 2. The
    record extends ours, so it is imported as the newer truth: the next job run is a
    duplicate complete, and the view keeps upstream's bytes."""
    code, first = _job_run(failing_job)
    assert (1, "failed") == (code, first["state"])
    view = _run_view(failing_job, first["run_id"])
    record = orjson.loads(view.read_bytes())
    record["attempts"].append({"attempt": 2, "started_at": "2099-01-01T00:00:00.000Z",
                               "status": "succeeded", "completed_at": "2099-01-01T00:00:01.000Z",
                               "result_ref": "exec/results/x-result.md"})
    record["state"], record["updated_at"] = "succeeded", "2099-01-01T00:00:01.000Z"
    _write(view, record)
    data = view.read_bytes()
    assert "imported 0 routine states, 1 Job Run, 0 checkpoints; 0 conflicts\n" == \
        failing_job.cli("import").stdout
    ledger = view.with_suffix(".jsonl").read_bytes().splitlines()
    last = orjson.loads(ledger[-1])
    assert ("run_imported", record) == (last["type"], last["record"])
    assert data == view.read_bytes()
    show = failing_job.cli("job", "show", first["run_id"], "--json")
    assert data.decode() == show.stdout


def test_job_run_imports_the_attempt_upstream_added_before_answering(
    failing_job: Project,
) -> None:
    """job run is a recording command: the succeeded attempt upstream added to our failed run
    extends it, so it is imported under the exec lock (run_imported, verbatim) and then the
    run is a duplicate complete - not answered from the file and left unimported."""
    _code, first = _job_run(failing_job)
    view = _run_view(failing_job, first["run_id"])
    record = orjson.loads(view.read_bytes())
    record["attempts"].append({"attempt": 2, "started_at": "2099-01-01T00:00:00.000Z",
                               "status": "succeeded", "completed_at": "2099-01-01T00:00:01.000Z"})
    record["state"], record["updated_at"] = "succeeded", "2099-01-01T00:00:01.000Z"
    _write(view, record)
    data = view.read_bytes()
    code, again = _job_run(failing_job)
    assert (0, True, 2) == (code, again["duplicate_complete"], again["attempt"])
    last = orjson.loads(view.with_suffix(".jsonl").read_bytes().splitlines()[-1])
    assert ("run_imported", record) == (last["type"], last["record"])
    assert data == view.read_bytes()
    assert "imported 0 routine states, 0 Job Runs" in failing_job.cli("import").stdout


def test_attempts_continue_after_an_attempt_upstream_added(failing_job: Project) -> None:
    """Upstream added a failed attempt 2 to our failed run: our next job run imports it
    first, runs attempt 3, and the view keeps upstream's attempt with every key it had."""
    _code, first = _job_run(failing_job)
    view = _run_view(failing_job, first["run_id"])
    record = orjson.loads(view.read_bytes())
    theirs = {"attempt": 2, "started_at": "2099-01-01T00:00:00.000Z", "status": "failed",
              "completed_at": "2099-01-01T00:00:01.000Z", "result_ref": "r.md", "reason": "x"}
    record["attempts"].append(theirs)
    record["updated_at"] = "2099-01-01T00:00:01.000Z"
    _write(view, record)
    (failing_job.root / "ok-now").touch()
    code, again = _job_run(failing_job)
    assert (0, "succeeded", 3) == (code, again["state"], again["attempt"])
    doc = orjson.loads(view.read_bytes())
    assert [1, 2, 3] == [a["attempt"] for a in doc["attempts"]]
    assert theirs == doc["attempts"][1]
    types = [orjson.loads(x)["type"] for x in view.with_suffix(".jsonl").read_bytes().splitlines()]
    assert ["run_created", "attempt_started", "attempt_ended", "run_imported",
            "attempt_started", "attempt_ended"] == types
    assert 0 == failing_job.cli("fold", "--check").returncode


def test_a_contradicting_record_is_a_conflict_and_is_kept(failing_job: Project) -> None:
    """Upstream's record says attempt 1 succeeded where our ledger says it failed: import,
    fold and fold --check exit 1 naming both sides; job run refuses; nothing is overwritten."""
    _code, first = _job_run(failing_job)
    view = _run_view(failing_job, first["run_id"])
    record = orjson.loads(view.read_bytes())
    record["attempts"][0]["status"] = record["state"] = "succeeded"
    _write(view, record)
    data = view.read_bytes()
    for args in (["import"], ["fold"], ["fold", "--check"]):
        proc = failing_job.cli(*args)
        assert 1 == proc.returncode, (args, proc.stdout, proc.stderr)
        assert (f"conflict: execution/jobs/runs/{first['run_id']}.json (succeeded, 1 attempt, "
                in proc.stderr), proc.stderr
        assert f"contradicts execution/jobs/runs/{first['run_id']}.jsonl (failed, 1 attempt, " \
            in proc.stderr
    proc = failing_job.cli("job", "run", "--job", "job-report", "--input", "period=W1")
    assert (1, "error: conflict: ") == (proc.returncode, proc.stderr[:17]), proc.stderr
    assert data == view.read_bytes()
    assert 1 == len(view.with_suffix(".jsonl").read_bytes().splitlines()) - 2  # no new events


def test_run_due_refuses_a_job_run_in_conflict(failing_job: Project) -> None:
    """SPEC §10 rule 4: a routine's job action that needs a run in conflict fails with the
    conflict as its reason (`run --due` exits 1); the run's file and ledger are untouched."""
    failing_job.routine("rtn-r", "interval: 1h\n"
                                 "action: {kind: job, job: job-report, inputs: {period: W1}}\n")
    _code, first = _job_run(failing_job)
    view = _run_view(failing_job, first["run_id"])
    record = orjson.loads(view.read_bytes())
    record["attempts"][0]["status"] = record["state"] = "succeeded"
    _write(view, record)
    data, ledger = view.read_bytes(), view.with_suffix(".jsonl").read_bytes()
    proc = failing_job.cli("run", "--due", "--now", NOW)
    assert 1 == proc.returncode, proc.stderr
    [ended] = [e for e in failing_job.events() if e["type"] == "action_ended"]
    conflict = f"conflict: execution/jobs/runs/{first['run_id']}.json (succeeded, 1 attempt, "
    assert ("failure", conflict) == (ended["result"], ended["reason"][:len(conflict)])
    assert (data, ledger) == (view.read_bytes(), view.with_suffix(".jsonl").read_bytes())


# --- the pure rules --------------------------------------------------------------------------


def _attempt(n: int, status: str) -> dict[str, Any]:
    return {"attempt": n, "started_at": f"2026-12-01T07:0{n}:00.000Z", "status": status}


def _record(*attempts: dict[str, Any], updated: str = "2026-12-01T07:05:00.000Z") -> Any:
    return {"run_id": "JBR-x-000000000000", "job_id": "job-x", "idempotency_key": "k",
            "state": attempts[-1]["status"], "updated_at": updated, "attempts": list(attempts)}


@pytest.mark.parametrize(("theirs", "ours", "verdict"), [
    (_record(_attempt(1, "failed"), _attempt(2, "succeeded")), _record(_attempt(1, "failed")),
     "import"),
    (_record(_attempt(1, "succeeded")), _record(_attempt(1, "running")), "import"),
    (_record(_attempt(1, "failed")), _record(_attempt(1, "failed"), _attempt(2, "succeeded"),
                                             updated="2026-12-01T07:09:00.000Z"), "conflict"),
    (_record(_attempt(1, "succeeded")), _record(_attempt(1, "failed")), "conflict"),
    (_record(_attempt(1, "failed"), _attempt(2, "succeeded"), updated="2026-12-01T07:00:00Z"),
     _record(_attempt(1, "failed")), "conflict"),  # extends, but claims an earlier update
    (_record(_attempt(1, "failed")), None, "import"),
    ([], None, "conflict"),
    (_record(_attempt(2, "failed")), None, "conflict"),
], ids=["adds-an-attempt", "closes-our-open-attempt", "older-picture-unproven",
        "rewrites-our-attempt", "earlier-updated_at", "no-ledger", "not-a-record",
        "attempts-not-numbered-from-1"])
def test_run_record_verdicts(theirs: Any, ours: Any, verdict: str) -> None:
    """SPEC §10 rule 4: import only what extends ours; a record that neither extends ours
    nor is a view our ledger gave is a conflict, whatever its times say."""
    assert verdict == rules.run_record_verdict(theirs, ours)


def test_a_record_our_ledger_gave_before_is_stale() -> None:
    """Only a record that is exactly an earlier view of our ledger is stale (nothing lost)."""
    older = _record(_attempt(1, "failed"))
    ours = _record(_attempt(1, "failed"), _attempt(2, "succeeded"),
                   updated="2026-12-01T07:09:00.000Z")
    assert "stale" == rules.run_record_verdict(older, ours, [older, ours])
    edited = {**older, "state": "succeeded"}
    assert "conflict" == rules.run_record_verdict(edited, ours, [older, ours])


@pytest.mark.parametrize(("theirs", "ours", "verdict"), [
    ({"last_run": "2026-12-01T08:00:00Z", "last_result": "success"},
     {"last_run": "2026-12-01T07:00:00Z", "last_result": "success"}, "import"),
    ({"last_run": "2026-12-01T06:00:00Z", "last_result": "failure"},
     {"last_run": "2026-12-01T07:00:00Z", "last_result": "success"}, "import"),
    ({"last_run": "2026-12-01T07:00:00Z", "last_result": "failure"},
     {"last_run": "2026-12-01T07:00:00Z", "last_result": "success", "status": "success"},
     "import"),
    ({"last_run": "2026-12-01T08:00:00Z", "last_scheduled_for": "2026-12-01T08:00:00.000Z"},
     None, "import"),
    ({"last_run": "2026-12-01T08:00:00Z"},
     {"last_run": "2026-12-01T07:00:00Z", "last_result": "success", "status": "success"},
     "conflict"),
    ({"last_run": "2026-12-01T07:00:00Z", "last_result": "success"},
     {"last_run": "2026-12-01T07:00:00Z", "last_result": "success",
      "last_scheduled_for": None}, "same"),
    ({"last_run": "2026-12-01T07:00:00Z", "last_result": "failure"}, None, "import"),
    ({"last_run": "2026-12-01T08:00:00Z", "last_result": "done"}, None, "conflict"),
    ({"last_run": "2026-12-01T08:00:00Z", "last_result": "success",
      "last_action_results": [1]}, None, "conflict"),
    ("x", None, "conflict"),
], ids=["newer", "older-by-hand", "result-edited", "first-run-unfinished",
        "absent-equals-null", "unknown-to-us", "no-result-after-a-result", "odd-result",
        "odd-action-results", "not-an-object"])
def test_routine_entry_verdicts(theirs: Any, ours: Any, verdict: str) -> None:
    """A routine-state entry that differs from our fold is imported (another tool ran the
    routine, or an operator edited it), whatever its last_run says; an entry without a result
    only while the routine never ran (upstream died inside its first run)."""
    assert verdict == rules.routine_entry_verdict(theirs, ours)


@pytest.mark.parametrize("command", [
    ("release", "rtn-hourly"),
    ("run", "--id", "rtn-hourly", "--from", "2026-12-01T05:00:00Z", "--to",
     "2026-12-01T05:00:00Z", "--now", "2026-12-01T08:30:00Z"),
    ("resolve", "rtn-hourly", "--result", "success", "--note", "checked"),
    ("resolve", "rtn-hourly", "--attempt", "att-none", "--result", "failure", "--note", "x"),
], ids=["release", "backfill", "resolve", "resolve-attempt"])
def test_release_backfill_and_resolve_import_first(cron: Project,
                                                   command: tuple[str, ...]) -> None:
    """SPEC §10: `release`, a backfill and `resolve` hold the routine lock, so they import
    upstream's rewrite before anything else (release and resolve then refuse: the routine is
    not held, no attempt is open or named)."""
    assert 0 == cron.cli("run", "--due", "--now", NOW).returncode
    before = len(cron.events())
    _shallow_merge(cron, "rtn-hourly", last_run="2026-12-01T08:00:02Z",
                   last_result="failure", last_scheduled_for="2026-12-01T08:00:02.000Z")
    cron.cli(*command)
    added = [e["type"] for e in cron.events()[before:]]
    assert ["routine_state_imported"] == added[:1], added
    assert 0 == cron.cli("fold", "--check").returncode
