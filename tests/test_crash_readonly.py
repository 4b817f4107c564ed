"""A read-only evidence folder during ``prune`` (SPEC §15, §8): one ``error:`` line naming the
file it could not remove by its whole path, and the next ``prune`` on a writable disk finishes
what the recorded removal began (the record is written before the removal).

A real read-only mount (a tmpfs remounted ``ro``) over ``execution/exec/evidence``: as root,
file modes do not stop a write, so only a mount makes the fault real.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from conftest import Project, period_job, tmpfs_at

EVIDENCE = Path("execution/exec/evidence")


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@pytest.fixture
def evidence_on_tmpfs(project: Project) -> Iterator[Path]:
    """``execution/exec/evidence`` on a tmpfs of its own (skipped where mounting is refused)."""
    target = project.root / EVIDENCE
    target.mkdir(parents=True)
    with tmpfs_at(target, "size=4m"):
        yield target


def test_prune_on_a_read_only_evidence_folder_names_the_file_and_finishes_later(
    project: Project, evidence_on_tmpfs: Path,
) -> None:
    """EROFS while removing evidence: exit 1, one `error:` line with the file's full path and
    no traceback; writable again, `prune` removes it and the views still equal the fold."""
    project.job("job-a", period_job("job-a", "'echo ran'"))
    ran = project.cli("job", "run", "--job", "job-a", "--input", "period=W1",
                      "--scheduled-at", "2026-01-01T08:00:00Z")
    assert 0 == ran.returncode, ran.stderr
    assert list(evidence_on_tmpfs.rglob("evidence.json"))
    remount = _mount("-o", "remount,ro", str(evidence_on_tmpfs))
    assert 0 == remount.returncode, remount.stderr
    args = ("prune", "--now", "2027-01-01T00:00:00Z", "--keep-days", "1", "--keep-runs", "0")

    refused = project.cli(*args)
    assert 1 == refused.returncode
    lines = refused.stderr.splitlines()
    assert 1 == len(lines) and lines[0].startswith("error: "), refused.stderr
    assert "Read-only file system" in lines[0]
    assert f"{evidence_on_tmpfs}/JBR-a-" in lines[0], lines[0]  # the whole path, not a name

    assert 0 == _mount("-o", "remount,rw", str(evidence_on_tmpfs)).returncode
    done = project.cli(*args)
    assert 0 == done.returncode, done.stderr
    assert [] == list(evidence_on_tmpfs.iterdir())
    assert 0 == project.cli("fold", "--check").returncode
    ledger = next((project.root / "execution/jobs/runs").glob("*.jsonl")).read_bytes()
    pruned = [e for e in map(orjson.loads, ledger.splitlines()) if e["type"] == "evidence_pruned"]
    assert 1 == len(pruned)  # recorded once, finished by the second prune


@pytest.fixture
def job_state_on_tmpfs(project: Project) -> Iterator[Path]:
    """``execution/jobs/generated`` (where ``job-state.json`` lives) on a tmpfs of its own."""
    target = project.root / "execution/jobs/generated"
    target.mkdir(parents=True)
    with tmpfs_at(target, "size=1m"):
        yield target


def test_fold_into_a_read_only_folder_names_the_view_not_a_temp_file(
    project: Project, job_state_on_tmpfs: Path,
) -> None:
    """A view that cannot be replaced is named by its own path: the temp file the write
    would have used never existed and means nothing to the operator."""
    project.job("job-a", period_job("job-a", "'echo ran'",
                                    "checkpoint:\n  values: {p: '{{inputs.period}}'}\n"))
    assert 0 == project.cli("job", "run", "--job", "job-a", "--input", "period=W1").returncode
    (job_state_on_tmpfs / "job-state.json").unlink()
    assert 0 == _mount("-o", "remount,ro", str(job_state_on_tmpfs)).returncode

    refused = project.cli("fold")
    assert 1 == refused.returncode
    lines = refused.stderr.splitlines()
    assert [f"error: {job_state_on_tmpfs}/job-state.json: Read-only file system (the file "
            "system is read-only: mount it read-write or use another root)"] == lines
    assert [] == list(job_state_on_tmpfs.iterdir())


def test_a_job_run_whose_views_cannot_be_published_warns_and_keeps_its_outcome(
    project: Project, job_state_on_tmpfs: Path,
) -> None:
    """The outcome is recorded first; a view that then cannot be written is a `warning:` line
    naming the run and the file (and `warnings` in `--json`), not silence with exit 0."""
    project.job("job-a", period_job("job-a", "'echo ran'"))
    assert 0 == _mount("-o", "remount,ro", str(job_state_on_tmpfs)).returncode

    ran = project.cli("job", "run", "--job", "job-a", "--input", "period=W1", "--json")
    assert 0 == ran.returncode, ran.stderr
    outcome = orjson.loads(ran.stdout)
    assert "succeeded" == outcome["state"]
    warned = [line for line in ran.stderr.splitlines() if line.startswith("warning: ")]
    assert 1 == len(warned), ran.stderr
    assert warned[0].startswith(f"warning: {outcome['run_id']}: view not published: ")
    assert f"{job_state_on_tmpfs}/job-state.json" in warned[0]
    assert [w.removeprefix("warning: ") for w in warned] == outcome["warnings"]


def test_a_routine_job_action_whose_job_views_cannot_be_published_warns(
    project: Project, job_state_on_tmpfs: Path,
) -> None:
    """The same from a routine's `job` action: `run` keeps the action's result and says on
    stderr which Job Run's file it could not write (`--json`: `warnings`)."""
    project.job("job-a", period_job("job-a", "'echo ran'"))
    project.routine("rtn-a", "interval: 1h\naction: {kind: job, job: job-a, "
                             "inputs: {period: W1}}\n")
    assert 0 == _mount("-o", "remount,ro", str(job_state_on_tmpfs)).returncode

    ran = project.cli("run", "--id", "rtn-a", "--json")
    assert 0 == ran.returncode, ran.stderr
    report = orjson.loads(ran.stdout)
    warned = [line for line in ran.stderr.splitlines() if line.startswith("warning: JBR-a-")]
    assert 1 == len(warned) and ": view not published: " in warned[0], ran.stderr
    assert warned == report["warnings"]


def test_a_delegated_calls_output_that_cannot_be_kept_is_a_warning(
    project: Project, evidence_on_tmpfs: Path,
) -> None:
    """Evidence that cannot be written costs the evidence, never the action's result, and the
    run says so: `logs` will have nothing for it."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    assert 0 == _mount("-o", "remount,ro", str(evidence_on_tmpfs)).returncode

    ran = project.cli("run", "--id", "rtn-a", "--json")
    assert 0 == ran.returncode, ran.stderr
    report = orjson.loads(ran.stdout)
    assert ["success"] == [r["result"] for r in report["results"]]
    warned = [line for line in ran.stderr.splitlines() if line.startswith("warning: ")]
    assert 1 == len(warned), ran.stderr
    assert warned[0].startswith("warning: rtn-a: action 1's output was not kept as evidence: "
                                f"{evidence_on_tmpfs}/routines: ")
    assert "Read-only file system" in warned[0]
    assert warned == report["warnings"]
