"""``prune`` (SPEC §15): what is removed and what never is, the record before the removal (a
SIGKILL between the two, then prune again), and views that stay rebuildable."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from specdojo_routine.app import adoption, handlers, jobs, prune, prune_facts, routine_commands
from specdojo_routine.core import event_parts, jobplan
from specdojo_routine.core import job_events as jev
from specdojo_routine.core import routine_events as rev
from specdojo_routine.core.errors import LockBusy
from specdojo_routine.core.retention import Retention
from specdojo_routine.execute import prunefiles
from specdojo_routine.store import codeprint
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.ledger import views
from tests import jobhelper
from tests.conftest import REPO, Project, period_job

T0 = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
LATER = T0 + timedelta(days=200)
JOB = period_job("n", "'echo ran'", "checkpoint:\n  values: {last: '{{inputs.period}}'}\n")


def run_id(period: str) -> str:
    return jobplan.run_id_for("job-n", f"job-n:{period}")


def make_run(root: Path, period: str, at: datetime) -> str:
    """One Job Run made by run_job with its clock at ``at`` (its events are stamped then)."""
    paths = jobhelper.paths_of(root)
    defs = definitions.load_jobs(paths)
    out = jobs.run_job(paths, defs, "job-n", {"period": period}, scheduled_at=at,
                       env=jobhelper.clean_env(), clock=lambda: at)
    assert out.run_id == run_id(period)
    return out.run_id


@pytest.fixture
def root(project: Project) -> Path:
    """Five runs of job-n, one a day from T0 (p0 oldest); p4 holds the checkpoint."""
    project.job("job-n", JOB)
    for n in range(5):
        make_run(project.root, f"p{n}", T0 + timedelta(days=n))
    return project.root


def files_of(paths: ProjectPaths, rid: str) -> list[Path]:
    return [paths.evidence_dir / rid, paths.plans_dir / f"{rid}-plan.md",
            paths.results_dir / f"{rid}-result.md"]


def exists(paths: ProjectPaths, rid: str) -> list[bool]:
    return [p.exists() for p in files_of(paths, rid)]


def records(paths: ProjectPaths, rid: str) -> list[dict[str, Any]]:
    return [e for e in jobhelper.ledger_events(paths, rid) if e["type"] == "evidence_pruned"]


def assert_views_rebuild(paths: ProjectPaths) -> None:
    """fold --check is clean, and deleting every view then folding gives the same bytes."""
    assert [] == adoption.fold(paths, check=True).drifted
    views_now = {p: p.read_bytes() for p in [*paths.runs_dir.glob("*.json"), paths.job_state,
                                            paths.routine_state] if p.exists()}
    for path in views_now:
        path.unlink()
    adoption.fold(paths)
    assert views_now == {p: p.read_bytes() for p in views_now}


# --- what goes and what stays ----------------------------------------------------------------


def test_prune_removes_old_files_records_first_and_keeps_the_record(root: Path) -> None:
    """keep_days 90, keep_runs 2 at T0+200d: p0..p2 lose evidence, plan and result; p3, p4
    (the newest two) keep them. Each pruned run's ledger says what went, and its view still
    names plan, result and evidence, with ``pruned``."""
    paths = jobhelper.paths_of(root)
    before = orjson.loads(paths.run_view(run_id("p0")).read_bytes())
    report = prune.prune(paths, keep_days=90, keep_runs=2, now=LATER, env={})
    assert {run_id(f"p{n}") for n in range(3)} == {r.owner for r in report.removed}
    for n in range(5):
        assert [n >= 3] * 3 == exists(paths, run_id(f"p{n}")), n
    [record] = records(paths, run_id("p0"))
    rel = [paths.rel(p) for p in files_of(paths, run_id("p0"))]
    assert (sorted(rel), True) == (sorted(record["paths"]), record["bytes"] > 0)
    after = orjson.loads(paths.run_view(run_id("p0")).read_bytes())
    pruned = after.pop("pruned")
    assert (before, [record["paths"]]) == (after, [p["paths"] for p in pruned])
    assert paths.run_ledger(run_id("p0")).exists()
    assert_views_rebuild(paths)


def test_the_window_and_the_checkpoint_protect(root: Path) -> None:
    """Within keep_days nothing goes; with no window and no minimum, every run goes except
    the one the checkpoint names (p4, job-state.json's last_run_id)."""
    paths = jobhelper.paths_of(root)
    assert [] == prune.prune(paths, keep_days=90, keep_runs=0, now=T0 + timedelta(days=30),
                             env={}).removed
    report = prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
    assert {run_id(f"p{n}") for n in range(4)} == {r.owner for r in report.removed}
    assert [True] * 3 == exists(paths, run_id("p4"))


def test_an_unreadable_view_of_a_pruned_run_is_moved_aside_not_replaced(root: Path) -> None:
    """SPEC §10 rule 8: a run view that is not JSON holds no facts, but is never deleted; the
    prune that republishes the view moves it aside first and says so."""
    paths = jobhelper.paths_of(root)
    view = paths.run_view(run_id("p0"))
    view.write_bytes(b'{"run_id": "JBR-')
    prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
    [aside] = view.parent.glob(f"{view.name}.unreadable-*")
    assert (b'{"run_id": "JBR-', [False] * 3) == (aside.read_bytes(), exists(paths, run_id("p0")))
    assert "pruned" in orjson.loads(view.read_bytes())


def test_a_window_reaching_back_before_the_year_one_keeps_everything(root: Path,
                                                                     project: Project) -> None:
    """``--keep-days`` is any integer >= 0: one too large for the calendar keeps every run
    that ended, as a smaller large one would, instead of failing."""
    for days in ("1000000", "9999999999"):
        done = project.cli("prune", "--keep-days", days, "--keep-runs", "0", "--now",
                           LATER.isoformat(), "--json")
        assert (0, []) == (done.returncode, orjson.loads(done.stdout or "{}").get("removed")), \
            done.stderr
    assert [True] * 3 == exists(jobhelper.paths_of(root), run_id("p0"))


def test_a_fifo_at_the_job_state_view_or_the_prune_cache_does_not_hang_prune(
    root: Path, project: Project,
) -> None:
    """``job-state.json`` (which names the runs a checkpoint protects) and prune's cache are
    read only when they are regular files: a FIFO there would wait for a writer for ever.
    Unreadable, the view protects nothing by itself (the checkpoint is in the run ledgers,
    which still protect it)."""
    paths = jobhelper.paths_of(root)
    paths.job_state.unlink()
    os.mkfifo(paths.job_state)
    prune_facts.cache_path(paths).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(prune_facts.cache_path(paths))  # prune's own cache: replaced, never opened
    done = project.cli("prune", "--keep-days", "0", "--keep-runs", "0", "--now",
                       LATER.isoformat(), timeout=60)
    assert 0 == done.returncode, done.stderr
    assert ([False] * 3, [True] * 3) == (exists(paths, run_id("p0")), exists(paths, run_id("p4")))


def test_a_cache_written_by_other_code_is_not_trusted(root: Path) -> None:
    """Retention's cache records the fingerprint of the code that gathered its facts: one
    with another fingerprint (an upgrade) is read as no cache. Here its facts, stamps
    matching, say p0 ended inside the window: under this code's fingerprint they are trusted
    and keep p0 while p1-p3 go; under another fingerprint every run is read again, p0 goes
    too, and the cache is written with this code's fingerprint."""
    paths = jobhelper.paths_of(root)

    def pruned(at: datetime) -> set[str]:
        done = prune.prune(paths, keep_days=90, keep_runs=0, now=at, env=jobhelper.clean_env())
        return {r.owner for r in done.removed}

    def forge(code: str) -> None:
        cache = prune_facts.cache_path(paths)
        doc = orjson.loads(cache.read_bytes())
        doc["runs"][run_id("p0")][2:4] = [LATER.timestamp()] * 2
        cache.write_bytes(orjson.dumps({**doc, "code": code}))

    assert set() == pruned(T0 + timedelta(days=10))  # nothing old yet: every run cached
    forge(codeprint.fingerprint())
    assert {run_id("p1"), run_id("p2"), run_id("p3")} == pruned(LATER)
    forge("0" * 64)
    assert {run_id("p0")} == pruned(LATER)
    assert codeprint.fingerprint() == orjson.loads(
        prune_facts.cache_path(paths).read_bytes())["code"]


def test_open_interrupted_and_waiting_runs_are_never_pruned(root: Path, project: Project) -> None:
    """An attempt left open (its runner died) and a run waiting after an unmerged review keep
    their files however old they are."""
    paths = jobhelper.paths_of(root)
    project.job("job-f", JOB.replace("'echo ran'", "'exit 3'").replace("job-n", "job-f"))
    failed = jobs.run_job(paths, definitions.load_jobs(paths), "job-f", {"period": "f0"},
                          scheduled_at=T0, env=jobhelper.clean_env(), clock=lambda: T0)
    assert (failed.state, failed.run_id is not None) == ("failed", True)
    open_id = str(failed.run_id)
    ledger.Ledger(paths.run_ledger(open_id), clock=lambda: T0).append(jev.RunAttemptStarted(
        run_id=open_id, attempt=2, owner=event_parts.Owner(pid=999_999, host="gone")))
    ledger.Ledger(paths.run_ledger(run_id("p2")), clock=lambda: T0).append(jev.ReviewEnded(
        run_id=run_id("p2"), attempt=1, verdict="changes-requested", merged=False,
        commit="abc", reason="not merged"))
    views.refresh_job_views(paths)
    assert "waiting" == views.load_job_run(paths, run_id("p2"))["state"]  # type: ignore[index]
    report = prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
    assert {run_id(f"p{n}") for n in (0, 1, 3)} == {r.owner for r in report.removed}
    assert ([True] * 3, [True] * 3) == (exists(paths, open_id), exists(paths, run_id("p2")))


def test_a_dry_run_writes_nothing(root: Path, project: Project) -> None:
    before = project.files()
    report = prune.prune(jobhelper.paths_of(root), keep_days=0, keep_runs=0, now=LATER,
                         dry_run=True, env={})
    assert (4, before) == (len(report.removed), project.files())


def test_prune_twice_removes_nothing_more(root: Path) -> None:
    paths = jobhelper.paths_of(root)
    prune.prune(paths, keep_days=90, keep_runs=2, now=LATER, env={})
    assert [] == prune.prune(paths, keep_days=90, keep_runs=2, now=LATER, env={}).removed
    assert [1, 1, 1, 0, 0] == [len(records(paths, run_id(f"p{n}"))) for n in range(5)]


def test_a_failed_run_pruned_then_retried_keeps_its_new_files(project: Project) -> None:
    """A failed run that is pruned and then run again (same key) writes a new plan, result and
    evidence; they are the run's live files, not left-overs of the earlier prune."""
    project.job("job-n", JOB.replace("'echo ran'", "'exit 3'"))
    for n in range(3):
        make_run(project.root, f"p{n}", T0 + timedelta(days=n))
    paths = jobhelper.paths_of(project.root)
    prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
    assert [False] * 3 == exists(paths, run_id("p0"))
    make_run(project.root, "p0", LATER)  # attempt 2 of the failed run
    assert [] == [r.owner for r in prune.prune(paths, keep_days=90, keep_runs=0, now=LATER,
                                              env={}).removed]
    assert [True] * 3 == exists(paths, run_id("p0"))


def test_prune_holds_the_locks(root: Path) -> None:
    """A run holding the routine lock makes prune busy (exit 75): nothing recorded."""
    paths = jobhelper.paths_of(root)
    from specdojo_routine.store.locks import routine as locks

    with locks.routine_lock(paths.routine_locks_dir), pytest.raises(LockBusy):
        prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
    assert [] == records(paths, run_id("p0"))


# --- the record comes first --------------------------------------------------------------------

KILL_AT_REMOVAL = """
import os, signal, sys
from datetime import datetime
from pathlib import Path
sys.path.insert(0, {repo!r})
from specdojo_routine.execute import prunefiles
prunefiles.remove = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
from specdojo_routine.app import prune
from specdojo_routine.store.config import resolve_project
prune.prune(resolve_project(Path({root!r}), env={{}}), keep_days=0, keep_runs=0,
            now=datetime.fromisoformat({now!r}), env={{}})
"""


def kill_between_record_and_removal(root: Path, now: datetime) -> None:
    """Run prune in a real process that is SIGKILLed the moment it starts removing files."""
    code = KILL_AT_REMOVAL.format(repo=str(REPO), root=str(root), now=now.isoformat())
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=jobhelper.clean_env())
    assert -signal.SIGKILL == done.returncode, done.stderr


