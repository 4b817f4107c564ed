"""Retention's pure parts (SPEC §15): the ``evidence_pruned`` events in both folds, the
selection rule, and the config's ``retention`` block."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.core import events as ev
from specdojo_routine.core import retention
from specdojo_routine.core.errors import ConfigError, CorruptLedgerError, InvalidTransition
from specdojo_routine.core.fold import RoutineFold, apply_all, routine_document
from specdojo_routine.core.jobfold import RunFold, apply_run, run_document
from specdojo_routine.core.retention import Owner, prunable
from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.ledger import codec

RUN = "JBR-x-0123456789ab"
OWNER = ev.Owner(pid=7, host="h")


def _raw(event: ev.Event, seq: int) -> dict[str, Any]:
    at = f"2026-08-07T08:00:{seq:02d}.000Z"
    return {"version": 1, "seq": seq, "type": ev.tag_of(event), "at": at} | codec.payload(event)


def _run(*events: ev.JobEvent) -> RunFold:
    state = RunFold()
    for i, event in enumerate(events, 1):
        apply_run(state, _raw(event, i), where="R", line=i)
    return state


def _created() -> ev.RunCreated:
    return ev.RunCreated(run_id=RUN, job_id="job-x", idempotency_key="k", project_id="demo",
                         trigger="manual", scheduled_at="2026-08-07T08:00:00.000Z", inputs={},
                         task={"mode": "command", "command": "true"}, checkpoint_before=None)


def _pruned(*paths: str, size: int = 10) -> ev.EvidencePruned:
    return ev.EvidencePruned(run_id=RUN, paths=paths or ("e/exec/evidence/" + RUN,), bytes=size)


ENDED = (_created(), ev.RunAttemptStarted(run_id=RUN, attempt=1, owner=OWNER),
         ev.RunAttemptEnded(run_id=RUN, attempt=1, status="succeeded", exit_code=0,
                            evidence_ref=f"e/exec/evidence/{RUN}/attempt-1/evidence.json"))


# --- the Job Run fold ------------------------------------------------------------------------


def test_pruned_run_view_keeps_its_refs_and_says_what_went() -> None:
    """The view still names the plan, result and evidence, keeps state and updated_at, and
    gains ``pruned``: when, which paths, how many bytes."""
    before = run_document(_run(*ENDED))
    after = run_document(_run(*ENDED, _pruned("e/a", "e/b", size=42)))
    assert before is not None and after is not None
    assert [{"at": "2026-08-07T08:00:04.000Z", "paths": ["e/a", "e/b"], "bytes": 42}] == \
        after.pop("pruned")  # type: ignore[misc]
    assert before == after


def test_prune_pending_until_the_run_starts_again() -> None:
    """Paths recorded as pruned stay pending (a removal a crash may have left) until an
    attempt starts again: from then on the run's files are live."""
    failed = (*ENDED[:2], ev.RunAttemptEnded(run_id=RUN, attempt=1, status="failed"))
    assert ["e/a", "e/b"] == _run(*failed, _pruned("e/a"), _pruned("e/a", "e/b")).prune_pending
    again = _run(*failed, _pruned("e/a"), ev.RunAttemptStarted(run_id=RUN, attempt=2,
                                                                owner=OWNER))
    assert [] == again.prune_pending
    doc = run_document(again)
    assert doc is not None and 1 == len(doc.get("pruned", []))


@pytest.mark.parametrize("events", [
    (_created(),),
    ENDED[:2],
], ids=["created", "running"])
def test_an_open_run_is_never_pruned(events: tuple[ev.JobEvent, ...]) -> None:
    """``evidence_pruned`` for a run that has not ended is an invalid transition."""
    with pytest.raises(InvalidTransition, match="evidence_pruned"):
        _run(*events, _pruned())


def test_pruned_with_mistyped_paths_is_corrupt() -> None:
    state = _run(*ENDED)
    bad = _raw(_pruned(), 4) | {"paths": "e/a"}
    with pytest.raises(CorruptLedgerError, match="evidence_pruned"):
        apply_run(state, bad, where="R", line=4)


# --- the routine fold ------------------------------------------------------------------------


def _routine(*events: ev.RoutineEvent) -> RoutineFold:
    state = RoutineFold()
    apply_all(state, [_raw(e, i) for i, e in enumerate(events, 1)], where="L",
              upgrade=codec.upgrade)
    return state


def _started(aid: str, transition: str = "T-02") -> ev.AttemptStarted:
    return ev.AttemptStarted(routine_id="rtn-a", attempt_id=aid,
                             transition=transition,  # type: ignore[arg-type]
                             trigger="due", scheduled_for="2026-08-07T08:00:00.000Z",
                             last_run="2026-08-07T08:00:01Z", passed_over_since=None,
                             owner=OWNER, schedule="cron")


def _ended(aid: str) -> ev.AttemptEnded:
    return ev.AttemptEnded(routine_id="rtn-a", attempt_id=aid, transition="T-03",
                           result="success", action_results=None,
                           scheduled_for="2026-08-07T08:00:00.000Z",
                           started_at="2026-08-07T08:00:01Z", completed_at="2026-08-07T08:00:02Z",
                           job_run_ids=())


def _routine_pruned(aid: str) -> ev.RoutineEvidencePruned:
    return ev.RoutineEvidencePruned(routine_id="rtn-a", attempt_id=aid,
                                    paths=[f"e/exec/evidence/routines/{aid}"], bytes=3)


def test_routine_evidence_pruned_changes_nothing_in_the_view() -> None:
    """The routine view is the same with or without the record of an ended attempt's
    evidence going (the ledger keeps it; ``history`` shows it)."""
    base = (_started("a1"), _ended("a1"), _started("a2", "T-06"))
    assert routine_document(_routine(*base), 0)["routines"] == \
        routine_document(_routine(*base, _routine_pruned("a1")), 0)["routines"]


def test_the_open_attempts_evidence_is_never_pruned() -> None:
    with pytest.raises(InvalidTransition, match="is open"):
        _routine(_started("a1"), _routine_pruned("a1"))
