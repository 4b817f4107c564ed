"""How a command's process group ends: watching its leader exit without reaping it (so the
group id stays reserved), killing the group at once when the runner is interrupted, and
terminating it in order (SIGTERM, a grace, then SIGKILL), the processes that left the group
included. :mod:`.runner` drives these while it reads the command's output.

Each command is started with a variable of its own in its environment (:func:`new_mark`),
which every process it starts inherits: a daemon that forked twice, whose parent is gone and
which is no longer in the command's group or under its leader, is still found by it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator

from specdojo_routine.execute import proctree

__all__ = ["KILL_GRACE_S", "KILL_POLL_S", "MARK", "GroupKiller", "exit_fd", "exited", "kill_now",
           "new_mark"]

KILL_GRACE_S = 2.0  # SIGTERM -> SIGKILL
KILL_POLL_S = 0.01  # while terminating, how often to look at the group
#: The variable that marks a command's processes (its value is :func:`new_mark`'s).
MARK = "SPECDOJO_ROUTINE_COMMAND"


def new_mark() -> str:
    """A value of :data:`MARK` that no other command has: the runner's pid and 64 random bits."""
    return f"{os.getpid()}-{os.urandom(8).hex()}"


def kill_now(proc: subprocess.Popen[bytes], mark: str | None = None) -> None:
    """SIGKILL the whole group and the processes that carry ``mark``, wait (up to the grace)
    until the group is gone, reap the leader."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    for pid in proctree.carrying(_entry(mark)) if mark else ():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    give_up = time.monotonic() + KILL_GRACE_S
    while proctree.group_alive(proc.pid) and time.monotonic() < give_up:
        time.sleep(KILL_POLL_S)
    proc.wait()


@contextlib.contextmanager
def exit_fd(pid: int) -> Iterator[int | None]:
    """A pidfd that becomes readable when ``pid`` exits (Linux >= 5.3), else ``None``."""
    try:
        fd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def exited(pid: int) -> bool:
    """Whether ``pid`` has exited, WITHOUT reaping it (its group id stays reserved)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


class GroupKiller:
    """Terminates a process group: SIGTERM, then SIGKILL to whatever is left after a grace.

    The processes that left the group are signalled with it: the leader's descendants outside
    it (a child that called ``setsid``), and those that carry the command's ``mark`` (an
    orphan, the init process's child, is no longer under the leader). Each is signalled again
    only while it is still the same process (its start time)."""

    def __init__(self, pgid: int, grace_s: float = KILL_GRACE_S, mark: str | None = None) -> None:
        self.pgid = pgid
        self.grace_s = grace_s
        self.mark = mark
        self.term_at: float | None = None
        self.kill_at: float | None = None
        self.done_at = 0.0
        self.strays: dict[int, bytes] = {}

    def hurry(self) -> None:
        """No more grace: the next step sends SIGKILL to whatever is left."""
        self.grace_s = 0.0

    def step(self, now: float, leader_exited: bool) -> bool:
        """Advance; True once the leader has exited and no other member is alive.

        A member still alive 2 s after SIGKILL (stuck in the kernel) is given up on.
        """
        if self.term_at is None:
            self.term_at = now
            self._signal(signal.SIGTERM)
        alive = not leader_exited or proctree.group_alive(self.pgid) or self._strays_alive()
        if alive and self.kill_at is None and now >= self.term_at + self.grace_s:
            self.kill_at = now
            self._signal(signal.SIGKILL)
        given_up = self.kill_at is not None and now >= self.kill_at + KILL_GRACE_S
        if leader_exited and (not alive or given_up):
            if not given_up and self._new_strays():
                return False  # born while the others were signalled: they end too
            self.done_at = self.done_at or now
            return True
        return False

    def _strays_alive(self) -> bool:
        return any(proctree.start_of(pid) == start for pid, start in self.strays.items())

    def _found(self) -> dict[int, bytes]:
        found = proctree.left_the_group(self.pgid)
        if self.mark:
            found.update(proctree.carrying(_entry(self.mark)))
        return found

    def _new_strays(self) -> bool:
        """Whether a last look finds processes of the command not seen before (then they get
        the signal of the moment): a process that left the group just before the group was
        signalled, or the child of a stray forked while the strays were looked for. The group
        is done only once a look finds none."""
        new = {pid: start for pid, start in self._found().items()
               if self.strays.get(pid) != start}
        self.strays.update(new)
        self._signal_strays(new, signal.SIGTERM if self.kill_at is None else signal.SIGKILL)
        return bool(new)

    def _signal(self, signum: signal.Signals) -> None:
        self.strays.update(self._found())
        try:
            os.killpg(self.pgid, signum)
        except ProcessLookupError:  # not a group leader after all: at least the process itself
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pgid, signum)
        except PermissionError:
            pass
        self._signal_strays(self.strays, signum)

    @staticmethod
    def _signal_strays(strays: dict[int, bytes], signum: signal.Signals) -> None:
        for pid, start in strays.items():
            if proctree.start_of(pid) == start:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signum)


def _entry(mark: str) -> bytes:
    return f"{MARK}={mark}".encode()