def test_sigkill_between_record_and_removal_then_prune_finishes(root: Path) -> None:
    """The record is on disk before any file goes: after a SIGKILL between the two the files
    are there and the ledger says they were to go; the next prune removes them without a
    second record, and the views check clean."""
    paths = jobhelper.paths_of(root)
    kill_between_record_and_removal(root, LATER)
    [first] = [r for r in map(run_id, ("p0", "p1", "p2", "p3")) if records(paths, r)]
    assert ([True] * 3, 1) == (exists(paths, first), len(records(paths, first)))
    report = prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
    done = {r.owner: r.finishing for r in report.removed}
    assert (True, [False] * 3, 1) == (done[first], exists(paths, first),
                                      len(records(paths, first)))
    assert_views_rebuild(paths)


def test_a_recorded_removal_is_finished_even_if_the_rule_changed(root: Path) -> None:
    """After the crash, a prune with a wider window still finishes what was recorded (the
    record says those files were to go), and records nothing new."""
    paths = jobhelper.paths_of(root)
    kill_between_record_and_removal(root, LATER)
    [first] = [r for r in map(run_id, ("p0", "p1", "p2", "p3")) if records(paths, r)]
    report = prune.prune(paths, keep_days=3650, keep_runs=50, now=LATER, env={})
    assert ({first}, [False] * 3) == ({r.owner for r in report.removed}, exists(paths, first))
    assert 1 == len(records(paths, first))


