"""What each routine ledger event does to its routine's entry (pure; SPEC §5, §9, §10, §13).

One handler per event type (:data:`HANDLERS`), each checking the event against the rows of
:data:`~.fold_table.TRANSITIONS` for its type and raising :class:`InvalidTransition` for an
event the table forbids; the hold and pause regions are kept by :mod:`.holdfold` and
:mod:`.pausefold`. The handlers work on the parsed (raw) dicts of ledger lines, at the current
version: this is the hot path. :func:`.fold.apply_all` drives them line by line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from specdojo_routine.core import holdfold, pausefold
from specdojo_routine.core.errors import InvalidTransition
from specdojo_routine.core.fold_docs import never_entry
from specdojo_routine.core.fold_table import BY_RESULT, TRANSITIONS, Raw, Transition


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
_PRUNED = _index("evidence_pruned")
_PAUSED, _RESUMED, _OCC_PAUSED = map(_index, (
    "routine_paused", "routine_resumed", "occurrence_paused"))
_NOTIFIED = _index("notification_sent")
_SUPERSEDED = _index("retry_superseded")


_Handler = Callable[[dict[str, Raw], Raw], None]


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
    if raw["trigger"] in ("due", "id"):  # due and explicit runs alike (SPEC §4, seed 000 T-02)
        holdfold.account_for(entry, raw["scheduled_for"], cron=raw["schedule"] == "cron")
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
    if (raw.get("overrides") is True) != (row.source != "running"):  # ended vs open attempt
        raise _illegal(raw, entry, "overrides" if raw.get("overrides") else "")
    if raw.get("overrides") is True:
        _overridden(entry, raw)
        return
    if entry["open"]["attempt_id"] != raw["attempt_id"]:
        raise _mismatch(raw, entry)
    holdfold.settle(entry, row.target)
    entry["last_reason"] = raw["note"]  # the operator's note is the reason
    entry["last_action_results"] = None
    entry["open"] = entry["actions"] = None


def _overridden(entry: Raw, raw: Raw) -> None:
    """SPEC §13: an ended attempt's new outcome. The routine's last attempt sets its result;
    a hold that attempt began ends when it becomes success. An override never begins a hold."""
    if not isinstance(raw["attempt_id"], str) or not isinstance(raw["note"], str):
        raise TypeError("attempt_id and note must be strings")
    result = raw["result"]
    if raw["attempt_id"] == entry["attempt_id"]:
        entry["status"] = entry["last_result"] = result
        entry["last_reason"] = raw["note"]
        if result == "success":
            entry["last_missed"] = None
    if result == "success" and entry["held"] and entry["hold_attempt_id"] == raw["attempt_id"]:
        holdfold.release(entry)


def _pause_handler(rows: dict[Any, Transition]) -> _Handler:
    """``routine_paused`` / ``routine_resumed`` (SPEC §13): the pause region."""
    def apply(routines: dict[str, Raw], raw: Raw) -> None:
        entry = routines.get(raw["routine_id"]) or _create(routines, raw["routine_id"])
        if entry["status"] not in rows:
            raise _illegal(raw, entry)
        if not pausefold.allowed(raw["type"], entry):
            raise _illegal(raw, entry, "paused" if pausefold.is_paused(entry) else "not paused")
        if raw["note"] is not None and not isinstance(raw["note"], str):
            raise TypeError("note must be a string or null")
        (pausefold.pause if raw["type"] == "routine_paused" else pausefold.resume)(entry, raw)

    return apply


def _occurrence_paused(routines: dict[str, Raw], raw: Raw) -> None:
    entry = routines.get(raw["routine_id"]) or _create(routines, raw["routine_id"])
    if entry["status"] not in _OCC_PAUSED:
        raise _illegal(raw, entry)
    if entry["pause"] is None:
        raise _illegal(raw, entry, "never paused")
    scheduled, kind = raw["scheduled_for"], raw["schedule"]
    if not isinstance(scheduled, str) or kind not in ("cron", "interval"):
        raise TypeError("scheduled_for must be a string and schedule cron or interval")
    if not isinstance(raw["reason"], str):
        raise TypeError("reason must be a string")
    holdfold.account(entry, raw["type"], scheduled, kind, raw["reason"])


def _pruned(routines: dict[str, Raw], raw: Raw) -> None:
    """SPEC §15: an ended attempt's action evidence was removed; nothing in the view changes,
    and the open attempt's evidence is never pruned."""
    entry = routines.get(raw["routine_id"])
    if entry is None or entry["status"] not in _PRUNED:
        raise _illegal(raw, entry or {"status": "never"})
    if entry["open"] is not None and entry["open"]["attempt_id"] == raw["attempt_id"]:
        raise _illegal(raw, entry, f"attempt {raw['attempt_id']} is open")
    if not isinstance(raw["attempt_id"], str) or not isinstance(raw["paths"], list | tuple):
        raise TypeError("attempt_id must be a string and paths a list")


