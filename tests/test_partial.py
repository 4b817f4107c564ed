"""Routine result ``partial`` (seed 002 §4, SPEC §11.3, §11.4): failure > skipped > partial >
success; the fold table and the state diagram know it; ``run`` and ``list`` exit 0 for it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TextIO

import pytest

from specdojo_routine.app import handlers
from specdojo_routine.app.handlers import JobActionOutcome
from specdojo_routine.core.fold import TRANSITIONS, render_state_diagram
from specdojo_routine.core.model import Result, aggregate
from specdojo_routine.store.config import ProjectPaths, resolve_project
from specdojo_routine.store.definitions.load import Definitions
from tests.conftest import Project

P, S, F, K = Result.PARTIAL, Result.SUCCESS, Result.FAILURE, Result.SKIPPED


@pytest.mark.parametrize(("results", "expected"), [
    ([S, P], P), ([P, K], K), ([P, F, K], F), ([S, S], S), ([P], P), ([P, P, S], P)])
def test_aggregation_order(results: list[Result], expected: Result) -> None:
    assert aggregate(results) is expected


def test_the_table_and_the_diagram_know_partial() -> None:
    rows = {(t.event, t.source, t.target, t.label) for t in TRANSITIONS}
    assert ("attempt_ended", "running", "partial", "T-03") in rows
    assert ("attempt_started", "partial", "running", "T-06") in rows
    assert "running --> partial" in render_state_diagram()


class Partial:
    """A routine ``job`` action that reports a merged partial run."""

    def __call__(self, paths: ProjectPaths, defs: Definitions, *, job_id: str,
                 inputs: Mapping[str, str], scheduled_at: datetime,
                 echo: TextIO | None) -> JobActionOutcome:
        return JobActionOutcome(result=Result.PARTIAL, reason="merged partial",
                                job_run_id="JBR-x-000000000000")


def test_a_partial_attempt_is_folded_and_exits_zero(project: Project) -> None:
    project.job("job-x", 'name: X\ntask: {mode: command, command: "true"}\n'
                'run: {idempotency_key: "{{job_id}}"}\n')
    project.routine("rtn-p", "interval: 1h\naction: {kind: job, job: job-x}\n")
    paths = resolve_project(project.root, env={})
    report = handlers.run(paths, routine_id="rtn-p", env=project.env(), job_runner=Partial(),
                          now=datetime(2026, 8, 7, tzinfo=UTC))
    assert report.exit_code == 0
    ended = [e for e in project.events() if e["type"] == "attempt_ended"]
    assert (ended[0]["result"], ended[0]["transition"]) == ("partial", "T-03")
    state = project.state()["routines"]["rtn-p"]
    assert (state["status"], state["last_result"]) == ("partial", "partial")
    listed = project.cli("list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert '"status": "partial"' in listed.stdout
    assert project.cli("fold", "--check").returncode == 0
    # the next attempt starts from partial with T-06
    handlers.run(paths, routine_id="rtn-p", env=project.env(), job_runner=Partial(),
                 now=datetime(2026, 8, 8, tzinfo=UTC))
    started = [e for e in project.events() if e["type"] == "attempt_started"]
    assert started[-1]["transition"] == "T-06"
