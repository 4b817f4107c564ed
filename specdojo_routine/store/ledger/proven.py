"""The proven state of the routine ledger (SPEC §5): the whole incremental-fold protocol.

One way in, :func:`prove` - "give me the state of this ledger, and show me it is right" - and
one way out, :meth:`Proven.publish`, which writes the view and what proves it.

``routine-state.json`` is a function of the ledger's bytes alone. Its ``ledger`` member is
``seq``, ``offset`` and ``head`` (the hash of the line at ``seq``: the chain head) and nothing
of one machine, so a copied, restored, cloned or synced project folds to the same bytes and
``fold --check`` on an untouched copy is clean. What lets a later command trust that view
without reading the ledger again is machine-local and kept apart, in a :class:`Snapshot`
(``R/.cache/routine-state.snapshot.json``, :attr:`ProjectPaths.routine_snapshot`): the
fingerprint of the code that proved it, the ledger file's identity, size and change time when
it was proven, the position proven, and the sha256 of the exact view bytes published with it.
The fold continues from the view only when all of these hold, and otherwise folds the ledger
from scratch:

1. the snapshot was written by this code (:func:`codeprint.fingerprint`): a view that an
   earlier version folded - perhaps with rules since mended - is folded again by this one,
   not carried on incrementally;
2. the ledger is the file the snapshot names (device, inode), either untouched since (same
   size and change time) or changed only by this process's own appends and repairs
   (:func:`stamps.only_grew`): an edit anywhere in the ledger, even one keeping its length,
   changes its change time, and a copy is another inode. That holds only for a snapshot
   written after the change time it records (its own change time is later): a file system
   that keeps whole seconds (ext3, ext4 with 128-byte inodes, FAT) gives an edit in the
   same second as the last append, keeping the length, the same stamp. Another process's
   snapshot written within that tick proves nothing: the ledger is folded from scratch (its
   chain verified) and the snapshot written anew (a later tick: it proves again); one this
   process wrote itself is trusted as its own appends are;
3. the view's bytes are exactly the ones published with the snapshot (an edit by hand, the
   upstream CLI rewriting the file, a view another tool wrote: any change breaks the sha256),
   it covers the position the snapshot names, and it is in this fold's canonical form;
4. the line ending at ``offset`` still hashes to ``head``, and every new line chains on from it
   (``prev``).

Without a snapshot, or with one that does not match (a copy, a restore, an upgrade of this
package, a view written by an earlier version that kept the file's identity in the view), the
command verifies the chain once - a fold from scratch - and its next publish writes a new
snapshot. The snapshot is only ever a shortcut: deleting it costs one full fold, never a wrong
answer. It is read and written as a regular file only (never through a symlink; a FIFO in its
place is not waited on).

A fold from scratch checks every line's ``prev`` against the hash of the line before it, so a
changed line is found wherever it is, and raises :class:`CorruptLedgerError` naming file and
line before the caller records or delegates anything. The cost is one sha256 per line, inside
the read loop (:func:`chain.verified_chunks`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Any

import attrs
import orjson

from specdojo_routine.core.errors import CorruptLedgerError
from specdojo_routine.core.fold import (
    RoutineFold,
    RoutineStateDoc,
    apply_all,
    read_document,
    routine_document,
)
from specdojo_routine.store import codeprint
from specdojo_routine.store.config import read_private
from specdojo_routine.store.ledger import chain, codec, documents, stamps
from specdojo_routine.store.ledger import journal as ledger

__all__ = ["Proven", "Snapshot", "from_scratch", "prove", "render"]

_SNAPSHOT_VERSION = 2
_SNAPSHOT_KEYS = ("version", "code", "ledger_file", "seq", "offset", "head", "view_sha256")
_FILE_KEYS = tuple(a.name for a in attrs.fields(stamps.Stamp))  # as Stamp.to_json writes them


def render(document: Any) -> bytes:
    """A view document as stored: 2-space indented JSON and a trailing newline (the bytes a
    snapshot's ``view_sha256`` is taken over)."""
    return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"


@attrs.frozen(kw_only=True, repr=False)
class Snapshot:
    """What proved a published view against one ledger file on this machine: the private
    snapshot under ``R/.cache/`` (git-ignored, safe to delete), the one place that records the
    ledger file's identity - never a view, which depends on the ledger's bytes alone (SPEC §5).

    Stored as one compact JSON object: the ``version`` (2), the ``code`` that wrote it
    (:func:`codeprint.fingerprint`), the ``ledger_file`` (its ``dev``, ``ino``, ``size`` and
    ``ctime_ns``), the ``seq``, ``offset`` and ``head`` it covers and the published bytes'
    ``view_sha256``. Anything else in the file - another version or code, a missing or extra
    key, a wrong type, bytes that are not JSON - is no snapshot."""

    stamp: stamps.Stamp  # the ledger file when the view was proven
    seq: int
    offset: int
    head: str
    view_sha256: str  # sha256 (hex) of the view's bytes as published
    #: the change time of the snapshot file as read (0: not read from a file)
    written_ns: int = 0

    def proves_the_stamp(self) -> bool:
        """Whether the snapshot file was written after the ledger's recorded change time:
        only then would a later change to the ledger have another change time. Where the
        two are equal (a file system that keeps whole seconds, or one clock tick) an edit
        that keeps the ledger's size in that tick looks exactly like the proven file."""
        return self.written_ns > self.stamp.ctime_ns

    def to_bytes(self) -> bytes:
        return orjson.dumps({
            "version": _SNAPSHOT_VERSION, "code": codeprint.fingerprint(),
            "ledger_file": self.stamp.to_json(),
            "seq": self.seq, "offset": self.offset, "head": self.head,
            "view_sha256": self.view_sha256}) + b"\n"

    @classmethod
    def read(cls, path: Path) -> Snapshot | None:
        """The snapshot at ``path``, or None (none there, not a regular file, not readable,
        not exactly what :meth:`to_bytes` of this code writes). Its change time is taken
        before its bytes are read: a snapshot another process puts in its place between the
        two then lends the bytes read an earlier time, never a later one that would prove
        what they do not."""
        try:
            written_ns = os.lstat(path).st_ctime_ns
            doc: Any = orjson.loads(read_private(path))
        except (OSError, orjson.JSONDecodeError):  # none, not a regular file, not ours
            return None
        if not isinstance(doc, dict):
            return None
        try:
            ok = (tuple(doc) == _SNAPSHOT_KEYS and type(doc["version"]) is int
                  and doc["version"] == _SNAPSHOT_VERSION
                  and tuple(doc["ledger_file"]) == _FILE_KEYS
                  and all(type(doc["ledger_file"][k]) is int for k in _FILE_KEYS)
                  and type(doc["seq"]) is int and type(doc["offset"]) is int
                  and type(doc["head"]) is str and type(doc["view_sha256"]) is str)
        except (TypeError, KeyError):
            return None
        if not ok or doc["code"] != codeprint.fingerprint():
            return None
        return cls(stamp=stamps.Stamp(**doc["ledger_file"]), seq=doc["seq"],
                   offset=doc["offset"], head=doc["head"], view_sha256=doc["view_sha256"],
                   written_ns=written_ns)


@attrs.frozen(kw_only=True, repr=False)
class Proven:
    """A fold of a ledger up to its tail, and how it was obtained."""

    state: RoutineFold
    tail: ledger.Tail
    resumed_at: int  # the seq the fold continued after (0: folded from scratch)
    view_sha256: str | None = None  # the bytes of the view it continued from (None: scratch)
    #: The document of the view it continued from, as this fold writes it, when the ledger
    #: holds nothing after that view: proving the view built it (:func:`read_document`).
    published: RoutineStateDoc | None = attrs.field(default=None, eq=False, repr=False)

    def still_holds(self, path: Path, view_path: Path) -> bool:
        """Whether this proof may stand for a proof made now: the ledger's tail - identity,
        size, change time, last line - is the one proven and, for a fold continued from the
        view, the view's bytes are still the ones it continued from (a fold from scratch does
        not depend on them; the caller compares the view with it before publishing)."""
        if self.tail != ledger.tail(path):
            return False
        if self.view_sha256 is None:
            return True
        data = documents.stored(view_path)
        return data is not None and hashlib.sha256(data).hexdigest() == self.view_sha256

    def content(self) -> RoutineStateDoc:
        """The document with ``ledger`` as just seq and offset: what the fold gives when
        events not yet written were applied to it in memory (no chain head exists yet)."""
        return routine_document(self.state, self.tail.end)

    def document(self) -> RoutineStateDoc:
        """``routine-state.json``: the fold and the position it covers (``seq``, ``offset``,
        ``head``), a function of the ledger's bytes alone. For a fold that continued from the
        view with nothing after it, that is the view's document proving it built (shared:
        read it, never change it)."""
        if self.published is not None and self.state.seq == self.resumed_at:
            return self.published  # nothing was folded into the state since
        doc = routine_document(self.state, self.tail.end)
        doc["ledger"]["head"] = self.tail.head
        return doc

    def publish(self, view_path: Path, snapshot_path: Path) -> RoutineStateDoc:
        """Write the view (unless those bytes are there already), then the snapshot that lets
        the next command continue from it; returns the document published.

        The view goes first: a crash between the two leaves a snapshot whose ``view_sha256``
        does not match, which costs one full fold and nothing else. So does a snapshot that
        cannot be written (a directory or a file this user may not read in its place, a full
        disk): it is a shortcut, never a reason for the command to fail.

        Over a torn tail no snapshot is written (the one there stays as it was): the file it
        would name is about to change (the repair that every locked append or ``fold
        --repair`` makes), and a command that refuses the tear (``fold``) must leave no new
        state behind."""
        document = self.document()
        data = render(document)
        stamps.replace(view_path, data)
        if self.tail.torn:
            return document
        snapshot = Snapshot(stamp=self.tail.stamp, seq=self.state.seq, offset=self.tail.end,
                            head=self.tail.head, view_sha256=hashlib.sha256(data).hexdigest())
        with contextlib.suppress(OSError):  # written again even with the same bytes when
            # it did not prove the stamp: its new change time may (see the module docstring)
            stamps.replace_private(snapshot_path, snapshot.to_bytes(),
                                   force=self.resumed_at == 0)
        if len(_WRITTEN_HERE) >= _OWN_CHANGES_LIMIT:
            _WRITTEN_HERE.clear()  # forgetting only costs a verification of the chain
        _WRITTEN_HERE.add(snapshot.stamp)
        return document


def prove(path: Path, view_path: Path | None = None,
          snapshot_path: Path | None = None) -> Proven:
    """The routine fold of the ledger at ``path``: continued from the view at ``view_path``
    when the snapshot at ``snapshot_path`` proves it (see the module docstring), else from
    scratch (also when either path is None)."""
    tail = ledger.tail(path)
    resumed = None
    if view_path is not None and snapshot_path is not None:
        resumed = _resumable(path, view_path, snapshot_path, tail)
    if resumed is None:
        return from_scratch(path, tail)
    state, offset, head, view_sha256, document = resumed
    resumed_at = state.seq
    _fold(path, state, tail, offset=offset, head=head)
    return Proven(state=state, tail=tail, resumed_at=resumed_at, view_sha256=view_sha256,
                  published=document if offset == tail.end else None)


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
    started = offset > 0 and ledger.chain_started_before(path, offset)
    with open(path, "rb", buffering=chain.READ_BUFFER) as f:
        chunks = chain.verified_chunks(f, path, offset, tail.end, line=state.seq + 1, head=head,
                                       started=started)
        for raws in chunks:
            apply_all(state, raws, where=where, upgrade=codec.upgrade)
    if state.seq != tail.seq:
        raise CorruptLedgerError(str(path), state.seq + 1, "the ledger has fewer lines than seqs")


_Resumed = tuple[RoutineFold, int, str, str, RoutineStateDoc]
#: The ledger stamps this process's own snapshots recorded (see the module docstring, 2).
_WRITTEN_HERE: set[stamps.Stamp] = set()
_OWN_CHANGES_LIMIT = 100_000


def _resumable(
    path: Path, view_path: Path, snapshot_path: Path, tail: ledger.Tail
) -> _Resumed | None:
    """(fold state, offset, chain head, the view's sha256, its document) of the published
    view when the snapshot proves it, else None. The cheap checks come first: a ledger that
    is not the proven file costs no read of the view."""
    snapshot = Snapshot.read(snapshot_path)
    if snapshot is None or snapshot.seq > tail.seq or snapshot.offset > tail.end:
        return None
    if not stamps.only_grew(snapshot.stamp, tail.stamp):
        return None
    published = _published_state(view_path, snapshot)
    if published is None:
        return None
    state, document = published
    offset, head, view = snapshot.offset, snapshot.head, snapshot.view_sha256
    if offset == 0 and head != chain.EMPTY_HEAD:
        return None
    if offset == tail.end and head != tail.head:
        return None
    if 0 < offset < tail.end:
        last = ledger.line_ending_at(path, offset)
        if last is None or chain.line_hash(last) != head:
            return None
    if not snapshot.proves_the_stamp() and snapshot.stamp not in _WRITTEN_HERE:
        return None  # a fold from scratch verifies the chain and writes the snapshot anew
    return state, offset, head, view, document


def _published_state(
    view_path: Path, snapshot: Snapshot
) -> tuple[RoutineFold, RoutineStateDoc] | None:
    """The fold state the view holds and its document (as :meth:`Proven.document` gives
    it), if its bytes are the ones published with ``snapshot`` and it covers the position
    the snapshot names."""
    data = documents.stored(view_path)
    if data is None or hashlib.sha256(data).hexdigest() != snapshot.view_sha256:
        return None
    try:
        doc = documents.parse(data)
        position = {"seq": snapshot.seq, "offset": snapshot.offset}
        if doc["ledger"] != {**position, "head": snapshot.head}:
            return None
        state, document = read_document({**doc, "ledger": position})
    except (ValueError, KeyError, TypeError):
        return None
    document["ledger"]["head"] = snapshot.head
    return state, document
