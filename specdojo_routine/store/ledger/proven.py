"""The proven state of the routine ledger (SPEC §5): the whole incremental-fold protocol.

One entry point, :func:`prove`: "give me the state of this ledger, and show me it is right".
A published view is evidence, not truth. The fold continues from it only when all of these
hold, and otherwise folds the ledger from scratch:

1. the view is exactly what this fold published: its ``ledger.digest`` is the sha256 of its
   canonical body (an edited view - by hand, or by the upstream CLI that rewrites
   ``routine-state.json`` - no longer matches), and the body is in this fold's canonical form;
2. it names the ledger file it covers (``file``: device, inode, size and change time when it was
   folded), and the ledger is now that same file, either untouched since (same size and change
   time) or changed only by this process's own appends and repairs (:func:`ledger.only_grew`):
   an edit anywhere in the ledger, even one keeping its length, changes its change time;
3. the line ending at ``offset`` still hashes to the recorded chain head (``head``), and every
   new line chains on from it (``prev``).

A fold from scratch checks every line's ``prev`` against the hash of the line before it, so a
changed line is found wherever it is, and raises :class:`CorruptLedgerError` naming file and
line before the caller records or delegates anything. The cost is one sha256 per line, inside
the read loop (:func:`chain.verified_chunks`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import attrs
import orjson

from specdojo_routine.core.errors import CorruptLedgerError
from specdojo_routine.core.fold import (
    RoutineFold,
    RoutineStateDoc,
    apply_all,
    fold_from_document,
    routine_document,
)
from specdojo_routine.store.ledger import chain, codec
from specdojo_routine.store.ledger import journal as ledger

__all__ = ["Proven", "from_scratch", "prove"]

_COVER_KEYS = ("seq", "offset", "head", "file", "digest")
_FILE_KEYS = ("dev", "ino", "size", "ctime_ns")


@attrs.frozen(kw_only=True)
class Proven:
    """A fold of a ledger up to its tail, and how it was obtained."""

    state: RoutineFold
    tail: ledger.Tail
    resumed_at: int  # the seq the fold continued after (0: folded from scratch)

    def content(self) -> RoutineStateDoc:
        """The document without what ties it to one file (``ledger`` is just seq and
        offset): what a replay of the same lines gives anywhere."""
        return routine_document(self.state, self.tail.end)

    def document(self) -> RoutineStateDoc:
        """``routine-state.json``, recording what it covers and a digest of its own body."""
        doc = routine_document(self.state, self.tail.end)
        stamp = self.tail.stamp
        cover: dict[str, Any] = {
            "seq": self.state.seq, "offset": self.tail.end, "head": self.tail.head,
            "file": {"dev": stamp.dev, "ino": stamp.ino, "size": stamp.size,
                     "ctime_ns": stamp.ctime_ns}}
        doc["ledger"] = cover  # type: ignore[typeddict-item]
        cover["digest"] = _digest(doc)
        return doc


def prove(path: Path, view_path: Path | None = None) -> Proven:
    """The routine fold of the ledger at ``path``: continued from the view at ``view_path``
    when that view is proven (see the module docstring), else from scratch."""
    tail = ledger.tail(path)
    resumed = _resumable(view_path, path, tail) if view_path is not None else None
    if resumed is None:
        return from_scratch(path, tail)
    state, offset, head = resumed
    resumed_at = state.seq
    _fold(path, state, tail, offset=offset, head=head)
    return Proven(state=state, tail=tail, resumed_at=resumed_at)


def from_scratch(path: Path, tail: ledger.Tail | None = None) -> Proven:
    """The routine fold of every line of the ledger, each line's hash chain checked."""
    tail = ledger.tail(path) if tail is None else tail
    state = RoutineFold()
    _fold(path, state, tail, offset=0, head=chain.EMPTY_HEAD)
    return Proven(state=state, tail=tail, resumed_at=0)


# --- the steps ---------------------------------------------------------------------------------


def _fold(path: Path, state: RoutineFold, tail: ledger.Tail, *, offset: int, head: str) -> None:
    """Fold the lines after ``state.seq`` (starting at byte ``offset``, ``head`` the hash of the
    line before them) up to ``tail``, each chunk's chain checked before it is folded."""
    if tail.seq <= state.seq:
        return
    where = str(path)
    with open(path, "rb") as f:
        chunks = chain.verified_chunks(f, path, offset, tail.end, line=state.seq + 1, head=head)
        for raws in chunks:
            apply_all(state, raws, where=where, upgrade=codec.upgrade)
    if state.seq != tail.seq:
        raise CorruptLedgerError(str(path), state.seq + 1, "the ledger has fewer lines than seqs")


def _digest(doc: Any) -> str:
    """sha256 of a view document's canonical body (``ledger.digest`` itself left out)."""
    body = {**doc, "ledger": {k: v for k, v in doc["ledger"].items() if k != "digest"}}
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _read_view(view_path: Path) -> Any:
    try:
        return orjson.loads(view_path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def _resumable(
    view_path: Path, path: Path, tail: ledger.Tail
) -> tuple[RoutineFold, int, str] | None:
    """(fold state, offset, chain head) of the published view when it is proven, else None."""
    doc = _read_view(view_path)
    cover = _cover(doc)
    if cover is None:
        return None
    try:
        state = fold_from_document({**doc, "ledger": {"seq": cover["seq"],
                                                      "offset": cover["offset"]}})
    except ValueError:
        return None
    since = ledger.Stamp(**cover["file"])
    if state.seq > tail.seq or cover["offset"] > tail.end:
        return None
    if not ledger.only_grew(since, tail.stamp):
        return None
    offset, head = cover["offset"], cover["head"]
    if offset == tail.end:
        return (state, offset, head) if head == tail.head else None
    last = ledger.line_ending_at(path, offset)
    if offset > 0 and (last is None or chain.line_hash(last) != head):
        return None
    if offset == 0 and head != chain.EMPTY_HEAD:
        return None
    return state, offset, head


def _cover(doc: Any) -> dict[str, Any] | None:
    """The ``ledger`` member of a view that is byte for byte what this fold published."""
    try:
        cover = doc["ledger"]
        if tuple(cover) != _COVER_KEYS or tuple(cover["file"]) != _FILE_KEYS:
            return None
        if not all(type(cover["file"][k]) is int for k in _FILE_KEYS):
            return None
        return cover if cover["digest"] == _digest(doc) else None
    except (KeyError, TypeError, AttributeError):
        return None
