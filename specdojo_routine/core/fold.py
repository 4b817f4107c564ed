"""The fold: routine ledger events -> view documents (pure; SPEC §5, seed 000).

The routine state machine is one table, :data:`TRANSITIONS`, which the fold interprets, the tests
enumerate and :func:`render_state_diagram` draws. The routine fold works on the parsed (raw) dicts
of ledger lines, dispatching on ``type`` (no attrs/cattrs objects per line: it is the hot path).
Raw events must be at the current version; the caller passes ``codec.upgrade`` for older ones.
Line ``n`` of a ledger has ``seq`` ``n``, so errors name lines by seq. The Job Run fold
(SPEC §7.6) is :mod:`.jobfold`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal, NotRequired, TypedDict

import attrs

from specdojo_routine.core import holdfold
from specdojo_routine.core.adopt import is_upstream_line, upstream_event
from specdojo_routine.core.errors import CorruptLedgerError, InvalidTransition
from specdojo_routine.core.events import CURRENT_VERSION
from specdojo_routine.core.holdfold import HOLD_TRANSITIONS, HoldTransition

__all__ = ["HOLD_TRANSITIONS", "HoldTransition"]  # the hold region, with the table (SPEC §9.1)

Raw = dict[str, Any]
Status = Literal["never", "running", "success", "failure", "skipped", "partial"]
STATES: tuple[Status, ...] = ("never", "running", "success", "failure", "skipped", "partial")


@attrs.frozen(kw_only=True)
class Transition:
    """One legal routine transition. ``source=None``: the routine is not known yet."""

    event: str
    source: Status | None
    target: Status
    label: str | None = None  # T-xx; an event that declares a ``transition`` must match it
    note: str = ""


_ENDS: tuple[tuple[Status, str], ...] = (("success", "T-03"), ("failure", "T-04"),
                                         ("skipped", "T-05"),
                                         # a merged partial Job Run: T-03's family (seed 002)
                                         ("partial", "T-03"))
_SETTLED: tuple[Status, ...] = ("never", "success", "failure", "skipped", "partial")
TRANSITIONS: tuple[Transition, ...] = (
    Transition(event="routine_registered", source=None, target="never", label="T-01"),
    *(Transition(event="routine_registered", source=s, target=s, note="keeps the state")
      for s in STATES),
    Transition(event="attempt_started", source="never", target="running", label="T-02"),
    Transition(event="attempt_started", source="success", target="running", label="T-06"),
    Transition(event="attempt_started", source="failure", target="running", label="T-07"),
    Transition(event="attempt_started", source="skipped", target="running", label="T-08"),
    Transition(event="attempt_started", source="partial", target="running", label="T-06",
               note="after a merged partial run"),
    *(Transition(event="attempt_ended", source="running", target=r, label=t) for r, t in _ENDS),
    *(Transition(event="attempt_resolved", source="running", target=r, label=t, note="operator")
      for r, t in _ENDS),
    Transition(event="action_started", source="running", target="running"),
    Transition(event="action_ended", source="running", target="running"),
    # SPEC §9: occurrences accounted for without an attempt, and the end of a hold.
    *(Transition(event="occurrence_held", source=s, target=s,
                 note="while held: accounted for, not run") for s in _SETTLED[1:]),
    *(Transition(event="occurrence_missed", source=s, target=s,
                 note="past the starting deadline: accounted for, not run") for s in _SETTLED),
    *(Transition(event="routine_released", source=s, target=s, note="operator; ends the hold")
      for s in _SETTLED[1:]),
    # SPEC §10: facts another tool recorded; the target is the record's result. A routine with
    # an open attempt of ours stays running (the attempt is still ours to end or resolve).
    *(Transition(event=e, source=s, target=r, note="imported")
      for e in ("routine_state_imported", "upstream_run_recorded")
      for s in ("never", "success", "failure", "skipped", "partial")
      for r in ("success", "failure", "skipped")),
    *(Transition(event="routine_state_imported", source=s, target="never",
                 note="imported, no result") for s in ("never",)),
    *(Transition(event=e, source="running", target="running", note="imported; attempt stays open")
      for e in ("routine_state_imported", "upstream_run_recorded")),
)
#: Events whose target state is their ``result``: their rows are keyed by (source, result).
BY_RESULT = frozenset({"attempt_ended", "attempt_resolved", "routine_state_imported",
                       "upstream_run_recorded"})


def _index(event: str) -> dict[Any, Transition]:
    rows = (t for t in TRANSITIONS if t.event == event)
    return {((t.source, t.target) if event in BY_RESULT else t.source): t for t in rows}


_REGISTERED, _STARTED, _ENDED, _RESOLVED, _ACTION_STARTED, _ACTION_ENDED = map(_index, (
    "routine_registered", "attempt_started", "attempt_ended", "attempt_resolved",
    "action_started", "action_ended"))
_HELD, _MISSED, _RELEASED = map(_index, (
    "occurrence_held", "occurrence_missed", "routine_released"))
_STATE_IMPORTED, _UPSTREAM_RECORDED = map(_index, ("routine_state_imported",
                                                   "upstream_run_recorded"))


# --- view documents ----------------------------------------------------------------------------


class OwnerDoc(TypedDict):
    pid: int
    host: str
    start: NotRequired[int]


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
    on_failure: str | None  # "hold": a failure of this attempt begins a hold (SPEC §9.1)


class MissDoc(TypedDict):
    scheduled_for: str
    reason: str


class RoutineEntryDoc(TypedDict):
    """One routine of ``routine-state.json`` (a superset of upstream's entry)."""

    status: Status
    last_run: str | None
    last_result: str | None
    last_scheduled_for: NotRequired[str | None]  # absent when none (upstream's rule)
    last_action_results: NotRequired[list[ActionResultDoc] | None]  # absent when none
    last_reason: str | None
    attempt_id: str | None
    digest: str | None
    #: SPEC §9: newest occurrence accounted for (run, held, missed); the hold; the last miss
    #: since the last success.
    last_accounted_for: str | None
    held: bool
    hold_attempt_id: str | None
    held_occurrences: list[str]
    last_missed: MissDoc | None
    open_attempt: OpenAttemptDoc | None


class LedgerPositionDoc(TypedDict):
    seq: int
    offset: int
    head: NotRequired[str]  # what the view covers (store.proven)
    file: NotRequired[dict[str, int]]
    digest: NotRequired[str]


class RoutineStateDoc(TypedDict):
    """``routine-state.json``."""

    version: int
    ledger: LedgerPositionDoc
    routines: dict[str, RoutineEntryDoc]


def never_entry() -> RoutineEntryDoc:
    """The entry of a routine the ledger has never mentioned."""
    return {"status": "never", "last_run": None, "last_result": None, "last_scheduled_for": None,
            "last_action_results": None, "last_reason": None, "attempt_id": None, "digest": None,
            "last_accounted_for": None, "held": False, "hold_attempt_id": None,
            "held_occurrences": [], "last_missed": None, "open_attempt": None}


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
    if raw["trigger"] in ("due", "id") and raw["schedule"] == "cron":  # due and explicit runs
        entry["last_scheduled_for"] = raw["scheduled_for"]  # alike (SPEC §4, seed 000 T-02)
    if raw["trigger"] in ("due", "id"):
        entry["last_accounted_for"] = raw["scheduled_for"]
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
    holdfold.settle(entry, row.target)
    entry["last_reason"] = raw.get("reason")
    entry["last_action_results"] = results
    entry["open"] = entry["actions"] = None


def _accounted(rows: dict[Any, Transition]) -> _Handler:
    """``occurrence_held`` / ``occurrence_missed``: the cursor moves past the occurrence."""
    def apply(routines: dict[str, Raw], raw: Raw) -> None:
        entry = routines.get(raw["routine_id"]) or _create(routines, raw["routine_id"])
        _guard(rows, raw, entry)
        scheduled, kind = raw["scheduled_for"], raw["schedule"]
        if not isinstance(scheduled, str) or kind not in ("cron", "interval"):
            raise TypeError("scheduled_for must be a string and schedule cron or interval")
        if not isinstance(raw["reason"], str):
            raise TypeError("reason must be a string")
        holdfold.account(entry, raw["type"], scheduled, kind, raw["reason"])

    return apply


def _guard(rows: dict[Any, Transition], raw: Raw, entry: Raw) -> None:
    if entry["status"] not in rows:
        raise _illegal(raw, entry)
    if not holdfold.allowed(raw["type"], entry):
        raise _illegal(raw, entry, "held" if entry["held"] else "not held")


def _released(routines: dict[str, Raw], raw: Raw) -> None:
    entry = routines.get(raw["routine_id"]) or _create(routines, raw["routine_id"])
    _guard(_RELEASED, raw, entry)
    if raw["run"] not in ("none", "latest", "all") or not isinstance(raw["released_by"], str):
        raise TypeError("run must be none, latest or all and released_by a string")
    holdfold.release(entry)


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
    holdfold.settle(entry, row.target)
    entry["last_reason"] = raw["note"]  # the operator's note is the reason
    entry["last_action_results"] = None
    entry["open"] = entry["actions"] = None


_UPSTREAM_RESULTS = ("success", "failure", "skipped")  # what the upstream CLI records


def _imported_facts(
    rows: dict[Any, Transition], facts: Callable[[Raw], tuple[Any, Any, Any, Any]]
) -> _Handler:
    """SPEC §10: a routine entry or run record another tool wrote sets the upstream facts
    (``last_run``, ``last_result``, ``last_scheduled_for``, ``last_action_results``)."""

    def apply(routines: dict[str, Raw], raw: Raw) -> None:
        record = raw["record"]
        if not isinstance(record, dict):
            raise TypeError("record must be an object")
        entry = routines.get(raw["routine_id"]) or _create(routines, raw["routine_id"])
        last_run, result, scheduled, results = facts(record)
        target = result if result in _UPSTREAM_RESULTS else "never"
        if entry["status"] == "running":
            target = "running"
        row = rows.get((entry["status"], target))
        if row is None:
            raise _illegal(raw, entry, f"result {result!r}")
        if results is not None and not _results_ok(results):
            raise TypeError("last_action_results must be a list of {index, kind, result}")
        entry["status"] = row.target
        entry["last_run"], entry["last_result"] = last_run, result
        entry["last_scheduled_for"], entry["last_action_results"] = scheduled, results
        if isinstance(scheduled, str):  # the other tool's run accounted for it (SPEC §9.5)
            entry["last_accounted_for"] = scheduled
        if row.target != "running":
            entry["last_reason"] = entry["attempt_id"] = None

    return apply


def _state_record_facts(record: Raw) -> tuple[Any, Any, Any, Any]:
    return (record.get("last_run"), record.get("last_result"), record.get("last_scheduled_for"),
            record.get("last_action_results"))


def _upstream_line_facts(record: Raw) -> tuple[Any, Any, Any, Any]:
    return (record.get("started_at"), record.get("result"), record.get("scheduled_for"), None)


_HANDLERS: dict[str, _Handler] = {
    "routine_state_imported": _imported_facts(_STATE_IMPORTED, _state_record_facts),
    "upstream_run_recorded": _imported_facts(_UPSTREAM_RECORDED, _upstream_line_facts),
    "routine_registered": _registered,
    "attempt_started": _started,
    "action_started": _action_handler(_ACTION_STARTED),
    "action_ended": _action_handler(_ACTION_ENDED),
    "attempt_ended": _ended,
    "attempt_resolved": _resolved,
    "occurrence_held": _accounted(_HELD),
    "occurrence_missed": _accounted(_MISSED),
    "routine_released": _released,
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
                if "type" not in raw and is_upstream_line(raw):
                    raw = upstream_event(raw, seq)
                elif raw.get("version") != current:
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


def _owner_doc(owner: Raw) -> OwnerDoc:
    doc: Raw = {"pid": owner["pid"], "host": owner["host"]}
    if owner.get("start") is not None:
        doc["start"] = owner["start"]
    return doc  # type: ignore[return-value]


_ABSENT_WHEN_NONE = ("last_scheduled_for", "last_action_results")


def _entry_doc(entry: Raw) -> RoutineEntryDoc:
    doc: Raw = {k: entry[k] for k in never_entry() if k != "open_attempt"}
    if doc["last_action_results"] is not None:
        doc["last_action_results"] = [{"index": r["index"], "kind": r["kind"],
                                       "result": r["result"]} for r in doc["last_action_results"]]
    for key in _ABSENT_WHEN_NONE:  # upstream omits these rather than writing null (SPEC §5)
        if doc[key] is None:
            del doc[key]
    doc["open_attempt"] = started = entry["open"]
    if started is not None:
        doc["open_attempt"] = {
            "attempt_id": started["attempt_id"], "trigger": started["trigger"],
            "scheduled_for": started["scheduled_for"], "started_at": started["last_run"],
            "owner": _owner_doc(started["owner"]),
            "actions": [_action_doc(a) for a in entry["actions"].values()],
            "on_failure": started.get("on_failure"),
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
    for key in _ABSENT_WHEN_NONE:
        if key in entry and entry[key] is None:
            raise ValueError(f"not in canonical form ({key} is null; this fold leaves it out)")
        entry.setdefault(key, None)
    entry["open"] = None if opened is None else {**opened, "last_run": opened["started_at"]}
    entry["actions"] = None if opened is None else {a["index"]: a for a in opened["actions"]}
    return entry


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
        "<!-- GENERATED by specdojo_routine.core.fold.render_state_diagram() from the fold's",
        "     transition table (fold.TRANSITIONS); do not edit: a test compares them. -->", "",
        "States of one routine (seed 000; SPEC §5, §6.5). An attempt event for a routine that was",
        "never registered is folded as if `routine_registered` (T-01) had come first. An event",
        "that declares a `transition` must declare the one below, and `action_*`,",
        "`attempt_ended` and `attempt_resolved` must name the open attempt.", "",
        "```mermaid", "stateDiagram-v2",
        *(f"    {s} --> {t}: {'<br/>'.join(labels)}" for (s, t), labels in edges.items()),
        "```", "",
        "| event | from | to | transition | note |", "|---|---|---|---|---|", *rows, "",
        *holdfold.hold_region(),
    ])
