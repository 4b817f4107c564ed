"""The upstream routine lock directory, both ways (SPEC §6.2, §10 rule 5).

The upstream SpecDojo CLI locks a routine run with ``mkdir R/.locks/routine-run.lock/`` and
treats a directory older than one hour as stale (it takes it over). We honour that directory
and, while we hold our flock, hold it too, with ``owner.json``
``{"tool": "specdojo_routine", "pid", "host", "acquired_at", "start"}`` inside, so the upstream
CLI sees our run as busy instead of starting beside it. ``start`` is the process's start time:
a pid is given to another process once its owner is dead, and a reused pid is another process.

Claiming (:func:`claim`) is one ``mkdir``; only when the name exists do we look at it, and then:

- ours, left by a crash: ``owner.json`` names our tool, this host and a pid that is dead, was
  reused (another start time) or is the judging process itself (which holds no directory yet)
  -> removed, then ``mkdir`` again. The flock is free (the caller holds it now), so no live run
  of ours can hold it. An ``owner.json`` without ``start`` (an older version of ours) is judged
  as the exec lock judges upstream's owner (``liveness.holder_alive``): a live pid whose
  process started by ``acquired_at`` may be the holder, and one that started later proves
  nothing either way, so both are busy until the hour is up. A directory holding nothing
  but our owner file's temporary ``.owner.json.<pid>.tmp`` was left by a run of ours killed
  between its ``mkdir`` and the rename of ``owner.json``: under our flock it is ours (that run
  would hold the flock), and otherwise judged by the pid in its name like ``owner.json``;
- anything else at most one hour old -> busy (the upstream CLI, or a live run of ours), and
  never touched: upstream may have made it a moment ago, between our looks;
- older -> stale, whatever it holds: renamed aside to ``routine-run.lock.stale-<UTC stamp>``,
  then ``mkdir``. The aside is removed when it held nothing but an ``owner.json`` (what a
  crashed run leaves); anything more is kept there for whoever left it. A rename moves one
  directory atomically, so we check afterwards that it moved the one we judged (same inode and
  mtime), and put it back (busy) if upstream replaced it in between.

So a run of ours is always announced before it delegates anything: a directory it cannot
create or finish (no space, no inode, no permission) is removed again and the error raised,
and nothing runs.

While held (:func:`kept`), a heartbeat thread refreshes the directory's mtime every
``REFRESH_S``: upstream judges staleness by that mtime, and a run (or one action) longer than an
hour must not look stale. A thread, because an action may run for hours in one blocking call;
it only touches the directory while ``owner.json`` is still ours.

Releasing (:func:`release`) renames the directory away first and removes it there, so the
name is never left empty (an empty directory is busy to everyone for an hour).

Lock files are never written through a symbolic link: ``owner.json`` is written to a new file
(``O_EXCL | O_NOFOLLOW``) and renamed into place.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import shutil
import stat
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import orjson

from specdojo_routine.core import timefmt
from specdojo_routine.store import fsfacts
from specdojo_routine.store.config import read_regular

DIR_NAME = "routine-run.lock"
OWNER_NAME = "owner.json"
TOOL = "specdojo_routine"
#: What a released directory is renamed to (then removed): ``routine-run.lock.released-<pid>``.
RELEASED = ".released-"
STALE_AFTER = timedelta(hours=1)
#: How often the held directory's mtime is refreshed: half the most a refresh may be late
#: (SPEC §6.2: at least every 60 s), so a late wake-up of the thread still keeps it.
REFRESH_S = 30.0
HEARTBEAT_THREAD = "specdojo-routine-announce-heartbeat"
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
#: ``alive(pid, start, acquired_at)``: whether process ``pid`` lives on this host as the
#: holder that recorded ``start`` (or, without it, acquired the lock at ``acquired_at``):
#: ``False`` only when it has ended, ``None`` when that cannot be told.
Alive = Callable[[int, int | None, object], bool | None]


@attrs.frozen(kw_only=True, repr=False)
class DirHolder:
    """Who holds the upstream lock directory (None fields: not recorded)."""

    pid: int | None
    host: str | None
    since: str
    ours: bool  # written by this tool


class Busy(Exception):
    """The directory is held by someone else (``holder``), or was replaced while we looked;
    the caller turns it into its ``LockBusy``."""

    def __init__(self, holder: DirHolder) -> None:
        super().__init__(holder)
        self.holder = holder


def _owner(path: Path, name: str = OWNER_NAME) -> dict[str, Any]:
    """The owner file of the lock directory ``path`` (whichever tool holds it wrote it): only
    a regular file is read - anything else is an owner that cannot be read, never a wait."""
    try:
        raw = orjson.loads(read_regular(path / name))
    except (OSError, orjson.JSONDecodeError):
        return {}
    return raw if isinstance(raw, dict) else {}


def _left_by_our_crash(owner: dict[str, Any], host: str, alive: Alive) -> bool:
    """Whether ``owner`` is ours (our tool, this host) and its process has ended: its pid is
    not ``alive`` with the start time it recorded, or is this process, which judges before it
    holds the directory and so is never another holder."""
    pid = owner.get("pid")
    return (owner.get("tool") == TOOL and owner.get("host") == host and type(pid) is int
            and pid > 0 and _ended(pid, owner, alive))


def _ended(pid: int, record: dict[str, Any], alive: Alive) -> bool:
    """Whether the holder ``record`` names (process ``pid``) has ended: it is this process,
    or its pid is proved not to be the holder any more."""
    start = record.get("start")
    return pid == os.getpid() or alive(
        pid, start if type(start) is int else None, record.get("acquired_at")) is False


def _left_unfinished(
    names: list[str], read: Callable[[str], dict[str, Any]], *, host: str, alive: Alive,
    flocked: bool,
) -> bool:
    """Whether a directory without ``owner.json`` (its entries ``names``) was left by a run of
    ours killed before it renamed its owner file into place: all it holds is that file's
    temporary, whose name carries the run's pid. The caller holding the flock (``flocked``)
    proves it: the run that made it would hold the flock. Otherwise its pid must have ended
    (the temporary's record, when it was written in full, gives its host and start)."""
    pid = _temp_pid(names)
    if pid is None:
        return False
    if flocked:
        return True
    record = read(names[0])
    return record.get("host", host) == host and _ended(pid, record, alive)


def _temp_name(pid: int) -> str:
    return f".{OWNER_NAME}.{pid}.tmp"


def _temp_pid(names: list[str]) -> int | None:
    """The pid in the name of our owner file's temporary when it is the only entry."""
    if len(names) != 1:
        return None
    middle = names[0].removeprefix(f".{OWNER_NAME}.").removesuffix(".tmp")
    if not (middle.isascii() and middle.isdigit()) or names[0] != _temp_name(int(middle)):
        return None
    return int(middle)


def _holder_of(owner: dict[str, Any], mtime: float) -> DirHolder:
    pid, who = owner.get("pid"), owner.get("host")
    return DirHolder(pid=pid if type(pid) is int else None,
                     host=who if isinstance(who, str) else None,
                     since=timefmt.format_s(datetime.fromtimestamp(mtime, UTC)),
                     ours=owner.get("tool") == TOOL)


def holder(
    locks_dir: Path, *, now: datetime, host: str, alive: Alive, flocked: bool = False
) -> DirHolder | None:
    """The live holder of the directory, or None (absent, stale, or left by our crash).
    ``flocked``: the caller holds the routine flock, so no run of ours is making it."""
    path = locks_dir / DIR_NAME
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):  # only a mkdir lock counts
        return None
    made = datetime.fromtimestamp(st.st_mtime, UTC)
    owner = _owner(path)
    if now - made > STALE_AFTER or _left_by_our_crash(owner, host, alive):
        return None
    if not owner and _left_unfinished(_names(path), functools.partial(_owner, path),
                                      host=host, alive=alive, flocked=flocked):
        return None
    return _holder_of(owner, st.st_mtime)


