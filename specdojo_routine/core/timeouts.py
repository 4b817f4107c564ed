"""Timeouts for every routine action (SPEC §13), pure.

``policy.timeout`` is one budget for a whole attempt; an action's own ``timeout`` bounds that
action; the smaller wins. A delegated call (``specdojo`` and the legacy kinds) without a
timeout of its own is bounded by :data:`DELEGATED_DEFAULT`, so a hung SpecDojo CLI cannot hold
the routine lock for ever; a Job action has no default (the Job's ``task.timeout`` applies).
"""

from __future__ import annotations

import math

import attrs

from specdojo_routine.core.model import Duration
from specdojo_routine.core.policy import span_text

#: The bound of a delegated call that sets no timeout (SPEC §13).
DELEGATED_DEFAULT = Duration(text="6h", seconds=6 * 3600)
#: The reason of an action not started because the attempt's budget was used up.
ATTEMPT_TIMED_OUT = "attempt timed out"
#: SIGTERM -> SIGKILL when an action's timeout expires, a Job action's command included
#: (SPEC §13: 10 s, as for a stop).
TIMEOUT_GRACE_S = 10.0


@attrs.frozen(kw_only=True, repr=False)
class Limit:
    """How long one action may run, and how its expiry is worded."""

    seconds: float
    text: str  # as written when it is a whole timeout, else what was left ("3m 20s")

    @property
    def reason(self) -> str:
        """``timed out after <d>``: the action's recorded reason on expiry."""
        return f"timed out after {self.text}"


def action_limit(
    own: Duration | None, kind: str, *, attempt: Duration | None, used_s: float,
) -> Limit | None:
    """The bound of the next action: its own timeout (or the delegated default) and what is
    left of the attempt's budget after ``used_s`` seconds, the smaller; None when unbounded.
    A budget already used up is a limit of 0 (the caller skips the action)."""
    candidates: list[Limit] = []
    base = own if own is not None else (None if kind == "job" else DELEGATED_DEFAULT)
    if base is not None:
        candidates.append(Limit(seconds=float(base.seconds), text=base.text))
    if attempt is not None:
        left = max(0.0, attempt.seconds - used_s)
        text = attempt.text if used_s < 1.0 else span_text(max(1, math.ceil(left)))
        candidates.append(Limit(seconds=left, text=text))
    if not candidates:
        return None
    return min(candidates, key=lambda limit: limit.seconds)