def _notified(routines: dict[str, Raw], raw: Raw) -> None:
    """SPEC §13: a notification hook ran; nothing in the view changes."""
    entry = routines.get(raw["routine_id"]) or _create(routines, raw["routine_id"])
    if entry["status"] not in _NOTIFIED:
        raise _illegal(raw, entry)
    if not isinstance(raw["event"], str) or not isinstance(raw["duration_s"], int | float):
        raise TypeError("event must be a string and duration_s a number")


def _superseded(routines: dict[str, Raw], raw: Raw) -> None:
    """SPEC §13: the pending retry of the routine's failed last attempt was dropped."""
    entry = routines.get(raw["routine_id"]) or _create(routines, raw["routine_id"])
    if entry["status"] not in _SUPERSEDED:
        raise _illegal(raw, entry)
    if entry["attempt_id"] != raw["attempt_id"]:
        raise _illegal(raw, entry, f"attempt {raw['attempt_id']} is not the last one")
    if not isinstance(raw["scheduled_for"], str) or not isinstance(raw["superseded_by"], str):
        raise TypeError("scheduled_for and superseded_by must be strings")


_UPSTREAM_RESULTS = ("success", "failure", "skipped")  # what the upstream CLI records


def _imported_facts(
    rows: dict[Any, Transition], facts: Callable[[Raw], tuple[Any, Any, Any, Any]]
) -> _Handler:
    """SPEC §10: a routine entry or run record another tool wrote sets the upstream facts
    (``last_run``, ``last_result``, ``last_action_results``) as the newest record says, and
    moves the cursors (``last_scheduled_for``, ``last_accounted_for``) only forward (SPEC §4:
    whatever records the cursor keeps the later value), so nothing we completed is selected
    again because another tool wrote an older occurrence after it. A run line without a
    result upstream records (null, missing, ``partial``) sets no fact: it only accounts for
    the occurrence it names, and ``import`` / ``fold`` report it (rule 4: not guessed)."""

    def apply(routines: dict[str, Raw], raw: Raw) -> None:
        record = raw["record"]
        if not isinstance(record, dict):
            raise TypeError("record must be an object")
        entry = routines.get(raw["routine_id"]) or _create(routines, raw["routine_id"])
        last_run, result, scheduled, results = facts(record)
        line = facts is _upstream_line_facts
        # a run line names its occurrence for every routine, but last_scheduled_for is kept
        # for cron routines only (SPEC §5): a routine on record without one is taken for an
        # interval routine, and stays without one (its last_accounted_for still moves)
        cron = not (line and entry["last_scheduled_for"] is None and entry["last_run"] is not None)
        if not line or result in _UPSTREAM_RESULTS:
            _take_facts(rows, raw, entry, (last_run, result, results))
        if isinstance(scheduled, str):  # the other tool's run accounted for it (SPEC §9.5)
            holdfold.account_for(entry, scheduled, cron=cron)

    return apply


def _take_facts(rows: dict[Any, Transition], raw: Raw, entry: Raw, facts: tuple[Any, ...]) -> None:
    """An imported record's ``last_run``, ``last_result`` and ``last_action_results``, and the
    status its result leads to (a routine with an open attempt of ours stays running)."""
    last_run, result, results = facts
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
    entry["last_action_results"] = results
    if row.target != "running":
        entry["last_reason"] = entry["attempt_id"] = None


def _state_record_facts(record: Raw) -> tuple[Any, Any, Any, Any]:
    return (record.get("last_run"), record.get("last_result"), record.get("last_scheduled_for"),
            record.get("last_action_results"))


def _upstream_line_facts(record: Raw) -> tuple[Any, Any, Any, Any]:
    return (record.get("started_at"), record.get("result"), record.get("scheduled_for"), None)


#: What each routine event does to its routine's entry, by wire tag.
HANDLERS: dict[str, _Handler] = {
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
    "evidence_pruned": _pruned,
    "routine_paused": _pause_handler(_PAUSED),
    "routine_resumed": _pause_handler(_RESUMED),
    "occurrence_paused": _occurrence_paused,
    "notification_sent": _notified,
    "retry_superseded": _superseded,
}
assert set(HANDLERS) == {t.event for t in TRANSITIONS}
