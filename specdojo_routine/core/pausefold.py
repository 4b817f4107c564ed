"""The pause region of the routine fold (SPEC §13), orthogonal to the status and the hold (pure).

A routine is ``running`` (not paused) or ``paused``. :mod:`.fold` calls these for the pause
events; :mod:`.policy` asks :func:`pause_reason` whether an occurrence is accounted for as paused.
The view keeps the last pause in ``pause`` (``{by, at, note, resumed_at}``, or null): while
``resumed_at`` is null the routine is paused; after a resume the entry stays, because an
occurrence scheduled up to ``resumed_at`` that no run saw is still paused (resuming is not
permission to catch up, seed 004). The table here is drawn into docs/state-diagram.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

import attrs

from specdojo_routine.core.timefmt import format_ms

Raw = dict[str, Any]
PauseState = Literal["active", "paused"]


@attrs.frozen(kw_only=True, repr=False)
class PauseTransition:
    """One move of the pause region (SPEC §13)."""

    event: str
    source: PauseState
    target: PauseState
    note: str = ""


#: The pause region: which events may come in which pause state. Events not named here leave
#: the pause state as it is, in either state.
PAUSE_TRANSITIONS: tuple[PauseTransition, ...] = (
    PauseTransition(event="routine_paused", source="active", target="paused",
                    note="operator; pause = {by, at, note}"),
    PauseTransition(event="routine_resumed", source="paused", target="active",
                    note="operator; pause.resumed_at set, nothing runs"),
    PauseTransition(event="occurrence_paused", source="paused", target="paused",
                    note="due while paused: accounted for, not run"),
    PauseTransition(event="occurrence_paused", source="active", target="active",
                    note="scheduled by pause.resumed_at, seen after the resume"),
)
PAUSE_GUARD = {e: {t.source for t in PAUSE_TRANSITIONS if t.event == e}
               for e in ("routine_paused", "routine_resumed")}


def is_paused(state: Mapping[str, Any] | None) -> bool:
    """Whether the routine is paused now (a pause not yet resumed)."""
    pause = (state or {}).get("pause")
    return isinstance(pause, dict) and pause.get("resumed_at") is None


def allowed(event: str, entry: Raw) -> bool:
    """Whether ``event`` may come in the entry's pause state (events not guarded: always)."""
    sources = PAUSE_GUARD.get(event)
    return sources is None or ("paused" if is_paused(entry) else "active") in sources


def pause(entry: Raw, raw: Raw) -> None:
    for key in ("paused_by", "paused_at"):
        if not isinstance(raw[key], str):
            raise TypeError(f"{key} must be a string")
    entry["pause"] = {"by": raw["paused_by"], "at": raw["paused_at"], "note": raw["note"],
                      "resumed_at": None}


def resume(entry: Raw, raw: Raw) -> None:
    if not isinstance(raw["resumed_by"], str) or not isinstance(raw["resumed_at"], str):
        raise TypeError("resumed_by and resumed_at must be strings")
    entry["pause"] = {**entry["pause"], "resumed_at": raw["resumed_at"]}


def reason(pause: Mapping[str, Any]) -> str:
    """``paused by <name>: <note>`` (``paused by <name>`` without a note; SPEC §13)."""
    note = pause.get("note")
    return f"paused by {pause.get('by')}" + (f": {note}" if note else "")


def pause_reason(state: Mapping[str, Any] | None, became_due: datetime | None) -> str | None:
    """The reason a due occurrence is accounted for as paused, or None when it may run.

    ``became_due`` is when the occurrence became due (a cron occurrence's ``scheduled_for``,
    an interval routine's ``last_run + interval``; None for an interval routine that never
    ran). While paused, every due occurrence is paused; after a resume, those that became due
    by ``resumed_at`` (compared in the stored form, written only when there is a resume)."""
    pause = (state or {}).get("pause")
    if not isinstance(pause, dict):
        return None
    resumed = pause.get("resumed_at")
    if resumed is None or (became_due is not None and format_ms(became_due) <= resumed):
        return reason(pause)
    return None


def pause_region() -> list[str]:
    """The pause region (SPEC §13), drawn from :data:`PAUSE_TRANSITIONS`."""
    edges: dict[tuple[str, str], list[str]] = {}
    for t in PAUSE_TRANSITIONS:
        edges.setdefault((t.source, t.target), []).append(t.event)
    rows = [f"| `{t.event}` | {t.source} | {t.target} | {t.note} |" for t in PAUSE_TRANSITIONS]
    return [
        "## The pause region (SPEC §13)", "",
        "Orthogonal to the status and the hold: a routine is `active` or `paused` (the view's",
        "`pause`, with `resumed_at` null). `routine_paused` is legal only while active,",
        "`routine_resumed` only while paused; `occurrence_paused` needs a `pause` (while paused,",
        "or for an occurrence scheduled by `pause.resumed_at`); every other event leaves the",
        "pause as it is.", "",
        "```mermaid", "stateDiagram-v2", "    [*] --> active",
        *(f"    {s} --> {t}: {'<br/>'.join(labels)}" for (s, t), labels in edges.items()),
        "```", "",
        "| event | from | to | note |", "|---|---|---|---|", *rows, "",
    ]
