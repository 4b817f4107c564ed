"""The Job Run fold: Job Run ledger events -> view documents (pure; SPEC §7.6).

One Job Run ledger folds into a :class:`RunFold`; :func:`run_document` draws
``runs/<run_id>.json`` from it and :func:`merge_checkpoints` / :func:`job_state_document`
``job-state.json`` from the checkpoints of many. Split out of :mod:`fold` (which this module may
import, never the reverse).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import attrs

from specdojo_routine.core import review_rules
from specdojo_routine.core.errors import CorruptLedgerError, InvalidTransition
from specdojo_routine.core.event_checks import PRUNABLE_STATES as PRUNABLE_STATES
from specdojo_routine.core.event_checks import RUN_STATUSES
from specdojo_routine.core.fold import Raw
from specdojo_routine.core.timefmt import try_parse_instant

# The documents' shapes, for the type checker (see core.fold_docs: at run time a document is
# a plain dict).
if TYPE_CHECKING:
    class JobAttemptDoc(TypedDict):
        attempt: int
        started_at: str
        completed_at: NotRequired[str]
        status: str  # running | succeeded | partial | failed | noop
        exit_code: NotRequired[int]
        evidence_ref: NotRequired[str]
        reason: NotRequired[str]

    class JobRunDoc(TypedDict):
        """``runs/<run_id>.json``: the upstream Job Run record (SPEC §7.6)."""

        version: int
        run_id: str
        job_id: str
        idempotency_key: str
        project_id: str
        trigger: str
        scheduled_at: str
        created_at: str
        updated_at: str
        state: str
        inputs: dict[str, Any]
        task: dict[str, Any]
        checkpoint_before: dict[str, Any]
        checkpoint_after: NotRequired[dict[str, Any]]
        plan_ref: str
        result_ref: str
        attempts: list[JobAttemptDoc]
        review: NotRequired[dict[str, Any]]
        pruned: NotRequired[list[PrunedDoc]]

    class PrunedDoc(TypedDict):
        """One ``evidence_pruned`` of a run (SPEC §15): when, what and how many bytes."""

        at: str
        paths: list[str]
        bytes: int

    class JobCheckpointDoc(TypedDict):
        """One job of ``job-state.json``."""

        checkpoint: dict[str, Any]
        last_run_id: str
        updated_at: str
else:
    JobAttemptDoc = JobRunDoc = PrunedDoc = JobCheckpointDoc = dict


#: The Job Run states each event may follow ("new": no event yet; "created": no attempt yet,
#: shown as running) and the state it leads to (``None``: the event's ``status``).
RUN_RULES: dict[str, dict[str, str | None]] = {
    "run_created": {"new": "created"},
    "attempt_started": {"created": "running", "failed": "running", "partial": "running",
                        "waiting": "running"},
    "attempt_ended": {"running": None},
    "attempt_resolved": {"running": None},  # SPEC §7.3: an operator closed an interrupted one
    "checkpoint_advanced": {"succeeded": "succeeded", "noop": "noop"},
    # SPEC §11.3: a committed, unmerged review leaves the run waiting (None: see _next_state)
    "review_ended": {"succeeded": None, "partial": None, "failed": "failed", "noop": "noop"},
}


class InvalidRunTransition(InvalidTransition):
    """A Job Run event is not legal in the run's current state."""

    def __init__(self, run_id: str, state: str, event: str, where: str) -> None:
        self.routine_id, self.state, self.event = run_id, state, event
        Exception.__init__(self, f"{where}: event {event!r} is not allowed for Job Run "
                                 f"{run_id} in state {state!r}")


@attrs.define(repr=False)
class RunFold:
    """Accumulator of one Job Run ledger: the record so far and its checkpoint events."""

    state: str = "new"
    record: Raw = attrs.field(factory=dict)
    checkpoints: list[Raw] = attrs.field(factory=list)
    imported: bool = False  # record is another tool's record, kept in its own key order
    #: paths recorded as pruned since the run's last attempt started: a removal a crash may
    #: have left unfinished (an attempt after them brought the run's files back to life)
    prune_pending: list[str] = attrs.field(factory=list)


