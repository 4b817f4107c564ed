"""Where the lines of a ledger file are, by descriptor, read from the end (SPEC §5).

A ledger is read from its end: an append needs only its last line's ``seq`` and hash, however
long the file. :func:`line_ending_at` finds the line that ends at an offset with a backwards
scan that looks at each byte once; :func:`line_number` counts the lines before an offset
where a line's own ``seq`` cannot say (an upstream line, a damaged one); :func:`seq_of` reads
a line's ``seq``.
"""

from __future__ import annotations

import os

import orjson

from specdojo_routine.core.adopt import is_upstream_line

#: Bytes read at a time.
_CHUNK = 1 << 16


def seq_of(text: bytes) -> int | None:
    """The seq of a parsable line, ``None`` if the text is not valid JSON, 0 for an upstream
    run record line (SPEC §10: its seq is its line number)."""
    try:
        raw = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if is_upstream_line(raw):
        return 0
    seq = raw.get("seq") if isinstance(raw, dict) else None
    if type(seq) is not int or seq < 1:
        return -1
    return seq


def _line_start(fd: int, end: int) -> int:
    """Offset where the line whose last byte is at ``end - 1`` starts: a backwards scan in
    growing steps that looks at each byte once (linear, however long the line)."""
    pos, step = end - 1, 1024  # the last byte is the line's own newline (or torn)
    while pos > 0:
        step = min(step * 2, _CHUNK * 16, pos)
        chunk = os.pread(fd, step, pos - step)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return pos - step + cut + 1
        pos -= step
    return 0


def line_ending_at(fd: int, end: int) -> tuple[int, bytes]:
    """(start, bytes) of the line whose last byte is at ``end - 1``."""
    start = _line_start(fd, end)
    return start, os.pread(fd, end - start, start)


def line_number(fd: int, offset: int) -> int:
    """1-based number of the line starting at ``offset`` (counts newlines before it)."""
    count, pos = 0, 0
    while pos < offset:
        chunk = os.pread(fd, min(_CHUNK * 16, offset - pos), pos)
        if not chunk:
            break
        count += chunk.count(b"\n")
        pos += len(chunk)
    return count + 1
