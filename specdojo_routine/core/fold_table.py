"""The routine state machine as data: states and the transition table (pure; SPEC §5, seed 000).

:data:`TRANSITIONS` is the one table :mod:`.fold` interprets, the tests enumerate and
:func:`.fold.render_state_diagram` draws. Moved out of :mod:`.fold` (which re-exports it).
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

Raw = dict[str, Any]
Status = Literal["never", "running", "success", "failure", "skipped", "partial"]
STATES: tuple[Status, ...] = ("never", "running", "success", "failure", "skipped", "partial")


@attrs.frozen(kw_only=True, repr=False)
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
    # SPEC §13: an operator changes the outcome of an ended attempt (``overrides: true``);
    # the routine takes the new result when the attempt is its last one.
    *(Transition(event="attempt_resolved", source=s, target=r, label=t,
                 note="operator overrides an ended attempt (its last: else the state stands)")
      for s in _SETTLED[1:] for r, t in _ENDS),
    # SPEC §13: pause and resume (the pause region), and occurrences accounted for as paused.
    *(Transition(event=e, source=s, target=s, note="operator; the pause region")
      for e in ("routine_paused", "routine_resumed") for s in STATES),
    *(Transition(event="occurrence_paused", source=s, target=s,
                 note="paused: accounted for, not run") for s in _SETTLED),
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
    # SPEC §15: retention removed an ended attempt's action evidence; the state stands.
    *(Transition(event="evidence_pruned", source=s, target=s,
                 note="retention: an ended attempt's evidence") for s in STATES[1:]),
    # SPEC §13: a notification hook ran after an event; the state stands.
    *(Transition(event="notification_sent", source=s, target=s,
                 note="a hook ran; the state stands") for s in STATES),
    # SPEC §13: a failed attempt's pending retry gave way to the next occurrence.
    Transition(event="retry_superseded", source="failure", target="failure",
               note="the next occurrence came due first; the retry is dropped"),
)
#: Events whose target state is their ``result``: their rows are keyed by (source, result).
BY_RESULT = frozenset({"attempt_ended", "attempt_resolved", "routine_state_imported",
                       "upstream_run_recorded"})
