"""``job-state.json`` is evidence, not truth (SPEC §5): a Job Run command merges its run's
checkpoints into the published file only when it can prove that file is the one it wrote last;
a restored backup or a copy in the same canonical form is checked against the run ledgers.

End to end through the CLI on a real project; the reference is what ``fold`` rebuilds from the
ledgers alone in a copy whose views were deleted.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import orjson
import pytest
from conftest import Project, period_job

from tests.clirun import run_cli

CHECKPOINT = "checkpoint:\n  values: {period: '{{inputs.period}}'}\n"
JOB_STATE = Path("execution/jobs/generated/job-state.json")
RUNS = Path("execution/jobs/runs")


@pytest.fixture
def jobs(project: Project) -> Project:
    """Two Jobs that advance their checkpoint to the period they ran for (``CODE`` fails)."""
    for jid in ("job-a", "job-b"):
        project.job(jid, period_job(jid, f'echo "{jid} {{{{inputs.period}}}}"; exit "${{CODE:-0}}"',
                                    CHECKPOINT))
    return project


def job_run(project: Project, job_id: str, period: str, code: str = "0"
            ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in project.env().items() if k != "SPECDOJO_EXEC_RUN_LOCK_TOKEN"}
    return project.cli("job", "run", "--job", job_id, "--input", f"period={period}",
                       env=env | {"CODE": code})


def rebuilt_from_ledgers(project: Project, tmp_path: Path) -> bytes:
    """The job-state.json ``fold`` writes from the run ledgers alone (in a copy without views)."""
    copy = tmp_path / "rebuilt"
    shutil.copytree(project.root, copy, symlinks=True)
    for view in [copy / JOB_STATE, *(copy / RUNS).glob("*.json")]:
        view.unlink()
    shutil.rmtree(copy / "execution" / ".cache", ignore_errors=True)
    done = run_cli(["fold", "--root", str(copy)], cwd=copy, env=project.env(), process=True)
    assert 0 == done.returncode, done.stderr
    return (copy / JOB_STATE).read_bytes()


def checkpoint_of(project: Project, job_id: str) -> str:
    jobs = orjson.loads((project.root / JOB_STATE).read_bytes())["jobs"]
    period: str = jobs[job_id]["checkpoint"]["period"]
    return period


@pytest.mark.parametrize("next_run", [("job-a", "W4", "1"), ("job-b", "X1", "0")],
                         ids=["failed-run-of-the-same-job", "run-of-another-job"])
def test_a_restored_job_state_is_checked_not_merged_into(
    jobs: Project, tmp_path: Path, next_run: tuple[str, str, str],
) -> None:
    """An old job-state.json put back (canonical bytes, stale checkpoint W2 where the ledgers
    say W3) is not published again by the next Job Run: neither a failed run of that Job (it
    adds no checkpoint) nor a run of another Job keeps W2; the file is what `fold` rebuilds
    from the ledgers, and `fold --check` finds nothing to rebuild."""
    for period in ("W1", "W2"):
        assert 0 == job_run(jobs, "job-a", period).returncode
    saved = (jobs.root / JOB_STATE).read_bytes()
    assert 0 == job_run(jobs, "job-a", "W3").returncode
    (jobs.root / JOB_STATE).write_bytes(saved)  # an operator restores yesterday's backup
    job_run(jobs, *next_run)
    assert "W3" == checkpoint_of(jobs, "job-a")
    assert rebuilt_from_ledgers(jobs, tmp_path) == (jobs.root / JOB_STATE).read_bytes()
    check = jobs.cli("fold", "--check")
    assert (0, "") == (check.returncode, check.stderr)


def test_a_job_state_from_another_project_is_not_published_as_ours(
    jobs: Project, tmp_path: Path,
) -> None:
    """A job-state.json copied in from another project, in our canonical form, whose entry
    for job-a is older than the one our ledgers hold: the next run of job-b publishes
    job-a's checkpoint from our ledgers, not the copy's."""
    assert 0 == job_run(jobs, "job-a", "W1").returncode
    stale = {"checkpoint": {"period": "W0"}, "last_run_id": "JBR-a-aaaaaaaaaaaa",
             "updated_at": "2020-01-01T00:00:00.000Z"}
    (jobs.root / JOB_STATE).write_bytes(
        orjson.dumps({"version": 1, "jobs": {"job-a": stale}}, option=orjson.OPT_INDENT_2)
        + b"\n")
    assert 0 == job_run(jobs, "job-b", "X1").returncode
    assert ("W1", "X1") == (checkpoint_of(jobs, "job-a"), checkpoint_of(jobs, "job-b"))
    assert rebuilt_from_ledgers(jobs, tmp_path) == (jobs.root / JOB_STATE).read_bytes()


def test_another_jobs_checkpoint_our_ledgers_lack_is_kept_for_the_import(
    jobs: Project,
) -> None:
    """A job-state.json another tool rewrote with a checkpoint of job-b that our ledgers do
    not hold (upstream ran job-b): a run of job-a, which replaces the file, imports it first
    (SPEC §10 rule 1) instead of dropping it."""
    assert 0 == job_run(jobs, "job-a", "W1").returncode
    doc = orjson.loads((jobs.root / JOB_STATE).read_bytes())
    doc["jobs"]["job-b"] = {"checkpoint": {"period": "UP"}, "last_run_id": "JBR-b-aaaaaaaaaaaa",
                            "updated_at": "2026-01-01T00:00:00.000Z"}
    (jobs.root / JOB_STATE).write_bytes(orjson.dumps(doc))  # upstream's compact form
    assert 0 == job_run(jobs, "job-a", "W2").returncode
    assert ("W2", "UP") == (checkpoint_of(jobs, "job-a"), checkpoint_of(jobs, "job-b"))
    imported = [orjson.loads(line) for line in
                (jobs.root / RUNS / "JBR-b-aaaaaaaaaaaa.jsonl").read_bytes().splitlines()]
    assert [{"period": "UP"}] == [e["checkpoint"] for e in imported
                                  if e["type"] == "checkpoint_imported"]
    check = jobs.cli("fold", "--check")
    assert (0, "") == (check.returncode, check.stderr)


@pytest.mark.parametrize(("code", "kept"), [("0" * 64, "W3"), (None, "W2")],
                         ids=["other-code", "this-code"])
def test_a_job_state_snapshot_of_other_code_is_not_trusted(
    jobs: Project, code: str | None, kept: str,
) -> None:
    """The snapshot that proves job-state.json records the fingerprint of the code that
    published it: a restored backup with a snapshot that matches it in every other respect
    (identity, size, change time, bytes) but names other code is folded from the ledgers
    again (W3), as after an upgrade; the same forgery naming this code is trusted (W2 stays),
    so the fingerprint alone makes the difference."""
    from specdojo_routine.store import codeprint
    from specdojo_routine.store.ledger import views
    from specdojo_routine.store.ledger.stamps import Stamp

    for period in ("W1", "W2"):
        assert 0 == job_run(jobs, "job-a", period).returncode
    saved = (jobs.root / JOB_STATE).read_bytes()
    assert 0 == job_run(jobs, "job-a", "W3").returncode
    state = jobs.root / JOB_STATE
    state.write_bytes(saved)
    proof = orjson.loads(views._job_state_proof(saved, Stamp.at(state)))
    assert codeprint.fingerprint() == proof["code"]
    snapshot = jobs.root / "execution" / ".cache" / "job-state.snapshot.json"
    snapshot.write_bytes(orjson.dumps({**proof, "code": code or proof["code"]}) + b"\n")
    assert 0 == job_run(jobs, "job-b", "X1").returncode
    assert kept == checkpoint_of(jobs, "job-a")
