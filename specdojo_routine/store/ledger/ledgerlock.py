"""The ledger file's locks (SPEC §5, §6.2): an append's exclusive flock, a reader's shared one.

Appends and repairs take an exclusive flock, readers a shared one, with ``fcntl.flock``
directly: the call portalocker makes on POSIX (``LockFlags.EXCLUSIVE`` / ``SHARED``), so the
locks exclude portalocker's and each other. Importing portalocker (and redis, which its
``__init__`` imports when installed) costs a command more than the rest of its start-up, so
portalocker is imported only where ``flock`` itself fails, to make the call again and raise
the error it always did. A lock-free read was rejected: tests/test_ledger_concurrency.py shows
a reader without the shared lock seeing an append in progress as a torn tail.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from specdojo_routine.store.config import NotRegularFile, file_kind

__all__ = ["lock_exclusive", "lock_shared", "locked"]

Unlock = Callable[[int], None]


def _refuse_non_regular(fd: int, path: Path) -> None:
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    kind = file_kind(mode)
    if kind is not None:
        raise NotRegularFile(path, kind)


def lock_exclusive(fd: int) -> Unlock:
    """Take the exclusive flock on ``fd`` (portalocker's ``LockFlags.EXCLUSIVE``); returns how
    to release it."""
    return _flock(fd, exclusive=True)


def lock_shared(fd: int) -> Unlock:
    """Take the shared flock on ``fd`` (portalocker's ``LockFlags.SHARED``), which excludes a
    writer's exclusive one; returns how to release it."""
    return _flock(fd, exclusive=False)


def _flock(fd: int, *, exclusive: bool) -> Unlock:
    """``fcntl.flock``, blocking; where it fails, portalocker makes the call again, so the
    error raised is the one it always was."""
    import fcntl  # POSIX, as portalocker's flock locker; here so that importing stays portable

    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    except OSError:
        import portalocker

        portalocker.lock(fd, portalocker.LockFlags.EXCLUSIVE if exclusive
                         else portalocker.LockFlags.SHARED)
        return portalocker.unlock
    return lambda locked: fcntl.flock(locked, fcntl.LOCK_UN)


@contextmanager
def locked(path: Path, flags: int, lock: Callable[[int], Unlock]) -> Iterator[int]:
    """``path`` opened with ``flags`` (and its directory made for the first append), under
    ``lock``, which returns how to release it. Only a regular file is a ledger: the file is
    opened without waiting (a FIFO would wait for a peer for ever) and anything else refused."""
    flags |= os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
        path.parent.mkdir(parents=True, exist_ok=True)  # the first append creates them
        fd = os.open(path, flags, 0o644)
    try:
        _refuse_non_regular(fd, path)
        os.set_blocking(fd, True)
        unlock = lock(fd)
        try:
            yield fd
        finally:
            unlock(fd)
    finally:
        os.close(fd)
