"""Append-only JSON Lines ledgers (SPEC §5, §6.2): locked appends, reading, torn-tail repair.

An append opens the file with ``O_APPEND``, takes an exclusive ``flock`` on the ledger file
itself, repairs a torn tail if there is one, reads the last ``seq`` from the end of the file,
writes its line(s), flushes and ``fsync``\\ s, then unlocks. Readers take the shared lock only
long enough to find the end of the last complete line, then read up to there, so a concurrent
append is never seen half-written. Both locks are the ``flock(2)`` calls portalocker makes on
POSIX, made directly (:mod:`.ledgerlock`): importing portalocker (and redis, which its
``__init__`` imports) costs a read-only command like ``list`` more than the rest of its
start-up.

Line ``n`` of a ledger carries ``seq`` ``n``. A *torn* tail is a last line without its newline or
whose JSON does not parse (a crash mid-write); it is reported as :class:`TornLedgerError` and
repaired by moving the fragment to ``<ledger>.torn-<seq>`` and truncating the ledger to its last
complete line. Damage anywhere else is a :class:`CorruptLedgerError` and is never repaired.
The bytes themselves are found and written by :mod:`.lineseek` (a line from the end of the
file) and :mod:`.durable` (complete lines fsync'd, a torn fragment moved aside); this module
holds the protocol around them: locks, the tail, the chain and the checks of every line.

Each appended line carries ``prev``, the hash of the line before it (:mod:`.chain`, SPEC §5);
:func:`read` checks it line by line. A :class:`Ledger` appends only to the file it was made
for: a ledger renamed over or moved away while a command runs (a checkout, a sync client, a
restore) gets nothing of what the command decided from the one it folded. Every append and
repair records the file's stamp before and after it (:mod:`.stamps`), which is how
:mod:`.proven` knows a ledger only grew.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs
import orjson

from specdojo_routine.core.adopt import is_upstream_line, upstream_event
from specdojo_routine.core.errors import (
    CorruptLedgerError,
    LedgerError,
    ReplacedLedgerError,
    TornLedgerError,
)
from specdojo_routine.store.ledger import chain, durable, lineseek
from specdojo_routine.store.ledger.codec import encode, upgrade
from specdojo_routine.store.ledger.ledgerlock import lock_exclusive, lock_shared, locked
from specdojo_routine.store.ledger.stamps import Stamp, only_grew, remember

if TYPE_CHECKING:
    from specdojo_routine.core.events import Event

Clock = Callable[[], datetime]


def wall_clock() -> datetime:
    """The real wall clock in UTC (the default ``at`` source)."""
    return datetime.now(UTC)


@attrs.frozen(kw_only=True, repr=False)
class Tail:
    """Where a ledger's complete lines end, and what lies beyond."""

    size: int  # file size when looked at
    end: int  # byte offset just after the last complete line
    seq: int  # seq of the last complete line (0: none)
    torn: bool  # bytes in [end, size) are a torn fragment
    head: str = chain.EMPTY_HEAD  # sha256 (hex) of the last complete line: the chain head
    dev: int = 0  # the file's identity and change time when looked at (0: no file)
    ino: int = 0
    ctime_ns: int = 0

    @property
    def stamp(self) -> Stamp:
        """The file state this tail was read from (see :func:`only_grew`)."""
        return Stamp(dev=self.dev, ino=self.ino, size=self.size, ctime_ns=self.ctime_ns)

    @property
    def torn_line(self) -> int | None:
        """Line number of the torn fragment, if any."""
        return self.seq + 1 if self.torn else None


@attrs.frozen(kw_only=True, repr=False)
class Line:
    """One complete ledger line as stored (``raw`` is parsed, not upgraded)."""

    line: int
    offset: int  # byte offset of the line's start
    end: int  # byte offset just after its newline
    text: bytes  # the line without its newline
    raw: dict[str, Any]


# --- the tail (fd based) ----------------------------------------------------------------------


def _scan_tail(fd: int, path: Path) -> Tail:
    stamp = Stamp.of(fd)
    size = stamp.size

    def found(end: int, seq: int, torn: bool, head: str = chain.EMPTY_HEAD) -> Tail:
        return Tail(size=size, end=end, seq=seq, torn=torn, head=head, dev=stamp.dev,
                    ino=stamp.ino, ctime_ns=stamp.ctime_ns)

    if size == 0:
        return found(0, 0, False)
    start, text = lineseek.line_ending_at(fd, size)
    seq = lineseek.seq_of(text) if text.endswith(b"\n") else None
    torn = seq is None
    end = start if torn else size
    if torn:
        if start == 0:
            return found(0, 0, True)
        start, text = lineseek.line_ending_at(fd, start)
        seq = lineseek.seq_of(text)
    if seq == 0:
        seq = lineseek.line_number(fd, start)
    if seq is None or seq < 1:
        line = lineseek.line_number(fd, start)
        what = "is not valid JSON" if seq is None else "has no integer seq >= 1"
        raise CorruptLedgerError(str(path), line, f"line {what}")
    return found(end, seq, torn, chain.line_hash(text[:-1]))


