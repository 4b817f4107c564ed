"""Locks: the routine-wide flock (SPEC §6.2) and the SpecDojo exec-lock protocol (SPEC §7.7).

Routine lock: an exclusive non-blocking flock on ``R/.locks/routine-run.flock``; the holder then
writes ``{"pid", "host", "acquired_at"}`` into the file (never deleted). The kernel drops it when
the holder dies; a live holder is never robbed. The upstream ``routine-run.lock/`` directory (no
owner file) is a holder while its mtime is at most 1 hour old; older is ignored, never deleted.
We never create it (a crash would leave it blocking runs for an hour).

``routine_lock_status`` takes no lock on Linux: it looks up the file's inode in ``/proc/locks``
(matching device+inode, or inode + the pid the holder wrote, since overlayfs/btrfs report another
device to ``stat``). Without ``/proc/locks`` it falls back to a ``LOCK_SH|LOCK_NB`` probe; so
that such a probe cannot cause a spurious "busy", an acquirer retries for ``BUSY_GRACE_S``.

Exec lock (upstream ``src/exec-slot-lock.ts``): atomic ``mkdir`` of ``exec-run.lock/`` plus
``owner.json`` ``{actor, pid, token <pid>-<16 hex>, acquired_at_utc, host}`` (``host`` is ours;
absent = this host). A heartbeat thread touches the directory mtime while ``owner.json`` holds our
token. Stale = mtime older than ``stale_s``, or at once a dead pid on this host. Take-over and
release rename the directory to a unique name before deleting it, under a brief flock on
``exec-run.takeover.flock`` so that racing take-overs re-check one after the other (one winner).
A caller whose ``SPECDOJO_EXEC_RUN_LOCK_TOKEN`` is the owner's token shares the lock.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

import attrs
import orjson
import portalocker

from specdojo_routine import errors, timeutil

ROUTINE_FLOCK_NAME = "routine-run.flock"
UPSTREAM_ROUTINE_LOCK_NAME = "routine-run.lock"
EXEC_LOCK_NAME = "exec-run.lock"
EXEC_TAKEOVER_NAME = "exec-run.takeover.flock"
EXEC_LOCK_TOKEN_ENV = "SPECDOJO_EXEC_RUN_LOCK_TOKEN"
HEARTBEAT_THREAD = "specdojo-exec-lock-heartbeat"
SUSPICIOUS_AFTER = timedelta(hours=1)
UPSTREAM_STALE_AFTER = timedelta(hours=1)
BUSY_GRACE_S = 0.2
_RETRY_S = 0.005
_UNKNOWN = "unknown"
_PROC_LOCKS = Path("/proc/locks")
# "1: FLOCK  ADVISORY  WRITE 5693 fe:00:5308499 0 EOF"; waiters ("1: -> FLOCK ...") are skipped.
_PROC_LOCK_LINE = re.compile(
    r"^\d+:\s+(?!->)\S+\s+\S+\s+\S+\s+(-?\d+)\s+([0-9a-fA-F]+):([0-9a-fA-F]+):(\d+)\s", re.M
)
_EXCLUSIVE_NB = portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
_SHARED_NB = portalocker.LockFlags.SHARED | portalocker.LockFlags.NON_BLOCKING


def _utc_now() -> datetime:
    return datetime.now(UTC)


def this_host() -> str:
    """The host name written into lock owner records."""
    return socket.gethostname()


@attrs.frozen(kw_only=True)
class LockInfo:
    """Who holds the routine lock, as ``list --json`` shows it."""

    held: bool
    pid: int | None
    host: str | None
    acquired_at: str | None
    suspicious: bool  # held for over 1 hour of wall-clock time


_FREE = LockInfo(held=False, pid=None, host=None, acquired_at=None, suspicious=False)


@contextlib.contextmanager
def routine_lock(
    locks_dir: Path, *, clock: Callable[[], datetime] = _utc_now
) -> Iterator[LockInfo]:
    """Hold the routine-wide lock for the ``with`` block; raise ``LockBusy`` if it is taken."""
    path = locks_dir / ROUTINE_FLOCK_NAME
    try:
        locks_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise _unusable(path, exc) from None
    with os.fdopen(fd, "r+b") as fh:
        _lock_or_busy(fh, path)
        try:
            now = timeutil.to_utc(clock())
            since = _young_upstream_dir_since(locks_dir, now)
            if since is not None:
                raise _routine_busy(locks_dir / UPSTREAM_ROUTINE_LOCK_NAME, None, None, since)
            info = LockInfo(held=True, pid=os.getpid(), host=this_host(),
                            acquired_at=timeutil.format_s(now), suspicious=False)
            record = {"pid": info.pid, "host": info.host, "acquired_at": info.acquired_at}
            fh.seek(0)
            fh.truncate()
            fh.write(orjson.dumps(record) + b"\n")
            fh.flush()
            yield info
        finally:
            portalocker.unlock(fh)


def routine_lock_status(locks_dir: Path, *, now: datetime) -> LockInfo:
    """Report the routine lock's holder without taking the lock or creating any file.

    ``now`` should be the wall clock: it ages the holder (``suspicious``) and the upstream
    lock directory.
    """
    now = timeutil.to_utc(now)
    path = locks_dir / ROUTINE_FLOCK_NAME
    pid, host, acquired_at = _read_holder(path)
    if _flock_held(path, pid):
        started = timeutil.try_parse_instant(acquired_at)
        suspicious = started is not None and now - started > SUSPICIOUS_AFTER
        return LockInfo(held=True, pid=pid, host=host, acquired_at=acquired_at,
                        suspicious=suspicious)
    since = _young_upstream_dir_since(locks_dir, now)
    if since is not None:
        return LockInfo(held=True, pid=None, host=None, acquired_at=since, suspicious=False)
    return _FREE


def _unusable(path: Path, exc: OSError) -> errors.RoutineError:
    return errors.RoutineError(
        f"cannot use the lock {path}: {exc.strerror or exc} (check that its directory exists "
        "and is writable)"
    )


def holder_is_self(info: LockInfo) -> bool:
    """True when ``info`` names this process on this host."""
    return info.pid == os.getpid() and info.host == this_host()


def _lock_or_busy(fh: IO[bytes], path: Path) -> None:
    deadline = time.monotonic() + BUSY_GRACE_S
    while True:
        try:
            portalocker.lock(fh, _EXCLUSIVE_NB)
            return
        except portalocker.AlreadyLocked:
            if time.monotonic() >= deadline:
                raise _routine_busy(path, *_read_holder(path)) from None
            time.sleep(_RETRY_S)
        except portalocker.LockException as exc:  # e.g. ENOLCK: no flock on this filesystem
            raise errors.RoutineError(f"cannot lock {path}: {exc}") from None


def _routine_busy(
    path: Path, pid: int | None, host: str | None, since: str | None
) -> errors.LockBusy:
    return errors.LockBusy(
        f"Another routine run is in progress (lock: {path}, holder pid {pid or _UNKNOWN} "
        f"on {host or _UNKNOWN} since {since or _UNKNOWN})"
    )


def _young_upstream_dir_since(locks_dir: Path, now: datetime) -> str | None:
    """The upstream lock directory's mtime if it is at most one hour old, else ``None``."""
    try:
        st = os.stat(locks_dir / UPSTREAM_ROUTINE_LOCK_NAME)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):  # only the upstream tool's mkdir lock counts
        return None
    made = datetime.fromtimestamp(st.st_mtime, UTC)
    return timeutil.format_s(made) if now - made <= UPSTREAM_STALE_AFTER else None


