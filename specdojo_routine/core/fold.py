"""The fold: routine ledger events -> view documents (pure; SPEC §5, seed 000).

The routine state machine is one table, :data:`TRANSITIONS`, which the fold interprets, the tests
enumerate and :func:`render_state_diagram` draws. The routine fold works on the parsed (raw) dicts
of ledger lines, dispatching on ``type`` (no attrs/cattrs objects per line: it is the hot path).
Raw events must be at the current version; the caller passes ``codec.upgrade`` for older ones.
Line ``n`` of a ledger has ``seq`` ``n``, so errors name lines by seq. The Job Run fold
(SPEC §7.6) is :mod:`.jobfold`. The table itself lives in :mod:`.fold_table`, the view
documents and the accumulator in :mod:`.fold_docs`; both are re-exported here. What each
event does to its routine's entry is :mod:`.fold_handlers`; this module drives them line by
line (:func:`apply_all`), naming the ledger line of every error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from specdojo_routine.core import holdfold, pausefold
from specdojo_routine.core.adopt import is_upstream_line, upstream_event
from specdojo_routine.core.errors import CorruptLedgerError, InvalidTransition
from specdojo_routine.core.event_checks import CURRENT_VERSION
from specdojo_routine.core.fold_docs import (
    ActionDoc,
    ActionResultDoc,
    LedgerPositionDoc,
    MissDoc,
    OpenAttemptDoc,
    OwnerDoc,
    RoutineEntryDoc,
    RoutineFold,
    RoutineStateDoc,
    RoutineView,
    fold_from_document,
    never_entry,
    read_document,
    routine_document,
)
from specdojo_routine.core.fold_handlers import HANDLERS
from specdojo_routine.core.fold_table import (
    BY_RESULT,
    STATES,
    TRANSITIONS,
    Raw,
    Status,
    Transition,
)
from specdojo_routine.core.holdfold import HOLD_TRANSITIONS, HoldTransition

__all__ = [
    "BY_RESULT",
    "HOLD_TRANSITIONS",  # the hold region, with the table (SPEC §9.1)
    "STATES",
    "TRANSITIONS",
    "ActionDoc",
    "ActionResultDoc",
    "HoldTransition",
    "LedgerPositionDoc",
    "MissDoc",
    "OpenAttemptDoc",
    "OwnerDoc",
    "Raw",
    "RoutineEntryDoc",
    "RoutineFold",
    "RoutineStateDoc",
    "RoutineView",
    "Status",
    "Transition",
    "apply_all",
    "fold_from_document",
    "never_entry",
    "read_document",
    "render_state_diagram",
    "routine_document",
]

# --- the routine fold (hot path) ---------------------------------------------------------------


def apply_all(
    state: RoutineFold, raws: Iterable[Any], *, where: str, upgrade: Callable[[Raw], Raw]
) -> None:
    """Fold parsed routine-ledger lines (the ones after ``state.seq``) into ``state``.

    A line that is not a valid event (unknown type, missing field, wrong seq) raises
    :class:`CorruptLedgerError`, an event the table forbids :class:`InvalidTransition`, both
    naming ``where:<line>``. Errors raised by ``raws`` itself propagate unchanged, with
    ``state.seq`` the last line folded.
    """
    routines, handlers, seq, current = state.routines, HANDLERS, state.seq, CURRENT_VERSION
    try:
        for raw in raws:
            seq += 1
            try:
                if raw.get("version") != current or raw.get("seq") != seq:  # the rare lines
                    raw = _normalised(raw, seq, upgrade)
                handlers[raw["type"]](routines, raw)
            except InvalidTransition as exc:
                at = f"{where}:{seq}"
                raise InvalidTransition(exc.routine_id, exc.state, exc.event, at) from None
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                raise CorruptLedgerError(where, seq, _reason(raw, exc)) from None
    finally:
        state.seq = seq


def _normalised(raw: Raw, seq: int, upgrade: Callable[[Raw], Raw]) -> Raw:
    """Line ``seq`` as a current-version event: an upstream line read as one, an older
    version upgraded; its ``seq`` must be ``seq``."""
    if "type" not in raw and is_upstream_line(raw):
        raw = upstream_event(raw, seq)
    elif raw.get("version") != CURRENT_VERSION:
        raw = upgrade(raw)
    if raw["seq"] != seq:
        raise ValueError(f"seq {raw['seq']!r} where {seq} was expected")
    return raw


def _reason(raw: Any, exc: Exception) -> str:
    if not isinstance(raw, dict):
        return "line is not a JSON object"
    kind = raw.get("type")
    if isinstance(exc, KeyError):
        if not isinstance(kind, str) or kind not in HANDLERS:
            return f"unknown routine event type {kind!r}"
        return f"{kind} event lacks field {exc.args[0]!r}"
    if isinstance(exc, ValueError):
        return str(exc)
    return f"{kind} event has a field of the wrong type ({exc})"


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
        *pausefold.pause_region(),
    ])
