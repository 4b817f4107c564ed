"""The Job Run view's ``review`` names the attempt reviewed (SPEC §7.6, §11.3), from real
ledger files, and a view an earlier version published without it is refolded, not refused."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson

from specdojo_routine.app import adoption, jobs
from specdojo_routine.core import job_events as jev
from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.ledger import views
from tests import jobhelper
from tests.conftest import Project, period_job

T0 = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)


def reviewed_run(project: Project) -> tuple[ProjectPaths, str]:
    """A Job Run whose first attempt failed and whose second was reviewed (merged)."""
    project.job("job-n", period_job("n", "'test -e go || exit 3'"))
    paths = jobhelper.paths_of(project.root)
    defs = definitions.load_jobs(paths)
    for _ in range(2):
        out = jobs.run_job(paths, defs, "job-n", {"period": "a"}, scheduled_at=T0,
                           env=jobhelper.clean_env(), clock=lambda: T0)
        (project.root / "go").touch()
    ledger.Ledger(paths.run_ledger(out.run_id), clock=lambda: T0).append(jev.ReviewEnded(
        run_id=out.run_id, attempt=2, verdict="complete", merged=True, commit="a" * 40,
        reason=None, merge_commit="b" * 40))
    adoption.fold(paths)
    return paths, str(out.run_id)


def test_the_published_view_names_the_reviewed_attempt(project: Project) -> None:
    """``runs/<run_id>.json`` and ``job show --json`` say the review was of attempt 2."""
    paths, run_id = reviewed_run(project)
    view = orjson.loads(paths.run_view(run_id).read_bytes())
    assert ([1, 2], 2) == ([a["attempt"] for a in view["attempts"]], view["review"]["attempt"])
    shown = project.cli("job", "show", run_id, "--json")
    assert 2 == orjson.loads(shown.stdout)["review"]["attempt"], shown.stderr
    assert [] == adoption.fold(paths, check=True).drifted


def test_job_show_says_which_attempt_was_reviewed(project: Project) -> None:
    """``job show``'s text names the reviewed attempt on its review line."""
    _, run_id = reviewed_run(project)
    shown = project.cli("job", "show", run_id)
    assert "review of attempt 2: verdict " in shown.stdout, shown.stdout + shown.stderr


def test_a_view_published_before_the_attempt_was_named_is_refolded(project: Project) -> None:
    """A view an earlier version wrote (``review`` without ``attempt``) is drift that ``fold``
    rewrites, not another tool's record contradicting the ledger."""
    paths, run_id = reviewed_run(project)
    doc = orjson.loads(paths.run_view(run_id).read_bytes())
    del doc["review"]["attempt"]
    paths.run_view(run_id).write_bytes(views.render(doc))
    checked = adoption.fold(paths, check=True)
    assert ([paths.rel(paths.run_view(run_id))], []) == (checked.drifted, checked.conflicts)
    folded = adoption.fold(paths)
    assert ([], 2) == (folded.conflicts,
                       orjson.loads(paths.run_view(run_id).read_bytes())["review"]["attempt"])
