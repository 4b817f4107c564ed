"""The upstream routine lock directory, both ways (SPEC §6.2, §10 rule 5).

The upstream SpecDojo CLI locks a routine run with ``mkdir R/.locks/routine-run.lock/`` and
treats a directory older than one hour as stale (it takes it over). We honour that directory
and, while we hold our flock, hold it too, with ``owner.json``
``{"tool": "specdojo_routine", "pid", "host", "acquired_at"}`` inside, so the upstream CLI sees
our run as busy instead of starting beside it.

Whose directory is it?

- ours, left by a crash: ``owner.json`` names our tool, this host and a dead pid (the flock is
  free: the caller holds it now) -> removed, then claimed;
- anything else at most one hour old -> busy (the upstream CLI, or a live run of ours);
- older -> stale: taken over as the upstream CLI itself does (its ``owner.json``, if any, and
  the empty directory are removed; a directory holding anything else is left alone and our run
  goes on unannounced).
"""

from __future__ import annotations

import contextlib
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import orjson

from specdojo_routine.core import timefmt

DIR_NAME = "routine-run.lock"
OWNER_NAME = "owner.json"
TOOL = "specdojo_routine"
STALE_AFTER = timedelta(hours=1)


@attrs.frozen(kw_only=True)
class DirHolder:
    """Who holds the upstream lock directory (None fields: not recorded)."""

    pid: int | None
    host: str | None
    since: str
    ours: bool  # written by this tool


def _owner(path: Path) -> dict[str, Any]:
    try:
        raw = orjson.loads((path / OWNER_NAME).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return raw if isinstance(raw, dict) else {}


def _left_by_our_crash(owner: dict[str, Any], host: str, alive: Any) -> bool:
    pid = owner.get("pid")
    return (owner.get("tool") == TOOL and owner.get("host") == host and type(pid) is int
            and pid > 0 and not alive(pid))


def holder(locks_dir: Path, *, now: datetime, host: str, alive: Any) -> DirHolder | None:
    """The live holder of the directory, or None (absent, stale, or left by our crash)."""
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
    pid, who = owner.get("pid"), owner.get("host")
    return DirHolder(pid=pid if type(pid) is int else None,
                     host=who if isinstance(who, str) else None,
                     since=timefmt.format_s(made), ours=owner.get("tool") == TOOL)


def _remove(path: Path) -> bool:
    """Remove a lock directory that holds at most an ``owner.json``; False if it holds more."""
    with contextlib.suppress(FileNotFoundError):
        (path / OWNER_NAME).unlink()
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def claim(locks_dir: Path, *, pid: int, host: str, acquired_at: str) -> Path | None:
    """Create the directory with our ``owner.json`` (the caller holds the flock and has
    checked :func:`holder`); a stale or crashed one is replaced. None: could not announce."""
    path = locks_dir / DIR_NAME
    for _ in range(2):
        try:
            path.mkdir()
        except FileExistsError:
            if not _remove(path):
                return None
            continue
        record = {"tool": TOOL, "pid": pid, "host": host, "acquired_at": acquired_at}
        (path / OWNER_NAME).write_bytes(orjson.dumps(record) + b"\n")
        return path
    return None


def release(path: Path | None, *, pid: int) -> None:
    """Remove our directory (only if its ``owner.json`` is still ours)."""
    if path is not None and _owner(path).get("pid") == pid and _owner(path).get("tool") == TOOL:
        _remove(path)
