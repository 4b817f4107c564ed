"""What an ``OSError`` means for the person reading it, with the facts of the file system it
names: the edge where :mod:`specdojo_routine.core.errors` gets what it may not look up itself.

A full disk and a file system whose inodes are all used both fail with ENOSPC, but only the
first shows in ``df -h``; sending an operator to free space that is already free wastes their
time, so the file system of the path in the error is asked (``statvfs``) which one it is.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from specdojo_routine.core import errors

#: The attribute :func:`remember` sets on an error: the fact as it was when it happened.
_FACT = "specdojo_no_free_inodes"


def remember(exc: OSError) -> None:
    """Look now, before what failed is cleaned up: removing a half-made file or folder frees
    the very inode whose lack made it fail, and a later look would find one free."""
    setattr(exc, _FACT, no_free_inodes(exc))


def no_free_inodes(exc: OSError) -> bool:
    """True when ``exc`` is ENOSPC and the file system of the path it names (or of that path's
    nearest existing folder) has no inode left for this user (or had, when
    :func:`remember` looked). A file system without an inode limit (``f_files`` 0, as btrfs
    reports) never has them exhausted."""
    if exc.errno != errno.ENOSPC:
        return False
    known = getattr(exc, _FACT, None)
    if isinstance(known, bool):
        return known
    for name in (exc.filename, exc.filename2):
        if not isinstance(name, str | bytes):
            continue
        path = Path(os.fsdecode(name))
        for place in (path, *path.parents):
            try:
                found = os.statvfs(place)
            except OSError:
                continue
            return found.f_files > 0 and found.f_favail == 0
    return False


def describe(exc: OSError) -> str:
    """:func:`~specdojo_routine.core.errors.environment_error`, told whether inodes ran out."""
    return errors.environment_error(exc, no_inodes=no_free_inodes(exc))


def remedy(exc: OSError) -> str:
    """:func:`~specdojo_routine.core.errors.remedy`, told whether inodes ran out."""
    return errors.remedy(exc, no_inodes=no_free_inodes(exc))


def view_not_refreshed(view: Path, exc: OSError, *, done: str) -> str:
    """:func:`~specdojo_routine.core.errors.view_not_refreshed`, told whether inodes ran out."""
    return errors.view_not_refreshed(str(view), exc, done=done, no_inodes=no_free_inodes(exc))
