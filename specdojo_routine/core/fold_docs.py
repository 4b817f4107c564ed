"""The routine view documents and the fold accumulator (pure; SPEC §5).

The ``routine-state.json`` document types, :class:`RoutineView`, the :class:`RoutineFold`
accumulator, and the conversion between the accumulator and a published document. Moved out
of :mod:`.fold` (which re-exports these names).
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import attrs

from specdojo_routine.core.fold_table import STATES, Raw, Status

# --- view documents ----------------------------------------------------------------------------


# The documents' shapes, for the type checker: what each key holds, which ones may be absent.
# At run time a document is a plain dict, and a TypedDict would only cost its class creation
# (typing compiles each annotation of each class) in every command.
if TYPE_CHECKING:
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

    class PauseDoc(TypedDict):
        """The routine's last pause (SPEC §13): paused while ``resumed_at`` is null."""

        by: str
        at: str
        note: str | None
        resumed_at: str | None

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
        pause: PauseDoc | None  # SPEC §13
        open_attempt: OpenAttemptDoc | None

    class LedgerPositionDoc(TypedDict):
        seq: int
        offset: int
        head: NotRequired[str]  # the chain head at seq (store.ledger.proven)

    class RoutineStateDoc(TypedDict):
        """``routine-state.json``."""

        version: int
        ledger: LedgerPositionDoc
        routines: dict[str, RoutineEntryDoc]
else:
    OwnerDoc = ActionDoc = ActionResultDoc = OpenAttemptDoc = MissDoc = PauseDoc = dict
    RoutineEntryDoc = LedgerPositionDoc = RoutineStateDoc = dict


def never_entry() -> RoutineEntryDoc:
    """The entry of a routine the ledger has never mentioned."""
    return {"status": "never", "last_run": None, "last_result": None, "last_scheduled_for": None,
            "last_action_results": None, "last_reason": None, "attempt_id": None, "digest": None,
            "last_accounted_for": None, "held": False, "hold_attempt_id": None,
            "held_occurrences": [], "last_missed": None, "pause": None, "open_attempt": None}


@attrs.frozen(kw_only=True, repr=False)
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



@attrs.define(repr=False)
class RoutineFold:
    """The fold's accumulator: last applied seq and one internal entry per routine. An entry
    keeps the raw ``attempt_started`` of its open attempt and raw action events by index."""

    seq: int = 0
    routines: dict[str, Raw] = attrs.field(factory=dict)



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


_ENTRY_KEYS = tuple(k for k in never_entry() if k != "open_attempt")  # in document order
_entry_values = operator.itemgetter(*_ENTRY_KEYS)


def _entry_doc(entry: Raw) -> RoutineEntryDoc:
    doc: Raw = dict(zip(_ENTRY_KEYS, _entry_values(entry), strict=True))
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
    return read_document(doc)[0]


def read_document(doc: Any) -> tuple[RoutineFold, RoutineStateDoc]:
    """:func:`fold_from_document`, and the document this fold writes for that accumulator:
    equal to ``doc``, in the fold's own key order. Showing that ``doc`` is in canonical form
    builds that document, so a caller that needs it takes this one rather than a second.

    ``ValueError`` if ``doc`` is not exactly a document this fold writes.
    """
    try:
        routines = {rid: _from_entry_doc(e) for rid, e in doc["routines"].items()}
        state = RoutineFold(seq=doc["ledger"]["seq"], routines=routines)
        offset = doc["ledger"]["offset"]
        if type(state.seq) is not int or type(offset) is not int:
            raise ValueError("not a routine view document (bad ledger position)")
        canonical = routine_document(state, offset)
        if canonical != doc:
            raise ValueError("not in canonical form")
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a routine view document ({exc!r})") from None
    return state, canonical


def _from_entry_doc(doc: Raw) -> Raw:
    opened = doc["open_attempt"]
    if doc["status"] not in STATES or (opened is None) != (doc["status"] != "running"):
        raise ValueError("status and open_attempt disagree")
    entry = dict(doc)
    del entry["open_attempt"]
    for key in _ABSENT_WHEN_NONE:
        if key in entry and entry[key] is None:
            raise ValueError(f"not in canonical form ({key} is null; this fold leaves it out)")
        entry.setdefault(key, None)
    entry["open"] = None if opened is None else {**opened, "last_run": opened["started_at"]}
    entry["actions"] = None if opened is None else {a["index"]: a for a in opened["actions"]}
    return entry
