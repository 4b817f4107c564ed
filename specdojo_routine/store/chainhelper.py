"""A second process that hashes a long ledger's lines while this one parses and folds them.

The hash chain (:mod:`.chain`) costs one sha256 per line. hashlib holds the GIL for inputs this
short, so a thread cannot take that work off the fold; a child process on the other core can.
For a range of at least :data:`MIN_BYTES`, :func:`digests` starts ``python -I -S`` on a tiny
script that reads the same bytes, splits them into lines exactly as :mod:`.chain` does and writes
each line's 32-byte sha256 to a pipe, in order. :mod:`.chain` takes them chunk by chunk
where the helper is ahead and hashes the chunk itself where it is not (at the start, while the
helper starts, or when the other core is busy), so the helper can only save time. A full fold
that long is mostly done in two halves by :mod:`.foldhelper`, each hashing its own lines; this
helper serves a range folded in one piece (the second half, when a join is refused, or where
the fold helper cannot start).

What the helper says is evidence, never the verdict: the chain is accepted only when the
``prev`` fields this process parsed equal the helper's hashes, and any disagreement is settled
by hashing this process's own bytes (:func:`.chain._verified_slowly`). A helper that cannot be
started, dies or comes up short leaves the rest of the range to be hashed here. The helper
reads only bytes ``[offset, end)`` of a file that is only ever appended to; should the file be
written to while the range is read (its stamp, :class:`.stamps.Stamp`, changes), the helper may
have hashed other bytes than this process folded, and :mod:`.chain` checks the range again here
before it ends. The chain head a caller publishes comes from :func:`.ledger.tail`, which hashes
the last line in this process.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

__all__ = ["MIN_BYTES", "Digests", "digests", "stop"]

#: Ranges shorter than this are hashed in this process (a child costs ~10 ms to start).
MIN_BYTES = 8 << 20
_PIPE_BYTES = 1 << 20  # room for ~32,000 hashes: the helper may run that far ahead
#: Tests set this so that every chunk takes the helper's hashes (else who hashes a chunk
#: depends on timing).
WAIT_FOR_HELPER = False
_SHA = hashlib.sha256

_SCRIPT = """\
# specdojo_routine chain helper
import hashlib, sys
path, pos, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out, sha, carry = sys.stdout.buffer, hashlib.sha256, b""
with open(path, "rb") as f:
    f.seek(pos)
    while pos < end:
        data = f.read(min(1 << 20, end - pos))
        if not data:
            break
        pos += len(data)
        data = carry + data if carry else data
        cut = data.rfind(b"\\n") + 1
        carry = data[cut:]
        lines = data[:cut].split(b"\\n")
        lines.pop()
        out.write(b"".join([sha(line).digest() for line in lines]))
"""


def inline(texts: list[bytes]) -> bytes:
    """The 32-byte sha256 of each line, concatenated, computed in this process."""
    return b"".join([_SHA(text).digest() for text in texts])


class Digests:
    """The hashes of a range's lines, in order: the helper's where it is ahead, else computed
    here. This process never waits for the helper; what it sends for lines already hashed here
    is read and dropped."""

    def __init__(self, fd: int | None) -> None:
        self._fd = fd  # None: everything is hashed here
        self._reading = fd is not None  # the helper may still send
        self._buf = b""  # what the helper sent that is not behind us yet
        self._buf_at = 0  # the helper's output byte that _buf[0] is
        self._wanted = 0  # the helper's output byte of the next line asked for
        self.used = False  #: whether any chunk took the helper's hashes

    def take(self, texts: list[bytes]) -> bytes:
        """Hashes of ``texts``, the lines after those of the previous calls."""
        size = 32 * len(texts)
        if self._fd is not None:
            start = self._wanted - self._buf_at
            if len(self._buf) < start + size:
                self._fill(self._fd, size)
                start = self._wanted - self._buf_at
            if start >= 0 and len(self._buf) >= start + size:
                self._wanted += size
                self.used = True
                return self._buf[start:start + size]
        self._wanted += size
        return inline(texts)

    def skip(self, count: int) -> None:
        """The next ``count`` lines are hashed by the caller (a chunk that needs a closer
        look): their hashes from the helper are dropped when they come."""
        self._wanted += 32 * count

    def drop(self) -> None:
        """Stop using the helper (after it disagreed with this process's own bytes)."""
        self._fd = None

    def _fill(self, fd: int, size: int) -> None:
        """Drop what is behind us and read what the helper has sent so far, up to a cap (a
        helper far ahead waits on the pipe); ``size`` bytes would serve the lines asked for."""
        behind = min(self._wanted - self._buf_at, len(self._buf))
        parts, held = [self._buf[behind:]], len(self._buf) - behind
        self._buf_at += behind
        while self._reading and held < _PIPE_BYTES:
            try:
                data = os.read(fd, _PIPE_BYTES)
            except BlockingIOError:
                if WAIT_FOR_HELPER and held < self._wanted - self._buf_at + size:
                    import select  # tests only

                    select.select([fd], [], [])
                    continue
                break
            except OSError:
                data = b""
            if not data:  # the helper is done, or died: what it sent is still good
                self._reading = False
            parts.append(data)
            held += len(data)
        self._buf = b"".join(parts)


@contextlib.contextmanager
def digests(path: Path, offset: int, end: int) -> Iterator[Digests]:
    """Hashes for the lines in bytes ``[offset, end)`` of ``path`` (``offset`` a line start)."""
    child = _spawn(path, offset, end) if end - offset >= MIN_BYTES else None
    try:
        yield Digests(None if child is None or child.stdout is None else child.stdout.fileno())
    finally:
        if child is not None:
            stop(child)


def _spawn(path: Path, start: int, end: int) -> subprocess.Popen[bytes] | None:
    if not sys.executable:
        return None
    import subprocess  # only a long range pays for it (start-up of short commands)

    try:
        child = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _SCRIPT, os.fspath(path), str(start), str(end)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            close_fds=True, bufsize=0)
    except OSError:
        return None
    assert child.stdout is not None
    fd = child.stdout.fileno()
    os.set_blocking(fd, False)
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    return child


def stop(child: subprocess.Popen[bytes]) -> None:
    """Kill a helper (if it still runs), reap it and close its pipe."""
    with contextlib.suppress(OSError):
        child.kill()
    child.wait()
    if child.stdout is not None:
        child.stdout.close()
