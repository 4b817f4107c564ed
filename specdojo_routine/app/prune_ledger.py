"""What the routine ledger says of the attempts whose evidence retention may remove (SPEC §15).

An attempt's evidence is prunable only when the routine ledger records that attempt: its
``attempt_started`` names the routine, and an ``attempt_ended`` or ``attempt_resolved`` of
that routine says it ended. The routine and the times come from the ledger, never from the
evidence's own files: an ``evidence.json`` is only what was left in a folder, and a copied,
stale or forged one must neither make ``prune`` record an ``evidence_pruned`` the routine
fold would refuse (a routine it does not know) nor remove files no ledger accounts for. The
ledger also says whose removal is recorded already (their ``evidence_pruned``): what a crash
left of those is finished without a second record.

Reading the whole ledger at every prune would make ``run --due`` under ``retention.auto``
cost what the project's age costs. So the retention cache (:mod:`.prune_facts`) remembers
how far the ledger has been read (the byte offset, and the chain head there: the hash of
the last line read) and what it said of the attempts that still have evidence or are still
open; each prune reads forward from there, in one pass, each chunk's hash chain checked
(:func:`~specdojo_routine.store.ledger.chain.positioned_chunks`). The line that ends at the
remembered offset must hash to the remembered head, else the ledger is not the one that was
read (replaced, restored, moved aside) and reading starts again from its first line. A
reading stopped by the deadline is remembered where it stopped and goes on from there next
time; the position is by content, not by the file's stamps, so a copied project goes on too.
When no attempt has evidence nothing is read: the reading waits where it stood.

Attempts that ended with no evidence left are forgotten as the reading passes them, so what
is remembered stays as small as what is kept. One whose evidence comes back after that (a
restore) is unknown: it is kept, and deleting the cache has the whole ledger read again.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import attrs

from specdojo_routine.store.config import ProjectPaths
from specdojo_routine.store.ledger import chain
from specdojo_routine.store.ledger import journal as ledger

#: The events that say something of an attempt's evidence.
_WATCHED = frozenset({"attempt_started", "attempt_ended", "attempt_resolved",
                      "evidence_pruned"})


@attrs.frozen(kw_only=True, repr=False)
class Known:
    """What the routine ledger records of one attempt."""

    routine_id: str
    started_at: str | None  # its attempt_started's ``at``
    ended_at: str | None  # its end (None: not ended: open, or interrupted and not resolved)
    pruned: bool  # its evidence_pruned is there


@attrs.frozen(kw_only=True, repr=False)
class _Position:
    offset: int  # just past the last line read
    line: int  # the number of the next line
    head: str  # the hash of the last line read


_START = _Position(offset=0, line=1, head=chain.EMPTY_HEAD)


def read(
    paths: ProjectPaths, cached: Any, wanted: Collection[str], late: Callable[[], bool],
) -> tuple[dict[str, Known], dict[str, Any], bool]:
    """(what the ledger records of each ``wanted`` attempt it knows, what the cache keeps,
    whether every complete line was read): from the position ``cached`` remembers, forward
    to the ledger's last complete line, stopping between chunks once ``late()``."""
    path = paths.routine_ledger
    tail = ledger.tail(path)
    at, attempts = _resume(path, cached, tail.end)
    complete = at.offset >= tail.end
    if not complete and not late():
        at, complete = _scan(path, tail.end, at, attempts, wanted, late)
    kept = {a: e for a, e in attempts.items() if a in wanted or e[2] is None}
    known = {a: Known(routine_id=e[0], started_at=e[1], ended_at=e[2], pruned=e[3])
             for a, e in kept.items() if a in wanted}
    return known, {"offset": at.offset, "line": at.line, "head": at.head,
                   "attempts": kept}, complete


def _scan(
    path: Path, end: int, at: _Position, attempts: dict[str, list[Any]],
    wanted: Collection[str], late: Callable[[], bool],
) -> tuple[_Position, bool]:
    """Read from ``at`` to ``end``, noting what each chunk says of attempts; (where it
    stopped, whether that is ``end``)."""
    started = at.offset > 0 and ledger.chain_started_before(path, at.offset)
    with open(path, "rb", buffering=chain.READ_BUFFER) as f:
        for raws, offset, head in chain.positioned_chunks(
                f, path, at.offset, end, line=at.line, head=at.head, started=started):
            _note(raws, attempts, wanted)
            at = _Position(offset=offset, line=at.line + len(raws), head=head)
            if offset < end and late():
                return at, False
    return at, at.offset >= end


def _note(raws: list[Any], attempts: dict[str, list[Any]], wanted: Collection[str]) -> None:
    """Apply what these lines say: an attempt of a routine began, ended (one that has no
    evidence is then forgotten), or had its evidence pruned. A line about an attempt that
    does not name the routine it began for says nothing of it."""
    for raw in raws:
        kind = raw.get("type") if type(raw) is dict else None
        if kind not in _WATCHED:
            continue
        attempt_id, routine_id = raw.get("attempt_id"), raw.get("routine_id")
        if type(attempt_id) is not str or type(routine_id) is not str:
            continue
        if kind == "attempt_started":
            attempts[attempt_id] = [routine_id, _text(raw.get("at")), None, False]
            continue
        entry = attempts.get(attempt_id)
        if entry is None or entry[0] != routine_id:
            continue
        if kind == "evidence_pruned":
            entry[3] = True
        elif entry[2] is None:
            ended = raw.get("completed_at") if kind == "attempt_ended" else None
            entry[2] = _text(ended) or _text(raw.get("at")) or entry[1] or "?"
            if attempt_id not in wanted:
                del attempts[attempt_id]


def _text(value: Any) -> str | None:
    return value if type(value) is str else None


def _resume(path: Path, cached: Any, end: int) -> tuple[_Position, dict[str, list[Any]]]:
    """The remembered position and attempts when the line that ends there is still the line
    that was read (its hash is the remembered head), else the start and nothing."""
    if not isinstance(cached, dict):
        return _START, {}
    offset, line, head = cached.get("offset"), cached.get("line"), cached.get("head")
    attempts = _attempts(cached.get("attempts"))
    if type(offset) is not int or type(line) is not int or type(head) is not str \
            or attempts is None or not 0 < offset <= end or line < 2:
        return _START, {}
    last = ledger.line_ending_at(path, offset)
    if last is None or chain.line_hash(last) != head:
        return _START, {}
    return _Position(offset=offset, line=line, head=head), attempts


def _attempts(cached: Any) -> dict[str, list[Any]] | None:
    """The remembered attempts, each [routine, started, ended, pruned], if well formed."""
    if not isinstance(cached, dict):
        return None
    for entry in cached.values():
        if not (type(entry) is list and len(entry) == 4 and type(entry[0]) is str
                and all(v is None or type(v) is str for v in entry[1:3])
                and type(entry[3]) is bool):
            return None
    return cached
