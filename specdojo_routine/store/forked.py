"""A forked helper process that does the second part of a long loop while this one does the
first (issue 16: a 10,000-file ``run --due --dry-run`` in a second; this machine has 2 cores).

:func:`in_two` calls ``work`` on the first part of a list here and, in a child made by
``os.fork()``, on the rest; the child writes its result, pickled, to an in-memory file
(``memfd_create``: it never waits for this process to read) that this process reads once the
child has exited. ``work`` must depend only on what the child inherits and on its part of the
list, and must return everything it did (a child's side effects are lost with it), so that
calling it on the two parts in one process gives the same.

What the child wrote is used only when it is whole (a length header and the child's exit
status say so). A child that cannot be made, raises, is killed or writes less leaves its part
to be done here, after the first: the helper can only save time, never change a result. This
process waits for the child only once its own part is done, and it reaps the child (killing it
first when its own part raised) however that part ends.

A fork is made only where it is safe and pays: when a command-line process allowed it
(:func:`allowed`; a program that imports the package keeps its own process to itself), on
Linux (``memfd_create``), with no other Python thread running (a thread's locks would be
copied held), with more than one core to run on and at least :data:`MIN_ITEMS` items.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn, TypeVar

__all__ = ["MIN_ITEMS", "allowed", "alone", "in_two", "several_cores"]

_T = TypeVar("_T")
_R = TypeVar("_R")

#: Fewer items are done here alone (a fork and its pickled answer cost a few milliseconds).
MIN_ITEMS = 1000
#: The share of the items done here: this process also unpickles the child's answer.
HERE = 0.6
_HEADER = 8  # the length of the pickled answer, big-endian
_allowed = False


@contextlib.contextmanager
def allowed() -> Iterator[None]:
    """Within this block, :func:`in_two` may fork (the CLI's ``main`` allows it)."""
    global _allowed
    before, _allowed = _allowed, True
    try:
        yield
    finally:
        _allowed = before


def in_two(work: Callable[[Sequence[_T]], _R], items: Sequence[_T]) -> tuple[_R, _R]:
    """``(work(first part), work(the rest))``, the rest done by a forked child when one may be
    made (see the module docstring), else here."""
    cut = round(len(items) * HERE) if _worth_a_fork(len(items)) else len(items)
    first, rest = items[:cut], items[cut:]
    if not rest:
        return work(first), work(rest)
    try:  # the answer's file: in memory, and the child never waits for us to read it
        fd = os.memfd_create("specdojo-routine-helper", os.MFD_CLOEXEC)
    except OSError:
        return work(first), work(rest)
    try:
        pid = os.fork()
    except OSError:
        os.close(fd)
        return work(first), work(rest)
    if pid == 0:  # the child: never returns
        _child(work, rest, fd)
    try:
        mine = work(first)
    except BaseException:
        _reap(pid, kill=True)
        os.close(fd)
        raise
    try:
        theirs = _answer(fd) if _reap(pid, kill=False) else None
    finally:
        os.close(fd)
    return mine, theirs[0] if theirs is not None else work(rest)


def _worth_a_fork(count: int) -> bool:
    if not _allowed or count < MIN_ITEMS or not hasattr(os, "memfd_create"):  # Linux
        return False
    return alone() and several_cores()


def several_cores() -> bool:
    """This process may run on more than one core (Linux's affinity; elsewhere: no)."""
    try:
        return len(os.sched_getaffinity(0)) > 1
    except AttributeError:
        return False


def alone() -> bool:
    """No other Python thread is running in this process (none was ever started if
    ``threading`` was never imported)."""
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


def _child(work: Callable[[Sequence[_T]], _R], rest: Sequence[_T], fd: int) -> NoReturn:
    """Do ``work(rest)``, write the pickled answer to ``fd`` and exit: 0 when it was written
    whole, 1 otherwise. Nothing else of this process is run (no ``atexit``, no flush of the
    parent's buffered output, no ``finally`` of the callers)."""
    code = 1
    try:
        import gc
        import pickle

        gc.disable()  # a short life; a collection would only copy the parent's pages
        result = work(rest)
        answer = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        data = len(answer).to_bytes(_HEADER, "big") + answer
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        code = 0
    except BaseException:  # the parent does the work itself
        pass
    finally:
        os._exit(code)


def _answer(fd: int) -> tuple[Any] | None:
    """The child's answer, when it is whole: ``(value,)``."""
    size = os.fstat(fd).st_size
    data = os.pread(fd, size, 0) if size >= _HEADER else b""
    if len(data) < _HEADER or int.from_bytes(data[:_HEADER], "big") != len(data) - _HEADER:
        return None
    import pickle

    try:
        return (pickle.loads(data[_HEADER:]),)
    except Exception:  # not what a child of ours writes: the part is done here
        return None


def _reap(pid: int, *, kill: bool) -> bool:
    """Wait for the child (killed first if ``kill``); True if it exited 0."""
    if kill:
        import signal

        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # reaped by someone else (a SIGCHLD handler): unknown
        return False
    return os.waitstatus_to_exitcode(status) == 0