# --- routine action evidence -------------------------------------------------------------------


def answered(paths: ProjectPaths, defs: Any, **_: Any) -> handlers.JobActionOutcome:
    from specdojo_routine.core.model import Result

    return handlers.JobActionOutcome(result=Result.SUCCESS, reason=None)


@pytest.fixture
def attempts(project: Project) -> Iterator[list[str]]:
    """rtn-a ran on five days (recorded by the run handler); each attempt has a hand-made
    evidence directory in the shape delegated calls leave (action-<n>/evidence.json)."""
    project.routine("rtn-a", 'trigger: {cron: "0 8 * * *", timezone: UTC}\naction:\n'
                             '  {kind: job, job: job-n, inputs: {period: "{{scheduled_at}}"}}\n')
    project.job("job-n", JOB)
    paths = jobhelper.paths_of(project.root)
    for n in range(5):
        at = T0 + timedelta(days=n, seconds=5)
        handlers.run(paths, now=at, clock=lambda at=at: at, env={}, job_runner=answered)
    ids = [e["attempt_id"] for e in project.events() if e["type"] == "attempt_started"]
    for n, attempt_id in enumerate(ids):
        action = paths.evidence_dir / "routines" / attempt_id / "action-1"
        action.mkdir(parents=True)
        (action / "command.stdout.log").write_text("out\n")
        day = (T0 + timedelta(days=n)).strftime("%Y-%m-%d")
        (action / "evidence.json").write_bytes(orjson.dumps({
            "schema_version": 1, "routine_id": "rtn-a", "attempt_id": attempt_id,
            "action": 1, "started_at": f"{day}T08:00:05Z", "completed_at": f"{day}T08:00:06Z"}))
    yield ids


def routine_records(project: Project) -> list[dict[str, Any]]:
    return [e for e in project.events() if e["type"] == "evidence_pruned"]


def test_routine_attempt_evidence_follows_the_same_rule(
    project: Project, attempts: list[str],
) -> None:
    """keep_runs 2 per routine: the three oldest attempts' evidence goes, each recorded in
    the routine ledger first; the routine's state and history still read."""
    paths = jobhelper.paths_of(project.root)
    state = project.state()["routines"]["rtn-a"]
    report = prune.prune(paths, keep_days=90, keep_runs=2, now=LATER, env={})
    assert sorted(attempts[:3]) == sorted(r.owner for r in report.removed if r.kind == "attempt")
    left = sorted(p.name for p in (paths.evidence_dir / "routines").iterdir())
    assert (sorted(attempts[3:]), attempts[:3]) == (
        left, [r["attempt_id"] for r in routine_records(project)])
    assert state == project.state()["routines"]["rtn-a"]
    assert 3 == sum(e["type"] == "evidence_pruned" for _, e in handlers.history(paths))
    assert_views_rebuild(paths)


