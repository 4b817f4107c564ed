"""Whether the process a lock records as its holder is alive (SPEC §6.2, §7.7): one rule for
the routine lock, its upstream directory and the exec lock.

A holder on this host is judged by evidence this host can check: its pid, and the start time
of the process that has it now - recorded by us (a reused pid is another process), or, where
the writer recorded none (upstream), compared with when the lock was acquired. A holder on
another host, or one whose liveness cannot be checked, is left to the lock's own timeout.
"""

from __future__ import annotations

import os
from pathlib import Path

from specdojo_routine.core import timefmt


def this_host() -> str:
    """The host name written into lock owner records: the kernel's node name, what
    ``socket.gethostname()`` and upstream's ``os.hostname()`` give (without importing
    ``socket``, which every ``list`` would pay for)."""
    return os.uname().nodename


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (Linux ``/proc/<pid>/stat`` field 22, clock ticks since
    boot), or ``None`` where that cannot be read."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = data.rpartition(b")")[2].split()  # fields 3.. (the name may hold spaces)
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def owner_alive(pid: object, host: object, start: object = None) -> bool | None:
    """Whether the recorded owner ``(pid, host, start)`` is a live process.

    ``None``: it is on another host, which cannot be checked (trust documented timeouts only).
    On this host (or no host recorded): alive when the pid exists, is not a zombie and - when
    a start time was recorded - started at that time (a reused pid is another process). An
    unknown owner (pid 0, from an old record) is not alive.
    """
    if host is not None and host != this_host():
        return None
    if type(pid) is not int or pid <= 0 or not pid_alive(pid):
        return False
    now = process_start(pid)
    return start is None or now is None or now == start


#: How much later than a lock's recorded acquisition its holder may seem to have started:
#: the boot time and the recorded instant are whole seconds.
START_SLACK_S = 2.0


def holder_alive(pid: object, host: object, start: object, acquired_at: object) -> bool | None:
    """Whether a lock's recorded holder is alive, judged by evidence this host can check
    (SPEC §7.7), for every lock directory of ours and upstream's alike.

    As :func:`owner_alive` when a start time was recorded. Without one (upstream writes
    none): a dead pid -> ``False``; a live pid whose process started no later than the lock
    was acquired (``acquired_at``, within :data:`START_SLACK_S`) -> ``True``, it may be the
    holder and is never robbed; a process that started after that is not the holder (its
    pid was reused), and without a readable ``acquired_at`` nothing can be checked: ``None``,
    the lock's own timeout decides."""
    alive = owner_alive(pid, host, start)
    if alive is not True or type(start) is int:
        return alive
    began, acquired = process_started_at(pid), timefmt.try_parse_instant(acquired_at)
    if began is None or acquired is None:
        return None
    return True if began <= acquired.timestamp() + START_SLACK_S else None


def process_started_at(pid: object) -> float | None:
    """When process ``pid`` started, in seconds since the epoch (boot time plus its start in
    clock ticks), or ``None`` where that cannot be read."""
    ticks = process_start(pid) if type(pid) is int else None
    try:
        stat_text = Path("/proc/stat").read_text(encoding="ascii", errors="replace")
        boot = next(int(line.split()[1]) for line in stat_text.splitlines()
                    if line.startswith("btime "))
    except (OSError, StopIteration, IndexError, ValueError):
        return None
    return None if ticks is None else boot + ticks / os.sysconf("SC_CLK_TCK")


def live_here(pid: int, start: int | None, acquired_at: object = None) -> bool | None:
    """:func:`holder_alive` for a holder on this host (the routine lock's directory)."""
    return holder_alive(pid, None, start, acquired_at)


def is_self(pid: object, host: object) -> bool:
    """Whether a recorded owner is this very process."""
    return pid == os.getpid() and host in (None, this_host())


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