def _read_holder(path: Path) -> tuple[int | None, str | None, str | None]:
    """``(pid, host, acquired_at)`` from the lock file; ``None`` for what cannot be read."""
    try:
        raw = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        raw = None
    raw = raw if isinstance(raw, dict) else {}
    pid, host, at = raw.get("pid"), raw.get("host"), raw.get("acquired_at")
    return (
        pid if type(pid) is int else None,
        host if isinstance(host, str) and host else None,
        at if isinstance(at, str) and at else None,
    )


def _flock_held(path: Path, pid_hint: int | None) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    try:
        table = _PROC_LOCKS.read_text(encoding="ascii", errors="replace")
    except OSError:
        return _probe_held(path)
    return held_in_proc_locks(table, dev=st.st_dev, ino=st.st_ino, pid_hint=pid_hint)


def held_in_proc_locks(table: str, *, dev: int, ino: int, pid_hint: int | None) -> bool:
    """Whether ``/proc/locks`` text shows a granted lock on the inode ``(dev, ino)``."""
    want_dev = (os.major(dev), os.minor(dev))
    for m in _PROC_LOCK_LINE.finditer(table):
        if int(m[4]) != ino:
            continue
        if (int(m[2], 16), int(m[3], 16)) == want_dev:
            return True
        if pid_hint is not None and int(m[1]) == pid_hint:
            return True
    return False