def test_the_open_attempts_evidence_stays(project: Project, attempts: list[str]) -> None:
    """An attempt whose runner died (open, interrupted) keeps its evidence at any age."""
    paths = jobhelper.paths_of(project.root)
    ledger.Ledger(paths.routine_ledger, clock=lambda: LATER).append(rev.AttemptStarted(
        routine_id="rtn-a", attempt_id="att-20260110T080005Z-deadbeef", transition="T-06",
        trigger="due", scheduled_for="2026-01-10T08:00:00.000Z", last_run="2026-01-10T08:00:05Z",
        passed_over_since=None, owner=event_parts.Owner(pid=999_999, host="gone"), schedule="cron"))
    opened = paths.evidence_dir / "routines" / "att-20260110T080005Z-deadbeef" / "action-1"
    opened.mkdir(parents=True)
    (opened / "command.stdout.log").write_text("partial\n")
    prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
    assert (True, 5) == (opened.exists(), len(routine_records(project)))


def test_sigkill_after_an_attempts_record_then_prune_finishes(
    project: Project, attempts: list[str],
) -> None:
    paths = jobhelper.paths_of(project.root)
    kill_between_record_and_removal(project.root, LATER)
    assert 1 == len(routine_records(project))
    prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
    assert ([], attempts) == (sorted((paths.evidence_dir / "routines").iterdir()),
                              [r["attempt_id"] for r in routine_records(project)])


def test_a_fifo_in_an_attempts_evidence_does_not_hang_prune(
    project: Project, attempts: list[str],
) -> None:
    """A FIFO where an action's ``evidence.json`` or the removal marker would be is not
    opened (reading or writing one waits for a peer for ever); the evidence still goes."""
    paths = jobhelper.paths_of(project.root)
    (paths.evidence_dir / "routines" / attempts[0] / "action-2").mkdir()
    os.mkfifo(paths.evidence_dir / "routines" / attempts[0] / "action-2" / "evidence.json")
    os.mkfifo(paths.evidence_dir / "routines" / attempts[1] / prunefiles.REMOVAL_MARKER)
    done = project.cli("prune", "--keep-days", "0", "--keep-runs", "0", "--now",
                       LATER.isoformat(), timeout=60)
    assert (0, []) == (done.returncode, sorted((paths.evidence_dir / "routines").iterdir())), \
        done.stderr


def test_a_symlink_in_an_attempts_evidence_is_not_followed(
    project: Project, attempts: list[str], tmp_path: Path,
) -> None:
    """A symlink by the name of the removal marker, pointing out of the project, is not
    written through: the file it names stays as it was, the link goes with the evidence."""
    paths = jobhelper.paths_of(project.root)
    outside = tmp_path / "outside.json"
    outside.write_text('{"routine_id": "rtn-a", "attempt_id": null}\n')
    evidence = paths.evidence_dir / "routines" / attempts[0]
    os.symlink(outside, evidence / prunefiles.REMOVAL_MARKER)
    done = project.cli("prune", "--keep-days", "0", "--keep-runs", "0", "--now",
                       LATER.isoformat(), timeout=60)
    assert (0, False) == (done.returncode, evidence.exists()), done.stderr
    assert '{"routine_id": "rtn-a", "attempt_id": null}\n' == outside.read_text()


def test_an_attempts_evidence_directory_that_is_a_symlink_is_left_alone(
    project: Project, attempts: list[str], tmp_path: Path,
) -> None:
    """An attempt's evidence directory is made by the runner; a symlink by its name (to a
    directory outside the project, perhaps) is not, and prune neither reads nor writes
    through it, nor removes it or records it removed. The other attempts are pruned."""
    paths = jobhelper.paths_of(project.root)
    evidence = paths.evidence_dir / "routines" / attempts[0]
    outside = tmp_path / "outside"
    evidence.rename(outside)
    evidence.symlink_to(outside, target_is_directory=True)
    before = sorted(p.name for p in outside.rglob("*"))
    done = project.cli("prune", "--keep-days", "0", "--keep-runs", "0", "--now",
                       LATER.isoformat(), timeout=60)
    assert (0, before, True) == (done.returncode, sorted(p.name for p in outside.rglob("*")),
                                 evidence.is_symlink()), done.stderr
    assert attempts[0] not in [r.get("attempt_id") for r in routine_records(project)]
    assert [] == [a for a in attempts[1:] if (paths.evidence_dir / "routines" / a).exists()]

def test_a_job_run_attempt_folder_without_evidence_json_goes_with_its_run(root: Path) -> None:
    """A Job Run's attempt folder a crash left without ``evidence.json`` is part of the run's
    evidence directory: it goes when the run's files go, recorded in the run's ledger."""
    paths = jobhelper.paths_of(root)
    (paths.evidence_dir / run_id("p0") / "attempt-1" / "evidence.json").unlink()
    prune.prune(paths, keep_days=90, keep_runs=2, now=LATER, env={})
    assert ([False] * 3, [paths.rel(paths.evidence_dir / run_id("p0"))]) == (
        exists(paths, run_id("p0")),
        [p for p in records(paths, run_id("p0"))[0]["paths"] if "evidence" in p])


