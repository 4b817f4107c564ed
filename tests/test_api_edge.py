"""What a program that imports the package can rely on at every public call: its arguments
are checked before anything runs, the environment's refusals and its own mistakes are
``RoutineError``s with one clear line (never a bare ``OSError`` or ``AttributeError``), no
message carries a secret the CLI would redact, and the process it runs in is left as it was."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

import specdojo_routine as sr
from tests.conftest import Project

NOW = datetime(2026, 8, 7, 8, 2, tzinfo=UTC)
SECRET = "s3cr3t-value-of-the-token"


@pytest.fixture
def demo(project: Project) -> tuple[Project, sr.ProjectPaths]:
    """A project with one routine running one command Job."""
    project.job("job-note", "name: Note\ntask: {mode: command, command: 'echo noted'}\n"
                "run: {idempotency_key: '{{job_id}}:{{scheduled_at}}'}\n")
    project.routine("rtn-note", "interval: 1d\naction: {kind: job, job: job-note}\n")
    return project, sr.load_project(project.root)


def test_a_file_where_the_generated_folder_belongs_is_a_file_system_error(
        demo: tuple[Project, sr.ProjectPaths]) -> None:
    """The environment's refusal is the package's error with the CLI's line (where, what,
    what to do), and still an ``OSError`` for a caller that catches one."""
    project, paths = demo
    (project.root / "routines" / "generated").write_text("not a folder")
    calls: list[Callable[[], object]] = [
        lambda: sr.run_due(paths, now=NOW, env=project.env()),
        lambda: sr.list_routines(paths, now=NOW), lambda: sr.history(paths),
        lambda: sr.fold_views(paths), lambda: sr.prune(paths)]
    for call in calls:
        with pytest.raises(sr.FileSystemError) as raised:
            call()
        assert isinstance(raised.value, sr.RoutineError) and isinstance(raised.value, OSError)
        assert raised.value.exit_code == 1 and "\n" not in str(raised.value)
        assert str(raised.value).startswith(f"{paths.root}/routines/generated/")
        assert "a file is where a directory should be: move it aside" in str(raised.value)


def test_replaying_a_folder_is_a_file_system_error(tmp_path: Path) -> None:
    with pytest.raises(sr.FileSystemError, match="Is a directory"):
        sr.replay(tmp_path)


@pytest.mark.parametrize(("call", "message"), [
    (lambda p: sr.run_due(p, now="2026-08-07T08:02Z"), "now must be a datetime (got str)"),
    (lambda p: sr.list_routines(p, now=date(2026, 8, 7)), "now must be a datetime (got date)"),
    (lambda p: sr.backfill(p, "rtn-note", start="2026-08-01", end=NOW),
     "start must be a datetime"),
    (lambda p: sr.run_job(p, "job-note", scheduled_at=1), "scheduled_at must be a datetime"),
    (lambda p: sr.run_job(p, "job-note", ["a"]), "inputs must be a mapping (got list)"),
    (lambda p: sr.run_job(p, "job-note", trigger="cron"), "trigger must be one of manual, "),
    (lambda p: sr.upcoming(p, "rtn-note", count=0), "count must be an integer from 1 to 1000"),
    (lambda p: sr.history(p, limit="2"), "limit must be an integer >= 1 (got '2')"),
    (lambda p: sr.prune(p, keep_days=-1, dry_run=True), "keep_days must be an integer >= 0"),
    (lambda p: sr.resolve(p, "rtn-note", result="done", note="checked"),
     "result must be one of success, failure, skipped (got 'done')"),
    (lambda p: sr.release(p, "rtn-note", run="every"), "run must be one of none, latest, all"),
    (lambda p: sr.run_due(p, env={"N": 1}), "env must map str to str"),
    (lambda p: sr.run_due(p, echo=True), "echo must be a text stream with write()"),
    (lambda p: sr.validate(str(p.root)), "paths must be the ProjectPaths that load_project"),
    (lambda p: sr.load_project(7), "root must be a str or a Path (got int)"),
    (lambda p: sr.load_project(""), "root is empty"),
])
def test_an_argument_of_the_wrong_type_or_value_is_a_usage_error(
        demo: tuple[Project, sr.ProjectPaths], call: Callable[[sr.ProjectPaths], object],
        message: str) -> None:
    """Checked before anything runs: nothing is recorded, and the message names the
    argument (not an AttributeError from the date arithmetic, an IndexError from the
    preview, or a ValueError after the routine lock was taken)."""
    project, paths = demo
    with pytest.raises(sr.UsageError) as raised:
        call(paths)
    assert message in str(raised.value)
    assert not project.ledger.exists()


def test_an_error_message_carries_no_secret_of_the_environment(
        demo: tuple[Project, sr.ProjectPaths], monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI redacts its ``error:`` line; the exception a program logs is redacted too,
    for the secrets of the process and of the ``env`` the call was given."""
    project, paths = demo
    project.job("job-n", "name: N\ninputs: {n: {type: integer, required: true}}\n"
                "task: {mode: command, command: 'true'}\n"
                "run: {idempotency_key: '{{job_id}}:{{inputs.n}}'}\n")
    monkeypatch.setenv("DEPLOY_TOKEN", SECRET)
    failing: list[Callable[[], object]] = [
        lambda: sr.run_routine(paths, SECRET, env=project.env()),
        lambda: sr.run_job(paths, "job-n", {"n": SECRET}, env=project.env()),
        lambda: sr.load_project(project.root, SECRET)]
    for call in failing:
        with pytest.raises(sr.RoutineError) as raised:
            call()
        assert SECRET not in str(raised.value) and "[REDACTED]" in str(raised.value)
    monkeypatch.delenv("DEPLOY_TOKEN")
    with pytest.raises(sr.UsageError) as unknown:
        sr.run_job(paths, f"job-{SECRET}", env=project.env(API_KEY=SECRET))
    assert SECRET not in str(unknown.value)