def _run_imported(state: RunFold, raw: Raw) -> None:
    """SPEC §10: the imported record *is* the run (first or superseding event)."""
    record = raw["record"]
    if not isinstance(record, dict) or record.get("run_id") != raw["run_id"]:
        raise TypeError("'record' (a Job Run record with the event's run_id)")
    if state.record and state.record.get("run_id") != raw["run_id"]:
        raise TypeError("'run_id' (another run's ledger)")
    if not isinstance(record.get("attempts"), list) or not isinstance(record.get("state"), str):
        raise TypeError("'record' (attempts and state)")
    pruned = state.record.get("pruned")
    state.record, state.imported = copy.deepcopy(record), True
    if pruned and "pruned" not in state.record:  # another tool's record never drops ours
        state.record["pruned"] = pruned
    state.state = record["state"]
    state.prune_pending = []
    after = record.get("checkpoint_after")
    if isinstance(after, dict) and state.state in ("succeeded", "noop"):
        state.checkpoints.append({"job_id": record.get("job_id"), "checkpoint": after,
                                  "last_run_id": raw["run_id"],
                                  "updated_at": record.get("updated_at")})


def _checkpoint_imported(state: RunFold, raw: Raw) -> None:
    """SPEC §10: a ``job-state.json`` entry recorded in the ledger of its ``last_run_id``."""
    if not isinstance(raw["checkpoint"], dict) or not isinstance(raw["updated_at"], str):
        raise TypeError("'checkpoint' or 'updated_at'")
    state.checkpoints.append({k: raw[k] for k in ("job_id", "checkpoint", "last_run_id",
                                                   "updated_at")})


_IMPORT_HANDLERS: dict[str, Callable[[RunFold, Raw], None]] = {
    "run_imported": _run_imported,
    "checkpoint_imported": _checkpoint_imported,
}


def _evidence_pruned(state: RunFold, raw: Raw, where: str, line: int) -> None:
    """SPEC §15: files around an ended run were removed. The run's state and ``updated_at``
    stand (the run did not change); the view lists what went, in ``pruned``."""
    paths, size = raw["paths"], raw["bytes"]
    if not isinstance(paths, list | tuple) or not all(isinstance(p, str) for p in paths) \
            or type(size) is not int:
        raise TypeError("'paths' or 'bytes'")
    run_id = str(state.record.get("run_id", raw["run_id"]))
    if state.state not in PRUNABLE_STATES or raw["run_id"] != run_id:
        shown = "running" if state.state == "created" else state.state
        raise InvalidRunTransition(run_id, shown, "evidence_pruned", f"{where}:{line}")
    entry = {"at": raw["at"], "paths": list(paths), "bytes": size}
    state.record.setdefault("pruned", []).append(entry)
    state.prune_pending += [p for p in paths if p not in state.prune_pending]


def apply_run(state: RunFold, raw: Raw, *, where: str, line: int) -> None:
    """Fold one (upgraded) Job Run ledger line into ``state``."""
    kind = raw.get("type")
    if kind == "evidence_pruned":
        try:
            _evidence_pruned(state, raw, where, line)
        except (KeyError, TypeError) as exc:
            raise CorruptLedgerError(where, line, f"{kind} event lacks or mistypes {exc}") from None
        return
    if isinstance(kind, str) and kind in _IMPORT_HANDLERS:
        try:
            _IMPORT_HANDLERS[kind](state, raw)
        except (KeyError, TypeError) as exc:
            raise CorruptLedgerError(where, line, f"{kind} event lacks or mistypes {exc}") from None
        return
    rules = RUN_RULES.get(kind) if isinstance(kind, str) else None
    if rules is None:
        raise CorruptLedgerError(where, line, f"unknown job event type {kind!r}")
    try:
        run_id = str(state.record.get("run_id", raw["run_id"]))
        if state.state not in rules or raw["run_id"] != run_id or not _run_ok(state, raw):
            shown = "running" if state.state == "created" else state.state
            event = f"{kind} (attempt {raw['attempt']})" if "attempt" in raw else str(kind)
            raise InvalidRunTransition(run_id, shown, event, f"{where}:{line}")
        _RUN_HANDLERS[str(kind)](state, raw, raw["at"])
        state.state = rules[state.state] or _next_state(state.state, raw)
        state.record["updated_at"] = raw["at"]
    except (KeyError, TypeError) as exc:
        raise CorruptLedgerError(where, line, f"{kind} event lacks or mistypes {exc}") from None


