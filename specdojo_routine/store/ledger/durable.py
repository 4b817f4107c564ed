"""Durable writes to a ledger file, by descriptor (SPEC §5, §6.2).

:func:`write_lines` puts complete lines on disk and ``fsync``\\ s them, or takes back what it
wrote, so a ledger never keeps half a line of ours; :func:`move_fragment` saves a torn last
line (a crash mid-write) as ``<ledger>.torn-<seq>`` before truncating the ledger to its last
complete line, so the fragment is never lost. The caller (:mod:`.journal`) holds the
ledger's exclusive lock.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from specdojo_routine.store.config import read_regular


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_lines(fd: int, path: Path, data: bytes, end: int) -> None:
    """Write and ``fsync`` complete lines after byte ``end`` (the caller holds the exclusive
    lock). When that fails (a full disk mid-line), what was written is taken back, so the
    ledger keeps only complete lines, and the error names the ledger (``os.write`` names
    no file)."""
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, end)
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def move_fragment(fd: int, path: Path, *, start: int, end: int, seq: int) -> Path:
    """Save the torn fragment (the bytes ``[start, end)``, line ``seq``) as
    ``<ledger>.torn-<seq>``, then truncate the ledger to ``start``.

    The fragment is written to a temp file and linked into place only when complete, so a full
    disk leaves no empty or partial fragment behind (the error propagates; nothing is
    truncated). An identical copy left by an interrupted repair is reused; an empty one (an
    older version's full-disk leftover) is replaced; another fragment already saved under that
    seq (the same line torn twice) keeps its name and this one becomes ``.torn-<seq>.<n>``."""
    fragment = os.pread(fd, end - start, start)
    tmp = path.with_name(f".{path.name}.torn-{seq}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):  # a leftover, or a link: never written through
        os.unlink(tmp)
    out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                  0o644)
    try:
        try:
            _write_all(out, fragment)
            os.fsync(out)
        finally:
            os.close(out)
        target = _place_fragment(tmp, path, seq, fragment)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    fsync_dir(path.parent)
    os.ftruncate(fd, start)
    os.fsync(fd)
    return target


def _place_fragment(tmp: Path, path: Path, seq: int, fragment: bytes) -> Path:
    """Link ``tmp`` at the first free fragment name. A name held by anything but a regular
    file (a FIFO, a directory, a link - read, it could wait for ever or be a file anywhere)
    is taken, and left as it is."""
    n = 1
    while True:
        target = path.with_name(f"{path.name}.torn-{seq}" + (f".{n}" if n > 1 else ""))
        try:
            os.link(tmp, target)
            return target
        except FileExistsError:
            try:
                existing = read_regular(target, follow=False)
            except OSError:  # NotRegularFile too
                existing = None
            if existing == fragment:
                return target
            if existing == b"":
                os.replace(tmp, target)
                return target
            n += 1