def orphan(paths: ProjectPaths, attempt_id: str) -> Path:
    """The attempt's evidence as a crash leaves it: action-1's logs, no ``evidence.json``
    (SIGKILL between the logs and the file that describes them)."""
    action = paths.evidence_dir / "routines" / attempt_id / "action-1"
    action.mkdir(parents=True, exist_ok=True)
    (action / "command.stdout.log").write_text("out\n")
    (action / "evidence.json").unlink(missing_ok=True)
    return action.parent


def test_evidence_with_no_evidence_json_follows_its_attempts_rule(
    project: Project, attempts: list[str],
) -> None:
    """An ended attempt's evidence that no ``evidence.json`` describes (a crash between an
    action's logs and that file) is pruned by the same rule as its attempt, its routine and
    end read from the routine ledger, and recorded first the same way: keep_runs 2, so the
    oldest three go (two of them orphans), the newest two stay (one an orphan)."""
    paths = jobhelper.paths_of(project.root)
    for attempt_id in (attempts[0], attempts[2], attempts[4]):
        orphan(paths, attempt_id)
    report = prune.prune(paths, keep_days=90, keep_runs=2, now=LATER, env={})
    assert sorted(attempts[:3]) == sorted(r.owner for r in report.removed)
    assert {"rtn-a"} == {r.group for r in report.removed}
    left = sorted(p.name for p in (paths.evidence_dir / "routines").iterdir())
    assert (sorted(attempts[3:]), attempts[:3]) == (
        left, [r["attempt_id"] for r in routine_records(project)])
    assert {("rtn-a", True)} == {(r["routine_id"], r["bytes"] > 0)
                                 for r in routine_records(project)}
    assert_views_rebuild(paths)


def test_orphan_evidence_is_kept_within_the_window(project: Project, attempts: list[str]) -> None:
    """The window counts from the attempt's end as the ledger says: 30 days after the last
    attempt, keep_days 90 keeps every orphan."""
    paths = jobhelper.paths_of(project.root)
    for attempt_id in attempts:
        orphan(paths, attempt_id)
    report = prune.prune(paths, keep_days=90, keep_runs=0, now=T0 + timedelta(days=34),
                         env={})
    assert ([], 5) == (report.removed, len(list((paths.evidence_dir / "routines").iterdir())))


def interrupt(paths: ProjectPaths, attempt_id: str) -> None:
    """An attempt of rtn-a whose runner died (SIGKILL): started, never ended."""
    ledger.Ledger(paths.routine_ledger, clock=lambda: T0 + timedelta(days=9)).append(
        rev.AttemptStarted(
            routine_id="rtn-a", attempt_id=attempt_id, transition="T-06", trigger="due",
            scheduled_for="2026-01-10T08:00:00.000Z", last_run="2026-01-10T08:00:05Z",
            passed_over_since=None, owner=event_parts.Owner(pid=999_999, host="gone"),
            schedule="cron"))


def test_an_interrupted_attempts_orphan_evidence_waits_for_review_then_follows_the_rule(
    project: Project, attempts: list[str],
) -> None:
    """An interrupted attempt (SPEC §6.5) keeps its orphan evidence at any age, for the
    review; once ``resolve`` ends it, the next prune removes it by the rule (what the first
    prune learnt of it was not kept as final)."""
    paths = jobhelper.paths_of(project.root)
    attempt_id = "att-20260110T080005Z-deadbeef"
    interrupt(paths, attempt_id)
    folder = orphan(paths, attempt_id)
    prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
    assert (True, 5) == (folder.exists(), len(routine_records(project)))
    routine_commands.resolve(paths, "rtn-a", result="failure", note="checked",
                             by="op", clock=lambda: T0 + timedelta(days=10))
    report = prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
    assert ([attempt_id], False) == ([r.owner for r in report.removed], folder.exists())
    assert attempt_id == routine_records(project)[-1]["attempt_id"]


def test_orphan_evidence_of_an_attempt_no_ledger_knows_is_kept(
    project: Project, attempts: list[str],
) -> None:
    """Evidence of an attempt the routine ledger never started: nothing says whose it is or
    that it ended, so nothing removes it; the others go."""
    paths = jobhelper.paths_of(project.root)
    folder = orphan(paths, "att-20250101T080005Z-feedface")
    for _ in range(2):  # the second prune from the cache
        prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
        assert [folder] == list((paths.evidence_dir / "routines").iterdir())


def test_orphan_evidence_through_a_symlink_is_not_followed(
    project: Project, attempts: list[str], tmp_path: Path,
) -> None:
    """An orphan whose action folder is a symlink out of the project: the link goes with the
    attempt's evidence, the folder it names stays as it was."""
    paths = jobhelper.paths_of(project.root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "command.stdout.log").write_text("keep me\n")
    evidence = paths.evidence_dir / "routines" / attempts[0]
    shutil.rmtree(evidence)
    evidence.mkdir()
    (evidence / "action-1").symlink_to(outside, target_is_directory=True)
    prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={})
    assert (False, ["command.stdout.log"]) == (
        os.path.lexists(evidence), sorted(p.name for p in outside.iterdir()))


def test_auto_prune_removes_orphan_evidence(project: Project, attempts: list[str]) -> None:
    """``run --due`` with ``retention.auto`` (within its time budget) prunes orphans too."""
    paths = attrs.evolve(jobhelper.paths_of(project.root),
                         retention=Retention(keep_days=90, keep_runs=2, auto=True))
    for attempt_id in attempts:
        orphan(paths, attempt_id)
    report = prune.prune_during_run(paths, views.load_routine_view(paths), now=LATER,
                                    clock=lambda: LATER, env={}, budget_s=60)
    assert (True, sorted(attempts[:3])) == (report.complete,
                                            sorted(r.owner for r in report.removed))


