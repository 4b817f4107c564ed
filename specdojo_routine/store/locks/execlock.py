"""The SpecDojo project exec lock (SPEC §7.7), as upstream ``src/exec-slot-lock.ts``.

Atomic ``mkdir`` of ``exec-run.lock/`` plus ``owner.json``
``{actor, pid, token <pid>-<16 hex>, acquired_at_utc, host}`` (``host`` is ours;
absent = this host). A heartbeat thread touches the directory mtime while ``owner.json`` holds our
token. Stale = mtime older than ``stale_s``, or at once a dead pid on this host; anything at the
lock's name that is not a real directory (a link, a file, a FIFO: no holder of this protocol
made it) is judged by its own age alone, so that a left-over one cannot keep the project busy
for ever. Take-over and release rename the entry to a unique name before deleting it, under a
brief flock on ``exec-run.takeover.flock`` so that racing take-overs re-check one after the
other (one winner); what was set aside is never opened or followed unless it is a directory.
A caller whose ``SPECDOJO_EXEC_RUN_LOCK_TOKEN`` is the owner's token shares the lock.
No lock file is written through a symbolic link: ``owner.json`` is a new file renamed into
place, and a link where the take-over flock file should be is refused.

Shared helpers are reached as ``locks.<name>`` (the routine lock module) at call time, so that
patching them there affects this module too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs
import orjson

from specdojo_routine.core import errors, timefmt
from specdojo_routine.store.config import read_regular
from specdojo_routine.store.locks import routine as locks

EXEC_LOCK_NAME = "exec-run.lock"
EXEC_TAKEOVER_NAME = "exec-run.takeover.flock"
EXEC_LOCK_TOKEN_ENV = "SPECDOJO_EXEC_RUN_LOCK_TOKEN"
HEARTBEAT_THREAD = "specdojo-exec-lock-heartbeat"
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@attrs.frozen(kw_only=True, repr=False)
class ExecLockOwner:
    """The ``owner.json`` of an exec lock directory."""

    actor: str
    pid: int
    token: str
    acquired_at_utc: str
    host: str | None  # absent (upstream writers) means this host
    start: int | None = None  # the owner's process start time (ours; absent upstream)


class ExecLockBusy(errors.RoutineError):
    """A live process holds the project's exec lock (E-03)."""

    exit_code = errors.EXIT_BUSY

    def __init__(self, path: Path, owner: ExecLockOwner | None) -> None:
        self.path, self.owner = path, owner
        holder = "unknown (owner metadata unavailable)"
        if owner is not None:
            holder = (f"{owner.actor} pid {owner.pid} on {owner.host or locks.this_host()} "
                      f"since {owner.acquired_at_utc or locks._UNKNOWN}")
        super().__init__(f"Exec run is busy for this project (lock: {path}, holder {holder})")


@attrs.frozen(kw_only=True, repr=False)
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
        _refuse_a_link(lock_dir.with_name(EXEC_TAKEOVER_NAME))  # before anything is taken
        token = _acquire_exec(lock_dir, actor, stale_s)
    except OSError as exc:
        raise locks._unusable(lock_dir, exc) from None
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


def _refuse_a_link(path: Path) -> None:
    """Raise ``ELOOP`` (a one-line error) when ``path`` is a symbolic link: the take-over flock
    file is opened with ``O_CREAT`` at release, which must never create a file elsewhere."""
    if path.is_symlink():
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path))


def read_exec_owner(lock_dir: Path) -> ExecLockOwner | None:
    """The owner of an exec lock directory, or ``None`` if absent or unreadable."""
    try:  # only a regular file: whichever tool holds the lock wrote it, a FIFO is no owner
        raw = orjson.loads(read_regular(lock_dir / "owner.json"))
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
    start = raw.get("start") if type(raw.get("start")) is int else None
    return ExecLockOwner(actor=actor, pid=pid, token=token, acquired_at_utc=at, host=host,
                         start=start)


