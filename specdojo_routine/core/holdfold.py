"""The hold region of the routine fold (SPEC §9.1, §9.5), orthogonal to the status (pure).

:mod:`.fold` interprets the status table and calls these for the hold: when a failure begins a
hold, which events a hold state allows, and what held, missed and released occurrences change
in an entry. The table here is drawn into docs/state-diagram.md with the status table.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import attrs

from specdojo_routine.core.timefmt import try_parse_instant

Raw = dict[str, Any]

HoldState = Literal["free", "held"]


@attrs.frozen(kw_only=True, repr=False)
class HoldTransition:
    """One move of the hold region (SPEC §9.1), orthogonal to the status of ``fold.TRANSITIONS``."""

    event: str
    source: HoldState
    target: HoldState
    note: str = ""


#: The hold region: which events may come in which hold state, and which begin or end a hold.
#: Events not named here leave the hold state as it is, in either state.
HOLD_TRANSITIONS: tuple[HoldTransition, ...] = (
    *(HoldTransition(event=e, source="free", target="held",
                     note="result failure, started under on_failure: hold, trigger not backfill")
      for e in ("attempt_ended", "attempt_resolved")),
    HoldTransition(event="occurrence_held", source="held", target="held",
                   note="adds scheduled_for to held_occurrences"),
    HoldTransition(event="routine_released", source="held", target="free",
                   note="operator; held_occurrences cleared"),
    HoldTransition(event="occurrence_missed", source="free", target="free",
                   note="hold before deadline: never while held"),
)
#: Events allowed only in some hold states.
HOLD_GUARD = {e: {t.source for t in HOLD_TRANSITIONS if t.event == e}
              for e in ("occurrence_held", "routine_released", "occurrence_missed")}


def allowed(event: str, entry: Raw) -> bool:
    """Whether ``event`` may come in the entry's hold state (events not guarded: always)."""
    sources = HOLD_GUARD.get(event)
    return sources is None or ("held" if entry["held"] else "free") in sources


def settle(entry: Raw, result: str) -> None:
    """An attempt's result: a success clears the last miss; a failure of an attempt started
    under ``on_failure: hold`` (not a backfill) begins a hold unless one is on (SPEC §9.5)."""
    entry["status"] = entry["last_result"] = result
    opened = entry["open"]
    if result == "success":
        entry["last_missed"] = None
    elif (result == "failure" and not entry["held"] and opened.get("on_failure") == "hold"
          and opened["trigger"] != "backfill"):
        entry["held"], entry["hold_attempt_id"] = True, opened["attempt_id"]
        entry["held_occurrences"] = []


def advance_cursor(entry: Raw, scheduled: str) -> None:
    """Move the cron cursor (``last_scheduled_for``) to ``scheduled``, never back (SPEC §4):
    it becomes the later of the two, so an explicit run whose ``now`` is earlier than the
    cursor (a clock that went back, ``--now`` in the past) leaves it where it was, and no
    occurrence after it is selected twice. A cursor that is missing or unreadable is
    replaced; one that already names ``scheduled`` (a retry, another attempt for the same
    occurrence) stays without either being read."""
    if not isinstance(scheduled, str):
        raise TypeError("scheduled_for must be a string")
    if _moves(entry.get("last_scheduled_for"), scheduled):
        entry["last_scheduled_for"] = scheduled


def account_for(entry: Raw, scheduled: str, *, cron: bool) -> None:
    """An occurrence is accounted for (started, held, missed, paused): ``last_accounted_for``,
    the newest such occurrence and the interval routines' anchor (SPEC §9.5), becomes the
    later of the two, as the cron cursor does for a cron routine: neither moves back, so a
    clock that went back does not make an interval routine due (or held) again early. Both
    usually name the same occurrence, and are then compared once."""
    if not isinstance(scheduled, str):
        raise TypeError("scheduled_for must be a string")
    accounted = entry["last_accounted_for"]
    if cron and entry["last_scheduled_for"] != accounted:
        advance_cursor(entry, scheduled)
        cron = False
    if _moves(accounted, scheduled):
        entry["last_accounted_for"] = scheduled
        if cron:
            entry["last_scheduled_for"] = scheduled


def stays(current: Any, scheduled: Any) -> bool:
    """Whether recording ``scheduled`` leaves a pointer at ``current`` as it is: none to
    record, the same occurrence, or an earlier one (SPEC §4: it never moves back). What an
    import that changes nothing else looks like, so it is not taken for a new fact."""
    if scheduled is None or scheduled == current:
        return True
    return isinstance(scheduled, str) and bool(current) and not _moves(current, scheduled)


def _moves(current: Any, scheduled: str) -> bool:
    """Whether a pointer at ``current`` moves to ``scheduled``: none yet, the same occurrence,
    or a later one. Two UTC instants (``...Z``, as the ledger stores them) are read by
    ``datetime.fromisoformat`` alone - what :func:`.timefmt.parse_instant` does for them,
    less its general handling of offsets and spaces; anything else is parsed by it."""
    if not current or current == scheduled:
        return True
    if isinstance(current, str) and current[-1:] == "Z" == scheduled[-1:]:
        try:
            return datetime.fromisoformat(scheduled) > datetime.fromisoformat(current)
        except ValueError:  # not an instant
            pass
    return _later(current, scheduled)


def _later(current: object, scheduled: str) -> bool:
    """Whether ``scheduled`` is after ``current``, either read by the general parser; an
    unreadable one counts as later (it is replaced, or replaces)."""
    old, new = try_parse_instant(current), try_parse_instant(scheduled)
    return old is None or new is None or new > old


def account(entry: Raw, event: str, scheduled: str, kind: str, reason: str) -> None:
    """A held, missed or paused occurrence: the cursor moves past it (SPEC §9.5), never back."""
    account_for(entry, scheduled, cron=kind == "cron")
    if event == "occurrence_held":
        entry["held_occurrences"] = [*entry["held_occurrences"], scheduled]
    elif event == "occurrence_missed":
        entry["last_missed"] = {"scheduled_for": scheduled, "reason": reason}


def release(entry: Raw) -> None:
    entry["held"], entry["hold_attempt_id"], entry["held_occurrences"] = False, None, []


def hold_region() -> list[str]:
    """The hold region (SPEC §9.1), drawn from :data:`HOLD_TRANSITIONS`."""
    edges: dict[tuple[str, str], list[str]] = {}
    for t in HOLD_TRANSITIONS:
        edges.setdefault((t.source, t.target), []).append(t.event)
    rows = [f"| `{t.event}` | {t.source} | {t.target} | {t.note} |" for t in HOLD_TRANSITIONS]
    return [
        "## The hold region (SPEC §9.1)", "",
        "Orthogonal to the status above: a routine is `free` or `held` (the view's `held`).",
        "`occurrence_held` and `routine_released` are legal only while held, `occurrence_missed`",
        "only while free; every other event leaves the hold as it is.", "",
        "```mermaid", "stateDiagram-v2", "    [*] --> free",
        *(f"    {s} --> {t}: {'<br/>'.join(labels)}" for (s, t), labels in edges.items()),
        "```", "",
        "| event | from | to | note |", "|---|---|---|---|", *rows, "",
    ]