# --- public API ------------------------------------------------------------------------------


class Ledger:
    """A handle on one ledger file; every append is a locked, fsync'd transaction.

    The handle is pinned to the file at its path when it is made (its device and inode; a
    ledger that does not exist yet is pinned by the append that creates it): a command makes
    it before it folds, so every append goes to the file the command's state came from. If
    the path names another file by then, or none, the append raises
    :class:`ReplacedLedgerError` and writes nothing (and creates nothing).
    """

    def __init__(self, path: Path | str, *, clock: Clock = wall_clock) -> None:
        self.path = Path(path)
        self.clock = clock
        self._pinned = _identity(self.path)

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def append(self, event: Event) -> int:
        """Append one event; returns its seq once it is on disk."""
        return self.append_many([event])[0]

    def append_many(self, events: Iterable[Event]) -> list[int]:
        """Append several events under one lock and one fsync; returns their seqs.

        A first append that cannot write (a full disk) leaves no ledger behind: the empty
        file it opened is removed under the lock, so no 0-byte ledger names a run that was
        never recorded. An append that waited for the lock on such a file opens it again."""
        batch = list(events)
        if not batch:
            return []
        creating = self._pinned is None
        flags = os.O_RDWR | os.O_APPEND | (os.O_CREAT | os.O_NOFOLLOW if creating else 0)
        if creating:
            refuse_dangling(self.path)  # never create a ledger where a link points
        for _ in range(3):
            with contextlib.ExitStack() as held:
                try:
                    fd = held.enter_context(locked(self.path, flags, lock_exclusive))
                except FileNotFoundError:
                    if creating:
                        raise
                    raise ReplacedLedgerError(str(self.path), gone=True) from None
                if creating and not _names(self.path, fd):
                    continue  # removed by a first append that failed while we waited
                return self._write(fd, batch, creating=creating)
        raise ReplacedLedgerError(str(self.path), gone=True)

    def _write(self, fd: int, batch: list[Event], *, creating: bool) -> list[int]:
        """Under the exclusive lock: check the file is still ours, repair a torn tail, write
        ``batch`` after the last complete line; their seqs."""
        tail = _scan_tail(fd, self.path)
        if self._pinned is None:
            self._pinned = (tail.dev, tail.ino)
        elif self._pinned != (tail.dev, tail.ino):
            raise ReplacedLedgerError(str(self.path), gone=False)
        if tail.torn:
            durable.move_fragment(fd, self.path, start=tail.end, end=tail.size,
                                  seq=tail.seq + 1)
        at, prev, lines = self.clock(), tail.head, []
        for i, event in enumerate(batch, 1):
            lines.append(encode(event, tail.seq + i, at, prev))
            prev = chain.line_hash(lines[-1][:-1])
        try:
            durable.write_lines(fd, self.path, b"".join(lines), tail.end)
        except OSError:
            if creating and os.fstat(fd).st_size == 0 and _names(self.path, fd):  # empty:
                with contextlib.suppress(OSError):  # as if it was never made
                    os.unlink(self.path)
                self._pinned = None
            raise
        if tail.end == 0:
            durable.fsync_dir(self.path.parent)
        remember(tail.stamp, Stamp.of(fd))
        return list(range(tail.seq + 1, tail.seq + 1 + len(batch)))

    def tail(self) -> Tail:
        """See :func:`tail`."""
        return tail(self.path)

    def read(
        self, offset: int = 0, line: int = 1, *, torn: Literal["raise", "stop"] = "raise"
    ) -> Iterator[Line]:
        """See :func:`read`."""
        return read(self.path, offset, line, torn=torn)

    def repair(self) -> Path | None:
        """See :func:`repair`."""
        return repair(self.path)


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path`` now; None when there is none (or no access)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def tail(path: Path | str) -> Tail:
    """The end of the complete lines of ``path`` (an empty tail if it does not exist; a
    symbolic link to nothing is refused, see :func:`refuse_dangling`)."""
    path = Path(path)
    try:
        with locked(path, os.O_RDONLY, lock_shared) as fd:
            return _scan_tail(fd, path)
    except FileNotFoundError:
        refuse_dangling(path)
        return Tail(size=0, end=0, seq=0, torn=False)


def refuse_dangling(path: Path) -> None:
    """Raise :class:`LedgerError` when ``path`` is a symbolic link to a file that does not
    exist. Such a ledger is history that is not there (a disk not mounted, a restore half
    done), not an empty one: folding it as empty would run everything again, and the first
    append would create a new ledger wherever the link points."""
    try:
        target = os.readlink(path)
    except OSError:  # not a link (or gone): an absent ledger is an empty one
        return
    raise LedgerError(f"{path}: a symbolic link to {target}, which does not exist; the "
                      "ledger's history is not there - restore the file it names, or remove "
                      "the link to start a new ledger")