def _process_state() -> dict[str, Any]:
    umask = os.umask(0o022)
    os.umask(umask)
    return {"signals": {s: signal.getsignal(s) for s in
                        (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD)},
            "env": dict(os.environ), "cwd": os.getcwd(), "umask": umask,
            "threads": threading.active_count(), "fds": sorted(os.listdir("/proc/self/fd"))}


def test_calls_leave_the_process_as_they_found_it(project: Project, tmp_path: Path) -> None:
    """Two projects, each run twice in one process, one of them from a thread that is not
    the main one: no signal handler, variable, directory, umask, thread or open file is
    left behind, and nothing one project cached leaks into the other."""
    other = Project(tmp_path / "other")
    for each, rid in ((project, "rtn-a"), (other, "rtn-b")):
        each.job("job-n", "name: N\ntask: {mode: command, command: 'echo n'}\n"
                 "run: {idempotency_key: '{{job_id}}:{{scheduled_at}}'}\n")
        each.routine(rid, "interval: 1d\naction: {kind: job, job: job-n}\n")
    before = _process_state()
    first, second = sr.load_project(project.root), sr.load_project(other.root)
    results: list[object] = []

    def run_both() -> None:
        for paths, each in ((first, project), (second, other)):
            results.append([r.routine_id for r in sr.run_due(paths, now=NOW,
                                                             env=each.env()).results])
            results.append(sr.run_due(paths, now=NOW, env=each.env()).results)

    run_both()
    worker = threading.Thread(target=lambda: results.append(
        [row.id for row in sr.list_routines(second, now=NOW).rows]))
    worker.start()
    worker.join()
    assert results == [["rtn-a"], [], ["rtn-b"], [], ["rtn-b"]]
    assert _process_state() == before


def test_replaying_a_ledger_that_does_not_exist_is_an_error(
        demo: tuple[Project, sr.ProjectPaths]) -> None:
    """An audit that names a mistyped path must fail, not pass on an empty ledger: replay
    and the testing helper both say which file is missing."""
    from specdojo_routine.testing import replay_ledger

    project, paths = demo
    sr.run_due(paths, now=NOW, env=project.env())
    assert sr.replay(paths.routine_ledger)["routine-state.json"]["routines"]
    for call in (sr.replay, replay_ledger):
        with pytest.raises(sr.FileSystemError, match="No such file or directory"):
            call(paths.routine_ledger.with_name("routine-run.jsonl"))
        with pytest.raises(sr.FileSystemError):
            call(paths.root / "routines" / "gone" / "routine-runs.jsonl")
    with pytest.raises(sr.UsageError, match="replay takes ledger paths"):
        sr.replay(7)  # type: ignore[arg-type]


def test_history_of_an_unknown_routine_is_a_usage_error(
        demo: tuple[Project, sr.ProjectPaths]) -> None:
    """As ``history ID`` exits 2: a typo is not a routine that never ran. A routine whose
    file was removed keeps its history (the ledger names it)."""
    project, paths = demo
    sr.run_due(paths, now=NOW, env=project.env())
    with pytest.raises(sr.UsageError, match='unknown routine "rtn-nte"'):
        sr.history(paths, "rtn-nte")
    (project.root / "routines" / "rtn-note.yaml").unlink()
    assert [e["type"] for e in sr.history(paths, "rtn-note")][-1] == "attempt_ended"
