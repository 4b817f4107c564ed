"""The ledger file's locks (SPEC §5, §6.2): an append's exclusive flock, a reader's shared one.

Appends and repairs take portalocker's exclusive lock; readers take the shared flock with
``fcntl.flock`` directly - the call portalocker makes on POSIX, so the two exclude each other -
because importing portalocker (and redis, which its ``__init__`` imports when installed) costs
a read-only command like ``list`` more than the rest of its start-up. For the same reason
portalocker is imported here, where an exclusive lock is first taken, and not when the module
loads. A lock-free read was rejected: tests/test_ledger_concurrency.py shows a reader without
the shared lock seeing an append in progress as a torn tail.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["lock_exclusive", "lock_shared", "locked"]

Unlock = Callable[[int], None]


def _refuse_non_regular(fd: int, path: Path) -> None:
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "not a regular file", str(path))


def lock_exclusive(fd: int) -> Unlock:
    """Take portalocker's exclusive lock on ``fd``; returns how to release it."""
    import portalocker  # here: a command that only reads never pays for it (module docstring)

    portalocker.lock(fd, portalocker.LockFlags.EXCLUSIVE)
    return portalocker.unlock


def lock_shared(fd: int) -> Unlock:
    """Take the shared flock portalocker would (``LockFlags.SHARED`` is ``fcntl.flock(fd,
    LOCK_SH)`` on POSIX, and it excludes portalocker's exclusive flock of a writer), without
    importing portalocker. Where flock fails, portalocker makes the call again, so the error
    raised is the one it always was."""
    import fcntl  # POSIX, as portalocker's flock locker; here so that importing stays portable

    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        import portalocker

        portalocker.lock(fd, portalocker.LockFlags.SHARED)
        return portalocker.unlock
    return lambda locked: fcntl.flock(locked, fcntl.LOCK_UN)


@contextmanager
def locked(path: Path, flags: int, lock: Callable[[int], Unlock]) -> Iterator[int]:
    """``path`` opened with ``flags`` (and its directory made for the first append), under
    ``lock``, which returns how to release it."""
    try:
        fd = os.open(path, flags | os.O_CLOEXEC, 0o644)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
        path.parent.mkdir(parents=True, exist_ok=True)  # the first append creates them
        fd = os.open(path, flags | os.O_CLOEXEC, 0o644)
    try:
        _refuse_non_regular(fd, path)
        unlock = lock(fd)
        try:
            yield fd
        finally:
            unlock(fd)
    finally:
        os.close(fd)
