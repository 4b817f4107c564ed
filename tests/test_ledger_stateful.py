"""Stateful test of the ledger and its views (SPEC §5): two handles on one routine ledger in a
temp project, plus an independent pure model. After every step: the fold equals the model, the
incremental fold equals the full fold, and seq is contiguous."""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from specdojo_routine.core import event_parts
from specdojo_routine.core import routine_events as rev
from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.ledger import views

ROUTINES = st.sampled_from(["rtn-a", "rtn-b", "rtn-c"])
RESULTS = st.sampled_from(rev.RESULTS)
START = {"never": "T-02", "success": "T-06", "failure": "T-07", "skipped": "T-08",
         "partial": "T-06"}
OWNER = event_parts.Owner(pid=99, host="model-host")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 8, 7, 8, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=61)
        return self.now


def fresh(rid: str, model: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return model.setdefault(rid, {
        "status": "never", "last_run": None, "last_result": None, "last_scheduled_for": None,
        "last_action_results": None, "last_reason": None, "attempt_id": None, "digest": None,
        "last_accounted_for": None, "held": False, "hold_attempt_id": None,
        "held_occurrences": [], "last_missed": None, "pause": None, "open_attempt": None})


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="ledger-machine-"))
        (self.tmp / ".specdojo").mkdir()
        (self.tmp / ".specdojo" / "specdojo.config.json").write_bytes(orjson.dumps({
            "version": 1, "projects": {"p": {"routines_path": "r", "jobs_path": "j",
                                             "execution_path": "e"}}}))
        self.paths = resolve_project(self.tmp)
        self.clock = Clock()
        self.handles = [ledger.Ledger(self.paths.routine_ledger, clock=self.clock),
                        ledger.Ledger(self.paths.routine_ledger, clock=self.clock)]
        self.model: dict[str, dict[str, Any]] = {}
        self.appended = 0
        self.torn = False
        self.n = 0

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def append(self, handle: int, event: rev.RoutineEvent) -> None:
        seq = self.handles[handle].append(event)
        self.appended += 1
        self.torn = False
        assert self.appended == seq

    def stamp(self, fmt: str) -> str:
        return self.clock.now.strftime(fmt)

    def running(self) -> list[str]:
        return sorted(r for r, e in self.model.items() if e["status"] == "running")

    # --- rules ---------------------------------------------------------------------------------

    @rule(handle=st.integers(0, 1), rid=ROUTINES, digest=st.text("abc", min_size=1, max_size=3))
    def register(self, handle: int, rid: str, digest: str) -> None:
        self.append(handle, rev.RoutineRegistered(routine_id=rid, digest=digest, path="p.yaml"))
        fresh(rid, self.model)["digest"] = digest

    @rule(handle=st.integers(0, 1), rid=ROUTINES, trigger=st.sampled_from(["due", "id"]),
          schedule=st.sampled_from(["cron", "interval"]))
    def start(self, handle: int, rid: str, trigger: str, schedule: str) -> None:
        entry = fresh(rid, self.model)
        if entry["status"] == "running":
            return
        self.n += 1
        aid, last_run = f"att-{self.n}", self.stamp("%Y-%m-%dT%H:%M:%SZ")
        scheduled = self.stamp("%Y-%m-%dT%H:%M:00.000Z")
        self.append(handle, rev.AttemptStarted(
            routine_id=rid, attempt_id=aid, transition=START[entry["status"]],  # type: ignore[arg-type]
            trigger=trigger, scheduled_for=scheduled, last_run=last_run,  # type: ignore[arg-type]
            passed_over_since=None, owner=OWNER, schedule=schedule))  # type: ignore[arg-type]
        entry.update(status="running", last_run=last_run, attempt_id=aid, open_attempt={
            "attempt_id": aid, "trigger": trigger, "scheduled_for": scheduled,
            "started_at": last_run, "owner": {"pid": 99, "host": "model-host"}, "actions": [],
            "on_failure": None})
        if schedule == "cron":  # due and explicit runs alike (SPEC §4)
            entry["last_scheduled_for"] = scheduled
        if trigger in ("due", "id"):
            entry["last_accounted_for"] = scheduled

    @precondition(lambda self: self.running())
    @rule(handle=st.integers(0, 1), data=st.data(), result=RESULTS,
          run_id=st.none() | st.just("JBR-job-1"), reason=st.none() | st.just("why"))
    def action(self, handle: int, data: st.DataObject, result: str, run_id: str | None,
               reason: str | None) -> None:
        rid = data.draw(st.sampled_from(self.running()))
        opened = self.model[rid]["open_attempt"]
        index = len(opened["actions"]) + 1
        self.append(handle, rev.ActionStarted(routine_id=rid, attempt_id=opened["attempt_id"],
                                             index=index, kind="job"))
        opened["actions"].append({"index": index, "kind": "job"})
        if data.draw(st.booleans()):
            self.append(handle, rev.ActionEnded(
                routine_id=rid, attempt_id=opened["attempt_id"], index=index, kind="job",
                result=result, reason=reason, job_run_id=run_id))  # type: ignore[arg-type]
            opened["actions"][-1].update({"result": result} | ({"reason": reason} if reason else {})
                                         | ({"job_run_id": run_id} if run_id else {}))

    @precondition(lambda self: self.running())
    @rule(handle=st.integers(0, 1), data=st.data(), result=RESULTS, listed=st.booleans(),
          resolve=st.booleans())
    def close(self, handle: int, data: st.DataObject, result: str, listed: bool,
              resolve: bool) -> None:
        rid = data.draw(st.sampled_from(self.running()))
        entry = self.model[rid]
        aid = entry["open_attempt"]["attempt_id"]
        transition = rev.RESULT_TRANSITIONS[result]
        reason: str | None
        results = [{"index": a["index"], "kind": a["kind"], "result": a["result"]}
                   for a in entry["open_attempt"]["actions"] if "result" in a] if listed else None
        if resolve:
            self.append(handle, rev.AttemptResolved(
                routine_id=rid, attempt_id=aid, transition=transition,  # type: ignore[arg-type]
                result=result, note="by hand", resolved_by="ops"))  # type: ignore[arg-type]
            results, reason = None, "by hand"
        else:
            reason = None if result == "success" else f"{result} reason"
            self.append(handle, rev.AttemptEnded(
                routine_id=rid, attempt_id=aid, transition=transition,  # type: ignore[arg-type]
                result=result, reason=reason,  # type: ignore[arg-type]
                action_results=None if results is None else [rev.ActionResult(**r)
                                                             for r in results],
                scheduled_for=entry["open_attempt"]["scheduled_for"],
                started_at=entry["open_attempt"]["started_at"],
                completed_at=self.stamp("%Y-%m-%dT%H:%M:%SZ"), job_run_ids=[]))
        entry.update(status=result, last_result=result, last_reason=reason,
                     last_action_results=results, open_attempt=None)

    @precondition(lambda self: not self.torn)
    @rule(cut=st.integers(1, 60))
    def tear(self, cut: int) -> None:
        """A writer dies mid-line: a fragment without its newline is left at the end."""
        fragment = b'{"version":1,"seq":%d,"type":"attempt_started","at":"2026-' % (
            self.appended + 1)
        self.paths.routine_ledger.parent.mkdir(parents=True, exist_ok=True)
        with self.paths.routine_ledger.open("ab") as f:
            f.write(fragment[:cut])
        self.torn = True

    @rule()
    def refresh(self) -> None:
        """Publish the view incrementally (the next checks resume from it)."""
        views.refresh_routine_view(self.paths)

    @rule()
    def drop_view(self) -> None:
        self.paths.routine_state.unlink(missing_ok=True)

    # --- invariants ----------------------------------------------------------------------------

    @invariant()
    def seq_is_contiguous(self) -> None:
        seqs = [line.raw["seq"] for line in ledger.read(self.paths.routine_ledger, torn="stop")]
        assert list(range(1, self.appended + 1)) == seqs

    @invariant()
    def fold_equals_model(self) -> None:
        full = views.replay(self.paths.routine_ledger)["routine-state.json"]
        absent = ("last_scheduled_for", "last_action_results")  # absent when none (SPEC §5)
        expected = {r: {k: v for k, v in self.model[r].items() if k not in absent or v is not None}
                    for r in sorted(self.model)}
        assert expected == full["routines"]
        assert self.appended == full["ledger"]["seq"]

    @invariant()
    def incremental_equals_full(self) -> None:
        incremental = views.load_routine_view(self.paths)
        assert views.replay(self.paths.routine_ledger)["routine-state.json"] == \
            incremental.document
        assert (self.appended + 1 if self.torn else None) == incremental.torn_line


LedgerMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=25,
                                           deadline=None)
TestLedgerMachine = LedgerMachine.TestCase
