"""Locks: the routine-wide flock (SPEC §6.2); the exec lock (SPEC §7.7) is in ``execlock``.

Routine lock: an exclusive non-blocking flock on ``R/.locks/routine-run.flock``; the holder then
writes ``{"pid", "host", "acquired_at"}`` into the file (never deleted). The kernel drops it when
the holder dies; a live holder is never robbed. The file is opened with ``O_NOFOLLOW``: a
symbolic link there is refused (one line), so the lock never truncates or writes the file a
link points to. The upstream ``routine-run.lock/`` directory is honoured and, while we hold the
flock, held by us too (``announce``; SPEC §6.2): a directory at most 1 hour old is busy unless
our own crash left it (our tool, this host, a pid dead or reused since); if it cannot be
announced, nothing runs.

``routine_lock_status`` asks the kernel with a ``LOCK_SH|LOCK_NB`` probe of the lock file: it
fails exactly while a holder has the exclusive flock, and when it succeeds the shared lock is
let go at once. So that such a probe cannot cause a spurious "busy", an acquirer retries for
``BUSY_GRACE_S``. The probe is a system call; the first read of ``/proc/locks`` in a process
costs a command like ``list`` more than its own work, so the kernel's table is read only where
the file cannot be opened to probe it (another user's lock file), looking up its inode
(matching device+inode, or inode + the pid the holder wrote, since overlayfs/btrfs report
another device to ``stat``).
``list`` and the dry run ask through ``status_soon``: everything is read at once, in the
caller, right after their view.

The flock is taken with ``fcntl.flock`` itself - the call portalocker makes on POSIX, so a
holder through portalocker and one through this module exclude each other - because importing
portalocker imports redis too when it is installed, which costs the call cron makes every
minute more than the rest of its work.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import attrs
import orjson

from specdojo_routine.core import errors, timefmt
from specdojo_routine.store import fsfacts
from specdojo_routine.store.locks import announce, redislock
from specdojo_routine.store.locks.liveness import holder_alive as holder_alive
from specdojo_routine.store.locks.liveness import is_self as is_self
from specdojo_routine.store.locks.liveness import live_here as live_here
from specdojo_routine.store.locks.liveness import owner_alive as owner_alive
from specdojo_routine.store.locks.liveness import process_start as process_start
from specdojo_routine.store.locks.liveness import this_host as this_host

ROUTINE_FLOCK_NAME = "routine-run.flock"
UPSTREAM_ROUTINE_LOCK_NAME = "routine-run.lock"
SUSPICIOUS_AFTER = timedelta(hours=1)
UPSTREAM_STALE_AFTER = timedelta(hours=1)
BUSY_GRACE_S = 0.2
_RETRY_S = 0.005
_UNKNOWN = "unknown"
_PROC_LOCKS = Path("/proc/locks")
# "1: FLOCK  ADVISORY  WRITE 5693 fe:00:5308499 0 EOF"; waiters ("1: -> FLOCK ...") are skipped.
# (compiled where the table is read: re's cache keeps it; a command that never reads it, as
# most do not, does not compile it)
_PROC_LOCK_LINE = r"^\d+:\s+(?!->)\S+\s+\S+\s+\S+\s+(-?\d+)\s+([0-9a-fA-F]+):([0-9a-fA-F]+):(\d+)\s"


_BUSY_ERRNOS = (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK)  # flock's "held by another"


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _not_lost() -> str | None:
    return None


@attrs.frozen(kw_only=True)
class LockInfo:
    """Who holds the routine lock, as ``list --json`` shows it."""

    held: bool
    pid: int | None
    host: str | None
    acquired_at: str | None
    suspicious: bool  # held for over 1 hour of wall-clock time
    #: For the holder itself: None while the lock is still held, else one line saying how it
    #: was lost (only the Redis lock can be lost; the file lock lasts as long as the process).
    lost: Callable[[], str | None] = attrs.field(default=_not_lost, eq=False, repr=False)


_FREE = LockInfo(held=False, pid=None, host=None, acquired_at=None, suspicious=False)
_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


@contextlib.contextmanager
def routine_lock(
    locks_dir: Path, *, clock: Callable[[], datetime] = _utc_now, project: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[LockInfo]:
    """Hold the routine-wide lock for the ``with`` block; raise ``LockBusy`` if it is taken.

    With ``project`` and ``SPECDOJO_ROUTINE_LOCK_URL`` set, the Redis lock of that project is
    held too (:mod:`.redislock`), after the file lock; the yielded ``lost()`` tells whether it
    still is. The upstream directory is announced last, and the block never runs without it."""
    path = locks_dir / ROUTINE_FLOCK_NAME
    try:
        locks_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, _OPEN_FLAGS, 0o644)
    except OSError as exc:
        raise _unusable(path, exc) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO, a device: not a lock file we made
        os.close(fd)
        raise errors.RoutineError(f"cannot use the lock {path}: it is not a regular file "
                                  "(remove it and run the command again)")
    with os.fdopen(fd, "r+b") as fh:
        _lock_or_busy(fh, path)
        try:
            now = timefmt.to_utc(clock())
            upstream = announce.holder(locks_dir, now=now, host=this_host(), alive=live_here,
                                       flocked=True)
            if upstream is not None:
                raise _routine_busy(locks_dir / UPSTREAM_ROUTINE_LOCK_NAME, upstream.pid,
                                    upstream.host, upstream.since)
            start = process_start(os.getpid())
            record = {"pid": os.getpid(), "host": this_host(),
                      "acquired_at": timefmt.format_s(now), "start": start}
            with _shared_lock(project, env, record) as shared:
                _write_record(fh, orjson.dumps(record) + b"\n")
                with _announced(locks_dir, now, start):  # released before the flock is
                    yield LockInfo(held=True, pid=os.getpid(), host=this_host(),
                                   acquired_at=timefmt.format_s(now), suspicious=False,
                                   lost=_not_lost if shared is None else shared.lost)
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _write_record(fh: IO[bytes], data: bytes) -> None:
    """Overwrite the lock file with the holder record ``data``, cutting the file only when its
    length changes: the record of the previous holder usually has the same length, and a
    truncation costs a journal commit that a write in place does not."""
    fh.seek(0)
    fh.write(data)
    fh.flush()
    if os.fstat(fh.fileno()).st_size != len(data):
        fh.truncate(len(data))


@contextlib.contextmanager
def _announced(locks_dir: Path, now: datetime, start: int | None) -> Iterator[None]:
    """Hold the upstream directory (SPEC §6.2) for the ``with`` block; busy or impossible to
    announce -> raise, so that nothing runs unannounced."""
    where = locks_dir / UPSTREAM_ROUTINE_LOCK_NAME
    try:
        path = announce.claim(locks_dir, pid=os.getpid(), host=this_host(),
                              acquired_at=timefmt.format_s(now), start=start, now=now,
                              alive=live_here)
    except announce.Busy as busy:
        raise _routine_busy(where, busy.holder.pid, busy.holder.host,
                            busy.holder.since) from None
    except OSError as exc:
        raise errors.RoutineError(
            f"cannot announce this command to the SpecDojo CLI: {_inside(where, exc)}; "
            "nothing was changed") from None
    with announce.kept(path, pid=os.getpid()):
        yield


def _inside(where: Path, exc: OSError) -> str:
    """``exc`` as one line naming ``where`` once: a file the claim made inside it (its
    owner file's temp name) says nothing more to the operator than the directory."""
    name = exc.filename
    if name is not None and not (isinstance(name, str) and Path(name).is_relative_to(where)):
        return f"{where}: {fsfacts.describe(exc)}"  # another file: both say something
    return errors.environment_error(OSError(exc.errno, exc.strerror, str(where)),
                                    no_inodes=fsfacts.no_free_inodes(exc))


def routine_lock_status(
    locks_dir: Path, *, now: datetime, project: str | None = None,
    env: Mapping[str, str] | None = None,
) -> LockInfo:
    """Report the routine lock's holder without taking the lock or creating any file.

    ``now`` should be the wall clock: it ages the holder (``suspicious``) and the upstream
    lock directory. With ``project`` and ``SPECDOJO_ROUTINE_LOCK_URL`` set, a holder of the
    Redis lock (on any host) counts first.
    """
    return _status(locks_dir, now, project, env, _LockTable(locks_dir / ROUTINE_FLOCK_NAME))()


def status_soon(
    locks_dir: Path, *, now: datetime, project: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Callable[[], LockInfo]:
    """:func:`routine_lock_status` as of this call, answered by the returned call: everything
    is read now, in the caller (errors included: a Redis that is down is raised here), so
    what is reported is one moment's state, right after the caller's view. In this process,
    no thread (SPEC §12). Later calls give the first one's result."""
    table = _LockTable(locks_dir / ROUTINE_FLOCK_NAME)
    return functools.cache(_status(locks_dir, now, project, env, table))


def _status(
    locks_dir: Path, now: datetime, project: str | None, env: Mapping[str, str] | None,
    table: _LockTable,
) -> Callable[[], LockInfo]:
    """The lock's state, read now - the Redis holder, the lock file's record, the upstream
    directory and the flock itself - and answered by the returned call. Reading it all at
    once keeps what is reported one moment's state, as close after the caller's view as
    possible."""
    now = timefmt.to_utc(now)
    url = redislock.lock_url(os.environ if env is None else env) if project else None
    if url is not None and project is not None:
        held, pid, host, acquired_at = redislock.status(url, project)
        if held:
            info = _held(pid, host, acquired_at, now)
            return lambda: info
    path = locks_dir / ROUTINE_FLOCK_NAME
    pid, host, acquired_at = _read_holder(path)
    flocked = _flock_held(path, pid, table)
    upstream = announce.holder(locks_dir, now=now, host=this_host(), alive=live_here)

    def answer() -> LockInfo:
        if flocked:
            return _held(pid, host, acquired_at, now)
        if upstream is not None:
            return LockInfo(held=True, pid=upstream.pid, host=upstream.host,
                            acquired_at=upstream.since, suspicious=False)
        return _FREE

    return answer


class _LockTable:
    """The lock file's identity and, read after it, the kernel's lock table (``None``: no
    ``/proc/locks`` here)."""

    def __init__(self, path: Path) -> None:
        try:
            self.stat: os.stat_result | None = os.stat(path)
        except OSError:
            self.stat = None
        self.data: bytes | None = None

    def wait(self) -> None:
        """Read the table."""
        self.read()

    def read(self) -> None:
        try:
            self.data = _PROC_LOCKS.read_bytes()
        except OSError:
            self.data = None


def _held(pid: int | None, host: str | None, acquired_at: str | None, now: datetime) -> LockInfo:
    started = timefmt.try_parse_instant(acquired_at)
    suspicious = started is not None and now - started > SUSPICIOUS_AFTER
    return LockInfo(held=True, pid=pid, host=host, acquired_at=acquired_at, suspicious=suspicious)


def _shared_lock(
    project: str | None, env: Mapping[str, str] | None, record: dict[str, Any]
) -> contextlib.AbstractContextManager[redislock.Held | None]:
    url = redislock.lock_url(os.environ if env is None else env) if project else None
    if url is None or project is None:
        return contextlib.nullcontext()
    return redislock.hold(url, project, record)


def _unusable(path: Path, exc: OSError) -> errors.RoutineError:
    if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symbolic link
        return errors.RoutineError(
            f"cannot use the lock {exc.filename or path}: it is a symbolic link, and a lock "
            "file is never written through one (remove the link and run the command again)")
    return errors.RoutineError(
        f"cannot use the lock {path}: {exc.strerror or exc} ({fsfacts.remedy(exc)})")


def holder_is_self(info: LockInfo) -> bool:
    """True when ``info`` names this process on this host."""
    return info.pid == os.getpid() and info.host == this_host()


def _lock_or_busy(fh: IO[bytes], path: Path) -> None:
    deadline = time.monotonic() + BUSY_GRACE_S
    while True:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in _BUSY_ERRNOS:  # e.g. ENOLCK: no flock on this filesystem
                raise errors.RoutineError(f"cannot lock {path}: {exc}") from None
            if time.monotonic() >= deadline:
                raise _routine_busy(path, *_read_holder(path)) from None
            time.sleep(_RETRY_S)


def _routine_busy(
    path: Path, pid: int | None, host: str | None, since: str | None
) -> errors.LockBusy:
    return errors.LockBusy(
        f"Another routine run is in progress (lock: {path}, holder pid {pid or _UNKNOWN} "
        f"on {host or _UNKNOWN} since {since or _UNKNOWN}): {errors.ROUTINE_BUSY_HINT}"
    )


def _read_holder(path: Path) -> tuple[int | None, str | None, str | None]:
    """``(pid, host, acquired_at)`` from the lock file; ``None`` for what cannot be read (a
    link is not followed, and anything but a regular file is not read: a FIFO would wait)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        fd = -1
    try:  # fstat before reading: a directory opens, and os.fdopen would refuse it
        regular = fd >= 0 and stat.S_ISREG(os.fstat(fd).st_mode)
        raw = orjson.loads(os.read(fd, 65536)) if regular else None
    except (OSError, orjson.JSONDecodeError):
        raw = None
    finally:
        if fd >= 0:
            os.close(fd)
    raw = raw if isinstance(raw, dict) else {}
    pid, host, at = raw.get("pid"), raw.get("host"), raw.get("acquired_at")
    return (
        pid if type(pid) is int else None,
        host if isinstance(host, str) and host else None,
        at if isinstance(at, str) and at else None,
    )


def _flock_held(path: Path, pid_hint: int | None, table: _LockTable) -> bool:
    """Whether the lock file (as ``table`` found it) has a lock on it."""
    if table.stat is None:
        return False
    probed = _probe_held(path)
    if probed is not None:
        return probed
    table.wait()
    if table.data is None:
        return False
    return held_in_proc_locks(table.data.decode("ascii", errors="replace"),
                              dev=table.stat.st_dev, ino=table.stat.st_ino, pid_hint=pid_hint)


def held_in_proc_locks(table: str, *, dev: int, ino: int, pid_hint: int | None) -> bool:
    """Whether ``/proc/locks`` text shows a granted lock on the inode ``(dev, ino)``."""
    want_dev = (os.major(dev), os.minor(dev))
    for m in re.finditer(_PROC_LOCK_LINE, table, re.M):
        if int(m[4]) != ino:
            continue
        if (int(m[2], 16), int(m[3], 16)) == want_dev:
            return True
        if pid_hint is not None and int(m[1]) == pid_hint:
            return True
    return False


def _probe_held(path: Path) -> bool | None:
    """Whether a holder has the flock of ``path``; None when it is not a regular file that
    can be opened (opened without waiting: a FIFO there would wait for a writer; a
    directory opens, but is no lock file of ours)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            return exc.errno in _BUSY_ERRNOS
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
