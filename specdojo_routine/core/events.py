"""Every ledger event (SPEC §5): which ledger an event belongs in and its wire tag, and the
redaction of what events record from outside (pure).

The events are frozen, keyword-only, past-tense values, valid by construction: the routine
ledger's in :mod:`.routine_events`, the Job Run ledgers' in :mod:`.job_events`, what both share
(ids, timestamps, the :class:`~.event_parts.Owner` of an attempt) in :mod:`.event_parts`. The
wire tag (the ``type`` of a ledger line) comes from the explicit maps of those modules, never
from class names. The routine ledger and the Job Run ledgers both have an ``attempt_started``
and an ``attempt_ended`` with different payloads, so each ledger has its own tag map; this
module joins them.

Timestamps are strings in their stored form: ``scheduled_for``-style stamps with milliseconds
(``2026-08-07T08:00:00.000Z``), ``last_run``-style stamps without (``2026-08-07T08:02:00Z``); use
:func:`specdojo_routine.core.timefmt.format_ms` / ``format_s`` to make them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar

import attrs

from specdojo_routine.core.event_checks import (  # re-exported: events.<name> keeps working
    CURRENT_VERSION as CURRENT_VERSION,
)
from specdojo_routine.core.job_events import JOB_EVENT_TYPES, JobEvent
from specdojo_routine.core.redact import redact
from specdojo_routine.core.routine_events import ROUTINE_EVENT_TYPES, RoutineEvent

Event = RoutineEvent | JobEvent

LedgerKind = Literal["routine", "job"]

#: The wire tags of each ledger kind.
EVENT_TYPES: dict[LedgerKind, dict[str, type[Any]]] = {
    "routine": dict(ROUTINE_EVENT_TYPES),
    "job": dict(JOB_EVENT_TYPES),
}
#: Event class -> (ledger kind, wire tag).
TAGS: dict[type[Any], tuple[LedgerKind, str]] = {
    cls: (kind, tag) for kind, tags in EVENT_TYPES.items() for tag, cls in tags.items()
}


def tag_of(event: Event) -> str:
    """The wire tag (``type``) of ``event``."""
    return TAGS[type(event)][1]


def ledger_kind_of(event: Event) -> LedgerKind:
    """Which ledger ``event`` belongs in."""
    return TAGS[type(event)][0]


#: The fields of events that hold free text from outside the program: failure reasons (a
#: command's message, a path, an exception, what a review said), operator notes and who an
#: operator said they are (``--by`` takes any text, as ``--note`` does).
FREE_TEXT_FIELDS = ("reason", "note", "resolved_by", "released_by", "paused_by", "resumed_by")
_E = TypeVar("_E", bound=Event)


def redacted(event: _E, secrets: Sequence[str]) -> _E:
    """``event`` with its free text (:data:`FREE_TEXT_FIELDS`) redacted (SPEC §7.5).

    What an event records from the world outside can hold a secret - an executable path with
    a token in it, a message quoting a variable's value - and ledgers, the views folded from
    them and the console all show it; so every event is passed through here before it is
    appended, whatever produced its text.
    """
    changes: dict[str, Any] = {}
    for name in FREE_TEXT_FIELDS:
        text = getattr(event, name, None)
        if isinstance(text, str):
            clean = redact(text, secrets)
            if clean != text:
                changes[name] = clean
    return attrs.evolve(event, **changes) if changes else event