def _next_state(current: str, raw: Raw) -> str:
    if raw["type"] == "review_ended":  # the rule the attempt's own outcome follows
        return review_rules.state_after(current, raw)
    return str(raw["status"])


def _run_ok(state: RunFold, raw: Raw) -> bool:
    """The attempt number (and status) an attempt event must carry."""
    attempts = state.record.get("attempts", [])
    if raw["type"] == "attempt_started":
        return bool(raw["attempt"] == len(attempts) + 1)
    if raw["type"] == "attempt_ended":
        return bool(raw["attempt"] == attempts[-1]["attempt"] and raw["status"] in RUN_STATUSES)
    if raw["type"] == "attempt_resolved":
        return bool(raw["attempt"] == attempts[-1]["attempt"]
                    and raw["status"] in ("succeeded", "failed", "noop")
                    and isinstance(raw["note"], str) and isinstance(raw["resolved_by"], str))
    if raw["type"] == "review_ended":  # a line without ``attempt`` reviewed the last one
        return bool(raw.get("attempt") in (None, attempts[-1]["attempt"])
                    and isinstance(raw["merged"], bool))
    return raw["type"] != "checkpoint_advanced" or bool(raw["job_id"] == state.record["job_id"])


def _run_created(state: RunFold, raw: Raw, at: str) -> None:
    keys = ("run_id", "job_id", "idempotency_key", "project_id", "trigger", "scheduled_at")
    state.record = {k: raw[k] for k in keys} | {"created_at": at, "updated_at": at}
    state.record |= {"inputs": raw["inputs"], "task": raw["task"], "attempts": []}
    state.record |= {"checkpoint_before": raw["checkpoint_before"] or {}, "checkpoint_after": None}


def _run_attempt_started(state: RunFold, raw: Raw, at: str) -> None:
    state.record["attempts"].append({"attempt": raw["attempt"], "started_at": at,
                                     "status": "running"})
    state.prune_pending = []  # the run is alive again: files written from here on are its own


def _run_attempt_ended(state: RunFold, raw: Raw, at: str) -> None:
    attempts = state.record["attempts"]
    opened = attempts[-1]
    ended = {"attempt": opened["attempt"], "started_at": opened["started_at"],
             "completed_at": at, "status": raw["status"]}
    ended |= {k: raw[k] for k in ("exit_code", "evidence_ref", "reason") if raw.get(k) is not None}
    ended |= {k: v for k, v in opened.items() if k not in ended}  # never drop a key (§10)
    attempts[-1] = ended


def _run_attempt_resolved(state: RunFold, raw: Raw, at: str) -> None:
    """The open attempt ends with the operator's status; its reason says who and why."""
    why = raw.get("reason") or f"resolved by {raw['resolved_by']}: {raw['note']}"
    _run_attempt_ended(state, {"status": raw["status"], "reason": why}, at)
    state.record["attempts"][-1]["resolved_by"] = raw["resolved_by"]


def _checkpoint_advanced(state: RunFold, raw: Raw, at: str) -> None:
    values = raw["values"]
    if not isinstance(values, dict):
        raise TypeError("'values'")
    state.record["checkpoint_after"] = values
    entry = {"checkpoint": values, "last_run_id": raw["run_id"], "updated_at": at}
    state.checkpoints.append({"job_id": raw["job_id"], **entry})


