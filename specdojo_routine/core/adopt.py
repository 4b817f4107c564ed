"""Adopting files another tool wrote (SPEC §10): the pure decisions.

The upstream SpecDojo CLI writes ``routine-state.json``, ``runs/<run_id>.json`` and
``job-state.json`` without a ledger, and newer versions append their own run records (no
``type``, no ``seq``) to ``routine-runs.jsonl``. Everything here is a function of what such a
file holds and what our fold says; :mod:`specdojo_routine.store.ledger.adopt` reads the files and
appends the import events these decisions ask for.

Verdicts: ``same`` (the file holds nothing our ledger lacks), ``import`` (it holds newer facts:
append them), ``stale`` (it is an older picture of what our ledger already has, e.g. a view we
had not republished yet: nothing to import, the next publication replaces it) and ``conflict``
(it contradicts our ledger: shown, never resolved by guessing, nothing overwritten).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from specdojo_routine.core.timefmt import try_parse_instant

Verdict = Literal["same", "import", "stale", "conflict"]
Raw = dict[str, Any]

#: The upstream fields of a ``routine-state.json`` entry (SPEC §10 rule 3).
ROUTINE_FACTS = ("last_run", "last_result", "last_scheduled_for", "last_action_results")
#: The keys of an upstream run record line in ``routine-runs.jsonl`` (SPEC §10).
UPSTREAM_LINE_KEYS = frozenset({"version", "routine_id", "scheduled_for", "started_at",
                                "completed_at", "result", "job_run_ids"})
UPSTREAM_EVENT = "upstream_run_recorded"
_EPOCH = datetime.min.replace(tzinfo=UTC)


# --- upstream ledger lines -------------------------------------------------------------------


def is_upstream_line(raw: Any) -> bool:
    """A routine-ledger line the upstream CLI wrote: no ``type`` and no ``seq``, a routine id."""
    return (isinstance(raw, dict) and "type" not in raw and "seq" not in raw
            and isinstance(raw.get("routine_id"), str))


def upstream_event(raw: Raw, seq: int) -> Raw:
    """The upstream line ``raw`` (line ``seq``) read as an ``upstream_run_recorded`` event;
    ``record`` is the line itself, ``at`` its ``completed_at`` (else ``started_at``)."""
    at = raw.get("completed_at") or raw.get("started_at") or "1970-01-01T00:00:00.000Z"
    return {"version": 1, "seq": seq, "type": UPSTREAM_EVENT, "at": at,
            "routine_id": raw["routine_id"], "record": raw}


# --- routine-state.json entries --------------------------------------------------------------


def routine_facts(entry: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """The upstream facts of an entry (absent and null are the same fact: none)."""
    return tuple((entry or {}).get(k) for k in ROUTINE_FACTS)


_RESULTS = ("success", "failure", "skipped")


def routine_entry_usable(record: Any) -> bool:
    """An entry the fold can apply: a result (upstream writes ``last_result`` with every
    finished run), timestamps as strings, ``last_action_results`` as ``[{index, kind, result}]``."""
    if not isinstance(record, dict) or record.get("last_result") not in _RESULTS:
        return False
    if not isinstance(record.get("last_run"), str):
        return False
    if not isinstance(record.get("last_scheduled_for"), str | None):
        return False
    results = record.get("last_action_results")
    return results is None or (isinstance(results, list) and all(
        isinstance(r, dict) and all(k in r for k in ("index", "kind", "result"))
        for r in results))


def routine_entry_verdict(record: Any, ours: Mapping[str, Any] | None) -> Verdict:
    """Import an entry when it differs from our fold and its ``last_run`` is newer than ours
    (another tool ran the routine after us); an entry no newer than ours is stale. A newer
    entry the fold cannot apply (no result: a run that never finished) is a conflict."""
    if not isinstance(record, dict):
        return "conflict"
    if routine_facts(record) == routine_facts(ours):
        return "same"
    theirs = try_parse_instant(record.get("last_run"))
    mine = try_parse_instant((ours or {}).get("last_run"))
    if theirs is None:
        return "stale" if mine is not None else "conflict"
    if mine is not None and theirs <= mine:
        return "stale"
    return "import" if routine_entry_usable(record) else "conflict"


# --- Job Run records -------------------------------------------------------------------------


def _instant(value: Any) -> datetime:
    return try_parse_instant(value) or _EPOCH


def _same_attempt(earlier: Any, later: Any) -> bool:
    """Attempt ``later`` is ``earlier`` unchanged, or ``earlier`` was still running and
    ``later`` is the same attempt (number, start) since closed."""
    if earlier == later:
        return True
    if not isinstance(earlier, dict) or not isinstance(later, dict):
        return False
    return earlier.get("status") == "running" and all(
        earlier.get(k) == later.get(k) for k in ("attempt", "started_at"))


def _attempts(doc: Mapping[str, Any]) -> list[Any]:
    found = doc.get("attempts")
    return list(found) if isinstance(found, list) else []


def _prefix(short: Sequence[Any], long: Sequence[Any]) -> bool:
    """``short`` is the start of ``long`` (its running attempts may be closed in ``long``)."""
    return len(short) <= len(long) and all(map(_same_attempt, short, long))


def run_record_usable(record: Any) -> bool:
    """A Job Run record the fold can continue from: identity strings, a state, attempts
    numbered 1..n with a status each."""
    if not isinstance(record, dict) or not isinstance(record.get("attempts"), list):
        return False
    keys = ("run_id", "job_id", "idempotency_key", "state", "updated_at")
    if not all(isinstance(record.get(k), str) for k in keys):
        return False
    return all(isinstance(a, dict) and a.get("attempt") == n and isinstance(a.get("status"), str)
               for n, a in enumerate(record["attempts"], 1))


def run_record_verdict(record: Any, ours: Mapping[str, Any] | None) -> Verdict:
    """SPEC §10 rule 4: a record that differs from our run is imported only when it extends
    ours (our attempts unchanged at its start, more of them or our open one closed, an
    ``updated_at`` not earlier); a record ours extends is stale; anything else conflicts."""
    if not run_record_usable(record):
        return "conflict"
    if ours is None:
        return "import"
    if record == ours:
        return "same"
    if any(record.get(k) != ours.get(k) for k in ("run_id", "job_id", "idempotency_key")):
        return "conflict"
    theirs_at, mine_at = _instant(record.get("updated_at")), _instant(ours.get("updated_at"))
    theirs, mine = _attempts(record), _attempts(ours)
    grows = len(theirs) > len(mine) or (
        bool(mine) and mine[-1].get("status") == "running"
        and theirs[len(mine) - 1:len(mine)] != [mine[-1]])
    if theirs_at >= mine_at and grows and _prefix(mine, theirs):
        return "import"
    if theirs_at <= mine_at and _prefix(theirs, mine):
        return "stale"
    return "conflict"


def run_summary(doc: Mapping[str, Any] | None) -> str:
    """``(state, N attempts, updated_at)`` for a conflict message."""
    if doc is None:
        return "(no run)"
    count = len(_attempts(doc))
    noun = "attempt" if count == 1 else "attempts"
    return f"({doc.get('state')}, {count} {noun}, {doc.get('updated_at')})"


def conflict_message(view: str, theirs: Any, ledger: str, ours: Mapping[str, Any] | None) -> str:
    """``conflict: <view> (…) contradicts <ledger> (…)`` (SPEC §10 rule 4)."""
    shown = run_summary(theirs) if isinstance(theirs, dict) else "(not a Job Run record)"
    return f"conflict: {view} {shown} contradicts {ledger} {run_summary(ours)}"


# --- job-state.json entries ------------------------------------------------------------------

CHECKPOINT_KEYS = ("checkpoint", "last_run_id", "updated_at")


def checkpoint_entry_ok(entry: Any) -> bool:
    """An entry shaped like upstream's: a checkpoint object, a run id, an ``updated_at``."""
    return (isinstance(entry, dict) and isinstance(entry.get("checkpoint"), dict)
            and isinstance(entry.get("last_run_id"), str)
            and isinstance(entry.get("updated_at"), str))


def checkpoint_verdict(entry: Any, ours: Mapping[str, Any] | None) -> Verdict:
    """Import a checkpoint our fold does not reproduce exactly when it is newer than ours."""
    if not checkpoint_entry_ok(entry):
        return "conflict"
    if ours is not None and all(entry.get(k) == ours.get(k) for k in CHECKPOINT_KEYS):
        return "same"
    if ours is None:
        return "import"
    theirs = (_instant(entry["updated_at"]), str(entry["last_run_id"]))
    mine = (_instant(ours.get("updated_at")), str(ours.get("last_run_id")))
    return "import" if theirs > mine else "stale"
