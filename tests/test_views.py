"""Views on disk (SPEC §2, §5, §7.6): goldens, incremental refresh, fold/check/repair, replay."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.core import event_parts
from specdojo_routine.core import routine_events as rev
from specdojo_routine.core.errors import RoutineError, TornLedgerError
from specdojo_routine.store.config import ProjectPaths, resolve_project
from specdojo_routine.store.ledger import chain, codec, views
from specdojo_routine.store.ledger import journal as ledger

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "fixtures" / "ledgers"
ROUTINE_CASES = ["routine-basic", "routine-v0", "routine-torn"]
ERROR_CASES = sorted(p.name for p in GOLDEN.glob("error-*"))
JOB_RUNS = sorted((GOLDEN / "job-runs" / "runs").glob("*.jsonl"))
T0 = datetime(2026, 8, 9, 10, 0, tzinfo=UTC)


@pytest.fixture
def paths(tmp_path: Path) -> ProjectPaths:
    root = tmp_path / "proj"
    (root / ".specdojo").mkdir(parents=True)
    (root / ".specdojo" / "specdojo.config.json").write_bytes(orjson.dumps({
        "version": 1, "projects": {"demo": {"routines_path": "routines", "jobs_path": "jobs",
                                            "execution_path": "execution"}}}))
    return resolve_project(root)


def install(paths: ProjectPaths, case: str = "routine-basic", *, jobs: bool = False) -> None:
    """Copy golden ledgers into the project (no views)."""
    paths.routine_generated_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(GOLDEN / case / "routine-runs.jsonl", paths.routine_ledger)
    if jobs:
        paths.runs_dir.mkdir(parents=True, exist_ok=True)
        for run in JOB_RUNS:
            shutil.copyfile(run, paths.runs_dir / run.name)


def snapshot(paths: ProjectPaths) -> dict[str, bytes]:
    return {p.relative_to(paths.root).as_posix(): p.read_bytes()
            for p in sorted(paths.root.rglob("*")) if p.is_file()}


def view_files(paths: ProjectPaths) -> list[Path]:
    return [paths.routine_state, paths.job_state, *sorted(paths.runs_dir.glob("*.json"))]


def started(aid: str, transition: str = "T-02") -> rev.AttemptStarted:
    return rev.AttemptStarted(
        routine_id="rtn-new", attempt_id=aid, transition=transition,  # type: ignore[arg-type]
        trigger="due", scheduled_for="2026-08-09T10:00:00.000Z", last_run="2026-08-09T10:00:00Z",
        passed_over_since=None, owner=event_parts.Owner(pid=1, host="h"), schedule="interval")


def published_content(paths: ProjectPaths) -> bytes:
    """The published routine view without what ties it to the ledger file (golden form)."""
    return views.render(views.content(orjson.loads(paths.routine_state.read_bytes())))


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int]]]:
    """Records (offset, line count) of every fast-fold read of a ledger."""
    calls: list[tuple[int, int]] = []
    real = chain.verified_chunks

    def recording(f: Any, path: Path, offset: int, end: int, **kw: Any) -> Any:
        calls.append((offset, 0))
        chunks = real(f, path, offset, end, **kw)
        while True:
            try:
                raws = next(chunks)
            except StopIteration as done:
                return done.value  # the chain head, as the real one returns it
            calls[-1] = (offset, calls[-1][1] + len(raws))
            yield raws

    monkeypatch.setattr(chain, "verified_chunks", recording)
    yield calls


# --- goldens ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ROUTINE_CASES)
def test_golden_routine_view(case: str) -> None:
    """The fold of each golden routine ledger is its expected view, byte for byte."""
    document = views.replay(GOLDEN / case / "routine-runs.jsonl")["routine-state.json"]
    assert (GOLDEN / case / "routine-state.json").read_bytes() == \
        views.render(views.content(document))


def test_golden_job_views() -> None:
    """The golden Job Run ledgers fold to their run views and job-state, byte for byte."""
    folded = views.replay(*JOB_RUNS)
    expected = {p.relative_to(GOLDEN / "job-runs").as_posix(): p.read_bytes()
                for p in (GOLDEN / "job-runs").rglob("*.json")}
    assert expected == {key: views.render(doc) for key, doc in folded.items()}


@pytest.mark.parametrize("case", ERROR_CASES)
def test_golden_damage_is_refused_with_file_and_line(case: str) -> None:
    """A damaged golden ledger raises its expected error, naming the file and line."""
    path = GOLDEN / case / "routine-runs.jsonl"
    expected = (GOLDEN / case / "expected-error.txt").read_text().rstrip("\n")
    with pytest.raises(RoutineError) as info:
        views.replay(path)
    assert expected == f"{type(info.value).__name__}: {info.value}".replace(str(path), "{ledger}")


def test_golden_torn_tail_repair(paths: ProjectPaths) -> None:
    """Repairing the torn golden ledger leaves its complete lines and moves the fragment."""
    install(paths, "routine-torn")
    moved = ledger.repair(paths.routine_ledger)
    after = GOLDEN / "routine-torn" / "after-repair"
    assert moved is not None and "routine-runs.jsonl.torn-4" == moved.name
    assert (after / moved.name).read_bytes() == moved.read_bytes()
    assert (after / "routine-runs.jsonl").read_bytes() == paths.routine_ledger.read_bytes()


def test_fold_writes_the_golden_views(paths: ProjectPaths) -> None:
    """`fold` on a project holding the golden ledgers writes exactly the golden views."""
    install(paths, jobs=True)
    views.fold_all(paths)
    assert (GOLDEN / "routine-basic" / "routine-state.json").read_bytes() == \
        published_content(paths)
    for run in JOB_RUNS:
        expected = GOLDEN / "job-runs" / "runs" / f"{run.stem}.json"
        assert expected.read_bytes() == paths.run_view(run.stem).read_bytes()
    assert (GOLDEN / "job-runs" / "job-state.json").read_bytes() == paths.job_state.read_bytes()


# --- rebuild, check, repair ------------------------------------------------------------------


def test_deleted_views_are_restored_byte_for_byte(paths: ProjectPaths) -> None:
    """Delete every view; `fold` restores each one exactly."""
    install(paths, jobs=True)
    views.refresh_routine_view(paths)
    views.refresh_job_views(paths)
    before = {p: p.read_bytes() for p in view_files(paths)}
    for path in before:
        path.unlink()
    assert sorted(paths.rel(p) for p in before) == sorted(views.fold_all(paths))
    assert before == {p: p.read_bytes() for p in before}


def test_check_detects_a_hand_edited_view_and_writes_nothing(paths: ProjectPaths) -> None:
    """`fold --check` names the edited view and leaves every file as it was."""
    install(paths, jobs=True)
    views.fold_all(paths)
    edited = paths.routine_state.read_bytes().replace(b'"status": "success"',
                                                      b'"status": "failure"')
    paths.routine_state.write_bytes(edited)
    before = snapshot(paths)
    assert [paths.rel(paths.routine_state)] == views.fold_all(paths, check=True)
    assert before == snapshot(paths)


def test_check_of_fresh_views_reports_nothing(paths: ProjectPaths) -> None:
    """Right after a fold, check finds no drift; a missing view is drift."""
    install(paths, jobs=True)
    views.fold_all(paths)
    assert [] == views.fold_all(paths, check=True)
    paths.job_state.unlink()
    assert [paths.rel(paths.job_state)] == views.fold_all(paths, check=True)


def test_fold_refuses_a_torn_tail_without_repair(paths: ProjectPaths) -> None:
    """A torn ledger makes `fold` fail with TornLedgerError until `--repair`."""
    install(paths, "routine-torn")
    with pytest.raises(TornLedgerError, match=r"routine-runs\.jsonl:4: last line is torn"):
        views.fold_all(paths)
    with pytest.raises(TornLedgerError):
        views.fold_all(paths, check=True, repair=True)
    assert [paths.rel(paths.routine_state)] == views.fold_all(paths, repair=True)
    assert paths.routine_ledger.with_name("routine-runs.jsonl.torn-4").exists()


def test_fold_without_ledgers_writes_nothing(paths: ProjectPaths) -> None:
    """No ledger, no view; nothing is created."""
    before = snapshot(paths)
    assert [] == views.fold_all(paths)
    assert before == snapshot(paths)


# --- the routine view: refresh and load ------------------------------------------------------


def test_refresh_publishes_pretty_json(paths: ProjectPaths) -> None:
    """routine-state.json is 2-space indented JSON with a trailing newline."""
    install(paths)
    view = views.refresh_routine_view(paths)
    text = paths.routine_state.read_text()
    assert text.endswith("}\n") and text.startswith('{\n  "version": 1,\n  "ledger": {')
    assert view.document == orjson.loads(text)


def test_refresh_folds_only_the_new_tail(paths: ProjectPaths,
                                         spy: list[tuple[int, int]]) -> None:
    """After one append, a refresh reads one line from where the view stopped."""
    install(paths)
    first = views.refresh_routine_view(paths)
    ledger.Ledger(paths.routine_ledger, clock=lambda: T0).append(started("n1"))
    second = views.refresh_routine_view(paths)
    assert [(0, 25), (first.offset, 1)] == spy
    assert views.replay(paths.routine_ledger)["routine-state.json"] == second.document


def test_refresh_with_nothing_new_reads_no_lines(paths: ProjectPaths,
                                                 spy: list[tuple[int, int]]) -> None:
    """An up-to-date view is reused as is."""
    install(paths)
    views.refresh_routine_view(paths)
    views.refresh_routine_view(paths)
    assert [(0, 25)] == spy


def test_refresh_does_not_rewrite_an_unchanged_view(paths: ProjectPaths) -> None:
    """Publishing the same bytes again leaves the file alone."""
    install(paths)
    views.refresh_routine_view(paths)
    before = paths.routine_state.stat()
    views.refresh_routine_view(paths)
    after = paths.routine_state.stat()
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)


def test_changed_prefix_refolds_from_scratch(paths: ProjectPaths,
                                             spy: list[tuple[int, int]]) -> None:
    """If the ledger no longer holds the covered prefix, the whole ledger is refolded (and the
    view it no longer proves is foreign: what it holds is imported before it is replaced)."""
    install(paths)
    views.refresh_routine_view(paths)
    shutil.copyfile(GOLDEN / "routine-v0" / "routine-runs.jsonl", paths.routine_ledger)
    view = views.refresh_routine_view(paths)
    assert (0, 20) in spy
    assert views.replay(paths.routine_ledger)["routine-state.json"] == view.document


@pytest.mark.parametrize("content", [b"", b"not json"], ids=["empty", "garbage"])
def test_unusable_view_is_replaced_by_a_full_fold(paths: ProjectPaths, content: bytes,
                                                  spy: list[tuple[int, int]]) -> None:
    """A view that holds no facts (empty, garbage) is moved aside, refolded once and
    replaced."""
    install(paths)
    paths.routine_state.write_bytes(content)
    views.refresh_routine_view(paths)
    assert [(0, 25)] == spy
    assert (GOLDEN / "routine-basic" / "routine-state.json").read_bytes() == \
        published_content(paths)
    [aside] = paths.routine_state.parent.glob("routine-state.json.unreadable-*")
    assert content == aside.read_bytes()


def test_a_foreign_view_is_imported_before_it_is_replaced(paths: ProjectPaths) -> None:
    """A view another tool wrote (upstream's shape) is never written over: its entry that
    differs from the fold is appended as routine_state_imported first; one that cannot be
    imported (no result after a result) keeps the file as it is."""
    install(paths)
    record = {"last_run": "2026-01-01T00:00:00Z", "last_result": "failure"}
    paths.routine_state.write_bytes(orjson.dumps({"routines": {"rtn-a": record}}))
    view = views.refresh_routine_view(paths)
    last = orjson.loads(paths.routine_ledger.read_bytes().splitlines()[-1])
    assert ("routine_state_imported", record) == (last["type"], last["record"])
    assert "failure" == view.routines["rtn-a"]["last_result"]
    kept = orjson.dumps({"routines": {"rtn-a": {"last_run": "2026-01-02T00:00:00Z"}}})
    paths.routine_state.write_bytes(kept)
    views.refresh_routine_view(paths)
    assert kept == paths.routine_state.read_bytes()


def test_load_writes_nothing(paths: ProjectPaths) -> None:
    """load_routine_view (dry-run, list) computes the view without touching disk."""
    install(paths)
    before = snapshot(paths)
    view = views.load_routine_view(paths)
    assert before == snapshot(paths)
    assert views.replay(paths.routine_ledger)["routine-state.json"] == view.document


def test_no_ledger_means_an_empty_view_and_no_file(paths: ProjectPaths) -> None:
    """Before the first attempt there is nothing to publish."""
    view = views.refresh_routine_view(paths)
    assert (0, 0, {}) == (view.seq, view.offset, view.routines)
    assert not paths.routine_state.exists()


def test_torn_tail_is_left_out_until_the_next_append_repairs_it(paths: ProjectPaths) -> None:
    """Refresh folds the complete lines and reports the tear; the next append repairs it."""
    install(paths, "routine-torn")
    view = views.refresh_routine_view(paths)
    assert (4, 3) == (view.torn_line, view.seq)
    assert (GOLDEN / "routine-torn" / "routine-state.json").read_bytes() == \
        published_content(paths)
    ledger.Ledger(paths.routine_ledger, clock=lambda: T0).append(started("n1"))
    view = views.refresh_routine_view(paths)
    assert (None, 4) == (view.torn_line, view.seq)


# --- Job Run views ---------------------------------------------------------------------------


def test_refreshing_one_run_merges_into_job_state(paths: ProjectPaths,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """refresh_job_views([run]) publishes that run and merges its checkpoint into the
    published job-state without refolding the other runs."""
    install(paths, jobs=True)
    later = paths.runs_dir / "JBR-weekly-report-fedcba987654.jsonl"
    held_back = later.read_bytes()
    later.unlink()
    views.refresh_job_views(paths)
    state = orjson.loads(paths.job_state.read_bytes())["jobs"]["job-weekly-report"]
    assert "JBR-weekly-report-0123456789ab" == state["last_run_id"]
    later.write_bytes(held_back)
    folded: list[str] = []
    real = views._fold_run

    def recording(path: Path, torn: Any) -> Any:
        folded.append(path.name)
        return real(path, torn)

    monkeypatch.setattr(views, "_fold_run", recording)
    views.refresh_job_views(paths, [later.stem])
    assert [later.name] == folded
    assert (GOLDEN / "job-runs" / "job-state.json").read_bytes() == paths.job_state.read_bytes()


def test_first_job_state_comes_from_every_run(paths: ProjectPaths) -> None:
    """Without a published job-state, refreshing one run computes it from all run ledgers."""
    install(paths, jobs=True)
    views.refresh_job_views(paths, ["JBR-sync-aaaaaaaaaaaa"])
    assert ["JBR-sync-aaaaaaaaaaaa.json"] == [p.name for p in paths.runs_dir.glob("*.json")]
    assert (GOLDEN / "job-runs" / "job-state.json").read_bytes() == paths.job_state.read_bytes()


def test_a_damaged_job_state_is_recomputed(paths: ProjectPaths) -> None:
    """An unusable job-state.json is rebuilt from every run ledger, not merged into."""
    install(paths, jobs=True)
    paths.job_state.parent.mkdir(parents=True)
    paths.job_state.write_bytes(b'{"version": 1, "jobs": {"job-weekly-report": 5}}\n')
    views.refresh_job_views(paths, ["JBR-sync-aaaaaaaaaaaa"])
    assert (GOLDEN / "job-runs" / "job-state.json").read_bytes() == paths.job_state.read_bytes()


def test_load_job_run_and_state(paths: ProjectPaths) -> None:
    """A run's view and the latest checkpoints come straight from the ledgers."""
    install(paths, jobs=True)
    run = views.load_job_run(paths, "JBR-weekly-report-0123456789ab")
    assert run is not None and "succeeded" == run["state"]
    assert views.load_job_run(paths, "JBR-none-000000000000") is None
    assert {"last_period": "2026-W32", "reruns": 1} == \
        views.load_job_state(paths)["job-weekly-report"]["checkpoint"]


def test_run_ledger_must_match_its_file_name(paths: ProjectPaths) -> None:
    """A run ledger holding another run's events is corrupt."""
    install(paths, jobs=True)
    shutil.copyfile(JOB_RUNS[0], paths.run_ledger("JBR-renamed-1"))
    with pytest.raises(RoutineError, match="does not match the file name"):
        views.load_job_run(paths, "JBR-renamed-1")


# --- replay ----------------------------------------------------------------------------------


def test_replay_of_recorded_events_equals_replay_of_the_ledger() -> None:
    """Events read back from a ledger replay to the same views as the ledger file."""
    path = GOLDEN / "routine-basic" / "routine-runs.jsonl"
    records = [codec.decode_record(line) for line in path.read_bytes().splitlines()]
    from_file, from_records = views.replay(path), views.replay(records)
    assert views.content(from_file["routine-state.json"]) == from_records["routine-state.json"]


def test_replay_mixes_routine_and_job_events() -> None:
    """Bare events of both ledgers replay into every view; job-state spans all runs."""
    runs = [codec.decode_record(line, ledger="job")
            for run in JOB_RUNS for line in run.read_bytes().splitlines()]
    folded = views.replay([started("n1")], runs)
    assert {"routine-state.json", "job-state.json", *(f"runs/{r.stem}.json" for r in JOB_RUNS)} \
        == set(folded)
    assert "running" == folded["routine-state.json"]["routines"]["rtn-new"]["status"]
    assert folded["job-state.json"] == views.replay(*JOB_RUNS)["job-state.json"]


def test_replay_offset_matches_the_written_ledger(paths: ProjectPaths) -> None:
    """Replaying bare events gives the byte offset the same events have once appended."""
    events = [started("n1")]
    ledger.Ledger(paths.routine_ledger).append_many(events)
    assert paths.routine_ledger.stat().st_size == \
        views.replay(events)["routine-state.json"]["ledger"]["offset"]
