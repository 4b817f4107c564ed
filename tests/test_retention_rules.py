"""Retention's pure parts (SPEC §15): the ``evidence_pruned`` events in both folds, the
selection rule, and the config's ``retention`` block."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.core import event_parts, retention
from specdojo_routine.core import events as ev
from specdojo_routine.core import job_events as jev
from specdojo_routine.core import routine_events as rev
from specdojo_routine.core.errors import ConfigError, CorruptLedgerError, InvalidTransition
from specdojo_routine.core.fold import RoutineFold, apply_all, routine_document
from specdojo_routine.core.jobfold import RunFold, apply_run, run_document
from specdojo_routine.core.retention import Owner, prunable
from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.ledger import codec

RUN = "JBR-x-0123456789ab"
OWNER = event_parts.Owner(pid=7, host="h")


def _raw(event: ev.Event, seq: int) -> dict[str, Any]:
    at = f"2026-08-07T08:00:{seq:02d}.000Z"
    return {"version": 1, "seq": seq, "type": ev.tag_of(event), "at": at} | codec.payload(event)


def _run(*events: jev.JobEvent) -> RunFold:
    state = RunFold()
    for i, event in enumerate(events, 1):
        apply_run(state, _raw(event, i), where="R", line=i)
    return state


def _created() -> jev.RunCreated:
    return jev.RunCreated(run_id=RUN, job_id="job-x", idempotency_key="k", project_id="demo",
                         trigger="manual", scheduled_at="2026-08-07T08:00:00.000Z", inputs={},
                         task={"mode": "command", "command": "true"}, checkpoint_before=None)


def _pruned(*paths: str, size: int = 10) -> jev.EvidencePruned:
    return jev.EvidencePruned(run_id=RUN, paths=paths or ("e/exec/evidence/" + RUN,), bytes=size)


ENDED = (_created(), jev.RunAttemptStarted(run_id=RUN, attempt=1, owner=OWNER),
         jev.RunAttemptEnded(run_id=RUN, attempt=1, status="succeeded", exit_code=0,
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
    failed = (*ENDED[:2], jev.RunAttemptEnded(run_id=RUN, attempt=1, status="failed"))
    assert ["e/a", "e/b"] == _run(*failed, _pruned("e/a"), _pruned("e/a", "e/b")).prune_pending
    again = _run(*failed, _pruned("e/a"), jev.RunAttemptStarted(run_id=RUN, attempt=2,
                                                                owner=OWNER))
    assert [] == again.prune_pending
    doc = run_document(again)
    assert doc is not None and 1 == len(doc.get("pruned", []))


@pytest.mark.parametrize("events", [
    (_created(),),
    ENDED[:2],
], ids=["created", "running"])
def test_an_open_run_is_never_pruned(events: tuple[jev.JobEvent, ...]) -> None:
    """``evidence_pruned`` for a run that has not ended is an invalid transition."""
    with pytest.raises(InvalidTransition, match="evidence_pruned"):
        _run(*events, _pruned())


def test_another_tools_record_after_a_prune_keeps_what_was_pruned() -> None:
    """A record the upstream CLI rewrote after a prune (imported, superseding ours) still
    says what retention removed."""
    state = _run(*ENDED, _pruned("e/a"))
    record = {k: v for k, v in (run_document(state) or {}).items() if k != "pruned"}
    imported = jev.RunImported(run_id=RUN, record=record, source_sha256="0" * 64)
    apply_run(state, _raw(imported, 5), where="R", line=5)
    doc = run_document(state)
    assert doc is not None and [["e/a"]] == [p["paths"] for p in doc.get("pruned", [])]


def test_pruned_with_mistyped_paths_is_corrupt() -> None:
    state = _run(*ENDED)
    bad = _raw(_pruned(), 4) | {"paths": "e/a"}
    with pytest.raises(CorruptLedgerError, match="evidence_pruned"):
        apply_run(state, bad, where="R", line=4)


# --- the routine fold ------------------------------------------------------------------------


def _routine(*events: rev.RoutineEvent) -> RoutineFold:
    state = RoutineFold()
    apply_all(state, [_raw(e, i) for i, e in enumerate(events, 1)], where="L",
              upgrade=codec.upgrade)
    return state


def _started(aid: str, transition: str = "T-02") -> rev.AttemptStarted:
    return rev.AttemptStarted(routine_id="rtn-a", attempt_id=aid,
                             transition=transition,  # type: ignore[arg-type]
                             trigger="due", scheduled_for="2026-08-07T08:00:00.000Z",
                             last_run="2026-08-07T08:00:01Z", passed_over_since=None,
                             owner=OWNER, schedule="cron")


def _ended(aid: str) -> rev.AttemptEnded:
    return rev.AttemptEnded(routine_id="rtn-a", attempt_id=aid, transition="T-03",
                           result="success", action_results=None,
                           scheduled_for="2026-08-07T08:00:00.000Z",
                           started_at="2026-08-07T08:00:01Z", completed_at="2026-08-07T08:00:02Z",
                           job_run_ids=())


def _routine_pruned(aid: str) -> rev.RoutineEvidencePruned:
    return rev.RoutineEvidencePruned(routine_id="rtn-a", attempt_id=aid,
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


# --- which owners give up their files ----------------------------------------------------------

NOW = datetime(2026, 8, 7, 12, 0, tzinfo=UTC)


def _owner(key: str, days_ago: float | None, group: str = "job-x",
           began_days_ago: float | None = None) -> Owner:
    ended = None if days_ago is None else NOW - timedelta(days=days_ago)
    began = NOW - timedelta(days=days_ago if began_days_ago is None else began_days_ago) \
        if days_ago is not None or began_days_ago is not None else None
    return Owner(key=key, group=group, began_at=began, ended_at=ended)


def test_only_owners_that_ended_before_the_window_go() -> None:
    """keep_days is a window on the end time: ended earlier than now - D goes, ended at or
    after it stays."""
    owners = [_owner("old", 91), _owner("edge", 90), _owner("new", 1)]
    assert ["old"] == prunable(owners, keep_days=90, keep_runs=0, now=NOW)


def test_the_newest_n_of_each_group_stay_whatever_their_age() -> None:
    """keep_runs counts per group (a Job, a routine), newest by when they began."""
    owners = [_owner(f"x{n}", 100 + n) for n in range(5)] + \
        [_owner(f"y{n}", 100 + n, group="job-y") for n in range(2)]
    assert ["x2", "x3", "x4"] == prunable(owners, keep_days=90, keep_runs=2, now=NOW)


def test_live_and_protected_owners_stay() -> None:
    """An owner with no end (open, interrupted, waiting) and a protected one (the run a
    checkpoint names) are kept, and still count among the newest."""
    owners = [_owner("open", None, began_days_ago=200), _owner("ckpt", 150),
              _owner("gone", 120)]
    assert ["gone"] == prunable(owners, keep_days=1, keep_runs=0, now=NOW,
                                protected={"ckpt"})
    assert [] == prunable([_owner("old", 300), _owner("open", None, began_days_ago=1)],
                          keep_days=1, keep_runs=2, now=NOW)


def test_zero_keeps_nothing_that_ended() -> None:
    assert ["a", "b"] == prunable([_owner("a", 0.001), _owner("b", 5)], keep_days=0,
                                  keep_runs=0, now=NOW)


def _doc(state: str, attempts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"run_id": RUN, "job_id": "job-x", "state": state, "attempts": attempts,
            "created_at": "2026-08-01T00:00:00.000Z", "updated_at": "2026-08-03T00:00:00.000Z"}


@pytest.mark.parametrize(("state", "attempts", "ended"), [
    ("succeeded", [{"status": "succeeded", "completed_at": "2026-08-02T00:00:00.000Z"}],
     "2026-08-02T00:00:00+00:00"),
    ("failed", [{"status": "failed"}], "2026-08-03T00:00:00+00:00"),  # no completed_at
    ("running", [{"status": "running"}], None),  # open, or interrupted
    ("failed", [{"status": "running"}], None),  # an imported record mid-attempt
    ("waiting", [{"status": "succeeded", "completed_at": "2026-08-02T00:00:00.000Z"}], None),
    ("running", [], None),  # created, no attempt yet
])
def test_a_run_has_ended_when_its_state_is_final(state: str, attempts: list[dict[str, Any]],
                                                 ended: str | None) -> None:
    """A run ends with its last attempt (its completed_at, else the run's updated_at) once
    its state is final; open, interrupted, created and waiting runs have no end."""
    owner = retention.run_owner(_doc(state, attempts))
    shown = owner.ended_at.isoformat() if owner.ended_at is not None else None
    assert (ended, "job-x", datetime(2026, 8, 1, tzinfo=UTC)) == (shown, owner.group,
                                                                  owner.began_at)


def test_an_open_attempt_is_live() -> None:
    closed = retention.attempt_owner("a1", "rtn-a", started_at="2026-08-01T00:00:00Z",
                                     completed_at="2026-08-01T00:01:00Z", open_attempts={"a2"})
    still = retention.attempt_owner("a2", "rtn-a", started_at="2026-08-01T00:00:00Z",
                                    completed_at="2026-08-01T00:01:00Z", open_attempts={"a2"})
    assert (True, None) == (closed.ended_at is not None, still.ended_at)


# --- the config's retention block ----------------------------------------------------------------


def _config(tmp_path: Path, block: Any) -> Path:
    root = tmp_path / "p"
    (root / ".specdojo").mkdir(parents=True)
    project: dict[str, Any] = {"routines_path": "r", "jobs_path": "j", "execution_path": "e"}
    if block is not None:
        project["retention"] = block
    (root / ".specdojo" / "specdojo.config.json").write_bytes(
        orjson.dumps({"version": 1, "projects": {"demo": project}}))
    return root


def test_retention_defaults_and_values(tmp_path: Path) -> None:
    """Defaults keep 90 days and 50 runs, no auto; given keys replace them one by one."""
    assert retention.Retention(keep_days=90, keep_runs=50, auto=False) == \
        resolve_project(_config(tmp_path / "a", None), env={}).retention
    assert retention.Retention(keep_days=7, keep_runs=50, auto=True) == \
        resolve_project(_config(tmp_path / "b", {"keep_days": 7, "auto": True}),
                        env={}).retention


@pytest.mark.parametrize(("block", "message"), [
    ([], '"retention" must be an object'),
    ({"keep_days": -1}, "retention.keep_days must be an integer >= 0 (got -1)"),
    ({"keep_runs": "5"}, "retention.keep_runs must be an integer >= 0 (got '5')"),
    ({"keep_days": True}, "retention.keep_days must be an integer >= 0 (got True)"),
    ({"auto": "yes"}, "retention.auto must be true or false (got 'yes')"),
])
def test_a_bad_retention_block_is_a_config_error_naming_the_file(
    tmp_path: Path, block: Any, message: str,
) -> None:
    root = _config(tmp_path, block)
    with pytest.raises(ConfigError) as info:
        resolve_project(root, env={})
    text = str(info.value)
    assert (True, True, True) == (text.startswith(str(root / ".specdojo")), message in text,
                                  "\n" not in text)