# --- as run --due goes -------------------------------------------------------------------------


def test_prune_during_run_stops_at_its_deadline_and_goes_on_next_time(root: Path) -> None:
    """With no time left nothing is read or removed and the report says it stopped; the next
    call, with its second, prunes."""
    paths = attrs.evolve(jobhelper.paths_of(root),
                         retention=Retention(keep_days=90, keep_runs=2, auto=True))
    view = views.load_routine_view(paths)
    first = prune.prune_during_run(paths, view, now=LATER, clock=lambda: LATER, env={},
                                   budget_s=0)
    assert (False, []) == (first.complete, first.removed)
    second = prune.prune_during_run(paths, view, now=LATER, clock=lambda: LATER, env={})
    assert (True, 3) == (second.complete, len(second.removed))


def test_run_due_prunes_with_retention_auto(project: Project) -> None:
    """retention.auto in the config: run --due prunes by the config's rule after its work."""
    config = project.root / ".specdojo" / "specdojo.config.json"
    doc = orjson.loads(config.read_bytes())
    doc["projects"]["demo"]["retention"] = {"keep_days": 30, "keep_runs": 1, "auto": True}
    config.write_bytes(orjson.dumps(doc))
    project.job("job-n", JOB)
    for n in range(3):
        make_run(project.root, f"p{n}", T0 + timedelta(days=n))
    paths = jobhelper.paths_of(project.root)
    report = handlers.run(paths, now=LATER, clock=lambda: LATER, env={})
    assert report.pruned is not None
    assert {run_id("p0"), run_id("p1")} == {r.owner for r in report.pruned.removed}


# --- kept review worktrees ---------------------------------------------------------------------


def test_a_kept_review_worktree_is_removed_its_branch_stays(root: Path) -> None:
    """A worktree kept for an old run (here: the one an earlier attempt left) goes with
    ``git worktree remove``; the branch and its commits stay."""
    paths = jobhelper.paths_of(root)
    jobhelper.git(root, "init", "-q", "-b", "main")
    jobhelper.commit(root, "base")
    kept = paths.worktrees / f"{run_id('p0')}-attempt-1"
    jobhelper.git(root, "worktree", "add", "-q", "-b", "exec/demo-p0", str(kept))
    prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env=jobhelper.clean_env())
    listed = jobhelper.git(root, "worktree", "list")
    assert (False, False, "exec/demo-p0") == (
        kept.exists(), str(kept) in listed, jobhelper.git(root, "branch", "--list",
                                                         "exec/demo-p0").strip(" *"))
    [record] = records(paths, run_id("p0"))
    assert str(kept) in record["paths"]


def test_another_repositorys_worktree_in_the_shared_base_is_left_alone(root: Path,
                                                                     tmp_path: Path) -> None:
    """The default worktree base (``../worktrees``) is shared by sibling clones, and two clones
    of one project give a Job Run the same id: a worktree of the run's name that another
    repository made is not this project's to remove (nor to record as removed)."""
    paths = jobhelper.paths_of(root)
    jobhelper.git(root, "init", "-q", "-b", "main")
    jobhelper.commit(root, "base")
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    jobhelper.git(sibling, "init", "-q", "-b", "main")
    jobhelper.commit(sibling, "base")
    theirs = paths.worktrees / run_id("p0")
    jobhelper.git(sibling, "worktree", "add", "-q", "-b", "exec/theirs", str(theirs))
    (theirs / "work.txt").write_text("not committed yet\n")
    prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env=jobhelper.clean_env())
    assert ("not committed yet\n", [False] * 3) == ((theirs / "work.txt").read_text(),
                                                    exists(paths, run_id("p0")))
    [record] = records(paths, run_id("p0"))
    assert str(theirs) not in record["paths"]
    assert str(theirs) in jobhelper.git(sibling, "worktree", "list")

SLOW_GIT = """#!/bin/sh
# git, except that `worktree remove` takes away part of the worktree (here its .git file, so
# that git no longer knows the directory as a worktree) and then hangs, as a huge worktree, a
# slow disk or a hung filesystem would
if [ "$1" = worktree ] && [ "$2" = remove ]; then
    for last in "$@"; do :; done
    rm -f "$last/.git"
    sleep 20
fi
exec {git} "$@"
"""


