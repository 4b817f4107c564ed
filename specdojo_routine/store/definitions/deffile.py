"""Reading a definition file's text, as every path of the load does (no YAML here).

Only a regular file is read, at most :data:`MAX_FILE_BYTES`, and it must be UTF-8; each
problem is reported with its position. Kept apart from :mod:`.safeyaml` and :mod:`.fastyaml`
so that a load whose files the definition cache holds (:mod:`.defcache`) reads them without
importing ruamel, which would cost a warm `run --due` more than the rest of its load.
"""

from __future__ import annotations

import os
from pathlib import Path

from specdojo_routine.core.validation import Report
from specdojo_routine.store.config import file_kind

__all__ = ["MAX_CHARS", "MAX_DEPTH", "MAX_FILE_BYTES", "MAX_NODES", "OUT_OF_MEMORY", "PURE_YAML",
           "read_text"]

#: Set to "1", every file is read by the located slow path (:mod:`.safeyaml`).
PURE_YAML = "SPECDOJO_ROUTINE_PURE_YAML"

MAX_FILE_BYTES = 1 << 20  # definitions are small; anything bigger is a mistake or an attack
MAX_DEPTH = 64  # nesting levels
MAX_NODES = 100_000  # values after alias expansion (a "billion laughs" stops here)
# characters of scalars after alias expansion: few aliases of one long scalar expand to as much
# as many aliases of small values, and every later step (rules, digest) copies what they give
MAX_CHARS = 4 * MAX_FILE_BYTES
#: The problem of a file whose loading ran out of memory (located at 1:1: no node is to blame).
OUT_OF_MEMORY = ("loading this file ran out of memory (an anchor/alias bomb?); a definition is a "
                 "small YAML mapping")

def read_text(path: Path | str, report: Report) -> str | None:
    """The file's text; only a regular file is read (a FIFO, socket, device or directory
    named like a definition is reported; it is opened non-blocking and never read)."""
    raw = _read_bytes(path, report)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        report.error((line, col), f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); "
                     "save it as UTF-8")
        return None


def _read_bytes(path: Path | str, report: Report) -> bytes | None:
    """The file's bytes, as :func:`read_text` reads them (problems reported, None)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            status = os.fstat(fd)
            kind = file_kind(status.st_mode)
            raw = b"" if kind else _read_at_most(fd, status.st_size, MAX_FILE_BYTES + 1)
        finally:
            os.close(fd)
    except IsADirectoryError:
        kind = "a directory"
    except OSError as exc:
        report.error((1, 1), f"cannot read the file ({exc.strerror or exc})")
        return None
    if kind is not None:
        report.error((1, 1), f"not a regular file ({kind}); a definition must be a regular "
                     "YAML file - rename or remove it")
        return None
    if len(raw) > MAX_FILE_BYTES:
        report.error((1, 1), f"file is larger than {MAX_FILE_BYTES} bytes; a definition is a "
                     "small YAML mapping - is this the right file?")
        return None
    return raw


def _read_at_most(fd: int, size: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of ``fd`` (to its end), asking for ``size`` + 1 first: a buffered
    ``read(limit)`` allocates ``limit`` bytes per file, measurable on 10,000 files. Exactly
    ``size`` bytes for ``size`` + 1 asked is the whole file as ``fstat`` saw it: no second read
    to see the end (anything shorter or longer reads on to the end)."""
    want = min(size + 1, limit)
    first = os.read(fd, max(1, want))
    if len(first) == size < want or not first:
        return first
    chunks, total = [first], len(first)
    while total < limit and (chunk := os.read(fd, min(1 << 16, limit - total))):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