def _probe_held(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        try:
            portalocker.lock(fh, _SHARED_NB)
        except portalocker.AlreadyLocked:
            return True
        portalocker.unlock(fh)
        return False


@attrs.frozen(kw_only=True)
class ExecLockOwner:
    """The ``owner.json`` of an exec lock directory."""

    actor: str
    pid: int
    token: str
    acquired_at_utc: str
    host: str | None  # absent (upstream writers) means this host


class ExecLockBusy(errors.RoutineError):
    """A live process holds the project's exec lock (E-03)."""

    exit_code = errors.EXIT_BUSY

    def __init__(self, path: Path, owner: ExecLockOwner | None) -> None:
        self.path, self.owner = path, owner
        holder = "unknown (owner metadata unavailable)"
        if owner is not None:
            holder = (f"{owner.actor} pid {owner.pid} on {owner.host or this_host()} "
                      f"since {owner.acquired_at_utc or _UNKNOWN}")
        super().__init__(f"Exec run is busy for this project (lock: {path}, holder {holder})")


@attrs.frozen(kw_only=True)
class ExecLockHandle:
    """A held (or inherited) exec lock; export ``token`` as ``SPECDOJO_EXEC_RUN_LOCK_TOKEN``."""

    token: str
    inherited: bool
    path: Path


@contextlib.contextmanager
def exec_lock(
    exec_locks_dir: Path,
    *,
    actor: str,
    env: Mapping[str, str] | None = None,
    heartbeat_s: float = 5.0,
    stale_s: float = 30.0,
) -> Iterator[ExecLockHandle]:
    """Hold the project exec lock for the ``with`` block; raise ``ExecLockBusy`` if it is taken."""
    lock_dir = exec_locks_dir / EXEC_LOCK_NAME
    inherited = (os.environ if env is None else env).get(EXEC_LOCK_TOKEN_ENV)
    owner = read_exec_owner(lock_dir)
    if inherited and owner is not None and owner.token == inherited:
        yield ExecLockHandle(token=inherited, inherited=True, path=lock_dir)
        return
    try:
        exec_locks_dir.mkdir(parents=True, exist_ok=True)
        token = _acquire_exec(lock_dir, actor, stale_s)
    except OSError as exc:
        raise _unusable(lock_dir, exc) from None
    stop = threading.Event()
    args = (lock_dir, token, heartbeat_s, stop)
    beat = threading.Thread(target=_heartbeat, args=args, name=HEARTBEAT_THREAD, daemon=True)
    beat.start()
    try:
        yield ExecLockHandle(token=token, inherited=False, path=lock_dir)
    finally:
        stop.set()
        beat.join()
        _release_exec(lock_dir, token)


def read_exec_owner(lock_dir: Path) -> ExecLockOwner | None:
    """The owner of an exec lock directory, or ``None`` if absent or unreadable."""
    try:
        raw = orjson.loads((lock_dir / "owner.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(raw, dict):
        return None
    actor, pid, token = raw.get("actor"), raw.get("pid"), raw.get("token")
    if not isinstance(actor, str) or type(pid) is not int or not isinstance(token, str):
        return None
    at, host = raw.get("acquired_at_utc"), raw.get("host")
    at = at if isinstance(at, str) else ""
    host = host if isinstance(host, str) and host else None
    return ExecLockOwner(actor=actor, pid=pid, token=token, acquired_at_utc=at, host=host)


def _acquire_exec(lock_dir: Path, actor: str, stale_s: float) -> str:
    token = _try_create(lock_dir, actor)
    if token is not None:
        return token
    with _takeover_mutex(lock_dir):
        if _exec_lock_stale(lock_dir, stale_s):
            _remove_aside(lock_dir)
        token = _try_create(lock_dir, actor)
    if token is None:
        raise ExecLockBusy(lock_dir, read_exec_owner(lock_dir))
    return token


def _try_create(lock_dir: Path, actor: str) -> str | None:
    """``mkdir`` the lock and write its owner; ``None`` when the directory already exists."""
    try:
        os.mkdir(lock_dir)
    except FileExistsError:
        return None
    token = f"{os.getpid()}-{secrets.token_hex(8)}"
    now = timeutil.format_s(_utc_now())
    owner = {"actor": actor, "pid": os.getpid(), "token": token, "acquired_at_utc": now,
             "host": this_host()}  # upstream's field order, plus host
    try:
        tmp = lock_dir / f".owner.json.{token}.tmp"
        tmp.write_bytes(orjson.dumps(owner, option=orjson.OPT_INDENT_2) + b"\n")
        os.replace(tmp, lock_dir / "owner.json")
        os.utime(lock_dir)
    except BaseException:
        shutil.rmtree(lock_dir, ignore_errors=True)
        raise
    return token


def _exec_lock_stale(lock_dir: Path, stale_s: float) -> bool:
    try:
        st = os.stat(lock_dir)
    except FileNotFoundError:
        return False  # gone: the caller simply tries mkdir again
    if time.time() - st.st_mtime > stale_s:
        return True
    owner = read_exec_owner(lock_dir)
    if owner is None or owner.host not in (None, this_host()):
        return False
    return not pid_alive(owner.pid)


def _remove_aside(lock_dir: Path) -> None:
    """Rename the directory to a unique name, then delete it (``mkdir`` can never see it half
    deleted, and nobody else's new lock is ever removed)."""
    aside = lock_dir.with_name(f"{lock_dir.name}.stale-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        os.rename(lock_dir, aside)
    except FileNotFoundError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def _release_exec(lock_dir: Path, token: str) -> None:
    owner = read_exec_owner(lock_dir)
    if owner is None or owner.token != token:
        return  # taken over (we were judged stale): never remove someone else's lock
    with _takeover_mutex(lock_dir):
        owner = read_exec_owner(lock_dir)
        if owner is not None and owner.token == token:
            _remove_aside(lock_dir)


@contextlib.contextmanager
def _takeover_mutex(lock_dir: Path) -> Iterator[None]:
    """A blocking flock held for a few system calls around take-over and release."""
    path = lock_dir.with_name(EXEC_TAKEOVER_NAME)
    with open(path, "ab") as fh:
        portalocker.lock(fh, portalocker.LockFlags.EXCLUSIVE)
        try:
            yield
        finally:
            portalocker.unlock(fh)


def _heartbeat(lock_dir: Path, token: str, interval_s: float, stop: threading.Event) -> None:
    while not stop.wait(interval_s):
        owner = read_exec_owner(lock_dir)
        if owner is None or owner.token != token:
            return
        try:
            os.utime(lock_dir)
        except OSError:
            return


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (zombies count as dead; pid <= 0 as alive)."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        proc_stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    return proc_stat.rpartition(")")[2].split()[:1] not in (["Z"], ["X"])
