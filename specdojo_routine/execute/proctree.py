"""The process tree on this host (Linux ``/proc``): whether a process group still has a live
member, what a command started that left its process group (a child that called ``setsid``,
or a daemon that forked twice and whose parent is gone), so that ending the command ends it
too (SPEC §6.5, §13), and whether a process is still the one seen before (its start time, as
a pid may be reused).
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["carrying", "group_alive", "left_the_group", "start_of"]


def _stats() -> dict[int, list[bytes]] | None:
    """Every process's ``/proc/PID/stat`` fields after the command name (state first); None
    where ``/proc`` cannot be listed."""
    found: dict[int, list[bytes]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        if name.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{name}/stat", "rb") as handle:
                found[int(name)] = handle.read().rpartition(b")")[2].split()
    return found


def start_of(pid: int) -> bytes | None:
    """The start time of live (non-zombie) ``pid``, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()
    except OSError:
        return None
    return fields[19] if len(fields) > 19 and fields[0] not in (b"Z", b"X") else None


def group_alive(pgid: int) -> bool:
    """Whether a live (non-zombie) process is in group ``pgid`` (without ``/proc``: assume so)."""
    stats = _stats()
    if stats is None:
        return True
    return any(len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X")
               for fields in stats.values())


def left_the_group(leader: int) -> dict[int, bytes]:
    """The live descendants of ``leader`` outside its group ``leader`` (pid: start time)."""
    stats = _stats() or {}
    kids: dict[int, list[int]] = {}
    for pid, fields in stats.items():
        if len(fields) > 19:
            kids.setdefault(int(fields[1]), []).append(pid)
    found: dict[int, bytes] = {}
    todo = list(kids.get(leader, ()))
    while todo:
        pid = todo.pop()
        todo += kids.get(pid, ())
        fields = stats[pid]
        if int(fields[2]) != leader and fields[0] not in (b"Z", b"X"):
            found[pid] = fields[19]
    return found


def carrying(entry: bytes) -> dict[int, bytes]:
    """The live processes whose environment holds ``entry`` (``NAME=value``), pid: start
    time. A command's processes inherit the variable the runner gave it, wherever they went
    (Jenkins finds a build's processes so): a daemon that forked twice and left both the group
    and the tree is found by it. What another user owns cannot be read, and is not found."""
    stats = _stats() or {}
    found: dict[int, bytes] = {}
    for pid, fields in stats.items():
        if len(fields) > 19 and fields[0] not in (b"Z", b"X"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/environ", "rb") as handle:
                if entry in handle.read().split(b"\0"):
                    found[pid] = fields[19]
    return found