def _names(where: Path | int) -> list[str]:
    """The entries of the directory ``where`` (a path or an open descriptor); none when it
    cannot be listed."""
    try:
        return os.listdir(where)
    except OSError:
        return []


def claim(
    locks_dir: Path, *, pid: int, host: str, acquired_at: str, start: int | None,
    now: datetime, alive: Alive,
) -> Path:
    """Create the directory with our ``owner.json`` (the caller holds the flock); one left by
    our crash is removed and a stale one renamed aside first. Raises :class:`Busy` when
    someone else holds it, ``OSError`` when it cannot be made (nothing of ours is left).
    ``start``: the start time of process ``pid``, recorded so that a process given the pid
    later is not taken for it."""
    path = locks_dir / DIR_NAME
    record = {"tool": TOOL, "pid": pid, "host": host, "acquired_at": acquired_at,
              "start": start}
    _sweep_released(locks_dir)
    for _ in range(3):
        try:
            os.mkdir(path)
        except FileExistsError:
            _clear(path, now=now, host=host, alive=alive)
            continue
        _finish(path, record)
        return path
    raise Busy(DirHolder(pid=None, host=None, since=timefmt.format_s(now), ours=False))


def _finish(path: Path, record: dict[str, Any]) -> None:
    """Write ``owner.json`` into the directory we just made; on failure remove it again (an
    owner-less directory would read as busy to everyone for an hour)."""
    tmp = path / _temp_name(record["pid"])
    try:
        fd = os.open(tmp, _CREATE, 0o644)
        try:
            data = orjson.dumps(record) + b"\n"
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)
        os.rename(tmp, path / OWNER_NAME)  # replaces a name, never follows a link
    except BaseException as exc:
        if isinstance(exc, OSError):  # the inode our directory took is freed below
            fsfacts.remember(exc)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        with contextlib.suppress(OSError):
            os.rmdir(path)
        raise


