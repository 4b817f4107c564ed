"""``logs`` and ``job logs``: the output an attempt left as evidence (SPEC §14). Writes nothing.

A routine attempt's actions name their evidence in ``action_ended.evidence_ref``: a delegated
call's own (``E/exec/evidence/routines/<attempt_id>/action-<n>/``) or the Job Run attempt's.
A job action recorded before that field existed is found through its Job Run's last attempt.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from specdojo_routine.app import named_run, recent
from specdojo_routine.core.attempts import ActionRecord, Attempt, Gatherer
from specdojo_routine.core.errors import RoutineError, UsageError
from specdojo_routine.core.suggest import unknown
from specdojo_routine.execute import evidence
from specdojo_routine.store.config import ProjectPaths, read_regular
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.ledger import adopt
from specdojo_routine.store.ledger.backwards import attempt_events, read_backwards


@attrs.frozen(kw_only=True, repr=False)
class Output:
    """The kept output of one action or Job Run attempt."""

    title: str  # what it is, one line
    evidence_ref: str | None
    streams: dict[str, str]  # name -> text (redacted and bounded when it was written)
    cut: tuple[str, ...] = ()  # streams that were cut to the evidence bound
    missing: str | None = None  # why nothing is shown
    reason: str | None = None  # why an action that kept output did not succeed, as recorded

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "evidence_ref": self.evidence_ref,
                "streams": self.streams, "truncated": list(self.cut), "missing": self.missing,
                "reason": self.reason}


@attrs.frozen(kw_only=True, repr=False)
class Logs:
    heading: str
    outputs: list[Output]
    subject: dict[str, Any]  # the ids, for --json


def routine_logs(
    paths: ProjectPaths, routine_id: str, *, attempt_id: str | None = None,
    action: int | None = None,
) -> Logs:
    """The output of ``routine_id``'s last attempt (or ``attempt_id``), every action or the
    ``action``-th; an unknown id, attempt or action is a usage error."""
    recent.check_routine_id(paths, routine_id, see="list")
    found = _find_attempt(paths, routine_id, attempt_id)
    gone = found.result is None and recent.RunnerCheck(paths).gone(routine_id, found.attempt_id)
    found = attrs.evolve(found, interrupted=gone)
    outputs = [_action_output(paths, a, found)
               for a in found.actions if action is None or a.index == action]
    if action is not None and not outputs:
        outputs = [_not_started(paths, found, action, running=found.state == "running")]
    heading = (f"{routine_id} attempt {found.attempt_id} (scheduled {found.scheduled_for}, "
               f"{found.state})")
    return Logs(heading=heading, outputs=outputs,
                subject={"routine_id": routine_id, "attempt_id": found.attempt_id,
                         "scheduled_for": found.scheduled_for, "result": found.result})


def _not_started(paths: ProjectPaths, found: Attempt, action: int, *, running: bool) -> Output:
    """The ``action``-th action, which ``found`` has not started: while the attempt runs, one
    of the routine's actions it has not reached yet (no output, as for an action that runs);
    otherwise - the attempt ended or its runner died, or the routine has no such action - a
    usage error."""
    rid = found.routine_id
    defined = {r.id: r for r in definitions.load_definitions(paths).routines}.get(rid)
    planned = defined.actions if defined is not None else None
    if not running or (planned is not None and action > len(planned)):
        has = (f"the routine has {len(planned)}" if running and planned is not None
               else f"it has {len(found.actions)}")
        raise UsageError(f"attempt {found.attempt_id} of {rid} has no action {action} ({has}; "
                         f"see `status {rid}`)")
    kind = f" ({planned[action - 1].kind})" if planned is not None else ""
    where = (f"is still running action {found.actions[-1].index}" if found.actions
             else "has started no action yet")
    return Output(title=f"action {action}{kind}: not started", evidence_ref=None, streams={},
                  missing=f"it has not started yet (the attempt {where}); run `logs {rid} "
                          f"--action {action}` again once it has, or watch `status {rid}`")


def _find_attempt(paths: ProjectPaths, routine_id: str, attempt_id: str | None) -> Attempt:
    gather, seen = Gatherer(), []
    for _raw, event in read_backwards(paths.routine_ledger):  # none: no lines; a dead link: refused
        if event.get("routine_id") != routine_id:
            continue
        attempt = gather.feed(event)
        if attempt is None or attempt.attempt_id is None:
            continue
        if attempt_id is None or attempt.attempt_id == attempt_id:
            return attempt
        seen.append(attempt.attempt_id)
    if attempt_id is None:
        raise RoutineError(f"{routine_id} has no attempt yet, so no output (`status "
                           f"{routine_id}` says whether and when it runs)")
    raise UsageError(unknown(f"attempt of {routine_id}", attempt_id, seen,
                             f"history {routine_id} --attempts"))


def _action_output(paths: ProjectPaths, action: ActionRecord, attempt: Attempt) -> Output:
    """The output of one action of ``attempt`` (marked interrupted when its runner died,
    SPEC §6.5): an action it never ended is interrupted, like the attempt, or has the
    outcome an operator resolved the attempt to, and will record no output."""
    routine_id = attempt.routine_id
    run = f" {action.job_run_id}" if action.job_run_id else ""
    exit_code = f", exit {action.exit_code}" if action.exit_code is not None else ""
    title = f"action {action.index} ({action.kind}){run}: {attempt.action_state(action)}{exit_code}"
    running = action.result is None and attempt.state == "running"
    if action.result is None and not running and action.job_run_id is None:
        return Output(title=title, evidence_ref=None, streams={},
                      missing=f"its runner died before it recorded any; see `status "
                              f"{routine_id}`")
    ref = action.evidence_ref
    if ref is None and action.job_run_id:  # recorded before action_ended had evidence_ref
        view: dict[str, Any] = dict(adopt.load_run(paths, action.job_run_id) or {})
        attempts = view.get("attempts") or [{}]
        ref = attempts[-1].get("evidence_ref")
    if ref is None and running:  # kept when it ends
        return Output(title=title, evidence_ref=None, streams={},
                      missing="it is still running; its output is kept when it ends")
    if ref is None:
        return Output(title=title, evidence_ref=None, streams={},
                      missing=action.reason or "no output was kept for this action")
    shown = _evidence_output(paths, title, ref, pruned=lambda: pruned_at(
        paths, ref, routine_id=routine_id, attempt_id=attempt.attempt_id,
        job_run_id=action.job_run_id))
    if action.result not in (None, "success") and action.reason:  # a stop, a timeout, ...
        shown = attrs.evolve(shown, reason=action.reason)
    return shown


def _evidence_output(paths: ProjectPaths, title: str, ref: str,
                     pruned: Callable[[], str | None]) -> Output:
    document = evidence.read_evidence(paths.root, ref, paths.evidence_dir)
    if document is None:
        at = pruned()
        return Output(title=title, evidence_ref=ref, streams={},
                      missing=f"pruned at {at} by `prune`" if at is not None
                      else "its evidence file is gone or unreadable")
    streams = evidence.streams_of(document)
    command = document.get("command")
    cut = tuple(name for name in streams if isinstance(command, dict)
                and command.get(f"{name}_truncated"))
    streams.update(_agent_logs(paths.root / ref))
    return Output(title=title, evidence_ref=ref, streams=streams, cut=cut)


def pruned_at(paths: ProjectPaths, ref: str, *, routine_id: str, attempt_id: str | None,
              job_run_id: str | None) -> str | None:
    """When ``prune`` recorded the removal of the evidence ``ref`` names (SPEC §15: the ledger
    still says what existed), or None: a Job Run's evidence is in its view's ``pruned``, a
    delegated call's in the routine ledger's ``evidence_pruned`` of its attempt (after its
    start: the ledger is read from the end back to that start, no further)."""
    if (paths.root / ref).exists():
        return None
    if job_run_id is not None:
        view: dict[str, Any] = dict(adopt.load_run(paths, job_run_id) or {})
        if (at := _pruned_by(view.get("pruned"), ref)) is not None:
            return at
    if attempt_id is None:
        return None
    for event in attempt_events(paths.routine_ledger, routine_id, attempt_id):
        if event.get("type") == "evidence_pruned" and \
                (at := _pruned_by([event], ref)) is not None:
            return at
    return None


def _pruned_by(records: object, ref: str) -> str | None:
    """The time of the removal among ``records`` (``{at, paths}``) that took ``ref``."""
    for record in records if isinstance(records, list) else []:
        removed = record.get("paths") if isinstance(record, dict) else None
        for path in removed if isinstance(removed, list) else []:
            if isinstance(path, str) and (ref == path or ref.startswith(path.rstrip("/") + "/")):
                at = record.get("at")
                return at if isinstance(at, str) else "an unknown time"
    return None


def _agent_logs(evidence_json: Path) -> dict[str, str]:
    """An agent task's logs beside the evidence (``agent-<role>.stdout.log``, SPEC §11.1)."""
    found = {}
    for log in sorted(evidence_json.parent.glob("agent-*.log")):
        try:
            text = read_regular(log).decode("utf-8", errors="replace")  # a FIFO would wait
            found[log.name[: -len(".log")]] = text
        except OSError:
            continue
    return found