def _review_ended(state: RunFold, raw: Raw, at: str) -> None:
    """The view's ``review``: the attempt reviewed (null for a line that does not say),
    then what the review found."""
    review = {k: raw.get(k) for k in ("attempt", "verdict", "merged", "commit")}
    if raw.get("merge_commit"):
        review["merge_commit"] = raw["merge_commit"]
    state.record["review"] = review | {"reason": raw.get("reason")}


_RUN_HANDLERS: dict[str, Callable[[RunFold, Raw, str], None]] = {
    "run_created": _run_created,
    "attempt_started": _run_attempt_started,
    "attempt_ended": _run_attempt_ended,
    "attempt_resolved": _run_attempt_resolved,
    "checkpoint_advanced": _checkpoint_advanced,
    "review_ended": _review_ended,
}


def run_document(state: RunFold) -> JobRunDoc | None:
    """The ``runs/<run_id>.json`` document, keys in upstream order (None: no run yet)."""
    r = state.record
    if not r:
        return None
    if state.imported:  # the record in its own key order, plus what happened since (§10)
        record: Raw = dict(r)
        record["state"] = "running" if state.state == "created" else state.state
        return record  # type: ignore[return-value]
    doc: Raw = {"version": 1} | {k: r[k] for k in _RUN_KEYS}
    doc["state"] = "running" if state.state == "created" else state.state
    doc |= {"inputs": r["inputs"], "task": r["task"], "checkpoint_before": r["checkpoint_before"]}
    if r["checkpoint_after"] is not None:
        doc["checkpoint_after"] = r["checkpoint_after"]
    doc["plan_ref"] = f"exec/plans/{r['run_id']}-plan.md"
    doc["result_ref"] = f"exec/results/{r['run_id']}-result.md"
    doc["attempts"] = r["attempts"]
    if "review" in r:  # SPEC §11.4: the view gains the last review
        doc["review"] = r["review"]
    if "pruned" in r:  # SPEC §15: what retention removed (the refs above name what existed)
        doc["pruned"] = r["pruned"]
    return doc  # type: ignore[return-value]


def earlier_shapes(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``doc`` as an earlier version of this fold drew it, when that differs: a ``review``
    without its ``attempt``. A view such a version published is ours, only stale (the next
    fold republishes it), never another tool's record that contradicts the ledger (SPEC §10)."""
    review = doc.get("review")
    if not isinstance(review, dict) or "attempt" not in review:
        return []
    return [{**doc, "review": {k: v for k, v in review.items() if k != "attempt"}}]


_RUN_KEYS = ("run_id", "job_id", "idempotency_key", "project_id", "trigger", "scheduled_at",
             "created_at", "updated_at")


def merge_checkpoints(jobs: dict[str, JobCheckpointDoc], candidates: Iterable[Raw]) -> None:
    """Keep, per job, the latest checkpoint (by ``updated_at``, ties by run id, then order).
    Each entry's ``updated_at`` is parsed once, however many candidates it is compared with."""
    kept: dict[str, tuple[datetime, str]] = {}  # the recency of the entry kept, per job
    for c in candidates:
        job_id = c["job_id"]
        best = kept.get(job_id)
        if best is None and job_id in jobs:
            best = kept[job_id] = _recency(jobs[job_id])
        recency = _recency(c)
        if best is None or recency >= best:
            jobs[job_id] = {"checkpoint": c["checkpoint"], "last_run_id": c["last_run_id"],
                            "updated_at": c["updated_at"]}
            kept[job_id] = recency


def _recency(entry: Mapping[str, Any]) -> tuple[datetime, str]:
    return try_parse_instant(entry["updated_at"]) or datetime.min.replace(tzinfo=UTC), str(
        entry["last_run_id"]
    )


def job_state_document(jobs: Mapping[str, JobCheckpointDoc]) -> dict[str, Any]:
    """The ``job-state.json`` document, jobs sorted by id."""
    return {"version": 1, "jobs": {job_id: jobs[job_id] for job_id in sorted(jobs)}}
