"""The routine fold in two parts at once: speculate on the second, prove it, or refuse (pure).

A full fold of a long routine ledger is split at a line: this process folds the first part
while a helper process folds the second (:mod:`specdojo_routine.store.foldhelper`, issue 16).
The helper cannot know the state the first part leaves, so it *speculates*, and this process
later proves the speculation or throws it away:

- A routine's lines in the second part are folded from its first ``attempt_started`` on (its
  *anchor*). That event is legal from a set of statuses (the table's rows with its
  ``transition`` label), leads to the same row from each of them, and overwrites every field
  the rest of an attempt reads, except ``held``, which is assumed ``False``. Every other field
  of the entry at the anchor is a :class:`Hole`: it may be carried along, but any look at it
  (truth, comparison, hashing, iteration, indexing, a method) raises :class:`Unknown`, and the
  speculation ends.
- A routine's lines before its anchor are not folded there; they come back in
  :attr:`Part.before`, in ledger order.
- :func:`join` folds those lines onto the first part's state, checks each anchored routine's
  assumptions against the entry it really has at its anchor (its status in the set, ``held``
  ``False``) and the part's first ``seq`` against the first part's last, and fills the holes
  from the real entries. Short of that proof - or after any error while speculating - the
  caller folds the second part itself, in one piece, which also reports every error exactly
  as it always has.

Why a proven join is exact: a handler's effect depends only on its event and the entry fields
it reads. At the anchor the speculative entry and the real one agree on every field a handler
can read without raising (the status picks the same row; ``held``), so every later line does
the same to both, and the final entries differ only in the holes, which :func:`join` replaces
by the real values. ``tests/test_fold_parts.py`` holds :func:`join` to the fold in one piece
for every cut of generated ledgers, and says exactly when it must refuse.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NoReturn

import attrs

from specdojo_routine.core.attrs_repr import shared_repr
from specdojo_routine.core.errors import InvalidTransition
from specdojo_routine.core.event_checks import CURRENT_VERSION

# The fold's own parts: this module is the fold, taken apart at a line.
from specdojo_routine.core.fold import _HANDLERS, _STARTED, _create, _normalised
from specdojo_routine.core.fold_docs import RoutineFold
from specdojo_routine.core.fold_table import Raw

__all__ = ["Hole", "Part", "Unknown", "join", "speculate"]


class Unknown(Exception):
    """The speculative fold looked at a field that only the fold of the first part knows."""


class Hole:
    """A field of a routine's entry at its anchor, unknown in the second part (see module)."""

    __slots__ = ("field",)

    def __init__(self, field: str) -> None:
        self.field = field

    def __reduce__(self) -> tuple[type[Hole], tuple[str]]:
        return Hole, (self.field,)

    def __repr__(self) -> str:
        return f"Hole({self.field!r})"

    def _look(self, *args: object) -> NoReturn:
        raise Unknown(self.field)

    def __getattr__(self, name: str) -> NoReturn:  # .get(), .items(), ...: a look
        if name.startswith("__"):
            raise AttributeError(name)
        raise Unknown(self.field)

    __bool__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _look
    __hash__ = __len__ = __iter__ = __contains__ = _look
    __getitem__ = __setitem__ = __delitem__ = _look
    __add__ = __radd__ = __or__ = __ror__ = __and__ = __rand__ = _look
    __int__ = __index__ = __float__ = __str__ = __format__ = _look


def _anchors() -> dict[Any, frozenset[str]]:
    """``transition`` label of an ``attempt_started`` -> the statuses it is legal from."""
    found: dict[Any, set[str]] = {}
    for source, row in _STARTED.items():
        assert row.target == "running"  # one row's effect whichever of the sources it was
        found.setdefault(row.label, set()).add(source)
    return {label: frozenset(sources) for label, sources in found.items()}


_ANCHORS = _anchors()
_FIELDS = tuple(_create({}, "-"))
_HOLES = {field: Hole(field) for field in _FIELDS}


@attrs.define
@shared_repr
class Part:
    """The speculative fold of the lines from ``first_seq`` on (the accumulator, then the
    answer a helper sends back)."""

    first_seq: int  #: the seq the part's first line declares
    first_prev: str | None  #: that line's ``prev`` (None: it has none)
    seq: int  #: the last seq folded
    routines: dict[str, Raw] = attrs.field(factory=dict)  #: anchored routines' entries
    statuses: dict[str, frozenset[str]] = attrs.field(factory=dict)  #: legal at each anchor
    before: list[Raw] = attrs.field(factory=list)  #: lines before their routine's anchor
    seen: dict[Any, int] = attrs.field(factory=dict)  #: routines in order of first line


def speculate(part: Part, raws: Iterable[Any], *, upgrade: Callable[[Raw], Raw]) -> None:
    """Fold parsed lines (those after ``part.seq``) into ``part``. Any exception ends the
    speculation: the part is then of no use (the fold in one piece will say what is wrong)."""
    routines, handlers, seq, current = part.routines, _HANDLERS, part.seq, CURRENT_VERSION
    try:
        for raw in raws:
            seq += 1
            if raw.get("version") != current or raw.get("seq") != seq:  # the rare lines
                raw = _normalised(raw, seq, upgrade)
            if raw["routine_id"] not in routines and not _anchored(part, raw, seq):
                continue
            handlers[raw["type"]](routines, raw)
    finally:
        part.seq = seq


def _anchored(part: Part, raw: Raw, seq: int) -> bool:
    """Whether ``raw`` anchors its routine (set up to be folded); else it is kept for
    :func:`join`."""
    rid = raw["routine_id"]
    part.seen.setdefault(rid, seq)
    statuses = _ANCHORS.get(raw["transition"]) if raw["type"] == "attempt_started" else None
    if statuses is None or type(rid) is not str:
        part.before.append(raw)
        return False
    part.routines[rid] = {**_HOLES, "status": min(statuses), "held": False}
    part.statuses[rid] = statuses
    return True


def join(state: RoutineFold, part: Part, *, head: str) -> bool:
    """Fold ``part`` (the lines right after ``state.seq``; ``head`` the hash of the line
    before them) onto ``state`` if its speculation is proven. False, ``state`` untouched, if
    it is not."""
    if part.first_seq != state.seq + 1 or part.first_prev not in (None, head):
        return False
    routines = _folded_before(state.routines, part.before)
    if routines is None:
        return False
    for rid, entry in part.routines.items():
        real = routines.get(rid) or _create({}, rid)
        if real["status"] not in part.statuses[rid] or real["held"] is not False:
            return False
        if entry.keys() != real.keys():
            return False
        routines[rid] = {k: real[v.field] if type(v) is Hole else v for k, v in entry.items()}
    order = [*state.routines, *(rid for rid in part.seen if rid not in state.routines)]
    if len(order) != len(routines):
        return False
    state.routines = {rid: routines[rid] for rid in order}
    state.seq = part.seq
    return True


def _folded_before(routines: dict[str, Raw], lines: list[Raw]) -> dict[str, Raw] | None:
    """A copy of ``routines`` with the lines folded in (None: one of them is not legal there);
    the entries those lines change are copied first."""
    out, copied = dict(routines), set()
    try:
        for raw in lines:
            rid = raw["routine_id"]
            if rid in routines and rid not in copied:
                entry = out[rid]
                actions = entry["actions"]  # the one value a handler changes in place
                out[rid] = {**entry, "actions": None if actions is None else dict(actions)}
                copied.add(rid)
            _HANDLERS[raw["type"]](out, raw)
    except (InvalidTransition, KeyError, TypeError, AttributeError, ValueError):
        return None
    return out
