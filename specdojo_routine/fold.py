"""The fold: ledger events -> view documents (pure; SPEC §5, §7.6, seed 000).

The routine state machine is one table, :data:`TRANSITIONS`, which the fold interprets, the tests
enumerate and :func:`render_state_diagram` draws. The routine fold works on the parsed (raw) dicts
of ledger lines, dispatching on ``type`` (no attrs/cattrs objects per line: it is the hot path).
Raw events must be at the current version; the caller passes ``codec.upgrade`` for older ones.
Line ``n`` of a ledger has ``seq`` ``n``, so errors name lines by seq.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, TypedDict

import attrs

from .errors import CorruptLedgerError, InvalidTransition
from .events import CURRENT_VERSION, RUN_STATUSES
from .timeutil import try_parse_instant

Raw = dict[str, Any]
Status = Literal["never", "running", "success", "failure", "skipped"]
STATES: tuple[Status, ...] = ("never", "running", "success", "failure", "skipped")


@attrs.frozen(kw_only=True)
class Transition:
    """One legal routine transition. ``source=None``: the routine is not known yet."""

    event: str
    source: Status | None
    target: Status
    label: str | None = None  # T-xx; an event that declares a ``transition`` must match it
    note: str = ""


_ENDS: tuple[tuple[Status, str], ...] = (("success", "T-03"), ("failure", "T-04"),
                                         ("skipped", "T-05"))
TRANSITIONS: tuple[Transition, ...] = (
    Transition(event="routine_registered", source=None, target="never", label="T-01"),
    *(Transition(event="routine_registered", source=s, target=s, note="keeps the state")
      for s in STATES),
    Transition(event="attempt_started", source="never", target="running", label="T-02"),
    Transition(event="attempt_started", source="success", target="running", label="T-06"),
    Transition(event="attempt_started", source="failure", target="running", label="T-07"),
    Transition(event="attempt_started", source="skipped", target="running", label="T-08"),
    *(Transition(event="attempt_ended", source="running", target=r, label=t) for r, t in _ENDS),
    *(Transition(event="attempt_resolved", source="running", target=r, label=t, note="operator")
      for r, t in _ENDS),
    Transition(event="action_started", source="running", target="running"),
    Transition(event="action_ended", source="running", target="running"),
)
#: Events whose target state is their ``result``: their rows are keyed by (source, result).
BY_RESULT = frozenset({"attempt_ended", "attempt_resolved"})


def _index(event: str) -> dict[Any, Transition]:
    rows = (t for t in TRANSITIONS if t.event == event)
    return {((t.source, t.target) if event in BY_RESULT else t.source): t for t in rows}


_REGISTERED, _STARTED, _ENDED, _RESOLVED, _ACTION_STARTED, _ACTION_ENDED = map(_index, (
    "routine_registered", "attempt_started", "attempt_ended", "attempt_resolved",
    "action_started", "action_ended"))


# --- view documents ----------------------------------------------------------------------------


class OwnerDoc(TypedDict):
    pid: int
    host: str


class ActionDoc(TypedDict):
    index: int
    kind: str
    result: NotRequired[str]
    reason: NotRequired[str]
    job_run_id: NotRequired[str]


class ActionResultDoc(TypedDict):
    index: int
    kind: str
    result: str


class OpenAttemptDoc(TypedDict):
    """Everything needed to close an interrupted attempt (SPEC §6.5)."""

    attempt_id: str
    trigger: str
    scheduled_for: str
    started_at: str
    owner: OwnerDoc
    actions: list[ActionDoc]


class RoutineEntryDoc(TypedDict):
    """One routine of ``routine-state.json`` (a superset of upstream's entry)."""

    status: Status
    last_run: str | None
    last_result: str | None
    last_scheduled_for: str | None
    last_action_results: list[ActionResultDoc] | None
    last_reason: str | None
    attempt_id: str | None
    digest: str | None
    open_attempt: OpenAttemptDoc | None


class LedgerPositionDoc(TypedDict):
    seq: int
    offset: int


class RoutineStateDoc(TypedDict):
    """``routine-state.json``."""

    version: int
    ledger: LedgerPositionDoc
    routines: dict[str, RoutineEntryDoc]


def never_entry() -> RoutineEntryDoc:
    """The entry of a routine the ledger has never mentioned."""
    return {"status": "never", "last_run": None, "last_result": None, "last_scheduled_for": None,
            "last_action_results": None, "last_reason": None, "attempt_id": None, "digest": None,
            "open_attempt": None}


@attrs.frozen(kw_only=True)
class RoutineView:
    """The routine view document, plus a torn tail left out of it (read-only loads only)."""

    document: RoutineStateDoc
    torn_line: int | None = None

    @property
    def routines(self) -> dict[str, RoutineEntryDoc]:
        """Entries by routine id (only routines the ledger mentions)."""
        return self.document["routines"]

    @property
    def seq(self) -> int:
        return self.document["ledger"]["seq"]

    @property
    def offset(self) -> int:
        return self.document["ledger"]["offset"]

    def get(self, routine_id: str) -> RoutineEntryDoc:
        """The routine's entry; a routine never seen is ``never``."""
        return self.document["routines"].get(routine_id) or never_entry()


# --- the routine fold (hot path) ---------------------------------------------------------------


_Handler = Callable[[dict[str, Raw], Raw], None]


@attrs.define
class RoutineFold:
    """The fold's accumulator: last applied seq and one internal entry per routine. An entry
    keeps the raw ``attempt_started`` of its open attempt and raw action events by index."""

    seq: int = 0
    routines: dict[str, Raw] = attrs.field(factory=dict)


def _create(routines: dict[str, Raw], routine_id: Any) -> Raw:
    if type(routine_id) is not str:
        raise TypeError("routine_id must be a string")
    entry: Raw = {**never_entry(), "open": None, "actions": None}
    del entry["open_attempt"]
    routines[routine_id] = entry
    return entry


def _illegal(raw: Raw, entry: Raw, detail: str = "") -> InvalidTransition:
    parts = [raw[k] for k in ("transition", "result") if isinstance(raw.get(k), str)]
    parts += [detail] if detail else []
    event = raw["type"] + (" (" + ", ".join(parts) + ")" if parts else "")
    return InvalidTransition(raw["routine_id"], entry["status"], event)


def _mismatch(raw: Raw, entry: Raw) -> InvalidTransition:
    opened = entry["open"]["attempt_id"]
    return _illegal(raw, entry, f"attempt {raw['attempt_id']}; the open attempt is {opened}")


def _registered(routines: dict[str, Raw], raw: Raw) -> None:
    entry = routines.get(raw["routine_id"])
    if entry is None:
        entry = _create(routines, raw["routine_id"])  # T-01
    elif entry["status"] not in _REGISTERED:
        raise _illegal(raw, entry)
    entry["status"] = _REGISTERED[entry["status"]].target
    entry["digest"] = raw["digest"]


def _started(routines: dict[str, Raw], raw: Raw) -> None:
    entry = routines.get(raw["routine_id"]) or _create(routines, raw["routine_id"])
    row = _STARTED.get(entry["status"])
    if row is None or row.label != raw["transition"]:
        raise _illegal(raw, entry)
    owner = raw["owner"]
    if not isinstance(owner, dict) or "pid" not in owner or "host" not in owner:
        raise TypeError("owner must be an object with pid and host")
    entry["status"] = row.target
    entry["last_run"] = raw["last_run"]
    entry["attempt_id"] = raw["attempt_id"]
    if raw["trigger"] == "due" and raw["schedule"] == "cron":
        entry["last_scheduled_for"] = raw["scheduled_for"]
    entry["open"] = raw
    entry["actions"] = {}


def _action_handler(rows: dict[Any, Transition]) -> _Handler:
    def apply(routines: dict[str, Raw], raw: Raw) -> None:
        entry = routines.get(raw["routine_id"]) or _create(routines, raw["routine_id"])
        if entry["status"] not in rows:
            raise _illegal(raw, entry)
        if entry["open"]["attempt_id"] != raw["attempt_id"]:
            raise _mismatch(raw, entry)
        if not isinstance(raw["kind"], str):
            raise TypeError("kind must be a string")
        entry["actions"][raw["index"]] = raw

    return apply


def _ended(routines: dict[str, Raw], raw: Raw) -> None:
    entry = routines.get(raw["routine_id"]) or _create(routines, raw["routine_id"])
    row = _ENDED.get((entry["status"], raw["result"]))
    if row is None or row.label != raw["transition"]:
        raise _illegal(raw, entry)
    if entry["open"]["attempt_id"] != raw["attempt_id"]:
        raise _mismatch(raw, entry)
    results = raw["action_results"]
    if results is not None and not _results_ok(results):
        raise TypeError("action_results must be null or a list of {index, kind, result}")
    entry["status"] = entry["last_result"] = row.target
    entry["last_reason"] = raw.get("reason")
    entry["last_action_results"] = results
    entry["open"] = entry["actions"] = None


def _results_ok(results: Any) -> bool:
    keys = ("index", "kind", "result")
    return isinstance(results, list) and all(
        isinstance(r, dict) and all(k in r for k in keys) for r in results
    )


def _resolved(routines: dict[str, Raw], raw: Raw) -> None:
    entry = routines.get(raw["routine_id"]) or _create(routines, raw["routine_id"])
    row = _RESOLVED.get((entry["status"], raw["result"]))
    if row is None or row.label != raw["transition"] or not isinstance(raw["resolved_by"], str):
        raise _illegal(raw, entry)
    if entry["open"]["attempt_id"] != raw["attempt_id"]:
        raise _mismatch(raw, entry)
    entry["status"] = entry["last_result"] = row.target
    entry["last_reason"] = raw["note"]  # the operator's note is the reason
    entry["last_action_results"] = None
    entry["open"] = entry["actions"] = None


_HANDLERS: dict[str, _Handler] = {
    "routine_registered": _registered,
    "attempt_started": _started,
    "action_started": _action_handler(_ACTION_STARTED),
    "action_ended": _action_handler(_ACTION_ENDED),
    "attempt_ended": _ended,
    "attempt_resolved": _resolved,
}
assert set(_HANDLERS) == {t.event for t in TRANSITIONS}


def apply_all(
    state: RoutineFold, raws: Iterable[Any], *, where: str, upgrade: Callable[[Raw], Raw]
) -> None:
    """Fold parsed routine-ledger lines (the ones after ``state.seq``) into ``state``.

    A line that is not a valid event (unknown type, missing field, wrong seq) raises
    :class:`CorruptLedgerError`, an event the table forbids :class:`InvalidTransition`, both
    naming ``where:<line>``. Errors raised by ``raws`` itself propagate unchanged, with
    ``state.seq`` the last line folded.
    """
    routines, handlers, seq, current = state.routines, _HANDLERS, state.seq, CURRENT_VERSION
    try:
        for raw in raws:
            seq += 1
            try:
                if raw.get("version") != current:
                    raw = upgrade(raw)
                if raw["seq"] != seq:
                    raise ValueError(f"seq {raw['seq']!r} where {seq} was expected")
                handlers[raw["type"]](routines, raw)
            except InvalidTransition as exc:
                at = f"{where}:{seq}"
                raise InvalidTransition(exc.routine_id, exc.state, exc.event, at) from None
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                raise CorruptLedgerError(where, seq, _reason(raw, exc)) from None
    finally:
        state.seq = seq


def _reason(raw: Any, exc: Exception) -> str:
    if not isinstance(raw, dict):
        return "line is not a JSON object"
    kind = raw.get("type")
    if isinstance(exc, KeyError):
        if not isinstance(kind, str) or kind not in _HANDLERS:
            return f"unknown routine event type {kind!r}"
        return f"{kind} event lacks field {exc.args[0]!r}"
    if isinstance(exc, ValueError):
        return str(exc)
    return f"{kind} event has a field of the wrong type ({exc})"


def _action_doc(raw: Raw) -> ActionDoc:
    doc: Raw = {"index": raw["index"], "kind": raw["kind"]}
    doc |= {k: raw[k] for k in ("result", "reason", "job_run_id") if raw.get(k) is not None}
    return doc  # type: ignore[return-value]


def _entry_doc(entry: Raw) -> RoutineEntryDoc:
    doc: Raw = {k: entry[k] for k in never_entry() if k != "open_attempt"}
    if doc["last_action_results"] is not None:
        doc["last_action_results"] = [{"index": r["index"], "kind": r["kind"],
                                       "result": r["result"]} for r in doc["last_action_results"]]
    doc["open_attempt"] = started = entry["open"]
    if started is not None:
        doc["open_attempt"] = {
            "attempt_id": started["attempt_id"], "trigger": started["trigger"],
            "scheduled_for": started["scheduled_for"], "started_at": started["last_run"],
            "owner": {"pid": started["owner"]["pid"], "host": started["owner"]["host"]},
            "actions": [_action_doc(a) for a in entry["actions"].values()],
        }
    return doc  # type: ignore[return-value]


def routine_document(state: RoutineFold, offset: int) -> RoutineStateDoc:
    """The ``routine-state.json`` document: routines sorted by id, keys in a fixed order."""
    routines = {rid: _entry_doc(state.routines[rid]) for rid in sorted(state.routines)}
    return {"version": 1, "ledger": {"seq": state.seq, "offset": offset}, "routines": routines}


def fold_from_document(doc: Any) -> RoutineFold:
    """The accumulator a published document holds (to continue folding after it).

    ``ValueError`` if ``doc`` is not exactly a document this fold writes.
    """
    try:
        routines = {rid: _from_entry_doc(e) for rid, e in doc["routines"].items()}
        state = RoutineFold(seq=doc["ledger"]["seq"], routines=routines)
        offset = doc["ledger"]["offset"]
        if type(state.seq) is not int or type(offset) is not int:
            raise ValueError("not a routine view document (bad ledger position)")
        if routine_document(state, offset) != doc:
            raise ValueError("not in canonical form")
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a routine view document ({exc!r})") from None
    return state


def _from_entry_doc(doc: Raw) -> Raw:
    opened = doc["open_attempt"]
    if doc["status"] not in STATES or (opened is None) != (doc["status"] != "running"):
        raise ValueError("status and open_attempt disagree")
    entry = {k: v for k, v in doc.items() if k != "open_attempt"}
    entry["open"] = None if opened is None else {**opened, "last_run": opened["started_at"]}
    entry["actions"] = None if opened is None else {a["index"]: a for a in opened["actions"]}
    return entry


# --- Job Run ledgers -------------------------------------------------------------------------


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


class JobCheckpointDoc(TypedDict):
    """One job of ``job-state.json``."""

    checkpoint: dict[str, Any]
    last_run_id: str
    updated_at: str


#: The Job Run states each event may follow ("new": no event yet; "created": no attempt yet,
#: shown as running) and the state it leads to (``None``: the event's ``status``).
RUN_RULES: dict[str, dict[str, str | None]] = {
    "run_created": {"new": "created"},
    "attempt_started": {"created": "running", "failed": "running", "partial": "running"},
    "attempt_ended": {"running": None},
    "checkpoint_advanced": {"succeeded": "succeeded", "noop": "noop"},
}


class InvalidRunTransition(InvalidTransition):
    """A Job Run event is not legal in the run's current state."""

    def __init__(self, run_id: str, state: str, event: str, where: str) -> None:
        self.routine_id, self.state, self.event = run_id, state, event
        Exception.__init__(self, f"{where}: event {event!r} is not allowed for Job Run "
                                 f"{run_id} in state {state!r}")


@attrs.define
class RunFold:
    """Accumulator of one Job Run ledger: the record so far and its checkpoint events."""

    state: str = "new"
    record: Raw = attrs.field(factory=dict)
    checkpoints: list[Raw] = attrs.field(factory=list)


def apply_run(state: RunFold, raw: Raw, *, where: str, line: int) -> None:
    """Fold one (upgraded) Job Run ledger line into ``state``."""
    kind = raw.get("type")
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
        state.state = rules[state.state] or raw["status"]
        state.record["updated_at"] = raw["at"]
    except (KeyError, TypeError) as exc:
        raise CorruptLedgerError(where, line, f"{kind} event lacks or mistypes {exc}") from None


def _run_ok(state: RunFold, raw: Raw) -> bool:
    """The attempt number (and status) an attempt event must carry."""
    attempts = state.record.get("attempts", [])
    if raw["type"] == "attempt_started":
        return bool(raw["attempt"] == len(attempts) + 1)
    if raw["type"] == "attempt_ended":
        return bool(raw["attempt"] == attempts[-1]["attempt"] and raw["status"] in RUN_STATUSES)
    return raw["type"] != "checkpoint_advanced" or bool(raw["job_id"] == state.record["job_id"])


def _run_created(state: RunFold, raw: Raw, at: str) -> None:
    keys = ("run_id", "job_id", "idempotency_key", "project_id", "trigger", "scheduled_at")
    state.record = {k: raw[k] for k in keys} | {"created_at": at, "updated_at": at}
    state.record |= {"inputs": raw["inputs"], "task": raw["task"], "attempts": []}
    state.record |= {"checkpoint_before": raw["checkpoint_before"] or {}, "checkpoint_after": None}


def _run_attempt_started(state: RunFold, raw: Raw, at: str) -> None:
    state.record["attempts"].append({"attempt": raw["attempt"], "started_at": at,
                                     "status": "running"})


def _run_attempt_ended(state: RunFold, raw: Raw, at: str) -> None:
    attempts = state.record["attempts"]
    opened = attempts[-1]
    ended = {"attempt": opened["attempt"], "started_at": opened["started_at"],
             "completed_at": at, "status": raw["status"]}
    ended |= {k: raw[k] for k in ("exit_code", "evidence_ref", "reason") if raw.get(k) is not None}
    attempts[-1] = ended


def _checkpoint_advanced(state: RunFold, raw: Raw, at: str) -> None:
    values = raw["values"]
    if not isinstance(values, dict):
        raise TypeError("'values'")
    state.record["checkpoint_after"] = values
    entry = {"checkpoint": values, "last_run_id": raw["run_id"], "updated_at": at}
    state.checkpoints.append({"job_id": raw["job_id"], **entry})


_RUN_HANDLERS: dict[str, Callable[[RunFold, Raw, str], None]] = {
    "run_created": _run_created,
    "attempt_started": _run_attempt_started,
    "attempt_ended": _run_attempt_ended,
    "checkpoint_advanced": _checkpoint_advanced,
}


def run_document(state: RunFold) -> JobRunDoc | None:
    """The ``runs/<run_id>.json`` document, keys in upstream order (None: no run yet)."""
    r = state.record
    if not r:
        return None
    doc: Raw = {"version": 1} | {k: r[k] for k in _RUN_KEYS}
    doc["state"] = "running" if state.state == "created" else state.state
    doc |= {"inputs": r["inputs"], "task": r["task"], "checkpoint_before": r["checkpoint_before"]}
    if r["checkpoint_after"] is not None:
        doc["checkpoint_after"] = r["checkpoint_after"]
    doc["plan_ref"] = f"exec/plans/{r['run_id']}-plan.md"
    doc["result_ref"] = f"exec/results/{r['run_id']}-result.md"
    doc["attempts"] = r["attempts"]
    return doc  # type: ignore[return-value]


_RUN_KEYS = ("run_id", "job_id", "idempotency_key", "project_id", "trigger", "scheduled_at",
             "created_at", "updated_at")


def merge_checkpoints(jobs: dict[str, JobCheckpointDoc], candidates: Iterable[Raw]) -> None:
    """Keep, per job, the latest checkpoint (by ``updated_at``, ties by run id, then order)."""
    for c in candidates:
        current = jobs.get(c["job_id"])
        if current is None or _recency(c) >= _recency(current):
            jobs[c["job_id"]] = {"checkpoint": c["checkpoint"], "last_run_id": c["last_run_id"],
                                 "updated_at": c["updated_at"]}


def _recency(entry: Mapping[str, Any]) -> tuple[datetime, str]:
    return try_parse_instant(entry["updated_at"]) or datetime.min.replace(tzinfo=UTC), str(
        entry["last_run_id"]
    )


def job_state_document(jobs: Mapping[str, JobCheckpointDoc]) -> dict[str, Any]:
    """The ``job-state.json`` document, jobs sorted by id."""
    return {"version": 1, "jobs": {job_id: jobs[job_id] for job_id in sorted(jobs)}}


# --- the state diagram -----------------------------------------------------------------------


def render_state_diagram() -> str:
    """``docs/state-diagram.md``: the routine state machine drawn from :data:`TRANSITIONS`."""
    edges: dict[tuple[str, str], list[str]] = {}
    for t in TRANSITIONS:
        label = " ".join(x for x in (t.label, t.event) if x) + (f" ({t.note})" if t.note else "")
        edges.setdefault((t.source or "[*]", t.target), []).append(label)
    rows = [f"| `{t.event}` | {t.source or '(not yet known)'} | {t.target} | {t.label or '-'} "
            f"| {t.note} |" for t in TRANSITIONS]
    return "\n".join([
        "# Routine state diagram", "",
        "<!-- GENERATED by specdojo_routine.fold.render_state_diagram() from the fold's",
        "     transition table (fold.TRANSITIONS); do not edit: a test compares them. -->", "",
        "States of one routine (seed 000; SPEC §5, §6.5). An attempt event for a routine that was",
        "never registered is folded as if `routine_registered` (T-01) had come first. An event",
        "that declares a `transition` must declare the one below, and `action_*`,",
        "`attempt_ended` and `attempt_resolved` must name the open attempt.", "",
        "```mermaid", "stateDiagram-v2",
        *(f"    {s} --> {t}: {'<br/>'.join(labels)}" for (s, t), labels in edges.items()),
        "```", "",
        "| event | from | to | transition | note |", "|---|---|---|---|---|", *rows, "",
    ])
