"""A typed embedding of the public API: checked by mypy --strict and executed by the tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import specdojo_routine as sr
from specdojo_routine.testing import (
    FakeAgentExecutor,
    assert_views_match_ledgers,
    replay_ledger,
    routine_statuses,
    write_project,
)


def embed(root: Path, fake_cli: str) -> dict[str, str]:
    """Validate, run due routines with an injected agent, replay and check the ledger."""
    paths: sr.ProjectPaths = write_project(root, routines={
        "rtn-weekly": """
            trigger: {cron: "0 17 * * 5", timezone: Asia/Tokyo}
            action: {kind: job, job: job-summary, inputs: {period: "{{scheduled_at | iso_week}}"}}
        """,
        "rtn-cycle": "interval: 1h\naction: {kind: exec-cycle}\n",
    }, jobs={
        "job-summary": """
            name: Weekly summary
            inputs: {period: {type: string, required: true}}
            task: {mode: edit, description: "Summarise {{inputs.period}}", targets: [weekly]}
            run: {idempotency_key: "{{job_id}}:{{inputs.period}}"}
        """,
    })
    definitions: sr.Definitions = sr.validate(paths)
    assert not definitions.errors, [str(p) for p in definitions.errors]
    agent = FakeAgentExecutor()
    now = datetime(2026, 8, 7, 8, 2, tzinfo=UTC)
    report: sr.RunReport = sr.run_due(paths, now=now, agent=agent,
                                      env={"SPECDOJO_CLI": fake_cli})
    results: list[sr.AttemptReport] = report.results
    assert 0 == report.exit_code, [r.reason for r in results]
    assert ["2026-W32"] == [req.inputs["period"] for req in agent.requests]
    listing: sr.Listing = sr.list_routines(paths, now=now)
    assert all(not row.due for row in listing.rows)
    assert [] == sr.fold_views(paths, check=True)
    assert_views_match_ledgers(paths)
    outcome: sr.JobRunOutcome = sr.run_job(paths, "job-summary", {"period": "2026-W32"},
                                           agent=agent)
    assert outcome.duplicate_complete
    events = sr.history(paths, "rtn-weekly")
    assert "attempt_ended" == events[-1]["type"]
    later = datetime.now(UTC) + timedelta(days=60)  # what ended is measured by the wall clock
    planned: sr.PruneReport = sr.prune(paths, keep_days=30, keep_runs=0, dry_run=True, now=later)
    pruned: sr.PruneReport = sr.prune(paths, keep_days=30, keep_runs=0, now=later)
    gone: list[sr.Removal] = pruned.removed
    assert [r.owner for r in planned.removed] == [r.owner for r in gone]
    assert {"run", "attempt"} == {r.kind for r in gone}, [r.to_json() for r in gone]
    assert_views_match_ledgers(paths)
    return routine_statuses(replay_ledger(paths.routine_ledger))