def test_auto_prune_leaves_a_slow_worktree_removal_to_the_next_prune(root: Path,
                                                                    tmp_path: Path) -> None:
    """``retention.auto`` never waits for git longer than its time budget: a ``git worktree
    remove`` still running at the deadline is stopped, and the worktree, half removed, is
    left; the report says the rest goes next time. The next prune finishes the removal (git
    forgets the worktree, the directory goes, the branch stays)."""
    paths = attrs.evolve(jobhelper.paths_of(root),
                         retention=Retention(keep_days=90, keep_runs=2, auto=True))
    jobhelper.git(root, "init", "-q", "-b", "main")
    jobhelper.commit(root, "base")
    kept = paths.worktrees / run_id("p0")
    jobhelper.git(root, "worktree", "add", "-q", "-b", "exec/demo-p0", str(kept))
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text(SLOW_GIT.format(git=shutil.which("git")))
    (fake / "git").chmod(0o755)
    slow = jobhelper.clean_env(PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    view = views.load_routine_view(paths)
    started = time.monotonic()
    first = prune.prune_during_run(paths, view, now=LATER, clock=lambda: LATER, env=slow)
    elapsed = time.monotonic() - started
    assert elapsed < prune.AUTO_BUDGET_S + 2.0, elapsed  # not git's 20 s
    assert (first.complete, kept.is_dir()) == (False, True)
    assert "stopped at the time limit, the rest next time" in first.summary()
    assert str(kept) in records(paths, run_id("p0"))[0]["paths"]  # recorded first
    second = prune.prune_during_run(paths, view, now=LATER, clock=lambda: LATER,
                                    env=jobhelper.clean_env())
    assert (second.complete, os.path.lexists(kept)) == (True, False)
    assert str(kept) not in jobhelper.git(root, "worktree", "list")
    assert jobhelper.git(root, "branch", "--list", "exec/demo-p0").strip(" *+") == "exec/demo-p0"
    assert [False] * 3 == exists(paths, run_id("p0"))


def test_prune_cli_json_and_summary(root: Path, project: Project) -> None:
    done = project.cli("prune", "--keep-days", "90", "--keep-runs", "2", "--now",
                       LATER.isoformat(), "--json")
    doc = orjson.loads(done.stdout)
    assert (0, 3, False, True) == (done.returncode, len(doc["removed"]), doc["dry_run"],
                                   doc["complete"])
    again = project.cli("prune", "--keep-runs", "-1")
    assert (2, "error: ") == (again.returncode, again.stderr[:7])


def test_auto_prune_sees_a_run_that_came_back_to_life(project: Project) -> None:
    """A failed run cached while inside the window, then run again: once its cached end
    leaves the window its ledger is read again, and its new end keeps it."""
    project.job("job-n", JOB.replace("'echo ran'", "'exit 3'"))
    make_run(project.root, "p0", T0)
    paths = attrs.evolve(jobhelper.paths_of(project.root),
                         retention=Retention(keep_days=90, keep_runs=0, auto=True))
    view = views.load_routine_view(paths)

    def auto(at: datetime) -> list[str]:
        done = prune.prune_during_run(paths, view, now=at, clock=lambda: at, env={})
        return [r.owner for r in done.removed]

    assert [] == auto(T0 + timedelta(days=1))  # read and cached: ended T0, inside the window
    make_run(project.root, "p0", T0 + timedelta(days=100))  # attempt 2, ended at T0 + 100 d
    assert ([], [True] * 3) == (auto(T0 + timedelta(days=120)), exists(paths, run_id("p0")))
    assert [run_id("p0")] == auto(T0 + timedelta(days=191))


def test_prune_without_flags_keeps_what_the_configs_retention_says(root: Path,
                                                                    project: Project) -> None:
    """SPEC §15: `prune` takes `keep_days` and `keep_runs` from the config's `retention` when
    no flag gives them: keep 2 of the five runs and three go, as with the flags above; keep
    5 and none go; a flag still wins over the config."""
    config = root / ".specdojo" / "specdojo.config.json"
    doc = orjson.loads(config.read_bytes())

    def pruned(retention: dict[str, int], *flags: str) -> list[str]:
        doc["projects"]["demo"]["retention"] = retention
        config.write_bytes(orjson.dumps(doc))
        done = project.cli("prune", "--dry-run", "--now", LATER.isoformat(), "--json", *flags)
        assert 0 == done.returncode, done.stderr
        return [r["owner"] for r in orjson.loads(done.stdout)["removed"]]

    assert 3 == len(pruned({"keep_days": 90, "keep_runs": 2}))
    assert [] == pruned({"keep_days": 90, "keep_runs": 5})
    assert 3 == len(pruned({"keep_days": 90, "keep_runs": 5}, "--keep-runs", "2"))


def test_a_recorded_path_outside_the_runs_own_files_is_never_removed(root: Path) -> None:
    """A ledger line is evidence, not a fact: an ``evidence_pruned`` someone appended (chain
    and all) naming a file outside the project, an absolute path, or another run's evidence
    is not finished by the next prune; only the run's own files ever go."""
    paths = jobhelper.paths_of(root)
    outside = root.parent / "victim.txt"
    outside.write_text("keep me")
    absolute = root.parent / "absolute.txt"
    absolute.write_text("keep me too")
    other = paths.rel(paths.evidence_dir / run_id("p4"))
    rid = run_id("p3")
    forged = ["../victim.txt", str(absolute), other, f"{paths.rel(paths.evidence_dir)}/../../x",
              paths.rel(paths.evidence_dir / rid)]
    ledger.Ledger(paths.run_ledger(rid), clock=lambda: T0).append(jev.EvidencePruned(
        run_id=rid, paths=forged, bytes=1))
    prune.prune(paths, keep_days=3650, keep_runs=50, now=LATER, env={})
    assert ("keep me", "keep me too", [True] * 3) == (
        outside.read_text(), absolute.read_text(), exists(paths, run_id("p4")))
    assert [False, True, True] == exists(paths, rid)  # its own evidence, as recorded, went


def test_the_run_view_says_pruned_before_any_file_goes(root: Path) -> None:
    """Upstream readers open ``runs/<id>.json`` as it is on disk: after a SIGKILL as the
    removal begins (a folder may be half removed), the run's view already lists the record
    (``pruned``) and matches its ledger, so ``fold --check`` is clean before the next prune."""
    paths = jobhelper.paths_of(root)
    kill_between_record_and_removal(root, LATER)
    [first] = [r for r in map(run_id, ("p0", "p1", "p2", "p3")) if records(paths, r)]
    view = orjson.loads(paths.run_view(first).read_bytes())
    assert [records(paths, first)[0]["paths"]] == [p["paths"] for p in view.get("pruned", [])]
    assert [] == adoption.fold(paths, check=True).drifted


KILL_AFTER_MARKER = """
import os, shutil, signal, sys  # shutil first: it picks its safe rmtree by os.unlink
from datetime import datetime
from pathlib import Path
sys.path.insert(0, {repo!r})
real_unlink, real_scandir, gone = os.unlink, os.scandir, [False]
class Listing:  # a folder listed with the removal marker first (any order is the system's)
    def __init__(self, it):
        with it:
            self.entries = iter(sorted(it, key=lambda e: e.name != {marker!r}))
    def __iter__(self):
        return self
    def __next__(self):
        return next(self.entries)
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False
    def close(self):
        pass
os.scandir = lambda *a, **k: Listing(real_scandir(*a, **k))
def unlink(path, *args, dir_fd=None, **kwargs):
    if dir_fd is not None and gone[0]:  # the first file removed after a marker: killed
        os.kill(os.getpid(), signal.SIGKILL)
    real_unlink(path, *args, dir_fd=dir_fd, **kwargs)
    gone[0] = gone[0] or os.path.basename(path) == {marker!r}
os.unlink = unlink
from specdojo_routine.app import prune
from specdojo_routine.store.config import resolve_project
prune.prune(resolve_project(Path({root!r}), env={{}}), keep_days=0, keep_runs=0,
            now=datetime.fromisoformat({now!r}), env={{}})
"""


def test_an_attempts_removal_killed_halfway_is_finished_next_time(
    project: Project, attempts: list[str],
) -> None:
    """SIGKILL while an attempt's evidence is being removed, whatever order the system lists
    its files in: the folder half removed still says it is going, so the next prune (with a
    window that would keep it) finishes it, and the ledger holds one record of it."""
    paths = jobhelper.paths_of(project.root)
    code = KILL_AFTER_MARKER.format(repo=str(REPO), root=str(project.root),
                                    now=LATER.isoformat(), marker=prunefiles.REMOVAL_MARKER)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=jobhelper.clean_env())
    assert -signal.SIGKILL == done.returncode, done.stderr
    prune.prune(paths, keep_days=3650, keep_runs=50, now=LATER, env={})
    recorded = [e["attempt_id"] for e in routine_records(project)]
    left = {p.name for p in (paths.evidence_dir / "routines").iterdir()}
    assert (True, set(), len(recorded)) == (attempts[0] in recorded, left & set(recorded),
                                            len(set(recorded)))
    assert set(attempts) == left | set(recorded)