def job_logs(paths: ProjectPaths, run_id: str, *, attempt: int | None = None) -> Logs:
    """The output of a Job Run's last attempt (or ``attempt``)."""
    view: dict[str, Any] = dict(named_run.load(paths, run_id))
    attempts = list(view.get("attempts") or [])
    if not attempts:
        raise RoutineError(f"Job Run {run_id} has no attempt yet, so no output")
    chosen = attempts[-1] if attempt is None else next(
        (a for a in attempts if a.get("attempt") == attempt), None)
    if chosen is None:
        raise UsageError(f"Job Run {run_id} has no attempt {attempt} (it has "
                         f"{len(attempts)}; see `job show {run_id}`)")
    exit_code = f", exit {chosen['exit_code']}" if chosen.get("exit_code") is not None else ""
    title = f"attempt {chosen.get('attempt')}: {chosen.get('status')}{exit_code}"
    ref = chosen.get("evidence_ref")
    output = (_evidence_output(paths, title, ref, pruned=lambda: _pruned_by(
        view.get("pruned"), ref)) if ref else Output(
        title=title, evidence_ref=None, streams={},
        missing=chosen.get("reason") or "no output was kept for this attempt"))
    return Logs(heading=f"{run_id} ({view.get('job_id')}, {view.get('state')})",
                outputs=[output], subject={"run_id": run_id, "attempt": chosen.get("attempt")})
