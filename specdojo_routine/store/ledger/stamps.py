"""What a ledger file looked like, which changes this process made to it itself, and how the
small files beside a ledger (views, the proof snapshot) are replaced.

A :class:`Stamp` is a file's identity (device, inode), size and change time at one moment. Every
append and repair this process makes records the stamp before and after it; :func:`only_grew`
walks those records back to tell whether a file is still the one a view was proven against,
changed only by this process (anything else - another writer, an edit, ``touch`` - changes the
change time and breaks the walk). Change times have the file system's granularity (nanoseconds
on ext4, xfs, btrfs and tmpfs, whole seconds on ext3 or FAT): an edit in the same clock tick as
our last look, keeping the size, is the one change a stamp cannot see, so the routine view's
snapshot is trusted only when it was written in a later tick (:mod:`.proven`).

:func:`replace` writes a file whole or not at all (a temp file beside it, moved into place
with ``os.replace``, which replaces a symlink rather than writing through it) and leaves a file
that already holds the bytes alone. Such files are read with :func:`config.read_regular`: a
regular file only, opened without blocking (a FIFO put where a view belongs would otherwise
hang every command) and, for the snapshot, without following a symlink.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import attrs

from specdojo_routine.store.config import check_private, read_regular

__all__ = ["Stamp", "only_grew", "remember", "replace", "replace_private"]


@attrs.frozen(kw_only=True, repr=False)
class Stamp:
    """A ledger file's identity, size and change time at one moment."""

    dev: int
    ino: int
    size: int
    ctime_ns: int

    @classmethod
    def of(cls, fd: int) -> Stamp:
        return cls.from_stat(os.fstat(fd))

    @classmethod
    def at(cls, path: Path) -> Stamp:
        return cls.from_stat(os.stat(path))

    @classmethod
    def from_stat(cls, st: os.stat_result) -> Stamp:
        return cls(dev=st.st_dev, ino=st.st_ino, size=st.st_size, ctime_ns=st.st_ctime_ns)

    def to_json(self) -> dict[str, int]:
        """As the private snapshots record it: ``dev``, ``ino``, ``size``, ``ctime_ns``."""
        return attrs.asdict(self)


#: Changes this process made itself (append, repair): state after -> state before.
_OWN_CHANGES: dict[Stamp, Stamp] = {}
_OWN_CHANGES_LIMIT = 100_000


def remember(before: Stamp, after: Stamp) -> None:
    if len(_OWN_CHANGES) >= _OWN_CHANGES_LIMIT:
        _OWN_CHANGES.clear()  # forgetting only costs a full fold
    if before != after:
        _OWN_CHANGES[after] = before


def only_grew(since: Stamp, now: Stamp) -> bool:
    """Whether the file in state ``now`` is the file in state ``since`` changed only by this
    process's own appends and repairs (same inode; every step recorded when it was made).

    A change by anybody else - another process's append, an edit, ``touch`` - breaks the walk,
    and the caller folds from scratch. Same state (nothing changed) is trivially proven."""
    for _ in range(len(_OWN_CHANGES) + 1):
        if now == since:
            return True
        before = _OWN_CHANGES.get(now)
        if before is None:
            return False
        now = before
    return False


# --- small files beside a ledger -------------------------------------------------------------


def replace(path: Path, data: bytes, *, follow: bool = True, mode: int = 0o644,
            force: bool = False) -> bool:
    """Make ``data`` the file ``path``, atomically, unless it already holds exactly those
    bytes (read as :func:`config.read_regular` reads, ``follow`` passed on; ``force``: write
    it all the same, for a file whose change time says something); True if written.

    Readers see the old file or the new one, never part of it: a temp file in the same
    directory, moved into place with ``os.replace`` (which replaces a symlink or a FIFO there
    instead of writing through it)."""
    try:
        if not force and read_regular(path, follow=follow) == data:
            return False
    except OSError:  # none there, not a regular file, not readable: replaced all the same
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    made: list[str] = []  # the temp file's name, known before the file exists
    try:  # so a stop (Ctrl-C) at any point, even as the file is made, removes it too
        fd = _temp_file(path, made)
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), mode)
            out.write(data)
        os.replace(made[0], path)
    except BaseException as exc:
        for name in made:
            Path(name).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:  # a write names no file
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise
    return True


def _temp_file(path: Path, made: list[str]) -> int:
    """A new file beside ``path`` (``.<name>.<random>.tmp``, as ``tempfile.mkstemp`` names
    it), open for writing; its name is in ``made`` before it exists. ``mkstemp`` says the
    name only once it has made the file: a stop in between would leave it behind."""
    for _ in range(100):
        made[:] = [str(path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp")]
        try:
            return os.open(made[0], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                           | os.O_CLOEXEC, 0o600)
        except FileExistsError:  # another's file: not ours to remove
            made.clear()
        except OSError as exc:  # read-only, full: say which file, not the temp name
            made.clear()
            raise OSError(exc.errno, exc.strerror, str(path)) from None
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file", str(path))


def replace_private(path: Path, data: bytes, *, force: bool = False) -> bool:
    """:func:`replace` for a private cache file: never through a symbolic link, neither at the
    file nor at its ``.cache`` folder or a folder under it
    (:class:`~specdojo_routine.store.config.LinkedCache`, an ``OSError`` the callers of a
    cache already treat as a cache that cannot be written)."""
    check_private(path)
    return replace(path, data, follow=False, force=force)
