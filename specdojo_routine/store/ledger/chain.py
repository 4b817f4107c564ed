"""The hash chain of a ledger (SPEC §5): each line we append carries ``prev``, the lowercase
hex sha256 of the previous line's bytes (newline excluded; line 1: the sha256 of the empty
string). A line without ``prev`` written before the chain existed, or by upstream (no
``type``, no ``seq``: SPEC §10), is not checked; the chain simply continues after it. Once a
line with ``prev`` has been read, a later line of ours (``type`` and ``seq``) without one is
damage, refused like a wrong ``prev``: deleting ``prev`` from an edited line to the end must
not pass for a ledger from before the chain. Checking is one sha256 per line over the raw
bytes, done where the lines are read anyway.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from specdojo_routine.core.errors import CorruptLedgerError

__all__ = ["EMPTY_HEAD", "READ_BUFFER", "chain_error", "is_ours", "line_hash",
           "positioned_chunks", "unchained_error", "verified_chunks"]

_READ_CHUNK = 1 << 16  # small enough that a chunk's parsed lines stay in the CPU cache
#: The buffer size to open a ledger with for :func:`verified_chunks`: one read per chunk.
READ_BUFFER = _READ_CHUNK
#: ``prev`` of line 1: the sha256 of the empty string.
EMPTY_HEAD = hashlib.sha256(b"").hexdigest()
_prev = operator.itemgetter("prev")
_without_newline = operator.itemgetter(slice(None, -1))
_SHA = hashlib.sha256


def line_hash(text: bytes | bytearray) -> str:
    """The chain hash of one stored line (without its newline): lowercase hex sha256."""
    return hashlib.sha256(text).hexdigest()


def chain_error(path: Path, line: int) -> CorruptLedgerError:
    """Line ``line`` records a ``prev`` that is not the hash of the line before it."""
    if line == 1:
        return CorruptLedgerError(str(path), 1, "line 1 records a prev hash although no line "
                                  "comes before it: lines were removed from the start")
    return CorruptLedgerError(
        str(path), line - 1, f"line {line - 1} does not hash to the prev that line {line} "
        "recorded for it: one of them was changed after it was written")


def is_ours(raw: Any) -> bool:
    """A line in our envelope (``type`` and ``seq``): once the chain started, it needs ``prev``."""
    return isinstance(raw, dict) and "type" in raw and "seq" in raw


def unchained_error(path: Path | str, line: int) -> CorruptLedgerError:
    """Line ``line`` is ours and has no ``prev`` although an earlier line has one."""
    return CorruptLedgerError(str(path), line, "line has no prev although the hash chain "
                              "started before it: lines were changed after they were written")


def verified_chunks(
    f: BinaryIO, path: Path | str, offset: int, end: int, *, line: int, head: str,
    started: bool,
) -> Generator[list[Any], None, str]:
    """The lines in bytes ``[offset, end)`` of the open ledger ``f`` (``path`` names it in
    messages; ``line`` is the number of the first line, ``head`` the hash of the line before
    it; ``started``: a line before ``offset`` carries ``prev``), parsed, in chunks of about
    64 KiB, each chunk's hash chain checked before it is handed out (the fold's input: one
    sha256 per line, no per-line Python work unless a chunk needs a closer look). The lines
    are cut by the buffered reader's own line search (``readlines``: ``memchr``, where
    ``bytes.split`` looks at every byte in turn); a line longer than a chunk is read whole,
    so the cost stays linear in the bytes whatever the line lengths. ``f`` is best opened
    with ``buffering=READ_BUFFER``. A line begun at ``end`` or later (appended since) is not
    handed out. Errors name the file and line. The generator returns the chain head at
    ``end``: the hash of the last line."""
    for raws, _end, reached in positioned_chunks(f, path, offset, end, line=line, head=head,
                                                 started=started):
        head = reached
        yield raws
    return head


def positioned_chunks(
    f: BinaryIO, path: Path | str, offset: int, end: int, *, line: int, head: str,
    started: bool,
) -> Iterator[tuple[list[Any], int, str]]:
    """:func:`verified_chunks`, each chunk with where it stands after it: the byte offset
    just past its last line and the chain head there (the hash of that line). A reader that
    stops between chunks (a deadline) can go on later from there, as from any position."""
    path = Path(path)
    f.seek(offset)
    pos = offset
    while pos < end:
        # whole lines until they pass the hint; one more when they end exactly at it
        lines = f.readlines(min(_READ_CHUNK, end - pos))
        pos = f.tell()
        while pos > end and pos - len(lines[-1]) >= end:  # begun at end: appended since
            pos -= len(lines.pop())
        cut_short = pos > end or not lines or not lines[-1].endswith(b"\n")
        if cut_short and lines:  # end falls inside the last line, or the ledger ends early
            pos -= len(lines.pop())
        if lines:
            texts = list(map(_without_newline, lines))
            raws, head, started = _verified(path, texts, line, head, started)
            line += len(texts)
            yield raws, pos, head
        if cut_short:
            raise CorruptLedgerError(str(path), line, "line is cut short")


def _verified(
    path: Path, texts: list[bytes], line: int, head: str, started: bool,
) -> tuple[list[Any], str, bool]:
    """(parsed lines, new chain head, whether the chain has started) of consecutive lines, the
    first numbered ``line``."""
    if not texts:
        return [], head, started
    try:
        raws = list(map(orjson.loads, texts))
        prevs = ",".join(map(_prev, raws))  # KeyError, TypeError: a line without (string) prev
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return _verified_slowly(path, texts, line, head, started)
    hashed = b"".join([_SHA(text).digest() for text in texts]).hex(",", 32)
    # Joined with a separator that hex has not, the strings are equal only if every line's
    # prev is the hash of the line before it (and that prev is a plain string, comma-free).
    if prevs == f"{head},{hashed}"[:-65]:
        return raws, hashed[-64:], True  # the usual case: every line chained
    return _verified_slowly(path, texts, line, head, started)


def _verified_slowly(
    path: Path, texts: list[bytes], line: int, head: str, started: bool,
) -> tuple[list[Any], str, bool]:
    raws = []
    for n, text in enumerate(texts, line):
        try:
            raw = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise CorruptLedgerError(str(path), n, f"invalid JSON ({exc})") from None
        if isinstance(raw, dict) and "prev" in raw:
            if raw["prev"] != head:
                raise chain_error(path, n)
            started = True
        elif started and is_ours(raw):
            raise unchained_error(path, n)
        head = line_hash(text)
        raws.append(raw)
    return raws, head, started
