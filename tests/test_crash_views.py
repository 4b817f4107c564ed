"""A Job Run view left behind its ledger is brought up to date by the next command (SPEC §5, §7).

A Job Run's ledger is written first and its views (``runs/<run_id>.json``, ``job-state.json``)
after it; a crash or a full disk between the two leaves a view that our own ledger gave
earlier - ``running`` while the ledger says ``succeeded``, an older checkpoint - or no view at
all. Such a view holds no fact the ledger lacks, so it is not imported and not a conflict; it
is stale, and the next recording command of that Job publishes the fold over it, as the routine
view is refreshed by every recording command. Upstream tools read these files without folding.

The fault is made real in this process: publishing a Job view fails with ENOSPC, as on the
full disk where this was found (the ledger append before it succeeded).
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import orjson
import pytest
from conftest import Project, period_job

from specdojo_routine.store.ledger import views
from tests.clirun import SUBPROCESS_ENV, run_cli

CHECKPOINT = "checkpoint:\n  values: {period: '{{inputs.period}}'}\n"
RUNS = Path("execution/jobs/runs")
JOB_STATE = Path("execution/jobs/generated/job-state.json")


def _views(root: Path) -> dict[str, bytes]:
    found = [root / JOB_STATE, *sorted((root / RUNS).glob("*.json"))]
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in found if p.exists()}


def _rebuilt(project: Project, tmp_path: Path) -> dict[str, bytes]:
    """The views ``fold`` writes from the ledgers alone, in a copy without views or caches."""
    copy = tmp_path / f"rebuilt-{len(list(tmp_path.glob('rebuilt-*')))}"
    shutil.copytree(project.root, copy, symlinks=True)
    for name in _views(copy):
        (copy / name).unlink()
    shutil.rmtree(copy / "execution" / ".cache", ignore_errors=True)
    done = run_cli(["fold", "--root", str(copy)], cwd=copy, env=project.env())
    assert 0 == done.returncode, done.stderr
    return _views(copy)


@pytest.mark.parametrize("failing", ["the run view at the end", "every run view",
                                     "job-state.json"])
def test_a_job_view_a_full_disk_left_stale_is_republished_by_the_next_job_command(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str,
) -> None:
    """After a view publish failed behind a recorded attempt, the next `job run` of that Job
    (a duplicate complete, nothing to run) publishes what the ledger says; views == fold."""
    monkeypatch.delenv(SUBPROCESS_ENV, raising=False)  # the fault is made in this process
    project.job("job-a", period_job("job-a", 'echo "a {{inputs.period}}"', CHECKPOINT))
    assert 0 == project.cli("job", "run", "--job", "job-a", "--input", "period=W1").returncode
    publish, calls = views.publish, []

    def full_disk(path: Path, data: bytes) -> bool:
        calls.append(path)
        run_views = [p for p in calls if p.suffix == ".json" and p.parent.name == "runs"]
        fails = path.name == "job-state.json" if failing == "job-state.json" else (
            path.parent.name == "runs" and (failing == "every run view" or len(run_views) > 1))
        if fails:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return publish(path, data)

    monkeypatch.setattr(views, "publish", full_disk)
    second = project.cli("job", "run", "--job", "job-a", "--input", "period=W2")
    monkeypatch.setattr(views, "publish", publish)
    assert 0 == second.returncode, second.stderr
    assert _rebuilt(project, tmp_path) != _views(project.root)  # the fault left a view behind

    again = project.cli("job", "run", "--job", "job-a", "--input", "period=W2")
    assert 0 == again.returncode, again.stderr
    assert "duplicate complete" in again.stdout
    assert _rebuilt(project, tmp_path) == _views(project.root)
    assert 0 == project.cli("fold", "--check").returncode
    state = orjson.loads((project.root / JOB_STATE).read_bytes())
    assert "W2" == state["jobs"]["job-a"]["checkpoint"]["period"]