def test_the_job_runs_of_an_interrupted_routine_attempt_stay(root: Path, project: Project) -> None:
    """A routine attempt whose runner died after its Job Run ended, before the action's end
    was recorded, waits for an operator's review (``resolve``): the run it started (named
    by ``action_started``) keeps its files however old, so the review can read them."""
    paths = jobhelper.paths_of(root)
    project.routine("rtn-a", 'trigger: {cron: "0 8 * * *", timezone: UTC}\naction:\n'
                             '  {kind: job, job: job-n, inputs: {period: p0}}\n')
    attempt = "att-20260101T080005Z-deadbeef"
    routine_ledger = ledger.Ledger(paths.routine_ledger, clock=lambda: T0)
    routine_ledger.append(rev.AttemptStarted(
        routine_id="rtn-a", attempt_id=attempt, transition="T-02", trigger="due",
        scheduled_for="2026-01-01T08:00:00.000Z", last_run="2026-01-01T08:00:05Z",
        passed_over_since=None, owner=event_parts.Owner(pid=999_999, host="gone"), schedule="cron"))
    routine_ledger.append(rev.ActionStarted(routine_id="rtn-a", attempt_id=attempt, index=1,
                                           kind="job", job_run_id=run_id("p0")))
    for dry_run in (True, False):
        report = prune.prune(paths, keep_days=0, keep_runs=0, now=LATER, env={},
                             dry_run=dry_run)
        assert {run_id(f"p{n}") for n in range(1, 4)} == {r.owner for r in report.removed}
    assert [True] * 3 == exists(paths, run_id("p0"))


def test_an_evidence_ref_outside_the_evidence_folder_is_not_read(
    root: Path, project: Project,
) -> None:
    """A ledger line is evidence, not a fact: an ``evidence_ref`` someone appended that leads
    out of the evidence folder (``..``, an absolute path) is not opened by ``job logs``; it
    says the output is not there, as for evidence that was pruned."""
    paths = jobhelper.paths_of(root)
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "evidence.json").write_bytes(orjson.dumps(
        {"command": {"stdout": "NOT EVIDENCE\n", "stderr": ""}}))
    (outside / "agent-x.log").write_text("NOT A LOG\n")
    project.job("job-f", JOB.replace("'echo ran'", "'exit 3'").replace("job-n", "job-f"))
    rid = str(jobs.run_job(paths, definitions.load_jobs(paths), "job-f", {"period": "f0"},
                           scheduled_at=T0, env=jobhelper.clean_env(), clock=lambda: T0).run_id)
    forged = ["../outside/evidence.json", str(outside / "evidence.json"),
              f"{paths.rel(paths.evidence_dir)}/../../../outside/evidence.json"]
    for n, ref in enumerate(forged, start=2):
        run_ledger = ledger.Ledger(paths.run_ledger(rid), clock=lambda: T0)
        run_ledger.append(jev.RunAttemptStarted(run_id=rid, attempt=n,
                                               owner=event_parts.Owner(pid=1, host="h")))
        run_ledger.append(jev.RunAttemptEnded(run_id=rid, attempt=n, status="failed",
                                             exit_code=1, evidence_ref=ref))
        done = project.cli("job", "logs", rid, "--attempt", str(n))
        assert (False, True) == ("NOT" in done.stdout, "gone" in done.stdout), done.stderr
