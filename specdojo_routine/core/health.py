"""The health rule of ``status`` and ``list`` and the order of states, worst first (pure).

One rule decides both commands' exit codes, so a health check gives the same answer whichever
it runs: an enabled routine is unhealthy when its last result is a failure, it is interrupted,
it is held, or it missed an occurrence since its last success. Pausing is an operator's
decision and is not itself unhealthy, but it hides no failure: a paused routine whose last
result is a failure stays unhealthy (its state word is ``paused``; the overview still lists it
among the unhealthy ones). A disabled routine is never judged.

States are named in :data:`STATES`, worst first; a new state (say ``retrying``) is one row
there, a field of :class:`Facts`, and the line of :func:`state_of` that recognises it.
"""

from __future__ import annotations

import attrs

#: every state ``status`` shows, worst first (the overview's sort order); the first four
#: are the unhealthy ones (:func:`problems` decides)
STATES: tuple[str, ...] = (
    "interrupted",
    "held",
    "failure",
    "missed",
    "retrying",
    "running",
    "paused",
    "partial",
    "skipped",
    "never",
    "success",
    "disabled",
)
_RANK = {name: rank for rank, name in enumerate(STATES)}


@attrs.frozen(kw_only=True, repr=False)
class Facts:
    """What the health rule looks at for one routine (from its view entry and the lock)."""

    enabled: bool
    status: str  # the fold's status: never | running | success | failure | skipped | partial
    last_result: str | None
    interrupted: bool = False
    held: bool = False
    missed: bool = False  # a miss since the last success
    paused: bool = False
    retrying: bool = False


def state_of(facts: Facts) -> str:
    """The one word ``status`` shows for a routine: its worst current condition."""
    if not facts.enabled:
        return "disabled"
    if facts.interrupted:
        return "interrupted"
    if facts.held:
        return "held"
    if facts.paused:
        return "paused"
    if facts.retrying:
        return "retrying"
    if facts.status == "running":
        return "running"
    if facts.last_result == "failure":
        return "failure"
    if facts.missed:
        return "missed"
    return facts.last_result or facts.status


def problems(facts: Facts) -> list[str]:
    """Why a routine is unhealthy (empty: healthy); each entry a few words."""
    if not facts.enabled:
        return []
    found = []
    if facts.interrupted:
        found.append("interrupted")
    if facts.held:
        found.append("held")
    if facts.last_result == "failure":
        found.append("last result failure")
    if facts.missed:
        found.append("missed since its last success")
    return found


def rank(state: str) -> int:
    """Sort key of a state, worst first; an unknown state sorts with ``never``."""
    return _RANK.get(state, _RANK["never"])