def _acquire_exec(lock_dir: Path, actor: str, stale_s: float) -> str:
    token = _try_create(lock_dir, actor)
    if token is not None:
        return token
    if not _peek_stale(lock_dir, stale_s):  # a live holder: busy, and nothing written -
        token = None if os.path.lexists(lock_dir) else _try_create(lock_dir, actor)  # not the
        if token is None:  # take-over mutex file (SPEC §7.7); a lock just released is retried
            raise ExecLockBusy(lock_dir, read_exec_owner(lock_dir))
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
    now = timefmt.format_s(locks._utc_now())
    owner = {"actor": actor, "pid": os.getpid(), "token": token, "acquired_at_utc": now,
             "host": locks.this_host(),  # upstream's field order, plus host and start
             "start": locks.process_start(os.getpid())}
    try:
        tmp = lock_dir / f".owner.json.{token}.tmp"
        fd = os.open(tmp, _CREATE, 0o644)  # a new file: never written through a link
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps(owner, option=orjson.OPT_INDENT_2) + b"\n")
        os.replace(tmp, lock_dir / "owner.json")  # replaces a name, never follows a link
        os.utime(lock_dir)
    except BaseException:
        _discard(lock_dir)
        raise
    return token


def live_holder(exec_locks_dir: Path, stale_s: float = 30.0) -> ExecLockOwner | None:
    """The owner of the project's exec lock while it counts as held (SPEC §7.7: a live owner on
    this host whatever its heartbeat, another host's while its heartbeat is fresh), else
    ``None``. Read only: nothing is taken or written."""
    lock_dir = exec_locks_dir / EXEC_LOCK_NAME
    owner = read_exec_owner(lock_dir)
    if owner is None or _exec_lock_stale(lock_dir, stale_s):
        return None
    return owner


def _exec_lock_stale(lock_dir: Path, stale_s: float) -> bool:
    """Whether the entry at the lock's name may be taken over (SPEC §7.7). A link, file or
    FIFO there is no holder's lock (``mkdir`` makes one): nobody's liveness can be checked,
    so its own age decides, as for a directory without a readable owner. An owner without a
    start time (upstream's) is live only while its pid's process started by the lock's
    ``acquired_at_utc`` (``liveness.holder_alive``); a later one is not the holder, and the
    heartbeat's age decides as upstream's own CLI does."""
    try:
        st = os.lstat(lock_dir)  # the entry itself: a link is never followed
    except FileNotFoundError:
        return False  # gone: the caller simply tries mkdir again
    if not stat.S_ISDIR(st.st_mode):
        return time.time() - st.st_mtime > stale_s
    owner = read_exec_owner(lock_dir)
    alive = None if owner is None else locks.holder_alive(
        owner.pid, owner.host, owner.start, owner.acquired_at_utc)
    if alive is True:
        return False  # a live owner on this host is never robbed, whatever the heartbeat says
    if alive is False:
        return True
    return time.time() - st.st_mtime > stale_s  # unknowable (another host, no owner, a pid
    # reused since the lock was taken): the timeout


#: The unlocked first look (a live holder means busy without creating the take-over mutex
#: file); the decision that counts is re-made under the mutex by ``_exec_lock_stale``.
_peek_stale = _exec_lock_stale


def _remove_aside(lock_dir: Path) -> None:
    """Rename the entry to a unique name, then delete it (``mkdir`` can never see it half
    deleted, and nobody else's new lock is ever removed)."""
    aside = lock_dir.with_name(f"{lock_dir.name}.stale-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        os.rename(lock_dir, aside)  # renames a link itself, never its target
    except FileNotFoundError:
        return
    _discard(aside)


def _discard(path: Path) -> None:
    """Delete ``path``: a real directory with what it holds, anything else (a link, a file, a
    FIFO) unlinked and never opened - opening a FIFO waits for a writer for ever, under the
    take-over flock every other runner queues behind."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path, ignore_errors=True)  # never follows a link inside
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


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
    """A blocking flock held for a few system calls around take-over and release. The file
    is opened without waiting (a FIFO there would wait for a writer for ever) and only a
    regular file is used."""
    path = lock_dir.with_name(EXEC_TAKEOVER_NAME)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                     | os.O_CLOEXEC, 0o644)
    except OSError as exc:  # a symbolic link there (ELOOP) is refused, never followed
        raise locks._unusable(path, exc) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise errors.RoutineError(f"cannot use the lock {path}: it is not a regular file "
                                  "(remove it and run the command again)")
    import fcntl  # the flock portalocker takes on POSIX, without importing it (and redis)

    with os.fdopen(fd, "rb") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _heartbeat(lock_dir: Path, token: str, interval_s: float, stop: threading.Event) -> None:
    while not stop.wait(interval_s):
        owner = read_exec_owner(lock_dir)
        if owner is None or owner.token != token:
            return
        try:
            os.utime(lock_dir, follow_symlinks=False)
        except OSError:
            return