def _clear(path: Path, *, now: datetime, host: str, alive: Alive) -> None:
    """Make way for our ``mkdir`` where ``path`` exists, or raise :class:`Busy`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # released meanwhile: mkdir again
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):  # a file or a link, not a mkdir lock
            raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path)) from None
        raise
    try:
        seen = os.fstat(fd)
        owner = _read_owner(fd)
        # our unfinished directory is ours outright: the caller holds the flock
        ours = _left_by_our_crash(owner, host, alive) or (
            not owner and _temp_pid(_names(fd)) is not None)
    finally:
        os.close(fd)
    if ours:
        _take_aside(path, seen, now, keep_extra=False)
    elif now - datetime.fromtimestamp(seen.st_mtime, UTC) > STALE_AFTER:
        _take_aside(path, seen, now, keep_extra=True)
    else:
        raise Busy(_holder_of(owner, seen.st_mtime))


def _read_owner(dir_fd: int) -> dict[str, Any]:
    """The owner file in the open directory ``dir_fd``: a regular file only, never through a
    link, nor a FIFO (opened without waiting for a writer, then refused)."""
    try:
        fd = os.open(OWNER_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError:
        return {}
    try:  # fstat before reading: a directory opens, and os.fdopen would refuse it
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}
        raw = orjson.loads(os.read(fd, 65536))
    except (OSError, orjson.JSONDecodeError):
        return {}
    finally:
        os.close(fd)
    return raw if isinstance(raw, dict) else {}


def _take_aside(path: Path, seen: os.stat_result, now: datetime, *, keep_extra: bool) -> None:
    """Rename the directory judged removable to ``<name>.stale-<stamp>``; if what moved is not
    what was judged (replaced in between), put it back and raise :class:`Busy`."""
    aside = _aside_name(path, now)
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    moved = os.lstat(aside)
    if _identity(moved) != _identity(seen):
        with contextlib.suppress(OSError):
            os.rename(aside, path)
        raise Busy(_holder_of(_owner(path), moved.st_mtime))
    leftovers = set(os.listdir(aside)) - {OWNER_NAME}
    if not keep_extra or not leftovers:
        shutil.rmtree(aside, ignore_errors=True)


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    """A directory's identity across a rename: device, inode and mtime (a directory removed
    and made again often gets the same inode number back, but not the same mtime)."""
    return st.st_dev, st.st_ino, st.st_mtime_ns


def _aside_name(path: Path, now: datetime) -> Path:
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = path.with_name(f"{path.name}.stale-{stamp}")
    n = 1
    while os.path.lexists(aside):
        n += 1
        aside = path.with_name(f"{path.name}.stale-{stamp}-{n}")
    return aside


def release(path: Path | None, *, pid: int) -> None:
    """Give the directory up (only if its ``owner.json`` is still ours) in one step: it is
    renamed to ``<name>.released-<pid>`` and then removed there. Removing ``owner.json`` and
    then the directory in place left, to a runner killed between the two, an empty directory
    that every tool must read as busy for an hour (upstream may be between its ``mkdir`` and
    its owner file); a rename frees the name at once. What moved is checked to be ours and
    put back otherwise; a runner killed before removing it leaves only that other name, which
    the next claim sweeps."""
    if path is None or not _ours(_owner(path), pid):
        return
    aside = path.with_name(f"{path.name}{RELEASED}{pid}")
    shutil.rmtree(aside, ignore_errors=True)  # a killed release of a process given our pid
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    if not _ours(_owner(aside), pid):  # replaced between our look and the rename: theirs
        if not os.path.lexists(path):  # a rename back would replace an empty directory
            with contextlib.suppress(OSError):
                os.rename(aside, path)
        return
    shutil.rmtree(aside, ignore_errors=True)


def _ours(owner: dict[str, Any], pid: int) -> bool:
    return owner.get("pid") == pid and owner.get("tool") == TOOL


def _sweep_released(locks_dir: Path) -> None:
    """Remove what releases of ours killed midway left (``<name>.released-<pid>``): the
    caller holds the flock, so no release of ours is running."""
    for name in _names(locks_dir):
        if name.startswith(DIR_NAME + RELEASED):
            shutil.rmtree(locks_dir / name, ignore_errors=True)


@contextlib.contextmanager
def kept(path: Path, *, pid: int) -> Iterator[None]:
    """Keep the directory we claimed fresh (its mtime) while the ``with`` block runs, then
    :func:`release` it."""
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(path, pid, REFRESH_S, stop),
                            name=HEARTBEAT_THREAD, daemon=True)
    try:
        beat.start()
        yield
    finally:
        stop.set()
        if beat.ident is not None:
            beat.join()
        release(path, pid=pid)


def _heartbeat(path: Path, pid: int, interval_s: float, stop: threading.Event) -> None:
    while not stop.wait(interval_s):
        if not _ours(_owner(path), pid):
            return  # no longer ours: never keep someone else's directory fresh
        try:
            os.utime(path, follow_symlinks=False)
        except OSError:
            return
