"""Adopting files another tool wrote (SPEC §10): the pure decisions.

The upstream SpecDojo CLI writes ``routine-state.json``, ``runs/<run_id>.json`` and
``job-state.json`` without a ledger, and newer versions append their own run records (no
``type``, no ``seq``) to ``routine-runs.jsonl``. Everything here is a function of what such a
file holds and what our fold says; :mod:`specdojo_routine.store.ledger.adopt` reads the files and
appends the import events these decisions ask for.

Verdicts: ``same`` (the file holds what our fold holds), ``import`` (it holds facts our
ledger lacks: append them), ``stale`` (it is exactly a picture our own ledger gave earlier - a
view we had not republished yet, or a copy of it another tool wrote back after reading it: its
facts are in our ledger already, so nothing is lost when the next publication replaces it) and
``conflict`` (it contradicts our ledger: shown, never resolved by guessing, nothing
overwritten). ``stale`` is never a guess from timestamps: an entry or record that differs from
every picture our ledger gave is imported (a hand edit after adoption is a fact like any other)
or, for a Job Run record that does not extend ours, a conflict.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from specdojo_routine.core import holdfold
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


def upstream_line_problem(raw: Raw) -> str | None:
    """Why the fold takes no result from the upstream line ``raw`` (None: it takes one). A
    ``result`` that is null, missing or one upstream never records (``partial``) is not
    guessed (SPEC §10 rule 4): the line accounts for its ``scheduled_for`` and nothing else."""
    if "result" not in raw:
        return "no result"
    result = raw["result"]
    return None if result in _RESULTS else f"result {json.dumps(result)}"


# --- routine-state.json entries --------------------------------------------------------------


def routine_facts(entry: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """The upstream facts of an entry (absent and null are the same fact: none)."""
    return tuple((entry or {}).get(k) for k in ROUTINE_FACTS)


_RESULTS = ("success", "failure", "skipped")


def routine_entry_usable(record: Any, ours: Mapping[str, Any] | None = None) -> bool:
    """An entry the fold can apply: a result (upstream writes ``last_result`` with every
    finished run) - or none while our fold has none either (upstream died inside a routine's
    first run: the entry imports with status ``never``) - timestamps as strings, and
    ``last_action_results`` as ``[{index, kind, result}]``."""
    if not isinstance(record, dict):
        return False
    result = record.get("last_result")
    if result is None:
        if (ours or {}).get("status", "never") not in ("never", "running"):
            return False
    elif result not in _RESULTS:
        return False
    if try_parse_instant(record.get("last_run")) is None:
        return False
    if not isinstance(record.get("last_scheduled_for"), str | None):
        return False
    results = record.get("last_action_results")
    return results is None or (isinstance(results, list) and all(
        isinstance(r, dict) and all(k in r for k in ("index", "kind", "result"))
        for r in results))


def published_entry(record: Mapping[str, Any], entry: Mapping[str, Any]) -> bool:
    """``record`` is ``entry`` as our fold once gave it: the same upstream facts, and every
    other key it has holds ``entry``'s value (upstream's shape of it has no other key)."""
    return routine_facts(record) == routine_facts(entry) and all(
        entry.get(k) == v for k, v in record.items() if k not in ROUTINE_FACTS)


def routine_entry_verdict(
    record: Any, ours: Mapping[str, Any] | None, earlier: Iterable[Mapping[str, Any]] = (),
) -> Verdict:
    """An entry that differs from our fold is imported (another tool ran the routine, or an
    operator edited it), unless it is exactly an entry our fold gave before (``earlier``: a
    view of ours not republished yet, or a copy of it upstream wrote back): that is stale. An
    entry the fold cannot apply is a conflict. One that differs only by an older (or no)
    ``last_scheduled_for`` is the same: the cursor never moves back (SPEC §4), so importing
    it would change nothing, and would be asked for again by every command."""
    if not isinstance(record, dict):
        return "conflict"
    theirs, mine = routine_facts(record), routine_facts(ours)
    if theirs == mine or (theirs[:2] == mine[:2] and theirs[3] == mine[3]
                          and holdfold.stays(mine[2], theirs[2])):
        return "same"  # an older (or no) cursor imports nothing: it never moves back
    if any(published_entry(record, e) for e in earlier):
        return "stale"
    return "import" if routine_entry_usable(record, ours) else "conflict"


def holds_nothing_new(theirs: Any, ours: Mapping[str, Any], member: str) -> bool:
    """A foreign view document that says nothing our fold does not say: every top-level key
    it has holds our value, and every entry of its ``member`` (``routines`` / ``jobs``) is an
    entry of ours with, key for key, our values - upstream's shape of our view, which leaves
    out our own keys and entries it cannot read (SPEC §10 rule 3: not drift). A routine's
    ``last_scheduled_for`` that is older than ours counts as ours: importing it would leave
    our cursor where it is (it never moves back, SPEC §4)."""
    if not isinstance(theirs, dict) or not isinstance(theirs.get(member), dict):
        return False
    entries = ours.get(member)
    if not isinstance(entries, Mapping):
        return False
    if any(k != member and (k not in ours or v != ours[k]) for k, v in theirs.items()):
        return False
    cursor = "last_scheduled_for" if member == "routines" else None
    for key, entry in theirs[member].items():
        mine = entries.get(key)
        if not isinstance(entry, dict) or not isinstance(mine, Mapping):
            return False
        if any((k not in mine or v != mine[k])
               and not (k == cursor and holdfold.stays(mine.get(k), v))
               for k, v in entry.items()):
            return False
    return True


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


def run_record_usable(record: Any, run_id: str | None = None) -> bool:
    """A Job Run record the fold can continue from: identity strings, a state, attempts
    numbered 1..n with a status each - and, when ``run_id`` (the run its file name names) is
    given, that run's record: a copy of another run's record under this name is no fact
    about this run, so importing it would put another run's record in this run's ledger."""
    if not isinstance(record, dict) or not isinstance(record.get("attempts"), list):
        return False
    keys = ("run_id", "job_id", "idempotency_key", "state", "updated_at")
    if not all(isinstance(record.get(k), str) for k in keys):
        return False
    if run_id is not None and record["run_id"] != run_id:
        return False
    return all(isinstance(a, dict) and a.get("attempt") == n and isinstance(a.get("status"), str)
               for n, a in enumerate(record["attempts"], 1))


def run_record_verdict(
    record: Any, ours: Mapping[str, Any] | None, earlier: Iterable[Mapping[str, Any]] = (),
) -> Verdict:
    """SPEC §10 rule 4: a record that differs from our run is imported only when it extends
    ours (our attempts unchanged at its start, more of them or our open one closed, an
    ``updated_at`` not earlier); a record that is exactly a view our ledger gave before
    (``earlier``) is stale; anything else - a state, attempt or time edited, attempts
    dropped or reordered - conflicts."""
    if not run_record_usable(record):
        return "conflict"
    if ours is None:
        return "import"
    if record == ours:
        return "same"
    if any(record.get(k) != ours.get(k) for k in ("run_id", "job_id", "idempotency_key")):
        return "conflict"
    if any(record == e for e in earlier):
        return "stale"
    theirs_at, mine_at = _instant(record.get("updated_at")), _instant(ours.get("updated_at"))
    theirs, mine = _attempts(record), _attempts(ours)
    grows = len(theirs) > len(mine) or (
        bool(mine) and mine[-1].get("status") == "running"
        and theirs[len(mine) - 1:len(mine)] != [mine[-1]])
    if theirs_at >= mine_at and grows and _prefix(mine, theirs):
        return "import"
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


def checkpoint_verdict(
    entry: Any, ours: Mapping[str, Any] | None, earlier: Iterable[Mapping[str, Any]] = (),
) -> Verdict:
    """Import a checkpoint our fold does not reproduce exactly, unless it is one our ledgers
    recorded before (``earlier``: every checkpoint of the job in our runs): that is stale."""
    if not checkpoint_entry_ok(entry):
        return "conflict"
    if ours is not None and all(entry.get(k) == ours.get(k) for k in CHECKPOINT_KEYS):
        return "same"
    if any(all(entry.get(k) == e.get(k) for k in CHECKPOINT_KEYS) for e in earlier):
        return "stale"
    return "import"