def repair(path: Path | str) -> Path | None:
    """Move a torn tail aside (``<ledger>.torn-<seq>``) and truncate; returns the new file."""
    path = Path(path)
    try:
        with locked(path, os.O_RDWR, lock_exclusive) as fd:
            found = _scan_tail(fd, path)
            if not found.torn:
                return None
            moved = durable.move_fragment(fd, path, start=found.end, end=found.size,
                                          seq=found.seq + 1)
            remember(found.stamp, Stamp.of(fd))
            return moved
    except FileNotFoundError:
        return None


def line_ending_at(path: Path | str, offset: int) -> bytes | None:
    """The complete line (without newline) that ends exactly at byte ``offset``, if any."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        if offset <= 0 or os.fstat(fd).st_size < offset:
            return None
        text = lineseek.line_ending_at(fd, offset)[1]
    finally:
        os.close(fd)
    return text[:-1] if text.endswith(b"\n") else None


def read(
    path: Path | str, offset: int = 0, line: int = 1, *, torn: Literal["raise", "stop"] = "raise"
) -> Iterator[Line]:
    """Every complete line from byte ``offset`` (which starts line number ``line``).

    Each line must be a JSON object whose ``seq`` equals its line number; anything else is a
    :class:`CorruptLedgerError`. A torn tail raises :class:`TornLedgerError` after the complete
    lines (``torn="stop"``: ends quietly). A missing file has no lines.
    """
    path = Path(path)
    found = tail(path)
    if found.end > offset:
        yield from _read_range(path, offset, found.end, line)
    if found.torn and torn == "raise":
        raise TornLedgerError(str(path), found.seq + 1)


def _head_before(path: Path, offset: int) -> str:
    if offset == 0:
        return chain.EMPTY_HEAD
    text = line_ending_at(path, offset)
    return chain.line_hash(text) if text is not None else ""


def chain_started_before(path: Path | str, offset: int) -> bool:
    """Whether the hash chain has started in the lines before byte ``offset`` (the start of
    a line): the nearest line of ours before it carries ``prev``. Upstream lines in between
    (SPEC §10) say nothing and are stepped over. The lines before ``offset`` were checked
    when they were read, so the nearest line of ours decides: one without ``prev`` there
    means no line before it had one either."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        while offset > 0:
            start, text = lineseek.line_ending_at(fd, offset)
            try:
                raw = orjson.loads(text)
            except orjson.JSONDecodeError:
                return False  # not ours to judge here: the reader refuses it
            if isinstance(raw, dict) and "prev" in raw:
                return True
            if not is_upstream_line(raw):
                return False
            offset = start
    finally:
        os.close(fd)
    return False


def _read_range(path: Path, offset: int, end: int, line: int) -> Iterator[Line]:
    head = _head_before(path, offset)
    started = offset > 0 and chain_started_before(path, offset)
    with open(path, "rb") as f:
        f.seek(offset)
        pos = offset
        while pos < end:
            data = f.readline(end - pos)
            if not data.endswith(b"\n"):
                raise CorruptLedgerError(str(path), line, "line is cut short")
            text = data[:-1]
            try:
                raw = orjson.loads(text)
            except orjson.JSONDecodeError as exc:
                raise CorruptLedgerError(str(path), line, f"invalid JSON ({exc})") from None
            if not isinstance(raw, dict):
                raise CorruptLedgerError(str(path), line, "line is not a JSON object")
            if (raw.get("seq") != line or type(raw.get("seq")) is not int) and not (
                    is_upstream_line(raw)):
                reason = f"seq {raw.get('seq')!r} where {line} was expected"
                raise CorruptLedgerError(str(path), line, reason)
            if "prev" in raw:
                if raw["prev"] != head:
                    raise chain.chain_error(path, line)
                started = True
            elif started and chain.is_ours(raw):
                raise chain.unchained_error(path, line)
            head = chain.line_hash(text)
            yield Line(line=line, offset=pos, end=pos + len(data), text=text, raw=raw)
            pos += len(data)
            line += 1


def read_lines(
    path: Path | str, *, torn: Literal["raise", "stop"] = "stop"
) -> Iterator[tuple[bytes, dict[str, Any]]]:
    """(the line exactly as stored, the event upgraded to the current version) for every
    complete line; a torn tail is left out (``torn="raise"``: :class:`TornLedgerError`)."""
    for found in read(path, torn=torn):
        if is_upstream_line(found.raw):
            yield found.text, upstream_event(found.raw, found.line)
            continue
        try:
            yield found.text, upgrade(found.raw)
        except ValueError as exc:
            raise CorruptLedgerError(str(path), found.line, str(exc)) from None


__all__ = [
    "Clock",
    "Ledger",
    "Line",
    "Stamp",
    "Tail",
    "chain_started_before",
    "line_ending_at",
    "only_grew",
    "read",
    "read_lines",
    "refuse_dangling",
    "repair",
    "tail",
    "wall_clock",
]
